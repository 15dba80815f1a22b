#pragma once
/// The two network models behind one interface (DESIGN.md §3 "fidelity is a choice"): given a set
/// of transfers, when does each finish?
///  - AnalyticalModel: alpha-beta per path, t = start + sum(link latency) + bytes / (bottleneck /
///    weight). No contention between transfers: microseconds per estimate, for search.
///  - FlowModel: max-min fair sharing over routed paths with events (flow_sim.h): contention,
///    oversubscription, ECMP collisions, failures.
/// Where both cover a case (one transfer alone on an idle fabric) they agree exactly; a test
/// pins that.

#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "clustertwin/network/flow_sim.h"

namespace clustertwin::network {

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  /// Finish time of each transfer (same order).
  virtual std::vector<Seconds> finish_times(std::span<const Transfer> transfers) = 0;
  [[nodiscard]] virtual const char* name() const = 0;
};

class AnalyticalModel final : public NetworkModel {
 public:
  explicit AnalyticalModel(const topology::Topology& topo) : topo_(&topo) {}
  std::vector<Seconds> finish_times(std::span<const Transfer> transfers) override;
  [[nodiscard]] const char* name() const override { return "analytical"; }
  /// One transfer on its ECMP path, alone.
  [[nodiscard]] Seconds transfer_time(const Transfer& t) const;

 private:
  const topology::Topology* topo_;
};

class FlowModel final : public NetworkModel {
 public:
  explicit FlowModel(const topology::Topology& topo, Routing routing = Routing::kEcmp)
      : topo_(&topo), routing_(routing) {}
  std::vector<Seconds> finish_times(std::span<const Transfer> transfers) override;
  [[nodiscard]] const char* name() const override { return "flow"; }
  /// Link capacity overrides applied to every run (degraded or failed links).
  void set_capacity(topology::LinkId link, BytesPerSecond capacity) {
    overrides_.emplace_back(link, capacity);
  }
  [[nodiscard]] const FlowSimStats& last_stats() const { return stats_; }

 private:
  const topology::Topology* topo_;
  Routing routing_;
  std::vector<std::pair<topology::LinkId, BytesPerSecond>> overrides_;
  FlowSimStats stats_;
};

/// "analytical" or "flow".
std::unique_ptr<NetworkModel> make_model(const std::string& name, const topology::Topology& topo,
                                         Routing routing = Routing::kEcmp);

}  // namespace clustertwin::network
