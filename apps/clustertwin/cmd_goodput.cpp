// `clustertwin goodput`: one long training job under failures: interruptions, where the wall
// time goes (ETTR) and the checkpoint interval that maximises it (docs/models/orchestration.md §4).
// The request, the study's settings, their flags and the run are the library's
// (scenario/goodput.h); this is the door.
// Example: clustertwin goodput --cluster meta-llama3-h100 --gpus 16384 --model llama3.1-405b
//          --tp 8 --pp 16 --days 54 --checkpoint auto

#include <iostream>

#include "clustertwin/report/html.h"
#include "clustertwin/report/json_out.h"
#include "clustertwin/scenario/goodput.h"
#include "commands.h"
#include "field_options.h"

namespace clustertwin::app {
namespace {

struct GoodputCli {
  scenario::TrainingRequest t;
  scenario::GoodputSettings s;
  std::string json;
};

int goodput(const Context& ctx, const GoodputCli& o, bool html) {
  auto g = scenario::run_goodput(ctx, o.t, o.s);
  if (!g) return bad_input(g.error());
  const report::Json results = {{"goodput", g->json}};
  if (!o.json.empty()) {
    if (auto st = report::write_json(results, o.json); !st) return bad_input(st.error());
  }
  if (html) {
    if (auto st = report::write_text(report::render_html(results), ctx.report_path); !st) {
      return bad_input(st.error());
    }
    if (!ctx.quiet) std::cerr << "wrote " << ctx.report_path << "\n";
  }
  if (o.json != "-") std::cout << g->text;
  return kExitOk;
}

}  // namespace

Verb add_goodput(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<GoodputCli>();
  const CLI::Option* report_flag = app.get_option("--report");
  CLI::App* cmd = app.add_subcommand(
      "goodput",
      "One long training job under failures: interruptions, MTBI, where the wall time goes "
      "(ETTR) and the Young/Daly checkpoint interval, with a sweep around it.\n"
      "Example: clustertwin goodput --cluster meta-llama3-h100 --gpus 16384 --model "
      "llama3.1-405b --tp 8 --pp 16 --days 54 --checkpoint auto");
  add_fields(cmd, scenario::training_fields(), o->t, scenario::training_words());
  add_fields(cmd, scenario::goodput_fields(), o->s, scenario::goodput_words());
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  return {cmd, [&ctx, o, report_flag] { return goodput(ctx, *o, report_flag->count() > 0); }};
}

}  // namespace clustertwin::app
