#pragma once
/// Flow-level network simulation (docs/models/network.md). Flows follow routed paths of the
/// topology and share link capacity max-min fairly (max_min.h); rates are recomputed only at
/// events: a flow starts, a flow ends, a link's capacity changes (degradation, failure = 0).
/// A flow completes `path latency` after its last byte leaves the source. Time is in seconds
/// (double); the discrete-event engine converts to integer ticks at its boundary.
///
/// Routing: ECMP hashes each flow onto one of the equal-cost paths (collisions included, as on
/// real fabrics); adaptive routing spreads a flow over up to `adaptive_paths` of them evenly
/// (InfiniBand AR at flow granularity); spraying is the fluid limit of packet spraying / adaptive
/// routing: every flow spreads evenly over all equal-cost paths, so the up-links of a leaf (and of
/// a pod) act as one bundle whose capacity is the sum of its working links.

#include <array>
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

enum class Routing { kEcmp, kAdaptive, kSpray };

/// One transfer between two GPUs. `weight` > 1 stands for that many identical flows on the
/// same path (each gets the computed rate; bytes are per flow).
struct Transfer {
  int src = 0;
  int dst = 0;
  Bytes bytes;
  Seconds start;
  double weight = 1.0;
  uint64_t key = 0;         ///< ECMP hash input (e.g. channel id)
  BytesPerSecond rate_cap;  ///< 0 = none
};

/// Options of a steady-state solve (FlowSimulator::solve_steady).
struct SteadyOptions {
  /// Capacity multiplier per link kind (indexed by topology::LinkKind): what fraction of a link's
  /// line rate the transfers can use, e.g. a protocol's efficiency on NVLink vs on the NIC.
  std::array<double, 6> kind_scale = {1, 1, 1, 1, 1, 1};
  /// Transfer id -> coupling group (-1 or absent: none). Transfers of one group are stages of one
  /// pipeline (a ring channel, a collective): each advances at the pace of the group's slowest,
  /// so capacity a fast member cannot use is handed to other groups. Empty: no coupling.
  std::span<const int32_t> group;
  int rounds = 4;  ///< coupling refinements (each is one more max-min solve)
};

/// Rates of transfers that are all active at once, in steady state.
struct SteadyState {
  /// Bytes/s of each transfer (per copy when weight > 1); +inf for a local copy, 0 when a failed
  /// link cuts every path.
  std::vector<double> rate;
  /// Seconds until the group's last transfer would finish at these rates (max bytes / rate), by
  /// group id; empty without coupling groups.
  std::vector<double> group_time;
};

struct FlowSimStats {
  int64_t flows = 0;
  int64_t subflows = 0;
  int64_t rate_solves = 0;
  int64_t events = 0;
};

/// Spraying (adaptive routing in the fluid limit): the fabric links of each leaf (tier 1) and pod
/// (tier 2), per plane and direction, form one bundle, a virtual link numbered after the
/// topology's links whose capacity is the sum of its members'. A property of the topology alone:
/// built once (its cost grows with leaves x up-link choices, ~1 s at 131,072 GPUs) and shared by
/// every simulator of that topology (FlowSimulator::share_bundles).
struct SprayBundles {
  std::vector<int32_t> of_link;  ///< topology link -> bundle, -1 when none
  std::vector<std::vector<topology::LinkId>> members;
  static SprayBundles build(const topology::Topology& topo);
};

class FlowSimulator {
 public:
  FlowSimulator(const topology::Topology& topo, Routing routing = Routing::kEcmp,
                int adaptive_paths = 8);

  /// Uses `b` (built for this simulator's topology, outliving it) instead of building the spray
  /// bundles again; results are identical.
  void share_bundles(const SprayBundles* b) { shared_ = b; }
  /// Adds a transfer; returns its id (dense, in insertion order).
  int add(const Transfer& t);
  /// Changes a link's capacity at time `at` (0 = failed).
  void set_capacity(Seconds at, topology::LinkId link, BytesPerSecond capacity);
  /// Runs until every transfer has completed. A transfer that can never finish (all of its
  /// paths failed) completes at +infinity.
  void run();
  /// The max-min fair rates of all transfers as if all were active together (start times are
  /// ignored; capacity changes at or before time 0 apply), with optional pipeline coupling
  /// (SteadyOptions::group). One solve per coupling round; no events. This is the bandwidth term
  /// of a collective's steady state (docs/models/network.md, "Steady state").
  SteadyState solve_steady(const SteadyOptions& options = {});

  [[nodiscard]] Seconds finish(int id) const {
    return Seconds::from_base(finish_[static_cast<size_t>(id)]);
  }
  /// Bytes delivered to the destination (equals the bytes sent once run() returned).
  [[nodiscard]] Bytes delivered(int id) const {
    return Bytes::from_base(delivered_[static_cast<size_t>(id)]);
  }
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

  // Sub-flows on concrete paths: ECMP picks one path per transfer; adaptive routing splits a
  // transfer evenly over up to adaptive_paths_ paths.
  struct Expanded {
    FlowPaths paths;
    std::vector<int32_t> owner;  // sub-flow -> transfer
    std::vector<double> share;   // fraction of the transfer's bytes on this sub-flow
  };
  void expand(Expanded& out, bool with_latency, std::vector<double>* latency);

  void build_bundles();
  /// Link capacities (bytes/s) with capacity changes at or before `until` applied, scaled per
  /// link kind, followed by the bundles' capacities.
  std::vector<double> capacities(double until, const std::array<double, 6>& scale);
  /// The same for the links (and bundles) listed in `used` only, in that order.
  std::vector<double> capacities_of(std::span<const int32_t> used, double until,
                                    const std::array<double, 6>& scale);
  // Spraying: the bundles this simulator uses (shared_, when given, else own_, built on first
  // use by build_bundles()).
  const SprayBundles* shared_ = nullptr;
  SprayBundles own_;
  bool own_built_ = false;
  [[nodiscard]] const SprayBundles& bundles() const { return shared_ ? *shared_ : own_; }
};

}  // namespace clustertwin::network
