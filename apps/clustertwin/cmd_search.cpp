// `clustertwin search`: which training layout is best for a model on N GPUs.
// Example: clustertwin search --cluster meta-llama3-h100 --gpus 16384 --model llama3.1-405b
//          --global-batch 2048 --seq-len 8192

#include <fmt/format.h>

#include <iostream>

#include "clustertwin/report/json_out.h"
#include "clustertwin/report/progress.h"
#include "clustertwin/report/table.h"
#include "clustertwin/search/layout_search.h"
#include "commands.h"
#include "field_options.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

struct SearchOptions {
  TrainOptions t;
  int top = 10, threads = 0;
  std::string json;
};

int search_cmd(const Context& ctx, const SearchOptions& o) {
  // Everything but the parallel layout, resolved as every training verb resolves it.
  auto job_r = scenario::resolve_training_search(ctx, o.t);
  if (!job_r) return bad_input(job_r.error());
  const auto& job = **job_r;
  const auto* spec = &job.cluster->spec;
  const auto* topo = &job.cluster->topo;
  const auto* model = &job.model;
  const auto& gpu = job.cluster->gpu();
  const int64_t gpus = job.gpus;
  const auto& base = job.layout;
  const auto& setup = job.setup;
  const bool fitted = job.compute_scale.has_value() && o.t.overhead < 0;
  search::LayoutSpace space{.gpus = gpus, .domain_size = topo->domain_size()};
  auto bar = report::Progress::to_stderr("layouts", 1, ctx.quiet);
  auto r = search::search_layouts(setup, space, o.top, o.threads,
                                  [&bar](int64_t done, int64_t) { bar.set(done); });
  bar.finish();
  if (r.best.empty()) {
    return bad_input(fmt::format(
        "no layout of {} on {} GPUs fits in {} of HBM with global batch {} "
        "({} layouts tried)",
        model->name, gpus, base::format(gpu.hbm_usable), base.global_batch, r.candidates));
  }
  report::Json j = {{"cluster", spec->name},
                    {"model", model->name},
                    {"gpus", gpus},
                    {"global_batch", base.global_batch},
                    {"seq_len", base.seq_len},
                    {"candidates", r.candidates},
                    {"feasible", r.feasible}};
  if (fitted) {
    j["compute_scale"] = report::round_sig(*job.compute_scale);
    j["calibration_profile"] = job.calibration_path;
  }
  report::Json best = report::Json::array();
  report::Table t({"rank", "layout", "step s", "tokens/s/GPU", "MFU", "memory GB"}, {false, true});
  int rank = 1;
  for (const auto& s : r.best) {
    best.push_back(
        {{"layout", s.key()},
         {"step_time_s", report::round_sig(s.step_time_s)},
         {"tokens_per_s_per_gpu", report::round_sig(s.tokens_per_s / static_cast<double>(gpus))},
         {"mfu", report::round_sig(s.mfu)},
         {"memory_B", report::round_sig(s.memory_B)}});
    t.add({std::to_string(rank++), s.key(), fmt::format("{:.3f}", s.step_time_s),
           fmt::format("{:.0f}", s.tokens_per_s / static_cast<double>(gpus)),
           fmt::format("{:.1f}%", 100 * s.mfu), fmt::format("{:.1f}", s.memory_B / 1e9)});
  }
  j["best"] = best;
  if (!o.json.empty()) {
    if (auto st = report::write_json({{"search", j}}, o.json); !st) return bad_input(st.error());
  }
  // Wall-clock time varies run to run: stderr, so that stdout and JSON are deterministic.
  if (!ctx.quiet) {
    std::cerr << fmt::format("searched {} layouts in {:.2f} s ({:.0f} layouts/s)\n", r.candidates,
                             r.wall_s,
                             static_cast<double>(r.candidates) / std::max(r.wall_s, 1e-9));
  }
  if (o.json != "-") {
    std::cout << fmt::format("{} on {} GPUs of {}: {} layouts, {} valid and fitting\n\n",
                             model->name, gpus, spec->name, r.candidates, r.feasible);
    std::cout << t.render(2);
    if (fitted) {
      std::cout << fmt::format(
          "\n  compute-time scale {:.4g} fitted to measured steps (calibration "
          "profile {})\n",
          *job.compute_scale, job.calibration_path);
    }
    std::cout
        << "\n  (closed-form estimates; run `clustertwin train` with the chosen layout for the "
           "event-driven step, trace and breakdown)\n";
  }
  return kExitOk;
}

}  // namespace

Verb add_search(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<SearchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "search",
      "Which training layout (TP, PP, CP, EP, VPP, micro-batch, recomputation) is fastest for a "
      "model on N GPUs, among those that fit in memory.\n"
      "Example: clustertwin search --cluster meta-llama3-h100 --gpus 16384 --model llama3.1-405b "
      "--global-batch 2048 --seq-len 8192");
  add_fields(cmd, scenario::training_fields(), o->t, scenario::training_words());
  cmd->add_option("--top", o->top, "layouts to show")
      ->check(flags::range(o->top, 1, 1000))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "worker threads (default: all cores)")
      ->check(flags::range(o->threads, 0, 1024));
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  return {cmd, [&ctx, o] { return search_cmd(ctx, *o); }};
}

}  // namespace clustertwin::app
