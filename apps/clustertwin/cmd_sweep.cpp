// `clustertwin sweep FILE`: a design study. Every point of the sweep file's design is a scenario
// run (`clustertwin run` semantics); results land in SQLite, one row per point, resumable after a
// kill; threads on one machine, MPI ranks across machines (docs/sweep.md). The study's run is the
// library's (scenario/study.h); this is the door.
// Example: clustertwin sweep examples/gb300-study.yaml --threads 2 --csv study.csv
//          mpirun -np 3 clustertwin sweep examples/gb300-study.yaml

#include <iostream>

#include "clustertwin/base/file.h"
#include "clustertwin/report/html.h"
#include "clustertwin/report/json_out.h"
#include "clustertwin/scenario/study.h"
#include "commands.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

/// The request plus this door's outputs.
struct SweepOptions {
  scenario::StudyRequest r;
  std::string csv, json;
};

int sweep_cmd(const Context& ctx, SweepOptions o, bool html) {
  sweep::Cluster cluster;
  const bool root = cluster.rank() == 0;
  o.r.quiet = ctx.quiet;
  o.r.csv = !o.csv.empty();
  auto run = scenario::run_study(ctx, o.r, cluster);
  if (!run) {
    // Every rank reads the same file; only rank 0 speaks.
    if (root) return bad_input(run.error());
    return run.error().kind == base::ErrorKind::kSystem ? kExitInternal : kExitBadInput;
  }
  if (!root) return kExitOk;
  if (!o.csv.empty()) {
    const auto st =
        o.csv == "-" ? base::write_stdout(run->csv) : base::write_file_atomic(o.csv, run->csv);
    if (!st) return bad_input(st.error());
  }
  if (!o.json.empty()) {
    if (auto st = report::write_json(run->results, o.json); !st) return bad_input(st.error());
  }
  if (html) {
    const std::string page = report::render_html(run->results);
    if (auto st = report::write_text(page, ctx.report_path); !st) return bad_input(st.error());
    if (!ctx.quiet) std::cerr << "wrote " << ctx.report_path << "\n";
  }
  if (o.json != "-" && o.csv != "-") std::cout << scenario::study_summary(*run);
  if (!ctx.quiet) std::cerr << scenario::study_timing(*run);
  return kExitOk;
}

}  // namespace

Verb add_sweep(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Run a design study: every point of a sweep file (products, zipped lists, Latin "
      "hypercubes over scenario keys) as a scenario run, results in SQLite (one row per point; "
      "resumable after a kill). Threads here, MPI ranks under mpirun.\n"
      "Example: clustertwin sweep examples/gb300-study.yaml --csv study.csv\n"
      "         mpirun -np 3 clustertwin sweep examples/gb300-study.yaml");
  cmd->add_option("file", o->r.file, "sweep YAML/JSON file (docs/sweep.md)")->required();
  cmd->add_option("--db", o->r.db,
                  "SQLite database of the results (default: FILE's name with .db, here); an "
                  "existing one of the same sweep is resumed");
  cmd->add_option("--csv", o->csv, "write the points table as CSV to FILE ('-' for stdout)");
  cmd->add_option("--json", o->json, "write the sweep's table as JSON to FILE ('-' for stdout)");
  cmd->add_option("--threads", o->r.threads,
                  "points run at once on this process (default: all cores; 1 per rank under MPI)")
      ->check(flags::range(o->r.threads, 0, 1024));
  const CLI::Option* report_flag = app.get_option("--report");
  return {cmd, [&ctx, o, report_flag] { return sweep_cmd(ctx, *o, report_flag->count() > 0); }};
}

}  // namespace clustertwin::app
