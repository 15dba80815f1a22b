#pragma once
/// Which serving configuration is best (`--serving auto`; docs/models/inference.md, "search").
///
/// Space: every instance layout that is valid for the model and fits in memory -- TP (x EP) with
/// optional PP for dense and MoE models, attention-DP + EP ("DEP", wide EP up to the NVLink
/// domain) for MoE models -- times per-rank batch limits 1, 2, 4, ..., 2048, aggregated (as
/// many replicas as the GPUs hold) or disaggregated (a prefill instance layout and a decode
/// instance layout, with the pool split that balances prompt and decode rates on the GPUs).
/// Each point is scored with the steady-state estimate (execution::estimate_serving, ~1 ms);
/// points whose estimated p99-style TTFT and TPOT meet the limits are ranked by tokens/s per GPU
/// (GPUs left idle by a layout count), and the best few are verified with the discrete-event
/// simulation (server / interactive: the highest compliant Poisson rate; offline: one run).
/// The Pareto frontier is tokens/s per GPU against tokens/s per user over every point.
/// When nothing meets the limits the point closest to them is returned as the best effort.
/// Work is split over threads by index and results are sorted by a total order, so the answer
/// does not depend on the thread count.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "clustertwin/execution/serving_sim.h"

namespace clustertwin::search {

struct ServingSpace {
  int64_t gpus = 0;     ///< GPUs to deploy on
  int domain_size = 8;  ///< TP and attention-DP + EP stay inside one NVLink domain
  std::vector<int64_t> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
  bool disaggregated = true;  ///< also try prefill / decode pools
  int verify = 4;  ///< leading candidates (alternately aggregated / disaggregated) simulated
  int64_t verify_requests = 0;  ///< requests per verification run (0: the LoadGen default)
};

struct ServingPoint {
  workload::ServingLayout layout;
  int64_t batch = 0;                ///< decode sequences per rank
  double tokens_per_s_per_gpu = 0;  ///< over all the space's GPUs
  double tokens_per_s_per_user = 0;
  double ttft_s = 0, tpot_s = 0;
  int64_t gpus_used = 0;
  bool meets = false;
  bool pareto = false;
  bool verified = false;  ///< figures from the event simulation
  [[nodiscard]] std::string label() const { return layout.label(); }
};

struct ServingSearchResult {
  std::vector<ServingPoint> points;  ///< every scored point, best first
  int best = -1;                     ///< index into points; -1 when nothing could be scored
  bool found = false;                ///< the best meets the limits
  std::optional<execution::RateSearch> rate;    ///< server / interactive verification of best
  std::optional<execution::ServingResult> run;  ///< the best's event run (offline: its result)
  int64_t layouts = 0, rejected = 0;  ///< instance layouts tried / rejected (validity, memory)
  std::vector<std::string> notes;
  double wall_s = 0;
};

/// Searches around `base` (model, compute, fabric, memory, dataset, scenario, limits, precision,
/// KV precision, MTP and calibration are kept; the layout is searched). `threads` <= 0 uses the
/// hardware concurrency.
base::Result<ServingSearchResult> search_serving(
    const execution::ServingSetup& base, const ServingSpace& space, int threads = 0,
    const std::function<void(int64_t, int64_t)>& progress = {});

/// Valid instance layouts of a model for a space (before memory checks): TP x {EP 1, EP = TP},
/// PP for what TP alone cannot hold, and DEP for MoE models.
std::vector<workload::InstanceLayout> instance_layouts(const models::ModelSpec& m, int domain_size,
                                                       int64_t gpus);

/// One step of a generation comparison: the best tokens/s per GPU under the limits after
/// changing one more thing from the baseline toward the target.
struct GenerationStep {
  std::string change;  ///< "baseline", "GPU compute and bandwidth", "memory", "FP4", ...
  std::string label;   ///< the best layout there
  double tokens_per_s_per_gpu = 0;
  double factor = 1;  ///< over the previous step
  bool meets = false;
};

/// What a hardware target buys over a baseline for one model and scenario, broken into the
/// reasons: the target GPU with the baseline's memory, precision and NVLink domain; then its own
/// memory; then the target precision; then its NVLink domain (and GPU count). Every step is the
/// best configuration the search finds, under the same software assumptions (steady-state
/// estimates, no verification).
struct GenerationTarget {
  const hardware::GpuSpec* gpu = nullptr;
  const compute::ComputeModel* compute = nullptr;
  execution::ServingFabric fabric;
  int64_t gpus = 0;
  compute::DType weights = compute::DType::kNvfp4;
};
base::Result<std::vector<GenerationStep>> generation_breakdown(const execution::ServingSetup& base,
                                                               const GenerationTarget& from,
                                                               const GenerationTarget& to,
                                                               int threads = 0);

}  // namespace clustertwin::search
