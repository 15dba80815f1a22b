#include "clustertwin/execution/comm.h"

#include <algorithm>
#include <cmath>

namespace clustertwin::execution {

const char* comm_op_name(CommOp op) {
  switch (op) {
    case CommOp::kAllReduce:
      return "all_reduce";
    case CommOp::kAllGather:
      return "all_gather";
    case CommOp::kReduceScatter:
      return "reduce_scatter";
    case CommOp::kAllToAll:
      return "all_to_all";
    case CommOp::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

namespace {
constexpr double kNvlinkFraction = 0.80;
constexpr double kNicFraction = 0.92;
constexpr double kAlphaNvlink = 5e-6;  // NCCL ring step latency inside a domain (LL128/Simple)
constexpr double kAlphaNet = 10e-6;    // per step across the network
}  // namespace

Seconds AnalyticalComm::time(const CommRequest& r) const {
  const int n = r.group_size;
  const double S = r.bytes.base();
  if (n <= 1 && r.op != CommOp::kSendRecv) return Seconds{};
  const auto& t = *topo_;
  const double nv = t.link(t.nvlink_up(r.first_gpu)).capacity.base() * kNvlinkFraction;
  const double nic = t.link(t.pcie_up(r.first_gpu)).capacity.base() * kNicFraction;
  const int d = t.domain_size();
  // Fabric share: concurrent groups whose members reach beyond a switch's subtree climb through
  // its uplinks; an oversubscribed tier then gives each 1/oversubscription of the NIC rate.
  // Subtree sizes in GPUs: a leaf covers leaf_down NIC ports (of leaf_down systems, one rail,
  // when rail-optimised); a pod covers leaves_per_pod leaves.
  double oversub = 1.0;
  const auto& plan = t.fabric();
  const double gpus_per_nic = static_cast<double>(t.gpus()) / t.nics();
  const double span = static_cast<double>(r.group_size - 1) * r.stride + 1;  // one group's reach
  const double leaf_cover = t.spec().scale_out.rail_optimized
                                ? static_cast<double>(plan.leaf_down) * d
                                : plan.leaf_down * gpus_per_nic;
  if (plan.tiers >= 2 && span > leaf_cover && !plan.tier_info.empty() &&
      plan.tier_info[0].up_ports > 0) {
    oversub = std::max(
        oversub, static_cast<double>(plan.tier_info[0].down_ports) / plan.tier_info[0].up_ports);
    const double pod_cover = leaf_cover * plan.leaves_per_pod;
    if (plan.tiers == 3 && span > pod_cover && plan.tier_info[1].up_ports > 0) {
      oversub = std::max(
          oversub, static_cast<double>(plan.tier_info[1].down_ports) / plan.tier_info[1].up_ports);
    }
  }
  // Ranks of the group inside one domain: consecutive ranks `stride` apart.
  const int per_domain = std::clamp(r.stride >= d ? 1 : d / std::max(1, r.stride), 1, n);
  const int domains = (n + per_domain - 1) / per_domain;
  const double net = nic / (r.concurrent > 1 && domains > 1 ? oversub : 1.0);
  const double nd = n;
  switch (r.op) {
    case CommOp::kSendRecv: {
      const bool same = r.stride < d && (r.first_gpu % d) + r.stride < d;
      return Seconds::from_base((same ? kAlphaNvlink : kAlphaNet) + S / (same ? nv : net));
    }
    case CommOp::kAllToAll: {
      // Each rank sends (n-1)/n of its buffer; the part leaving the domain goes over the NIC.
      const double out_frac = domains > 1 ? 1.0 - static_cast<double>(per_domain) / nd : 0.0;
      const double local = S * (static_cast<double>(per_domain) - 1) / nd / nv;
      const double remote = S * out_frac / net;
      return Seconds::from_base((domains > 1 ? kAlphaNet : kAlphaNvlink) + std::max(local, remote));
    }
    case CommOp::kAllGather:
    case CommOp::kReduceScatter: {
      if (domains == 1) {
        return Seconds::from_base((nd - 1) / nd * S / nv + (nd - 1) * kAlphaNvlink);
      }
      const double p = per_domain, m = domains;
      const double intra = (p - 1) / p * S / nv + (p - 1) * kAlphaNvlink;
      const double inter = (m - 1) / m * (S / p) / net + (m - 1) * kAlphaNet;
      return Seconds::from_base(intra + inter);
    }
    case CommOp::kAllReduce: {
      if (domains == 1) {
        return Seconds::from_base(2 * (nd - 1) / nd * S / nv + 2 * (nd - 1) * kAlphaNvlink);
      }
      const double p = per_domain, m = domains;
      const double intra = 2 * (p - 1) / p * S / nv + 2 * (p - 1) * kAlphaNvlink;
      const double inter = 2 * (m - 1) / m * (S / p) / net + 2 * (m - 1) * kAlphaNet;
      return Seconds::from_base(intra + inter);
    }
  }
  return Seconds{};
}

}  // namespace clustertwin::execution
