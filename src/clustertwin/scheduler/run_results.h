#pragma once
/// The results seam of the cluster simulation (sim.h; docs/models/orchestration.md): what a run
/// counts as it goes (`RunTally`: jobs started and finished, interruptions and failures by class,
/// hot swaps, requeues, preemptions, backfill passes, the failure log and the timeline samples)
/// and the ScheduleResult made at the end from the tally, the jobs and the free capacity's
/// integrals (`collect_results`: utilization, occupancy, waits, JCTs and slowdowns, the ETTR
/// breakdown, goodput). Internal to the scheduler layer.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "clustertwin/scheduler/free_capacity.h"
#include "clustertwin/scheduler/simulation.h"

namespace clustertwin::scheduler::detail {

struct Job;  // sim.h

/// Count, mean and nearest-rank percentiles of `v`.
Percentiles percentiles(std::vector<double> v);

struct RunTally {
  int64_t started = 0, finished = 0, interruptions = 0, hot_swaps = 0, requeues = 0;
  int64_t preemptions = 0, failures = 0, backfill_passes = 0;
  std::map<std::string, int64_t> failures_by_class, interrupts_by_class;
  std::vector<FailureRecord> failure_log;  ///< the first 10,000 failures
  std::vector<TimelineSample> timeline;

  /// One failure of class `cls` at `t_s` (seconds): counted, and logged while the log is short.
  void failure(double t_s, const std::string& cls, FailureScope scope, int target, int jobs_hit,
               int64_t gpus, double repair_s);
};

/// What the results need to know of the run besides the jobs and the tally.
struct RunFacts {
  const ClusterModel* cluster = nullptr;
  const SimConfig* config = nullptr;
  const PlacementConfig* placement = nullptr;  ///< as run (segment size after spares)
  int blocks = 0, block_nodes = 0;             ///< base blocks and nodes per block
  FreeCapacity::Integrals integrals;
  int64_t events = 0, speed_estimates = 0, skipped_rows = 0;
};

/// The ScheduleResult of a run over its horizon; the tally's log and timeline are moved in.
ScheduleResult collect_results(const RunFacts& facts, const std::vector<Job>& jobs,
                               RunTally&& tally);

}  // namespace clustertwin::scheduler::detail
