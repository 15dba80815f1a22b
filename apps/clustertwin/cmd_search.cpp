// `clustertwin search`: which training layout is best for a model on N GPUs.
// Example: clustertwin search --cluster meta-llama3-h100 --gpus 16384 --model llama3.1-405b
//          --global-batch 2048 --seq-len 8192

#include <fmt/format.h>

#include <iostream>

#include "clustertwin/calibration/step_fit.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/report/json_out.h"
#include "clustertwin/report/progress.h"
#include "clustertwin/report/table.h"
#include "clustertwin/search/layout_search.h"
#include "commands.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

struct SearchOptions {
  std::string cluster = "azure-ndv6-gb300";
  int64_t gpus = 0;
  std::string model = "llama3.1-405b";
  int64_t global_batch = 0, seq_len = 0;
  std::string precision = "bf16";
  int top = 10, threads = 0;
  bool tp_overlap = false;
  std::string calibration;
  std::string json;
};

int search_cmd(const Context& ctx, const SearchOptions& o) {
  auto c = ctx.load_cluster(o.cluster);
  if (!c) return bad_input(c.error());
  const auto* cat = &c->catalog;
  const auto* spec = &c->spec;
  const auto* topo = &c->topo;
  auto model = models::load_model(*cat, o.model);
  if (!model) return bad_input(model.error());
  const auto& gpu = c->gpu();
  const int64_t gpus = o.gpus > 0 ? o.gpus : topo->gpus();
  if (gpus > topo->gpus()) {
    return bad_input(fmt::format("--gpus {} is more than cluster '{}' has ({})", gpus, spec->name,
                                 topo->gpus()));
  }
  auto dtype = compute::parse_dtype(o.precision);
  if (!dtype) return bad_input("--precision: expected bf16, fp8 or fp4, got '" + o.precision + "'");
  auto cm = compute::ComputeModel::for_gpu(gpu, *cat);
  if (!cm) return bad_input(cm.error());
  execution::AnalyticalComm comm(*topo);
  workload::TrainingLayout base;
  base.seq_len = o.seq_len > 0 ? o.seq_len : 4096;
  // Default: a sequence per 8 GPUs (and at least one: 7 GPUs once gave a global batch of 0).
  base.global_batch = o.global_batch > 0 ? o.global_batch : std::max<int64_t>(1, gpus / 8);
  base.dtype = *dtype;
  base.tp_comm_overlap = o.tp_overlap;
  execution::TrainingSetup setup{
      .model = &*model,
      .layout = base,
      .compute = &*cm,
      .comm = &comm,
      .memory_capacity = gpu.hbm_usable,
      .peak = gpu.peak_for(compute::peak_precision(cm->effective(*dtype)))->dense};
  std::optional<calibration::TrainingCalibration> fitted;
  if (!o.calibration.empty()) {
    // Search prices communication with closed forms (AnalyticalComm): of a profile it runs the
    // training model's compute-time scale, and refuses one that holds only collective lines.
    auto tc = calibration::training_calibration_of(
        o.calibration, (*c->catalog.system(spec->system))->gpu, "--calibration");
    if (!tc) return bad_input(tc.error());
    if (!*tc) {
      return bad_input("--calibration: " + o.calibration +
                       " has no training: mapping (the compute-time scale `calibrate` fits to "
                       "step times); search prices communication with closed forms, so "
                       "collective lines alone would change nothing");
    }
    fitted = *tc;
    setup.framework_overhead = fitted->compute_scale - 1.0;
  }
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
    j["compute_scale"] = report::round_sig(fitted->compute_scale);
    j["calibration_profile"] = fitted->path;
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
          fitted->compute_scale, fitted->path);
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
  cmd->add_option("--cluster", o->cluster, "catalog name, cluster file or SYSTEM*COUNT")
      ->capture_default_str();
  cmd->add_option("--gpus", o->gpus, "GPUs of the job (default: the whole cluster)")
      ->check(flags::positive(o->gpus, base::kMaxGpus));
  cmd->add_option("--model", o->model, "catalog model, YAML file or HF config.json")
      ->capture_default_str();
  cmd->add_option("--global-batch", o->global_batch, "sequences per step (default: gpus/8)")
      ->check(flags::positive(o->global_batch, base::kMaxBatch));
  cmd->add_option("--seq-len", o->seq_len, "sequence length (default 4096)")
      ->check(flags::positive(o->seq_len, base::kMaxSequence));
  cmd->add_option("--precision", o->precision, "bf16, fp8 or fp4")->capture_default_str();
  cmd->add_flag("--tp-overlap", o->tp_overlap, "assume TP communication overlap");
  cmd->add_option("--top", o->top, "layouts to show")
      ->check(flags::range(o->top, 1, 1000))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "worker threads (default: all cores)")
      ->check(flags::range(o->threads, 0, 1024));
  cmd->add_option("--calibration", o->calibration,
                  "a calibration profile with a training: mapping (`clustertwin calibrate` on "
                  "step times): its compute-time scale");
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  return {cmd, [&ctx, o] { return search_cmd(ctx, *o); }};
}

}  // namespace clustertwin::app
