#pragma once
/// Which training layout is best (docs/models/training.md §search): every valid combination of
/// tensor, pipeline, context, expert parallelism, virtual stages, micro-batch size and
/// recomputation for a model on N GPUs is scored with the closed-form step estimate
/// (execution::estimate_training_step, ~30 us each), layouts that do not fit in memory are
/// dropped, and the best are ranked by tokens/s. Work is split over threads by index and the
/// ranking is sorted by (step time, layout key), so the result does not depend on thread count.

#include <functional>
#include <string>
#include <vector>

#include "clustertwin/execution/training.h"

namespace clustertwin::search {

struct LayoutSpace {
  int64_t gpus = 0;
  int domain_size = 8;  ///< TP stays inside one NVLink domain
  std::vector<int> micro_batches = {1, 2, 4};
  std::vector<int> vpps = {1, 2, 4, 8};
  std::vector<int> cps = {1, 2, 4};
  std::vector<models::Recompute> recomputes = {
      models::Recompute::kNone, models::Recompute::kSelective, models::Recompute::kFull};
  int max_pp = 64;
};

struct LayoutScore {
  workload::TrainingLayout layout;
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double memory_B = 0;
  [[nodiscard]] std::string key() const;  ///< "TP8 PP16 DP128 VPP4 mb1 full"
};

struct LayoutSearchResult {
  std::vector<LayoutScore> best;  ///< fastest first
  int64_t candidates = 0;         ///< layouts enumerated
  int64_t feasible = 0;           ///< valid and fitting in memory
  double wall_s = 0;
};

/// Enumerates the space around `base` (its model, precision, global batch, sequence length,
/// overlaps are kept; the parallel layout is searched). `progress(done, total)` is called from
/// worker threads. `threads` <= 0 uses the hardware concurrency.
LayoutSearchResult search_layouts(const execution::TrainingSetup& base, const LayoutSpace& space,
                                  int top, int threads,
                                  const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace clustertwin::search
