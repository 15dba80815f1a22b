#include "clustertwin/topology/topology.h"

#include <algorithm>
#include <cmath>

#include "clustertwin/base/check.h"
#include "clustertwin/base/units_parse.h"

namespace clustertwin::topology {
using base::fail;

const char* link_kind_name(LinkKind k) {
  switch (k) {
    case LinkKind::kNvlink:
      return "nvlink";
    case LinkKind::kPcie:
      return "pcie";
    case LinkKind::kNicUp:
      return "nic_up";
    case LinkKind::kNicDown:
      return "nic_down";
    case LinkKind::kFabricUp:
      return "fabric_up";
    case LinkKind::kFabricDown:
      return "fabric_down";
  }
  return "?";
}

namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Ports facing down for a down:up ratio o on a switch of radix R: d / (R - d) = o.
int down_ports(int radix, double o) {
  const int d = static_cast<int>(std::lround(radix * o / (1.0 + o)));
  return std::clamp(d, 1, radix - 1);
}

// Largest divisor k of `ups` with `fanout * k <= radix`: parallel cables per switch pair that
// keep every upper switch within its radix while spreading uplinks evenly.
int parallel_links(int ups, int fanout, int radix) {
  for (int k = std::min(ups, radix / std::max(fanout, 1)); k >= 1; --k) {
    if (ups % k == 0) return k;
  }
  return 1;
}

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

base::Result<FatTreePlan> plan_fat_tree(int endpoints, int radix, int tiers,
                                        const std::vector<double>& oversubscription,
                                        int leaves_override) {
  FatTreePlan p;
  p.endpoints = endpoints;
  p.radix = radix;
  if (endpoints <= 0)
    return fail("fat tree: expected >= 1 endpoint, got " + std::to_string(endpoints));
  if (radix < 2)
    return fail("fat tree: expected a switch radix >= 2, got " + std::to_string(radix));
  auto ratio = [&](size_t tier) {
    return tier < oversubscription.size() ? oversubscription[tier] : 1.0;
  };
  if (tiers == 0) tiers = endpoints <= radix && leaves_override <= 1 ? 1 : 0;
  if (tiers == 1) {
    if (endpoints > radix) {
      return fail("fat tree: 1 tier of radix-" + std::to_string(radix) +
                  " switches connects at most " + std::to_string(radix) +
                  " endpoints, the cluster has " + std::to_string(endpoints) + " (use tiers: 2)");
    }
    p.tiers = 1;
    p.leaves = 1;
    p.leaf_down = radix;
    p.leaf_up = 0;
    p.tier_info.push_back({.switches = 1,
                           .down_ports = radix,
                           .up_ports = 0,
                           .down_ports_used = endpoints,
                           .up_ports_used = 0});
    return p;
  }
  p.leaf_down = down_ports(radix, ratio(0));
  p.leaf_up = radix - p.leaf_down;
  p.leaves = leaves_override > 0 ? leaves_override : ceil_div(endpoints, p.leaf_down);
  const long two_tier_max = static_cast<long>(p.leaf_down) * radix;
  if (tiers == 0) tiers = p.leaves <= radix ? 2 : 3;
  if (tiers == 2) {
    if (p.leaves > radix) {
      return fail("fat tree: 2 tiers of radix-" + std::to_string(radix) + " switches with " +
                  std::to_string(p.leaf_down) + " ports down per leaf connect at most " +
                  std::to_string(two_tier_max) + " endpoints, the cluster has " +
                  std::to_string(endpoints) + " (use tiers: 3)");
    }
    p.tiers = 2;
    p.spine_parallel = parallel_links(p.leaf_up, p.leaves, radix);
    p.spines = p.leaf_up / p.spine_parallel;
    p.tier_info.push_back({.switches = p.leaves,
                           .down_ports = p.leaf_down,
                           .up_ports = p.leaf_up,
                           .down_ports_used = endpoints,
                           .up_ports_used = p.leaves * p.leaf_up});
    p.tier_info.push_back({.switches = p.spines,
                           .down_ports = radix,
                           .up_ports = 0,
                           .down_ports_used = p.leaves * p.leaf_up,
                           .up_ports_used = 0,
                           .parallel_links = p.spine_parallel});
    return p;
  }
  // Three tiers: pods of leaves fully meshed to their aggregation switches (one cable per
  // leaf-agg pair), aggregation switch j of every pod meshed to core group j.
  p.tiers = 3;
  p.agg_down = down_ports(radix, ratio(1));
  p.agg_up = radix - p.agg_down;
  p.leaves_per_pod = p.agg_down;
  p.aggs_per_pod = p.leaf_up;
  p.pods = ceil_div(p.leaves, p.leaves_per_pod);
  if (p.pods > radix) {
    const long max = static_cast<long>(p.leaf_down) * p.leaves_per_pod * radix;
    return fail("fat tree: 3 tiers of radix-" + std::to_string(radix) +
                " switches connect at most " + std::to_string(max) +
                " endpoints with this oversubscription, the cluster has " +
                std::to_string(endpoints));
  }
  p.core_parallel = parallel_links(p.agg_up, p.pods, radix);
  p.cores_per_group = p.agg_up / p.core_parallel;
  p.core_groups = p.aggs_per_pod;
  p.cores = p.core_groups * p.cores_per_group;
  p.spines = p.pods * p.aggs_per_pod;
  p.tier_info.push_back({.switches = p.leaves,
                         .down_ports = p.leaf_down,
                         .up_ports = p.leaf_up,
                         .down_ports_used = endpoints,
                         .up_ports_used = p.leaves * p.leaf_up});
  p.tier_info.push_back({.switches = p.spines,
                         .down_ports = p.agg_down,
                         .up_ports = p.agg_up,
                         .down_ports_used = p.leaves * p.leaf_up,
                         .up_ports_used = p.spines * p.agg_up});
  p.tier_info.push_back({.switches = p.cores,
                         .down_ports = radix,
                         .up_ports = 0,
                         .down_ports_used = p.spines * p.agg_up,
                         .up_ports_used = 0,
                         .parallel_links = p.core_parallel});
  return p;
}

base::Result<Topology> Topology::build(const hardware::Catalog& catalog,
                                       const hardware::ClusterSpec& spec) {
  if (auto st = catalog.validate(spec); !st) return fail(st.error());
  const auto& sys = **catalog.system(spec.system);
  const auto& gpu = **catalog.gpu(sys.gpu);
  const auto& nic = **catalog.nic(sys.nic);
  const auto& nvsw = **catalog.switch_spec(sys.nvswitch);
  const auto& sw = **catalog.switch_spec(spec.scale_out.switch_name);
  Seconds optic_latency{};
  if (!spec.scale_out.transceiver.empty()) {
    optic_latency = (*catalog.transceiver(spec.scale_out.transceiver))->latency;
  }

  const long total_gpus = static_cast<long>(sys.gpus()) * spec.count;
  if (total_gpus > 4'000'000) {
    return fail("cluster '" + spec.name + "': " + std::to_string(total_gpus) +
                " GPUs is beyond the supported 4,000,000");
  }
  Topology t;
  t.spec_ = spec;
  t.gpus_ = static_cast<int>(total_gpus);
  t.domain_size_ = sys.nvlink_domain_gpus;
  t.domains_ = t.gpus_ / t.domain_size_;
  t.gpus_per_node_ = sys.gpus_per_node;
  t.nics_per_node_ = sys.nics_per_node;
  t.nics_per_system_ = sys.nics();
  t.nics_ = sys.nics() * spec.count;
  t.planes_ = spec.scale_out.planes;
  t.rail_optimized_ = spec.scale_out.rail_optimized;

  int leaves_override = 0;
  if (t.rail_optimized_) {
    // One leaf per rail (NIC index within a system) per group of d systems.
    const int d = down_ports(sw.ports, spec.scale_out.oversubscription.empty()
                                           ? 1.0
                                           : spec.scale_out.oversubscription[0]);
    t.rail_groups_ = d;
    leaves_override = ceil_div(spec.count, d) * t.nics_per_system_;
  }
  auto plan = plan_fat_tree(t.nics_, sw.ports, spec.scale_out.tiers,
                            spec.scale_out.oversubscription, leaves_override);
  if (!plan) return fail("cluster '" + spec.name + "': scale_out: " + plan.error().message);
  t.plan_ = *plan;

  const auto& p = t.plan_;
  const size_t n_links =
      4u * static_cast<size_t>(t.gpus_) + 2u * static_cast<size_t>(t.nics_) * t.planes_ +
      2u * static_cast<size_t>(t.planes_) * p.leaves * p.leaf_up * (p.tiers >= 2 ? 1 : 0) +
      2u * static_cast<size_t>(t.planes_) * p.spines * p.agg_up * (p.tiers == 3 ? 1 : 0);
  t.links_.reserve(n_links);
  const Seconds cable = spec.scale_out.cable_latency + optic_latency;
  for (int g = 0; g < t.gpus_; ++g) {
    t.links_.push_back({gpu.nvlink_bandwidth, nvsw.latency, LinkKind::kNvlink, 0, 0});
    t.links_.push_back({gpu.nvlink_bandwidth, Seconds{}, LinkKind::kNvlink, 0, 0});
  }
  t.pcie_base_ = static_cast<LinkId>(t.links_.size());
  // The GPU's path to its NIC carries the NIC's line rate (PCIe Gen5/Gen6 x16 or C2C is not the
  // bottleneck on any catalog system); the NIC pipeline latency is split over both directions.
  for (int g = 0; g < t.gpus_; ++g) {
    t.links_.push_back({nic.bandwidth, nic.latency / 2.0, LinkKind::kPcie, 0, 0});
    t.links_.push_back({nic.bandwidth, nic.latency / 2.0, LinkKind::kPcie, 0, 0});
  }
  t.nic_base_ = static_cast<LinkId>(t.links_.size());
  const BytesPerSecond port_bw = nic.bandwidth / t.planes_;
  for (int n = 0; n < t.nics_; ++n) {
    for (int pl = 0; pl < t.planes_; ++pl) {
      const auto plane = static_cast<int8_t>(pl);
      t.links_.push_back({port_bw, cable + sw.latency, LinkKind::kNicUp, 0, plane});
      t.links_.push_back({port_bw, cable, LinkKind::kNicDown, 0, plane});
    }
  }
  t.t1_base_ = static_cast<LinkId>(t.links_.size());
  if (p.tiers >= 2) {
    for (int pl = 0; pl < t.planes_; ++pl) {
      for (int l = 0; l < p.leaves; ++l) {
        for (int j = 0; j < p.leaf_up; ++j) {
          const auto plane = static_cast<int8_t>(pl);
          t.links_.push_back(
              {sw.port_bandwidth, cable + sw.latency, LinkKind::kFabricUp, 1, plane});
          t.links_.push_back(
              {sw.port_bandwidth, cable + sw.latency, LinkKind::kFabricDown, 1, plane});
        }
      }
    }
  }
  t.t2_base_ = static_cast<LinkId>(t.links_.size());
  if (p.tiers == 3) {
    for (int pl = 0; pl < t.planes_; ++pl) {
      for (int a = 0; a < p.spines; ++a) {
        for (int j = 0; j < p.agg_up; ++j) {
          const auto plane = static_cast<int8_t>(pl);
          t.links_.push_back(
              {sw.port_bandwidth, cable + sw.latency, LinkKind::kFabricUp, 2, plane});
          t.links_.push_back(
              {sw.port_bandwidth, cable + sw.latency, LinkKind::kFabricDown, 2, plane});
        }
      }
    }
  }
  CT_CHECK(t.links_.size() == n_links, "link count does not match the layout");
  return t;
}

int Topology::nic_of(int gpu) const {
  const int node = gpu / gpus_per_node_;
  const int local = gpu % gpus_per_node_;
  return node * nics_per_node_ + local * nics_per_node_ / gpus_per_node_;
}

int Topology::leaf_of(int nic) const {
  if (plan_.tiers == 1) return 0;
  if (!rail_optimized_) return nic / plan_.leaf_down;
  const int system = nic / nics_per_system_;
  const int rail = nic % nics_per_system_;
  return (system / rail_groups_) * nics_per_system_ + rail;
}

LinkId Topology::leaf_up_link(int plane, int leaf, int j) const {
  return t1_base_ + 2 * ((plane * plan_.leaves + leaf) * plan_.leaf_up + j);
}

LinkId Topology::agg_up_link(int plane, int agg_global, int j) const {
  return t2_base_ + 2 * ((plane * plan_.spines + agg_global) * plan_.agg_up + j);
}

int64_t Topology::path_count(int a, int b) const {
  if (a == b) return 0;
  if (domain_of(a) == domain_of(b)) return 1;
  const int na = nic_of(a), nb = nic_of(b);
  if (na == nb) return 1;  // two GPUs sharing one NIC (different domains cannot, kept for safety)
  const int la = leaf_of(na), lb = leaf_of(nb);
  int64_t choices = 1;
  if (la != lb) {
    if (plan_.tiers == 2) {
      choices = plan_.leaf_up;
    } else {
      const bool same_pod = la / plan_.leaves_per_pod == lb / plan_.leaves_per_pod;
      choices = same_pod ? plan_.leaf_up : static_cast<int64_t>(plan_.leaf_up) * plan_.agg_up;
    }
  }
  return choices * planes_;
}

void Topology::path(int a, int b, int64_t index, std::vector<LinkId>& out) const {
  CT_CHECK(index >= 0 && index < path_count(a, b), "path index out of range");
  if (domain_of(a) == domain_of(b)) {
    out.push_back(nvlink_up(a));
    out.push_back(nvlink_down(b));
    return;
  }
  const int plane = static_cast<int>(index % planes_);
  int64_t choice = index / planes_;
  const int na = nic_of(a), nb = nic_of(b);
  const int la = leaf_of(na), lb = leaf_of(nb);
  out.push_back(pcie_up(a));
  out.push_back(nic_up(na, plane));
  if (la != lb) {
    if (plan_.tiers == 2) {
      const int j = static_cast<int>(choice);
      out.push_back(leaf_up_link(plane, la, j));
      out.push_back(leaf_up_link(plane, lb, j) + 1);
    } else {
      const int pa = la / plan_.leaves_per_pod, pb = lb / plan_.leaves_per_pod;
      const int j1 = static_cast<int>(choice % plan_.leaf_up);
      out.push_back(leaf_up_link(plane, la, j1));
      if (pa != pb) {
        const int j2 = static_cast<int>(choice / plan_.leaf_up);
        out.push_back(agg_up_link(plane, pa * plan_.aggs_per_pod + j1, j2));
        out.push_back(agg_up_link(plane, pb * plan_.aggs_per_pod + j1, j2) + 1);
      }
      out.push_back(leaf_up_link(plane, lb, j1) + 1);
    }
  }
  out.push_back(nic_down(nb, plane));
  out.push_back(pcie_down(b));
}

int64_t Topology::ecmp_index(int a, int b, uint64_t flow_key) const {
  const int64_t n = path_count(a, b);
  if (n <= 1) return 0;
  const uint64_t h =
      mix(mix(static_cast<uint64_t>(a) * 0x100000001b3ULL ^ static_cast<uint64_t>(b)) ^ flow_key);
  return static_cast<int64_t>(h % static_cast<uint64_t>(n));
}

Seconds Topology::latency(std::span<const LinkId> path) const {
  Seconds s{};
  for (LinkId l : path) s += link(l).latency;
  return s;
}

BytesPerSecond Topology::bottleneck(std::span<const LinkId> path) const {
  if (path.empty()) return BytesPerSecond{};
  BytesPerSecond m = link(path.front()).capacity;
  for (LinkId l : path) m = std::min(m, link(l).capacity);
  return m;
}

}  // namespace clustertwin::topology
