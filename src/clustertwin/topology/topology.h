#pragma once
/// The cluster as a graph (docs/models/topology.md): GPUs, one NVLink domain per system (its
/// NVLink switch chips folded into one non-blocking crossbar vertex, which is exact for NVL72
/// and HGX because every GPU has the same share of every chip), NICs, and a scale-out folded-Clos
/// fat tree of 1-3 tiers per plane. Links are directed (a cable is two links).
///
/// Nothing per path is stored: ECMP path sets are enumerated on demand from the regular
/// structure (path_count / path), so building 131,072 GPUs stays at O(links) memory.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/base/units.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::topology {

using base::BytesPerSecond;
using base::Seconds;

using LinkId = int32_t;

enum class LinkKind : uint8_t {
  kNvlink,    ///< GPU <-> NVLink switch
  kPcie,      ///< GPU <-> its NIC
  kNicUp,     ///< NIC -> leaf switch
  kNicDown,   ///< leaf switch -> NIC
  kFabricUp,  ///< tier t -> tier t+1 switch
  kFabricDown,
};
const char* link_kind_name(LinkKind k);

struct Link {
  BytesPerSecond capacity;  ///< per direction
  Seconds latency;          ///< propagation + the switch/NIC hop it enters
  LinkKind kind = LinkKind::kNvlink;
  int8_t tier = 0;  ///< fabric links: 1 = leaf<->spine(agg), 2 = agg<->core; NIC links: 0
  int8_t plane = 0;
};

/// One switch tier of one plane of the fat tree.
struct TierInfo {
  int switches = 0;         ///< per plane
  int down_ports = 0;       ///< ports per switch facing down (designed)
  int up_ports = 0;         ///< ports per switch facing up (0 at the top tier)
  int down_ports_used = 0;  ///< over all switches of the tier in one plane
  int up_ports_used = 0;
  int parallel_links = 1;  ///< cables between one switch and one switch above it
};

/// How a fat tree is laid out; computed by plan_fat_tree().
struct FatTreePlan {
  int endpoints = 0;  ///< NIC ports per plane
  int radix = 0;
  int tiers = 0;  ///< 1, 2 or 3
  int leaves = 0;
  int leaf_down = 0, leaf_up = 0;
  int spines = 0;          ///< tier-2 switches (2 tiers: spines; 3 tiers: aggregation)
  int spine_parallel = 1;  ///< links from one leaf to one spine (2 tiers)
  int pods = 1, leaves_per_pod = 0, aggs_per_pod = 0, agg_down = 0, agg_up = 0;
  int cores = 0, core_groups = 0, cores_per_group = 0, core_parallel = 1;
  std::vector<TierInfo> tier_info;  ///< index 0 = leaves
};

/// Chooses switch counts for `endpoints` NIC ports on switches of `radix` ports with the given
/// down:up ratios per tier (leaves first). Design rule (docs/models/topology.md): a leaf has
/// d = R*o/(1+o) ports down and the rest up; uplinks are spread evenly, k parallel cables per
/// leaf-spine pair with k the largest divisor of the uplink count that keeps every spine within
/// its radix. Fails when `tiers` (0 = fewest possible) cannot connect the endpoints.
base::Result<FatTreePlan> plan_fat_tree(int endpoints, int radix, int tiers,
                                        const std::vector<double>& oversubscription,
                                        int leaves_override = 0);

class Topology {
 public:
  /// Builds the graph of a validated cluster spec.
  static base::Result<Topology> build(const hardware::Catalog& catalog,
                                      const hardware::ClusterSpec& spec);

  [[nodiscard]] int gpus() const { return gpus_; }
  [[nodiscard]] int domains() const { return domains_; }
  [[nodiscard]] int domain_size() const { return domain_size_; }
  [[nodiscard]] int domain_of(int gpu) const { return gpu / domain_size_; }
  [[nodiscard]] int nics() const { return nics_; }
  [[nodiscard]] int planes() const { return planes_; }
  [[nodiscard]] int nic_of(int gpu) const;
  [[nodiscard]] int leaf_of(int nic) const;
  [[nodiscard]] const FatTreePlan& fabric() const { return plan_; }
  [[nodiscard]] std::span<const Link> links() const { return links_; }
  [[nodiscard]] const Link& link(LinkId id) const { return links_[static_cast<size_t>(id)]; }
  [[nodiscard]] const hardware::ClusterSpec& spec() const { return spec_; }

  /// Number of equal-cost paths from GPU a to GPU b (1 inside a domain; planes x uplink
  /// choices across the fabric; 0 when a == b).
  [[nodiscard]] int64_t path_count(int a, int b) const;
  /// Appends the links of ECMP path `index` (0 <= index < path_count) from a to b to `out`.
  void path(int a, int b, int64_t index, std::vector<LinkId>& out) const;
  /// The path ECMP hashing picks for a flow (a, b, flow_key): a deterministic hash of the three.
  [[nodiscard]] int64_t ecmp_index(int a, int b, uint64_t flow_key) const;
  /// Sum of link latencies along a path.
  [[nodiscard]] Seconds latency(std::span<const LinkId> path) const;
  /// Smallest capacity along a path.
  [[nodiscard]] BytesPerSecond bottleneck(std::span<const LinkId> path) const;

  // Link id layout (dense, deterministic): see topology.cpp.
  [[nodiscard]] LinkId nvlink_up(int gpu) const { return 2 * gpu; }
  [[nodiscard]] LinkId nvlink_down(int gpu) const { return 2 * gpu + 1; }
  [[nodiscard]] LinkId pcie_up(int gpu) const { return pcie_base_ + 2 * gpu; }
  [[nodiscard]] LinkId pcie_down(int gpu) const { return pcie_base_ + 2 * gpu + 1; }
  [[nodiscard]] LinkId nic_up(int nic, int plane) const {
    return nic_base_ + 2 * (nic * planes_ + plane);
  }
  [[nodiscard]] LinkId nic_down(int nic, int plane) const { return nic_up(nic, plane) + 1; }

 private:
  [[nodiscard]] LinkId leaf_up_link(int plane, int leaf, int j) const;
  [[nodiscard]] LinkId agg_up_link(int plane, int agg_global, int j) const;

  hardware::ClusterSpec spec_;
  FatTreePlan plan_;
  int gpus_ = 0, domains_ = 0, domain_size_ = 1, gpus_per_node_ = 1;
  int nics_ = 0, nics_per_node_ = 1, nics_per_system_ = 1, planes_ = 1;
  bool rail_optimized_ = false;
  int rail_groups_ = 1;  // systems per rail group (rail-optimized leaves)
  LinkId pcie_base_ = 0, nic_base_ = 0, t1_base_ = 0, t2_base_ = 0;
  std::vector<Link> links_;
};

}  // namespace clustertwin::topology
