#pragma once
/// The rack classes stage of both power views (docs/models/power.md §2): which of a workload's
/// GPUs each rack of the cluster holds, racks that hold the same grouped into classes, and the
/// power of such a rack from its systems' (system_power.h), checked against the usable PSU
/// capacity (the rack limit).
///
/// The two views fill racks differently, so each has its packing:
///  - training (`pack_stages`): ranks in Megatron order (tp-cp-dp-pp, stages outermost) from the
///    job's first GPU; a rack's share of each pipeline stage is an interval intersection; racks
///    with the same stage shares, idle GPUs and systems are one class. A class's systems share
///    its GPU power evenly (`class_power`).
///  - serving (`pool_rack_power`): a pool's GPUs (at most a rack's worth) fill whole systems, the
///    rest of the rack idles; each system is evaluated on its own (the PSU limit is per system).
/// What both then take from a rack (its peak and average at the PSU inputs, how many there are)
/// is a `RackLoad` (cooling.h), for the facility and cooling sizing.
/// Cost: pack_stages O(racks + classes log classes) (no per-GPU work); the rest O(1).

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "clustertwin/power/system_power.h"
#include "clustertwin/workload/layout.h"

namespace clustertwin::power {

/// One class of identical racks of a training job.
struct RackClass {
  std::vector<int> stage_gpus;               ///< job GPUs of each pipeline stage in the rack
  std::vector<std::pair<int, int>> present;  ///< (stage, GPUs) of the stages with GPUs here (the
                                             ///< non-zero stage_gpus: job_gpus() sums these)
  int idle_gpus = 0;                         ///< GPUs of the rack outside the job
  int systems = 1;
  int count = 0;  ///< racks of this class
  double peak_ac_W = 0, avg_ac_W = 0, min_ac_W = 0, peak_dc_W = 0;
  [[nodiscard]] int job_gpus() const;
};

/// The racks of a cluster of `cluster_gpus` GPUs (`gpus_per_system` x `systems_per_rack` per
/// rack, the last possibly partial) grouped into classes by the GPUs of each pipeline stage of
/// a job with layout `l` whose ranks start at `first_gpu`. Classes with job GPUs come first.
struct RackPacking {
  std::vector<RackClass> classes;
  int racks = 0;
};
RackPacking pack_stages(const workload::TrainingLayout& l, int64_t first_gpu, int64_t cluster_gpus,
                        int gpus_per_system, int systems_per_rack);

/// The GPU power of a class's rack when stage s's GPUs draw `stage_W[s]` each and its idle GPUs
/// `idle_W`.
double class_gpu_sum(const RackClass& c, std::span<const double> stage_W, double idle_W);

/// A class's rack whose GPUs draw `gpu_sum` together: its systems at the mean GPU power, hosts
/// active when `active` and the rack holds job GPUs; every figure for the whole rack.
SystemBreakdown class_power(const RackClass& c, const SystemPowerModel& sm, double gpu_sum,
                            bool active);

/// A rack of a serving pool whose GPUs draw `gpu_W` each.
struct PoolRackPower {
  double ac_W = 0;        ///< the rack at its PSU inputs
  double dc_W = 0;        ///< its busiest system's DC (the PSU limit is per system)
  double dc_total_W = 0;  ///< all its systems' DC
};
/// The pool's GPUs (at most a rack's worth) fill whole systems at `gpu_W`; the partly filled
/// system's other GPUs draw `idle_W`; systems without any of them idle with idle hosts.
PoolRackPower pool_rack_power(const SystemPowerModel& sm, int systems_per_rack, double gpu_W,
                              double idle_W, int64_t pool_gpus);
/// The IT power a pool of `pool_gpus` GPUs at `gpu_W` each is charged for: a full rack's power
/// per GPU (hosts active) x its GPUs.
double pool_it_share_W(const SystemPowerModel& sm, int systems_per_rack, double gpu_W,
                       int64_t pool_gpus);

/// The rack limit both views enforce: the usable PSU capacity of a system (shelves less
/// redundancy), DC and at the PSU inputs, with how it is made up.
struct RackLimit {
  double dc_W = 0, ac_W = 0;
  std::string basis;
  /// True when a system drawing `dc_W` DC is over the limit (beyond rounding).
  [[nodiscard]] bool exceeded_by(double dc_W) const;
};
RackLimit rack_limit(const SystemPowerModel& sm);

}  // namespace clustertwin::power
