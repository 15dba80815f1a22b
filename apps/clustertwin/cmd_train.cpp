// `clustertwin train`: one training step of a model on a cluster under a parallel layout. The
// request, its flags and its resolution are the library's (scenario/training.h); this is the door.
// Example: clustertwin train --cluster meta-llama3-h100 --gpus 16384 --model llama3.1-405b
//          --tp 8 --pp 16 --global-batch 2048 --seq-len 8192

#include <iostream>

#include "clustertwin/report/json_out.h"
#include "commands.h"
#include "field_options.h"

namespace clustertwin::app {
namespace {

struct TrainCli {
  scenario::TrainingRequest request;
  std::string json, trace;
};

int train(const Context& ctx, const TrainCli& o) {
  auto r = scenario::run_training(ctx, o.request, o.trace);
  if (!r) return bad_input(r.error());
  if (!o.json.empty()) {
    report::Json j = {{"training", r->json}};
    if (!r->power.is_null()) j["power"] = r->power;
    if (auto st = report::write_json(j, o.json); !st) return bad_input(st.error());
  }
  if (o.json != "-") std::cout << r->text;
  return kExitOk;
}

}  // namespace

Verb add_train(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<TrainCli>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "One training step of a model on a cluster: step time, tokens/s, TFLOP/s per GPU, MFU, "
      "memory per GPU and where the time goes.\n"
      "Example: clustertwin train --cluster meta-llama3-h100 --gpus 16384 --model llama3.1-405b "
      "--tp 8 --pp 16 --global-batch 2048 --seq-len 8192");
  add_fields(cmd, scenario::training_fields(), o->request, scenario::training_words());
  add_fields(cmd, scenario::training_power_fields(), o->request, scenario::training_words());
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  cmd->add_option("--trace", o->trace, "write a Chrome trace of the step to FILE");
  return {cmd, [&ctx, o] { return train(ctx, *o); }};
}

}  // namespace clustertwin::app
