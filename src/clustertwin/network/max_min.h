#pragma once
/// Max-min fair bandwidth sharing by progressive filling (Bertsekas & Gallager, "Data Networks",
/// §6.5.2; the fluid model SimGrid validated, Velho et al., ACM TOMACS 2013).
///
/// All unfrozen flows grow at one common rate x. A link l with remaining capacity R_l crossed by
/// unfrozen flows of total weight W_l saturates at x_l = R_l / W_l; the link with the smallest
/// x_l freezes its flows at that rate, which is subtracted from every other link they cross, and
/// the filling continues. A flow of weight w stands for w identical flows on the same path
/// (symmetry: identical channels or replicas cost one) and consumes w * rate.
/// Cost: O((F * P + L) log L) for F flows of P links on L links, with a lazy min-heap.

#include <cstdint>
#include <span>
#include <vector>

namespace clustertwin::network {

/// Flows as compressed rows: flow f crosses links[offsets[f] .. offsets[f+1]).
struct FlowPaths {
  std::vector<int32_t> offsets{0};
  std::vector<int32_t> links;
  std::vector<double> weights;
  /// Optional per-flow rate ceiling (bytes/s; <= 0 means none), e.g. a protocol's peak.
  std::vector<double> caps;

  void add(std::span<const int32_t> path, double weight = 1.0, double cap = 0.0) {
    links.insert(links.end(), path.begin(), path.end());
    offsets.push_back(static_cast<int32_t>(links.size()));
    weights.push_back(weight);
    caps.push_back(cap);
  }
  [[nodiscard]] size_t size() const { return weights.size(); }
  void clear() {
    offsets.assign(1, 0);
    links.clear();
    weights.clear();
    caps.clear();
  }
};

/// Reusable solver: keeps scratch arrays sized to the fabric so repeated solves (one per event in
/// the flow simulator) allocate nothing proportional to the whole fabric.
class MaxMinSolver {
 public:
  explicit MaxMinSolver(size_t links) : local_(links, -1) {}
  /// See max_min_rates(); only the flows listed in `active` take part. `rates` is resized to
  /// flows.size() and written for the listed flows (others are left 0).
  void solve(const FlowPaths& flows, std::span<const double> capacity,
             std::span<const size_t> active, std::vector<double>& rates);

 private:
  std::vector<int32_t> local_;  // fabric link -> dense local index, -1 when untouched
  std::vector<int32_t> link_ids_, lf_off_, lf_, cap_link_, fill_;
  std::vector<double> remaining_, weight_;
  std::vector<uint8_t> frozen_;
};

/// Max-min fair rate (bytes/s) of each flow. `capacity` is indexed by link id (bytes/s).
/// `active` (optional) selects the flows that take part; others get rate 0.
/// Flows with an empty path get their cap (or +inf when uncapped).
std::vector<double> max_min_rates(const FlowPaths& flows, std::span<const double> capacity,
                                  std::span<const uint8_t> active = {});

}  // namespace clustertwin::network
