// `clustertwin search`: which training layout is best for a model on N GPUs. The request, the
// search's settings, their flags and the run are the library's (scenario/search.h); this is the
// door.
// Example: clustertwin search --cluster meta-llama3-h100 --gpus 16384 --model llama3.1-405b
//          --global-batch 2048 --seq-len 8192

#include <iostream>

#include "clustertwin/report/json_out.h"
#include "clustertwin/scenario/search.h"
#include "commands.h"
#include "field_options.h"

namespace clustertwin::app {
namespace {

struct SearchCli {
  TrainOptions t;
  scenario::SearchSettings s;
  std::string json;
};

int search_cmd(const Context& ctx, const SearchCli& o) {
  auto r = scenario::run_search(ctx, o.t, o.s);
  if (!r) return bad_input(r.error());
  if (!o.json.empty()) {
    if (auto st = report::write_json({{"search", r->json}}, o.json); !st) {
      return bad_input(st.error());
    }
  }
  // Time varies run to run: stderr, so that stdout and JSON are deterministic.
  if (!ctx.quiet) std::cerr << r->timing << "\n";
  if (o.json != "-") std::cout << r->text;
  return kExitOk;
}

}  // namespace

Verb add_search(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<SearchCli>();
  CLI::App* cmd = app.add_subcommand(
      "search",
      "Which training layout (TP, PP, VPP, CP, EP, DP, micro-batch, ZeRO stage, recomputation, "
      "precision) is fastest for a model on N GPUs, among those that fit in memory; the best "
      "confirmed with the event model.\n"
      "Example: clustertwin search --cluster meta-llama3-h100 --gpus 16384 --model llama3.1-405b "
      "--global-batch 2048 --seq-len 8192");
  add_fields(cmd, scenario::training_fields(), o->t, scenario::training_words());
  add_fields(cmd, scenario::search_fields(), o->s, scenario::search_words());
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  return {cmd, [&ctx, o] { return search_cmd(ctx, *o); }};
}

}  // namespace clustertwin::app
