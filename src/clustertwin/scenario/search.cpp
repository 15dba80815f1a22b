// The training layout search's settings, their field table and the search's run (docs/models/
// training.md §layout search for the search; DESIGN.md §2 for the field tables).

#include "clustertwin/scenario/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "clustertwin/base/number.h"
#include "clustertwin/report/json_out.h"
#include "clustertwin/report/table.h"
#include "clustertwin/search/training_search.h"

namespace clustertwin::scenario {

namespace {

using S = SearchSettings;
using F = Field<S>;

FieldTable<S> make_search_fields() {
  return {
      F{.key = "precisions",
        .flag = "precisions",
        .name = "precisions searched",
        .member = &S::precisions,
        .help = "precisions to search, comma-separated (bf16,fp8); default: {precision}"},
      F{.key = "zero_stages",
        .flag = "zero-stages",
        .name = "ZeRO stages searched",
        .member = &S::zero_stages,
        .help = "ZeRO stages to search, comma-separated (3: FSDP, each part's parameters "
                "gathered before its forward and backward, gradients reduce-scattered, in every "
                "micro-batch)",
        .show_default = true},
      F{.key = "confirm",
        .flag = "confirm",
        .name = "layouts confirmed",
        .member = &S::confirm,
        .help = "run the K best layouts by the closed form through the event model and rank "
                "them by its step (0: the closed form only)",
        .ints = {.min = 0, .max = 1000},
        .show_default = true},
      F{.key = "top",
        .flag = "top",
        .name = "layouts shown",
        .member = &S::top,
        .help = "layouts to show",
        .ints = {.min = 1, .max = 1000},
        .show_default = true},
      F{.key = "threads",
        .flag = "threads",
        .name = "threads",
        .member = &S::threads,
        .help = "worker threads (default: all cores)",
        .ints = {.min = 0, .max = 1024}},
  };
}

/// The items of a comma-separated list ("bf16,fp8"); an empty item is kept (and refused).
std::vector<std::string> items_of(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  if (!list.empty() && list.back() == ',') out.emplace_back();
  return out;
}

/// The search space of the settings around a resolved job.
base::Result<search::TrainingSpace> space_of(const TrainingJob& job, const TrainingRequest& r,
                                             const SearchSettings& s) {
  const auto& gpu = job.cluster->gpu();
  search::TrainingSpace space{.gpus = job.gpus, .domain_size = job.cluster->topo.domain_size()};
  for (const auto& item : items_of(s.precisions.empty() ? r.precision : s.precisions)) {
    auto d = compute::parse_dtype(item);
    if (!d) {
      return base::fail("{precisions}: expected a comma-separated list of bf16, fp8, fp4, got '" +
                        item + "'");
    }
    auto peak = gpu.peak_for(compute::peak_precision(job.compute->effective(*d)));
    if (!peak) {
      return base::fail("{precisions}: " + item + ": the GPU " + gpu.name +
                        " has no dense peak at this precision in the catalog");
    }
    if (std::none_of(space.precisions.begin(), space.precisions.end(),
                     [&](const auto& p) { return p.dtype == *d; })) {
      space.precisions.push_back({*d, peak->dense});
    }
  }
  space.zeros.clear();
  for (const auto& item : items_of(s.zero_stages)) {
    if (item != "0" && item != "1" && item != "2" && item != "3") {
      return base::fail("{zero_stages}: expected a comma-separated list of 0, 1, 2, 3, got '" +
                        item + "'");
    }
    const int z = item[0] - '0';
    if (std::find(space.zeros.begin(), space.zeros.end(), z) == space.zeros.end()) {
      space.zeros.push_back(z);
    }
  }
  if (space.zeros.empty()) return base::fail("{zero_stages}: expected at least one stage");
  return space;
}

}  // namespace

const FieldTable<SearchSettings>& search_fields() {
  static const FieldTable<SearchSettings> kTable = make_search_fields();
  return kTable;
}

const std::vector<FieldWord>& search_words() {
  static const std::vector<FieldWord> kWords = words_of<S>({&search_fields()}, training_words());
  return kWords;
}

base::Result<SearchRun> run_search(const Environment& env, const TrainingRequest& r,
                                   const SearchSettings& s) {
  for (const auto& f : search_fields()) {
    if (auto st = check_field(f, s); !st) return base::fail(st.error());
  }
  auto job_r = resolve_training_search(env, r);
  if (!job_r) return base::fail(job_r.error());
  const TrainingJob& job = **job_r;
  const auto& spec = job.cluster->spec;
  const auto& gpu = job.cluster->gpu();
  const auto& model = job.model;
  const int64_t gpus = job.gpus;
  const auto& base = job.layout;
  const auto& setup = job.setup;
  const bool fitted = job.compute_scale.has_value() && r.overhead < 0;
  auto space = space_of(job, r, s);
  if (!space) return base::fail(space.error());
  auto searched = search::search_training(setup, *space, std::max(s.top, s.confirm), s.threads);
  if (!searched) return base::fail(searched.error());
  const auto& res = *searched;
  if (res.best.empty()) {
    return base::fail(
        fmt::format("no layout of {} on {} GPUs fits in {} of HBM with global batch {} "
                    "({} layouts valid of {} tried)",
                    model.name, gpus, base::format(gpu.hbm_usable), base.global_batch, res.valid,
                    res.enumerated));
  }
  // The leaders: with confirm K, the K best by the closed form run through the event model and
  // ranked by its step time; else the closed form's own ranking (its full result for the table).
  struct Row {
    workload::TrainingLayout layout;
    double analytical_s;
    execution::TrainingResult result;
  };
  std::vector<Row> rows;
  int confirmed = s.confirm;
  int64_t capped_passes = 0;  // the passes of the first leader left out, when the budget cut
  if (s.confirm > 0) {
    // The event model's cost is its micro-batch passes (micro-batches x pp x vpp, held and run
    // one by one): the leaders confirmed hold at most s.confirm_passes in all, so a huge global
    // batch (3e7 sequences on 8 GPUs: 10 steps of 3.75M passes, 118 s and 3.2 GB in a release
    // build) costs one step (6 s, 0.6 GB), not ten. The best by the closed form is always
    // confirmed.
    const ptrdiff_t n = std::min<ptrdiff_t>(s.confirm, std::ssize(res.best));
    int64_t passes = 0;
    ptrdiff_t k = 0;
    for (; k < n; ++k) {
      const auto& l = res.best[static_cast<size_t>(k)].layout;
      const int64_t p = l.micro_batches() * l.pp * l.vpp;
      if (k > 0 && passes + p > s.confirm_passes) {
        capped_passes = p;
        break;
      }
      passes += p;
    }
    if (k < n) confirmed = static_cast<int>(k);
    std::vector<search::TrainingCandidate> leaders(res.best.begin(), res.best.begin() + k);
    for (auto& x : search::confirm_with_event_model(setup, leaders, *space)) {
      rows.push_back({x.analytical.layout, x.analytical.step_time_s, std::move(x.simulated)});
    }
  } else {
    for (const auto& x : res.best) {
      auto e = execution::estimate_training_step(search::setup_for(setup, *space, x.layout));
      if (e) rows.push_back({x.layout, x.step_time_s, std::move(*e)});
    }
  }
  if (rows.empty()) {
    // Every leader was refused by the event model (or by the closed form's full estimate): the
    // first one's reason says why (a step beyond the simulation clock, ...).
    auto first = execution::simulate_training_step(
        search::setup_for(setup, *space, res.best.front().layout));
    return base::fail(fmt::format("none of the {} best layouts of {} on {} GPUs could be timed{}",
                                  std::min<int64_t>(std::max(s.confirm, 1), std::ssize(res.best)),
                                  model.name, gpus,
                                  first ? std::string() : "; the first: " + first.error().message));
  }
  if (static_cast<int>(rows.size()) > s.top) rows.resize(static_cast<size_t>(s.top));
  SearchRun out;
  out.best = rows.front().layout;
  auto& j = out.json;
  j = {{"cluster", spec.name},
       {"model", model.name},
       {"gpus", gpus},
       {"global_batch", base.global_batch},
       {"seq_len", base.seq_len},
       {"candidates", res.enumerated},
       {"valid", res.valid},
       {"feasible", res.fitting},
       {"confirmed_with_event_model", confirmed}};
  if (fitted) {
    j["compute_scale"] = report::round_sig(*job.compute_scale);
    j["calibration_profile"] = job.calibration_path;
  }
  if (!job.compute_note.empty()) j["calibration_profile"] = r.calibration;
  nlohmann::json best = nlohmann::json::array();
  report::Table t({"rank", "layout", "step s", "closed form s", "tokens/s/GPU", "MFU", "memory GB"},
                  {false, true});
  int rank = 1;
  const auto per_gpu = static_cast<double>(gpus);
  for (const auto& row : rows) {
    const auto& x = row.result;
    const std::string key = search::TrainingCandidate{.layout = row.layout}.key();
    best.push_back({{"layout", key},
                    {"step_time_s", report::round_sig(x.step_time_s)},
                    {"analytical_step_time_s", report::round_sig(row.analytical_s)},
                    {"tokens_per_s_per_gpu", report::round_sig(x.tokens_per_s / per_gpu)},
                    {"mfu", report::round_sig(x.mfu)},
                    {"memory_B", report::round_sig(x.memory.total().base())}});
    t.add({std::to_string(rank++), key, fmt::format("{:.3f}", x.step_time_s),
           fmt::format("{:.3f}", row.analytical_s), fmt::format("{:.0f}", x.tokens_per_s / per_gpu),
           fmt::format("{:.1f}%", 100 * x.mfu),
           fmt::format("{:.1f}", x.memory.total().base() / 1e9)});
  }
  j["best"] = best;
  out.timing = fmt::format(
      "searched {} layouts ({} valid, memory of each evaluated) in {:.3f} s CPU, {:.3f} s wall "
      "({:.0f} valid layouts per CPU second)",
      res.enumerated, res.valid, res.cpu_s, res.wall_s,
      static_cast<double>(res.valid) / std::max(res.cpu_s, 1e-9));
  out.text = fmt::format("{} on {} GPUs of {}: {} layouts, {} valid, {} fitting in memory\n\n",
                         model.name, gpus, spec.name, res.enumerated, res.valid, res.fitting);
  out.text += t.render(2);
  if (fitted) {
    out.text += fmt::format(
        "\n  compute-time scale {:.4g} fitted to measured steps (calibration profile {})\n",
        *job.compute_scale, job.calibration_path);
  }
  if (!job.compute_note.empty()) out.text += "\n  " + job.compute_note + "\n";
  if (s.confirm > 0) {
    out.text += fmt::format(
        "\n  step s: the event-driven step of the {} best by the closed form, ranked by it; "
        "`clustertwin train` with a layout gives its trace and breakdown\n",
        confirmed);
    if (confirmed < s.confirm && capped_passes > 0) {
      out.text += fmt::format(
          "  (of the {} asked: with the next one's {} micro-batch passes the confirmations "
          "would run more than {}, the event model's bound for one search)\n",
          s.confirm, capped_passes, s.confirm_passes);
    }
  } else {
    out.text +=
        "\n  (closed-form estimates; run `clustertwin train` with the chosen layout for the "
        "event-driven step, trace and breakdown)\n";
  }
  return out;
}

base::Result<TrainingRequest> with_layout(TrainingRequest r, const workload::TrainingLayout& l) {
  r.tp = l.tp;
  r.pp = l.pp;
  r.dp = l.dp;
  r.cp = l.cp;
  r.ep = l.ep;
  r.etp = l.etp;
  r.vpp = l.vpp;
  r.micro_batch = l.micro_batch;
  r.global_batch = l.global_batch;
  r.seq_len = l.seq_len;
  r.zero = l.zero;
  switch (l.dtype) {
    case compute::DType::kBf16:
      r.precision = "bf16";
      break;
    case compute::DType::kFp8:
      r.precision = "fp8";
      break;
    case compute::DType::kNvfp4:
      r.precision = "fp4";
      break;
    default:
      return base::fail(std::string("{precision}: the searched layout's precision ") +
                        compute::dtype_name(l.dtype) + " is not one of bf16, fp8, fp4");
  }
  r.recompute = models::recompute_name(l.recompute);
  // Selective with no module bits is Megatron's default (core_attn); other sets are named.
  r.recompute_modules = l.recompute == models::Recompute::kSelective && l.recompute_modules != 0
                            ? workload::recompute_modules_name(l.recompute_modules)
                            : "";
  return r;
}

}  // namespace clustertwin::scenario
