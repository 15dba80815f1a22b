// A design study run end to end (study.h; moved from apps/clustertwin/cmd_sweep.cpp).

#include "clustertwin/scenario/study.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>

#include "clustertwin/report/progress.h"
#include "clustertwin/scenario/scenario_file.h"
#include "clustertwin/sweep/analysis.h"
#include "clustertwin/sweep/design.h"
#include "clustertwin/sweep/store.h"

namespace clustertwin::scenario {
namespace {

sweep::PointFn point_runner(const Environment& env, const sweep::Design& design) {
  return [&env, &design](const sweep::Point&, const YAML::Node& scenario) {
    sweep::PointResult r;
    const config::Document doc{scenario, design.file};
    try {
      auto out = run_scenario(env, doc, /*quiet=*/true);
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

}  // namespace

base::Result<StudyRun> run_study(const Environment& env, const StudyRequest& r,
                                 const sweep::Cluster& cluster) {
  const bool root = cluster.rank() == 0;
  auto design = sweep::load_design(r.file);
  if (!design) return base::fail(design.error());
  // Every point's scenario is read before anything runs: a misspelt key is the design's error,
  // not a column of failed points.
  auto checked = sweep::check_points(*design, [&design](const YAML::Node& scenario) {
    return check_scenario({scenario, design->file});
  });
  if (!checked) return base::fail(checked.error());
  StudyRun run;
  run.name = design->name;
  run.db = !r.db.empty() ? r.db : std::filesystem::path(r.file).stem().string() + ".db";
  std::optional<sweep::Store> store;
  std::optional<base::Error> open_error;
  int verdict = 0;
  if (root) {
    auto s = sweep::Store::open(run.db, *design);
    if (!s) {
      open_error = s.error();
      verdict = s.error().kind == base::ErrorKind::kSystem ? 1 : 2;
    } else {
      store.emplace(std::move(*s));
    }
  }
  // Every rank learns whether rank 0 could open the store.
  verdict = cluster.broadcast(verdict);
  if (verdict != 0) {
    if (open_error) return base::fail(*open_error);
    return base::fail(
        base::Error{"the store did not open on rank 0",
                    {},
                    0,
                    verdict == 1 ? base::ErrorKind::kSystem : base::ErrorKind::kInput});
  }
  run.threads = r.threads > 0 ? r.threads
                : cluster.size() > 1
                    ? 1
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::optional<report::Progress> bar;
  if (root) {
    const int64_t todo =
        static_cast<int64_t>(design->points.size()) - (store ? store->done_count() : 0);
    bar.emplace(report::Progress::to_stderr("sweep", todo, r.quiet));
  }
  sweep::RunOptions ro{.threads = run.threads,
                       .progress = [&bar](int64_t done, int64_t) { bar->set(done); }};
  const auto start = std::chrono::steady_clock::now();
  auto summary =
      sweep::run_sweep(*design, root ? &*store : nullptr, point_runner(env, *design), ro, cluster);
  if (!root) return run;
  bar->finish();
  if (!summary) return base::fail(summary.error());
  run.summary = *summary;
  if (auto st = store->finalize(); !st) return base::fail(st.error());
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto table = store->table();
  if (!table) return base::fail(table.error());
  if (r.csv) {
    auto csv = store->csv();
    if (!csv) return base::fail(csv.error());
    run.csv = std::move(*csv);
  }
  run.results = sweep::study_json(*design, *table);
  run.failed = run.results["sweep"]["failed_points"].get<int64_t>();
  return run;
}

std::string study_summary(const StudyRun& run) {
  const auto& r = run.summary;
  return fmt::format(
      "sweep {}: {} points ({} run now, {} already in the database), {} with an error; "
      "results in {}\n",
      run.name, r.points, r.ran, r.already_done, run.failed, run.db);
}

std::string study_timing(const StudyRun& run) {
  const auto& r = run.summary;
  if (r.ran <= 0) return "";
  return fmt::format(
      "ran {} points in {:.2f} s on {} rank(s) x {} thread(s) ({:.3f} s per point)\n", r.ran,
      run.wall_s, r.ranks, run.threads, run.wall_s / static_cast<double>(r.ran));
}

}  // namespace clustertwin::scenario
