#pragma once
/// One long training job under failures (docs/models/orchestration.md §4): how often it is
/// interrupted, where its wall time goes, and which checkpoint interval maximises its
/// effective training time ratio (ETTR = useful training time / wall time). The job runs on
/// `gpus` GPUs of the cluster; the rest are the spare pool it swaps failed nodes from. Its step
/// time comes from the training model; the interval is Young/Daly's at the job's expected MTBI
/// unless given. A sweep of intervals around it compares the first-order closed form with the
/// simulation.

#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/scheduler/simulation.h"

namespace clustertwin::scheduler {

struct GoodputConfig {
  TrainingWork work;
  int gpus = 0;
  Tick horizon = 0;
  double interval_s = 0;  ///< 0: Young/Daly
  StorageConfig storage;
  FailureModel failures;
  PlacementPolicy placement = PlacementPolicy::kBlock;
  int spares = 0;
  uint64_t seed = 1;
  bool sweep = true;
  int64_t max_events = base::kMaxEvents;  ///< per simulated run (SimConfig::max_events)
};

struct GoodputPoint {
  double interval_s = 0, ettr_expected = 0, ettr_simulated = 0;
  int64_t interruptions = 0;
};

struct GoodputResult {
  std::string cluster, model;
  int64_t gpus = 0, cluster_gpus = 0;
  double horizon_s = 0;
  double step_time_s = 0, parameters = 0;
  CheckpointCosts checkpoint;
  double mtbi_expected_s = 0;  ///< from the failure rates
  double young_daly_s = 0;
  double interval_s = 0;
  bool auto_interval = true;
  double ettr_expected = 0;  ///< first-order closed form at the interval used
  int64_t interruptions = 0, hot_swaps = 0, requeues = 0;
  double mtbi_s = 0;  ///< simulated
  EttrBreakdown breakdown;
  std::vector<std::pair<std::string, int64_t>> interruptions_by_class;
  std::vector<GoodputPoint> sweep;
  std::vector<FailureRecord> failure_log;
};

base::Result<GoodputResult> run_goodput(const ClusterModel& cluster, SpeedModel& speed,
                                        const GoodputConfig& cfg);

}  // namespace clustertwin::scheduler
