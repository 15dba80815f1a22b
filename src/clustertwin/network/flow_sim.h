#pragma once
/// Flow-level network simulation (docs/models/network.md). Flows follow routed paths of the
/// topology and share link capacity max-min fairly (max_min.h); rates are recomputed only at
/// events: a flow starts, a flow ends, a link's capacity changes (degradation, failure = 0).
/// A flow completes `path latency` after its last byte leaves the source. Time is in seconds
/// (double); the discrete-event engine converts to integer ticks at its boundary.
///
/// Routing: ECMP hashes each flow onto one of the equal-cost paths (collisions included, as on
/// real fabrics); adaptive routing spreads a flow over up to `adaptive_paths` of them evenly
/// (InfiniBand AR / packet spraying at flow granularity).

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "clustertwin/base/units.h"
#include "clustertwin/network/max_min.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::network {

using base::Bytes;
using base::BytesPerSecond;
using base::Seconds;

enum class Routing { kEcmp, kAdaptive };

/// One transfer between two GPUs. `weight` > 1 stands for that many identical flows on the
/// same path (each gets the computed rate; bytes are per flow).
struct Transfer {
  int src = 0;
  int dst = 0;
  Bytes bytes;
  Seconds start;
  double weight = 1.0;
  uint64_t key = 0;          ///< ECMP hash input (e.g. channel id)
  BytesPerSecond rate_cap;   ///< 0 = none
};

struct FlowSimStats {
  int64_t flows = 0;
  int64_t subflows = 0;
  int64_t rate_solves = 0;
  int64_t events = 0;
};

class FlowSimulator {
 public:
  FlowSimulator(const topology::Topology& topo, Routing routing = Routing::kEcmp,
                int adaptive_paths = 8);

  /// Adds a transfer; returns its id (dense, in insertion order).
  int add(const Transfer& t);
  /// Changes a link's capacity at time `at` (0 = failed).
  void set_capacity(Seconds at, topology::LinkId link, BytesPerSecond capacity);
  /// Runs until every transfer has completed. A transfer that can never finish (all of its
  /// paths failed) completes at +infinity.
  void run();

  [[nodiscard]] Seconds finish(int id) const { return Seconds::from_base(finish_[static_cast<size_t>(id)]); }
  /// Bytes delivered to the destination (equals the bytes sent once run() returned).
  [[nodiscard]] Bytes delivered(int id) const { return Bytes::from_base(delivered_[static_cast<size_t>(id)]); }
  [[nodiscard]] Seconds makespan() const;
  [[nodiscard]] const FlowSimStats& stats() const { return stats_; }
  /// Bytes carried by each link over the whole run (for utilisation heatmaps).
  [[nodiscard]] const std::vector<double>& link_bytes() const { return link_bytes_; }

 private:
  struct CapacityChange {
    double at;
    topology::LinkId link;
    double capacity;
  };
  const topology::Topology* topo_;
  Routing routing_;
  int adaptive_paths_;
  std::vector<Transfer> transfers_;
  std::vector<CapacityChange> changes_;
  std::vector<double> finish_, delivered_, link_bytes_;
  FlowSimStats stats_;
};

}  // namespace clustertwin::network
