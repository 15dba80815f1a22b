#pragma once
/// The full training layout search (docs/models/training.md §search, issue 17 item 5): tensor,
/// pipeline, virtual-pipeline, context, expert and data parallelism, micro-batch, ZeRO stage
/// (0 replicated, 1 distributed optimizer, 2, 3), recomputation (none, Megatron's selective
/// default, growing --recompute-modules sets, full) and GEMM precision, for a model on N GPUs.
///
/// Speed comes from factoring the closed-form step estimate (execution::estimate_training_step)
/// by what each term depends on, not from a different model:
///   - per (tp, cp, ep, micro-batch, precision, recomputation): each model part's per-micro-batch
///     cost (execution::training_part_costs: the op lists, kernel tables, TP/CP/EP collectives)
///     and each layer kind's stored activations per token (workload::
///     layer_activation_bytes_per_token);
///   - per (tp, cp, ep, pp, vpp): each stage's layers by kind, its parameters (dense / expert),
///     its data-parallel reduce-scatter / all-reduce / all-gather and optimizer times, and
///     ZeRO 3's per-part all-gather and reduce-scatter (their excess over each part's compute,
///     execution/training.cpp zero3_exposed, added per micro-batch);
///   - per layout: the memory of every stage (weights, gradients, optimizer by ZeRO stage,
///     activations x in-flight micro-batches, logits, buffers), the layout dropped when the
///     largest exceeds the GPU's HBM, and only then the time: M x the slowest stage's
///     forward + backward + (pp - 1)/vpp average stage times + 2 (pp - 1) sends, plus each
///     stage's exposed DP communication and optimizer, the slowest stage's end.
/// Part costs are computed only for keys a fitting layout needs. The result equals
/// estimate_training_step and check_memory on every layout (training_search_test.cpp checks a
/// sample to 1e-9); the top K are then run through the event model
/// (execution::simulate_training_step) and re-ranked by its step time.
/// Layout rules are workload::validate's (MoE parallel folding included); 1F1B / interleaved
/// schedules, no activation offloading. Work is split over threads by (tp, cp, ep) and the
/// ranking is sorted by (step time, layout tuple): the result does not depend on thread count.

#include <cstdint>
#include <string>
#include <vector>

#include "clustertwin/execution/training.h"

namespace clustertwin::search {

/// One recomputation setting: Megatron --recompute-granularity and --recompute-modules bits.
struct RecomputeChoice {
  models::Recompute mode = models::Recompute::kNone;
  uint32_t modules = 0;
};

/// The settings searched for model `m`: none; selective with core_attn (Megatron's default);
/// the --recompute-modules sets that grow one module at a time in the order of
/// workload::cheapest_memory_fix (element-wise modules first: layernorm, moe_act,
/// mla_up_proj, core_attn, shared_experts, mlp, moe), those the model has; full.
std::vector<RecomputeChoice> recompute_choices(const models::ModelSpec& m);

struct PrecisionChoice {
  compute::DType dtype = compute::DType::kBf16;
  base::FlopsPerSecond peak;  ///< dense peak per GPU at this precision (for MFU)
};

struct TrainingSpace {
  int64_t gpus = 0;
  int domain_size = 8;  ///< TP stays inside one NVLink domain (powers of two up to this)
  int max_pp = 64;
  std::vector<int> cps = {1, 2, 4, 8};
  std::vector<int> vpps = {1, 2, 3, 4, 6, 8};
  std::vector<int64_t> micro_batches = {1, 2, 4, 8};
  std::vector<int> zeros = {0, 1, 2, 3};
  std::vector<PrecisionChoice> precisions;  ///< empty: the base setup's precision and peak
  std::vector<RecomputeChoice> recomputes;  ///< empty: recompute_choices(model)
  /// When > 0: TrainingSearchResult::ahead_of counts the fitting layouts faster than this step
  /// time (where a given layout ranks, without keeping every layout).
  double rank_step_s = 0;
};

struct TrainingCandidate {
  workload::TrainingLayout layout;
  double step_time_s = 0;
  double memory_B = 0;  ///< the stage with the most memory
  /// "TP4 PP8 VPP8 CP2 DP39 mb1 zero1 fp8 recompute none"
  [[nodiscard]] std::string key() const;
};

struct TrainingSearchResult {
  std::vector<TrainingCandidate> best;  ///< analytical step time, fastest first
  int64_t enumerated = 0;               ///< combinations of the axes
  int64_t valid = 0;                    ///< obeying the layout rules: each had its memory evaluated
  int64_t fitting = 0;                  ///< fitting in memory: each was timed
  int64_t cost_tables = 0;  ///< (tp, cp, ep, micro-batch, precision, recompute) part-cost sets
  int64_t ahead_of = 0;     ///< fitting layouts faster than space.rank_step_s
  double wall_s = 0;
  double cpu_s = 0;  ///< CPU time of the calling process over the search (all threads)
};

/// Searches the space around `base` (its model, global batch, sequence length, overlaps, MoE
/// settings, LoRA rank and optimizer bytes are kept). `base.gpus` is ignored (space.gpus).
/// Errors: an empty axis, gpus < 1.
base::Result<TrainingSearchResult> search_training(const execution::TrainingSetup& base,
                                                   const TrainingSpace& space, int top,
                                                   int threads);

struct ConfirmedLayout {
  TrainingCandidate analytical;
  execution::TrainingResult simulated;  ///< the event model's step
};

/// Runs the event model on each candidate and orders them by its step time (then by the
/// analytical order); a candidate the event model refuses is dropped.
std::vector<ConfirmedLayout> confirm_with_event_model(const execution::TrainingSetup& base,
                                                      const std::vector<TrainingCandidate>& c,
                                                      const TrainingSpace& space);

/// The setup of one candidate: `base` with the layout, its precision's peak and the GPUs.
execution::TrainingSetup setup_for(const execution::TrainingSetup& base, const TrainingSpace& space,
                                   const workload::TrainingLayout& l);

}  // namespace clustertwin::search
