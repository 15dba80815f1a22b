// `clustertwin power`: the power view of a training job: GPU, rack, cluster and facility power,
// the waveform over a job window with and without smoothing, energy per step and per token,
// coolant flow and PUE (docs/models/power.md). The request, the study's settings, their flags and
// the run are the library's (scenario/power.h); this is the door.
// Example: clustertwin power --cluster azure-ndv6-gb300 --model llama3.1-405b --tp 8 --pp 16
//          --power-cap 1200W --smoothing floor=0.8,ramp-up=2000W/s --price 0.08 --tokens 15T

#include <iostream>

#include "clustertwin/report/json_out.h"
#include "clustertwin/scenario/power.h"
#include "commands.h"
#include "field_options.h"

namespace clustertwin::app {
namespace {

struct PowerCli {
  scenario::TrainingRequest t;
  scenario::PowerSettings s;
  std::string json, trace;
};

int power(const Context& ctx, const PowerCli& o) {
  auto r = scenario::run_power(ctx, o.t, o.s, o.trace);
  if (!r) return bad_input(r.error());
  if (!o.json.empty()) {
    report::Json j = {{"training", r->training}, {"power", r->power}};
    if (auto st = report::write_json(j, o.json); !st) return bad_input(st.error());
  }
  if (o.json != "-") std::cout << r->text;
  return kExitOk;
}

}  // namespace

Verb add_power(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<PowerCli>();
  CLI::App* cmd = app.add_subcommand(
      "power",
      "Power of a training job: GPU, rack, cluster and facility power, the waveform over a job "
      "window "
      "(start, steps, checkpoints, stop) with and without power smoothing, its swings and "
      "spectrum, energy "
      "per step and per token, coolant flow per rack and PUE; a power cap or clock lock slows the "
      "step.\n"
      "Example: clustertwin power --cluster azure-ndv6-gb300 --model llama3.1-405b --tp 8 --pp 16 "
      "--power-cap 1200W --smoothing floor=0.8,ramp-up=2000W/s --price 0.08 --tokens 15T");
  add_fields(cmd, scenario::training_fields(), o->t, scenario::training_words());
  add_fields(cmd, scenario::power_fields(), o->s, scenario::power_words());
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  cmd->add_option("--trace", o->trace,
                  "write a Chrome trace of the step with power counters to FILE");
  return {cmd, [&ctx, o] { return power(ctx, *o); }};
}

}  // namespace clustertwin::app
