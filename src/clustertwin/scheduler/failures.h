#pragma once
/// Failure processes, repair times and blast radius (docs/models/orchestration.md §3).
///
/// Rates per GPU-hour come from Llama 3's 419 unexpected interruptions of a 16,384-H100 job in
/// 54 days (arXiv 2407.21783 Table 5; 21.23M GPU-hours, one per 50,677 GPU-hours), grouped by
/// what they take down: GPU-category faults (GPU, HBM3, SRAM, GSP, SDC, thermal: 268), the
/// node's network link (switch/cable: 35), the host (maintenance, SSD, PSU, chassis, IO board,
/// CPU, memory: 46) and the NIC (7) take their node down until repaired; software faults
/// (software bug, NCCL watchdog, dependency: 63) stop the job only. Repair times are lognormal
/// with StepFun's per-class median and mean (fault_intervals.csv, 584 faults, 400 servers,
/// 349 days): GPU 16.8/155.4 h, NIC 11.8/256.4 h, cable 47.4/119.5 h, hardware overall
/// 32.6/188.7 h, all faults 20.4/132.8 h. sigma = sqrt(2 ln(mean/median)) so that both match.
///
/// NVLink-domain events (switch tray, power shelf, coolant) have no public per-component rate
/// (GAP in orchestration.md §3.3): the rates here are assumptions, exposed as parameters. A
/// domain "stop" takes every node of the rack down; a "degrade" slows jobs in the rack.
/// Lemon nodes: a fraction of nodes fails `lemon_multiplier` times as often (AIReSim default:
/// 15% at 5x), normalised so the cluster-wide rate stays the Llama 3 rate.

#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/engine/engine.h"

namespace clustertwin::scheduler {

enum class FailureScope : uint8_t {
  kJob,            ///< the job on the GPU stops; the node stays up (software)
  kNode,           ///< the node (tray, server) is down until repaired
  kDomainStop,     ///< every node of the NVLink domain is down
  kDomainDegrade,  ///< jobs in the NVLink domain run at degrade_speed until repaired
  kLeaf,           ///< every node under the leaf switch is down
};
const char* failure_scope_name(FailureScope s);

struct FailureClass {
  std::string name;
  FailureScope scope = FailureScope::kNode;
  /// kJob, kNode: per GPU-hour; kDomain*: per domain-hour; kLeaf: per leaf-hour.
  double rate_per_hour = 0;
  double repair_median_h = 0;  ///< 0 for kJob (restart only)
  double repair_mean_h = 0;
  std::string source;
};

struct FailureModel {
  std::vector<FailureClass> classes;
  double lemon_fraction = 0.15;
  double lemon_multiplier = 5.0;
  double degrade_speed = 0.85;  ///< assumption: a rack with a switch tray out
  /// Node failures in bursts: weight of a burst of k + 1 nodes at index k (each node drawn like
  /// a single failure: correlated in time, not in place). Empty: one node per event. The event
  /// rate of node classes is divided by the mean burst size, so node failures per hour stay.
  std::vector<double> burst_weights;

  /// StepFun's bursts (fault_intervals.csv: of 529 fault-start instants, 499 took down one
  /// server, 20 two, 5 three, 2 four, 1 six, 2 eight).
  static std::vector<double> stepfun_bursts();
  /// Mean nodes per node-failure event (1 without bursts).
  [[nodiscard]] double mean_burst() const;

  /// Llama 3 rates and StepFun repairs; `domain_events_per_1000_days` adds NVLink-domain stop
  /// and degrade classes (each at that many events per 1,000 domain-days) when the cluster has
  /// multi-node NVLink domains.
  static FailureModel llama3(bool multi_node_domains, double domain_events_per_1000_days = 1.0);

  /// Expected interruptions per hour of a job on `gpus` GPUs in `domains` NVLink domains.
  [[nodiscard]] double job_rate_per_hour(int64_t gpus, int domains) const;
  /// Scales every rate by k (what-if studies).
  void scale(double k);
};

/// One replayed down interval of a node (StepFun fault_intervals.csv).
struct FaultInterval {
  int node = 0;  ///< twin node index (trace nodes in order of first appearance)
  engine::Tick start = 0, end = 0;
  std::string cls;
};

/// Reads StepFun's fault_intervals.csv (node_id,start_day,end_day,repair_hours,level,class,
/// desc). Trace nodes map onto twin nodes 0, 1, ... in order of first appearance; errors name
/// the line. `nodes_seen` receives the count of distinct trace nodes.
base::Result<std::vector<FaultInterval>> read_fault_intervals(std::string_view text,
                                                              const std::string& file,
                                                              int* nodes_seen = nullptr);

}  // namespace clustertwin::scheduler
