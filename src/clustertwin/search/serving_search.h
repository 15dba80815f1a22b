#pragma once
/// Which serving configuration is best (`--serving auto`; docs/models/inference.md, "search").
///
/// Space -- what MLPerf submitters and the TensorRT-LLM recipes tune: every instance layout that
/// is valid for the model and fits in memory -- TP (x EP) with optional PP for dense and MoE
/// models, attention-DP + EP ("DEP", wide EP up to the NVLink domain) for MoE models -- times
/// per-rank batch limits (a 1-1.5-2 geometric grid up to the layout's memory limit, which is
/// added itself), times the prompt-token budget per iteration on top of the decode batch
/// (max_num_tokens = batch x (1 + draft tokens) + budget), chunked prefill on and off (off only
/// when the base layout has it off: `--no-chunked-prefill` is a constraint, not a start), MTP
/// draft lengths 0..k when the base layout allows k, aggregated (as many replicas as the GPUs
/// hold) or disaggregated (a prefill layout and budget x a decode layout and batch, with the
/// pool split that balances the two rates on the GPUs).
///
/// Pruning by analytic bounds: batches beyond twice the memory limit at the mean context are not
/// scored (the KV cache cannot hold them); under a TPOT limit the batch loop of a layout stops at
/// the first batch whose estimated TPOT is over it (TPOT grows with the batch); prefill layouts
/// whose TTFT alone misses the limit are not paired.
///
/// Scoring: the steady-state estimate (execution::estimate_serving) with one StepModel per
/// layout built once at the largest limits (its tables depend on the limits only through their
/// reach); points whose estimated TTFT and TPOT meet the limits are ranked by tokens/s per GPU
/// (GPUs left idle by a layout count). Verification with the discrete-event simulation: the
/// leading aggregated and disaggregated points, then a local search around the best verified
/// one (neighbouring batch, budget and chunking), so that an estimate's misranking of close
/// points costs nothing (the reason auto once found less than a submitter's layout). Offline,
/// one LoadGen run each; server / interactive, the highest compliant Poisson rate, candidates one
/// after the other, each first probed just above the best rate found before it and dropped when
/// it misses the limits there (one early-stopped probe instead of a rate search).
/// The frontier: per kind (aggregated, disaggregated), the points that meet the TTFT limit and
/// that no other point beats in both tokens/s per GPU and tokens/s per user.
/// When nothing meets the limits the point closest to them is returned as the best effort.
/// Work is split over threads by layout (scoring) and by run (offline verification) and results
/// are sorted by a total order, so the answer does not depend on the thread count.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "clustertwin/execution/serving_sim.h"

namespace clustertwin::search {

struct ServingSpace {
  int64_t gpus = 0;     ///< GPUs to deploy on
  int domain_size = 8;  ///< TP and attention-DP + EP stay inside one NVLink domain
  /// Per-rank batch limits tried (each layout also tries its memory limit; see the header).
  std::vector<int64_t> batches = {1,  2,   3,   4,   6,   8,   12,  16,   24,   32,   48,   64,
                                  96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096};
  /// Prompt tokens per iteration beside the decode batch (aggregated instances).
  std::vector<int64_t> prompt_budgets = {512, 1024, 2048, 4096, 8192};
  /// Token budgets of a prefill-pool rank (disaggregated).
  std::vector<int64_t> prefill_budgets = {4096, 8192, 16384};
  bool chunked_off = true;    ///< also try chunked prefill off (whole prompts per iteration)
  bool disaggregated = true;  ///< also try prefill / decode pools
  int verify = 4;   ///< leading candidates (alternately aggregated / disaggregated) simulated
  int refine = 12;  ///< neighbours of the best verified point simulated in the local search
  /// Server / interactive, where each verification is a rate search: at most this many leaders
  /// and neighbours (a probe of 600 s of Poisson arrivals costs what ~1,000 estimates do).
  int rate_verify = 2, rate_refine = 4;
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
  bool pareto = false;    ///< on the frontier of its kind (aggregated / disaggregated)
  bool verified = false;  ///< figures from the event simulation
  double rate_qps = 0;    ///< verified server / interactive: the highest compliant rate
  [[nodiscard]] std::string label() const { return layout.label(); }
  /// "batch 512, 3456 tokens, unchunked" (the per-rank limits of the decode instance).
  [[nodiscard]] std::string limits() const;
};

struct ServingSearchResult {
  std::vector<ServingPoint> points;  ///< every scored point, best first
  int best = -1;                     ///< index into points; -1 when nothing could be scored
  bool found = false;                ///< the best meets the limits
  std::optional<execution::RateSearch> rate;    ///< server / interactive verification of best
  std::optional<execution::ServingResult> run;  ///< the best's event run (offline: its result)
  int64_t layouts = 0, rejected = 0;  ///< instance layouts tried / rejected (validity, memory)
  int64_t pruned = 0;                 ///< points skipped by the bounds (header)
  int64_t simulations = 0;            ///< event-simulation runs (rate probes count one each)
  std::vector<std::string> notes;
  double wall_s = 0;
  /// Wall time of the phases: scoring every point by the estimate, verifying with the event
  /// simulation (leaders and local search).
  double score_s = 0, verify_s = 0;
};

/// Searches around `base` (model, compute, fabric, memory, dataset, scenario, limits, precision,
/// KV precision, MTP acceptance and calibration are kept; the layout is searched). `threads` <=
/// 0 uses the hardware concurrency.
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
