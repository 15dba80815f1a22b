// `clustertwin schedule`: a cluster over days to months (docs/models/orchestration.md): a job
// stream (trace or synthetic), a queue policy, a placement policy, failures and checkpoints.
// The request, its flags and its run are the library's (scenario/schedule.h); this is the door.
// Example: clustertwin schedule --cluster azure-ndv6-gb300 --synthetic llm --days 30
//          --policy easy --compare block,first-fit --spares 2 --seed 1

#include <iostream>

#include "clustertwin/report/html.h"
#include "clustertwin/report/json_out.h"
#include "clustertwin/scenario/schedule.h"
#include "commands.h"
#include "field_options.h"

namespace clustertwin::app {
namespace {

struct ScheduleCli {
  scenario::ScheduleRequest request;
  std::string json, jobs_csv;
};

int schedule(const Context& ctx, const ScheduleCli& o, bool html) {
  auto run = scenario::run_schedule(ctx, o.request, ctx.quiet, !o.jobs_csv.empty());
  if (!run) return bad_input(run.error());
  const report::Json results = {{"schedule", run->json}};
  if (!o.json.empty()) {
    if (auto st = report::write_json(results, o.json); !st) return bad_input(st.error());
  }
  if (html) {
    if (auto st = report::write_text(report::render_html(results), ctx.report_path); !st) {
      return bad_input(st.error());
    }
    if (!ctx.quiet) std::cerr << "wrote " << ctx.report_path << "\n";
  }
  if (!o.jobs_csv.empty()) {
    if (auto st = report::write_text(run->jobs_csv, o.jobs_csv); !st) return bad_input(st.error());
  }
  if (o.json != "-") std::cout << run->text;
  return kExitOk;
}

}  // namespace

Verb add_schedule(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<ScheduleCli>();
  const CLI::Option* report_flag = app.get_option("--report");
  CLI::App* cmd = app.add_subcommand(
      "schedule",
      "A cluster over days to months: jobs from a trace or a synthetic LLM mix, queue and "
      "placement policies, failures with hot spares and checkpoints; utilisation, waits, "
      "interruptions, goodput and ETTR.\n"
      "Example: clustertwin schedule --cluster azure-ndv6-gb300 --synthetic llm --days 30 "
      "--policy easy --compare block,first-fit --spares 2 --report schedule.html");
  add_fields(cmd, scenario::schedule_fields(), o->request, scenario::schedule_words());
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  cmd->add_option("--jobs-csv", o->jobs_csv, "write one line per job of the first run to FILE");
  return {cmd, [&ctx, o, report_flag] { return schedule(ctx, *o, report_flag->count() > 0); }};
}

}  // namespace clustertwin::app
