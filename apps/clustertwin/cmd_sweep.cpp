// `clustertwin sweep FILE`: a design study. Every point of the sweep file's design is a scenario
// run (`clustertwin run` semantics, through run_scenario_document); results land in SQLite, one
// row per point, resumable after a kill; threads on one machine, MPI ranks across machines
// (docs/sweep.md).
// Example: clustertwin sweep examples/gb300-study.yaml --threads 2 --csv study.csv
//          mpirun -np 3 clustertwin sweep examples/gb300-study.yaml

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <set>
#include <thread>

#include "clustertwin/base/file.h"
#include "clustertwin/report/html.h"
#include "clustertwin/report/json_out.h"
#include "clustertwin/report/progress.h"
#include "clustertwin/sweep/analysis.h"
#include "clustertwin/sweep/design.h"
#include "clustertwin/sweep/run.h"
#include "clustertwin/sweep/store.h"
#include "commands.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

struct SweepOptions {
  std::string file;
  std::string db;
  std::string csv;
  std::string json;
  int threads = 0;
};

sweep::PointFn point_runner(const Context& ctx, const sweep::Design& design) {
  return [&ctx, &design](const sweep::Point&, const YAML::Node& scenario) {
    sweep::PointResult r;
    Context quiet = ctx;
    quiet.quiet = true;
    quiet.no_report = true;
    const config::Document doc{scenario, design.file};
    try {
      auto out = run_scenario_document(quiet, doc);
      if (!out) {
        r.error = out.error().to_string();
        return r;
      }
      r.ok = true;
      r.results = std::move(out->results);
    } catch (const std::exception& e) {
      // An internal error of one point is that point's result; the study goes on.
      r.error = std::string("internal error: ") + e.what();
    }
    return r;
  };
}

int sweep_cmd(const Context& ctx, const SweepOptions& o, bool html) {
  sweep::Cluster cluster;
  const bool root = cluster.rank() == 0;
  auto design = sweep::load_design(o.file);
  if (!design) {
    // Every rank reads the same file; only rank 0 speaks.
    return root ? bad_input(design.error()) : kExitBadInput;
  }
  // Every point's scenario is read before anything runs: a misspelt key is the design's error
  // (exit 2), not a column of failed points. What only a run can tell (a layout that does not
  // divide the GPUs) is that point's result.
  {
    base::Errors errors;
    std::set<std::string> seen;  // one line per distinct problem, at its first point
    for (const auto& p : design->points) {
      auto st = check_scenario_document({design->scenario(p), design->file});
      if (st || !seen.insert(st.error().message).second) continue;
      std::string values;
      auto e = st.error();
      for (size_t a = 0; a < design->axes.size(); ++a) {
        const auto& path = design->axes[a].path;
        values += fmt::format("{}{}={}", a ? ", " : "", path, sweep::value_text(p.values[a]));
        // A key the design added has no line of its own: the design's line of that key.
        const std::string last = "'" + path.substr(path.rfind('.') + 1) + "'";
        if (e.line == 0 && e.message.find(last) != std::string::npos) {
          e.line = design->axes[a].line;
        }
      }
      e.message = fmt::format("point {} ({}): {}", p.id, values, e.message);
      errors.add(e);
      if (errors.items.size() >= 10) break;
    }
    if (!errors.empty()) return root ? bad_input(errors.combined()) : kExitBadInput;
  }
  const std::string db =
      !o.db.empty() ? o.db : std::filesystem::path(o.file).stem().string() + ".db";
  std::optional<sweep::Store> store;
  int verdict = kExitOk;
  if (root) {
    auto s = sweep::Store::open(db, *design);
    if (!s) {
      verdict = bad_input(s.error());
    } else {
      store.emplace(std::move(*s));
    }
  }
  verdict = cluster.broadcast(verdict);
  if (verdict != kExitOk) return verdict;

  const int threads = o.threads > 0 ? o.threads
                      : cluster.size() > 1
                          ? 1
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::optional<report::Progress> bar;
  if (root) {
    const int64_t todo =
        static_cast<int64_t>(design->points.size()) - (store ? store->done_count() : 0);
    bar.emplace(report::Progress::to_stderr("sweep", todo, ctx.quiet));
  }
  sweep::RunOptions ro{.threads = threads,
                       .progress = [&bar](int64_t done, int64_t) { bar->set(done); }};
  const auto start = std::chrono::steady_clock::now();
  auto r =
      sweep::run_sweep(*design, root ? &*store : nullptr, point_runner(ctx, *design), ro, cluster);
  if (!root) return kExitOk;
  bar->finish();
  if (!r) return bad_input(r.error());
  if (auto st = store->finalize(); !st) return bad_input(st.error());
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  auto table = store->table();
  if (!table) return bad_input(table.error());
  if (!o.csv.empty()) {
    auto csv = store->csv();
    if (!csv) return bad_input(csv.error());
    const auto st = o.csv == "-" ? base::write_stdout(*csv) : base::write_file_atomic(o.csv, *csv);
    if (!st) return bad_input(st.error());
  }
  report::Json axes = report::Json::array();
  for (const auto& a : design->axes) axes.push_back(a.path);
  report::Json outputs = report::Json::object();
  for (const auto& out : design->outputs) outputs[out.name] = out.path;
  int64_t failed = 0;
  for (const auto& row : (*table)["rows"]) {
    // columns: id, axes..., status, ...
    if (row[1 + design->axes.size()] != "ok") ++failed;
  }
  const report::Json results = {{"sweep",
                                 {{"name", design->name},
                                  {"points", design->points.size()},
                                  {"failed_points", failed},
                                  {"axes", axes},
                                  {"outputs", outputs},
                                  {"table", *table},
                                  {"analysis", sweep::analyze(*design, design->report, *table)}}}};
  if (!o.json.empty()) {
    if (auto st = report::write_json(results, o.json); !st) return bad_input(st.error());
  }
  if (html) {
    const std::string page = report::render_html(results);
    if (auto st = report::write_text(page, ctx.report_path); !st) return bad_input(st.error());
    if (!ctx.quiet) std::cerr << "wrote " << ctx.report_path << "\n";
  }
  if (o.json != "-" && o.csv != "-") {
    std::cout << fmt::format(
        "sweep {}: {} points ({} run now, {} already in the database), {} with an error; "
        "results in {}\n",
        design->name, r->points, r->ran, r->already_done, failed, db);
  }
  // Wall-clock figures vary run to run: stderr, never the database or stdout.
  if (!ctx.quiet && r->ran > 0) {
    std::cerr << fmt::format(
        "ran {} points in {:.2f} s on {} rank(s) x {} thread(s) ({:.3f} s per point)\n", r->ran,
        wall, r->ranks, threads, wall / static_cast<double>(r->ran));
  }
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
  cmd->add_option("file", o->file, "sweep YAML/JSON file (docs/sweep.md)")->required();
  cmd->add_option("--db", o->db,
                  "SQLite database of the results (default: FILE's name with .db, here); an "
                  "existing one of the same sweep is resumed");
  cmd->add_option("--csv", o->csv, "write the points table as CSV to FILE ('-' for stdout)");
  cmd->add_option("--json", o->json, "write the sweep's table as JSON to FILE ('-' for stdout)");
  cmd->add_option("--threads", o->threads,
                  "points run at once on this process (default: all cores; 1 per rank under MPI)")
      ->check(flags::range(o->threads, 0, 1024));
  const CLI::Option* report_flag = app.get_option("--report");
  return {cmd, [&ctx, o, report_flag] { return sweep_cmd(ctx, *o, report_flag->count() > 0); }};
}

}  // namespace clustertwin::app
