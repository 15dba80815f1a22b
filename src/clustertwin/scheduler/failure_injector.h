#pragma once
/// Failure injection of the cluster simulation (sim.h; docs/models/orchestration.md §3): when the
/// run's next random failure happens, which class it is and what it hits, and how long a repair
/// takes. The draws only: the simulation applies them to its state (a node already down does
/// not fail again, a domain already slowed is not slowed twice), interrupts the jobs hit and
/// schedules the repairs. Failures, repairs and lemon nodes each draw from their own stream of
/// the run's seed (1, 2, 3), so a repair drawn or not never shifts the failures that follow.
/// Internal to the scheduler layer.

#include <optional>
#include <vector>

#include "clustertwin/scheduler/cluster.h"
#include "clustertwin/scheduler/failures.h"
#include "clustertwin/scheduler/random.h"

namespace clustertwin::scheduler::detail {

/// A random failure as drawn, before the cluster's state is looked at.
struct FailureDraw {
  size_t cls = 0;  ///< index into FailureModel::classes
  /// kJob, kNode: the node (-1 for a burst); kDomainStop, kDomainDegrade: the domain; kLeaf: the
  /// leaf.
  int target = -1;
  int gpu = -1;            ///< kJob: the GPU of the node that fails
  std::vector<int> nodes;  ///< kNode in bursts: the nodes drawn, in order (one may come twice)
};

class FailureInjector {
 public:
  /// `seed`: the run's. `lemons`: pick lemon nodes (random failures; a replayed trace has none):
  /// round(lemon_fraction x nodes) of them, drawn without replacement.
  FailureInjector(const ClusterModel& c, const FailureModel& m, uint64_t seed, bool lemons);

  /// Events per hour of each class over the whole cluster: its rate per GPU (kJob, kNode; kNode
  /// divided by the mean burst, so that nodes failing per hour stay), per domain or per leaf,
  /// times their number.
  [[nodiscard]] const std::vector<double>& rates_per_hour() const { return rates_; }
  /// Seconds until the next failure of any class (exponential at the summed rate), or none when
  /// no class fails.
  std::optional<double> next_in_s();
  /// The next failure's class (by rate) and target: a GPU of a uniform node (kJob); a node,
  /// lemons `lemon_multiplier` times as likely (kNode; a burst of nodes with burst weights); a
  /// uniform domain or leaf.
  FailureDraw draw();
  /// A repair time of class `fc`, in seconds: lognormal with the class's median and mean.
  double repair_s(const FailureClass& fc);

  [[nodiscard]] const std::vector<int>& lemons() const { return lemons_; }  ///< sorted

 private:
  int pick_node();

  const ClusterModel* c_;
  const FailureModel* m_;
  Rng fail_rng_, repair_rng_;
  std::vector<double> rates_;
  double total_ = 0;
  std::vector<int> lemons_;
  std::vector<char> is_lemon_;
};

}  // namespace clustertwin::scheduler::detail
