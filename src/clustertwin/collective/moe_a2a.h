#pragma once
/// MoE token dispatch and combine at scale (docs/models/collectives.md, "MoE all-to-all"): the
/// all-to-all kernels training and serving frameworks run for expert parallelism, each with the
/// traffic it really sends and the limits measured on it.
///
///   nccl             ncclAllToAll: every routed copy of a token to its expert's rank (no
///                    deduplication), the direct all-to-all of CollectiveModel.
///   deepep-normal    DeepEP's normal (high-throughput) kernels: a token crosses the network once
///                    per destination NVLink domain (to the rank with the same local index) and
///                    is forwarded over NVLink to the ranks holding its experts there.
///                    t = floor + max(network bytes / (B_nic e_rdma, peers x r_peer),
///                                    NVLink bytes / (B_nvl e_nvl))
///   deepep-ll        DeepEP's low-latency kernels: every routed copy straight to its expert's
///                    rank (IBGDA RDMA across domains, NVLink inside), no forwarding.
///                    t = floor + max(remote bytes / (B_nic e_rdma), local bytes / (B_nvl e_nvl))
///   nvlink-onesided  TensorRT-LLM's NVLinkOneSided all-to-all inside one multi-node NVLink domain
///                    (GB200/GB300 NVL72): one-sided stores into symmetric memory.
///                    t = floor - overlap + max(overlap, routed bytes out / (B_nvl e_nvl))
///                    (the signalling part of the floor runs while the stores are in flight)
///
/// Routing is uniform over the experts (balanced load) with DeepSeek-style group-limited routing
/// where the model has it: E[distinct domains] and E[distinct ranks] a token reaches follow from
/// hypergeometric counts (moe_reach). Parameters are data (catalog/collectives/moe-a2a.yaml),
/// each fitted on a named source.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/collective/collective_model.h"
#include "clustertwin/collective/group.h"

namespace clustertwin::collective {

enum class A2aImpl { kNccl, kDeepEpNormal, kDeepEpLowLatency, kNvlinkOneSided };
const char* a2a_impl_name(A2aImpl i);
base::Result<A2aImpl> parse_a2a_impl(std::string_view s);

/// How tokens pick experts: top-k of `experts`, optionally limited to `topk_groups` of `groups`
/// expert groups (DeepSeek-V3: 256 experts, top-8, 8 groups, 4 of them per token).
struct MoeRouting {
  int experts = 256;
  int topk = 8;
  int groups = 0;       ///< 0: no group limit
  int topk_groups = 0;  ///< groups a token may use
  /// A perfect router (benchmarks that force balance, TensorRT-LLM's microbenchmark): a token's
  /// experts lie on min(ranks, topk) distinct ranks.
  bool balanced = false;
};

/// Expected distinct NVLink domains and distinct ranks one token's routed experts lie in, for
/// `domains` x `per_domain` ranks holding the experts in contiguous equal blocks.
struct MoeReach {
  double domains = 1;
  double ranks = 1;
};
MoeReach moe_reach(const MoeRouting& r, int domains, int per_domain);

/// One kernel's fitted parameters (catalog/collectives/moe-a2a.yaml).
struct A2aKernelParams {
  std::vector<std::string> gpus;  ///< GPU types it was measured on ("*": any)
  double nvlink_efficiency = 0.8;
  double rdma_efficiency = 0.9;    ///< of the NIC line rate
  BytesPerSecond rdma_per_peer{};  ///< per remote peer (0: no per-peer limit)
  Seconds dispatch_floor{};
  Seconds combine_floor{};
  /// The part of the floor that overlaps with moving the data (flag signalling while stores are
  /// in flight): t = floor - overlap + max(overlap, data time). 0: the floor adds in full.
  Seconds dispatch_overlap{};
  Seconds combine_overlap{};
  std::string source;
};

class A2aParams {
 public:
  /// catalog/collectives/moe-a2a.yaml of the catalog.
  static base::Result<A2aParams> load(const hardware::Catalog& catalog);
  /// The kernel's parameters for a GPU type: its own entry, else the kernel's "*" entry.
  [[nodiscard]] base::Result<A2aKernelParams> kernel(A2aImpl impl, std::string_view gpu) const;

 private:
  std::vector<std::pair<A2aImpl, A2aKernelParams>> entries_;
};

struct MoeA2aRequest {
  A2aImpl impl = A2aImpl::kNccl;
  bool combine = false;         ///< combine (back from the experts) instead of dispatch
  int64_t tokens_per_rank = 1;  ///< tokens each rank sends
  int64_t token_bytes = 14336;  ///< bytes of one token's payload (hidden x element bytes + scales)
  MoeRouting routing;
};

struct MoeA2aEstimate {
  A2aImpl impl = A2aImpl::kNccl;
  Seconds time;
  Seconds floor;
  Bytes network_bytes;  ///< per rank, sent across domains
  Bytes nvlink_bytes;   ///< per rank, sent over NVLink
  MoeReach reach;
  /// TensorRT-LLM's "logical" bandwidth: tokens x min(ranks, topk) x token bytes / time.
  BytesPerSecond logical_bw;
  /// DeepEP's test figures: RDMA bytes counted over every destination domain (own included) /
  /// time; NVLink bytes received per rank (own tokens included) / time.
  BytesPerSecond rdma_bw, nvl_bw;
  std::string bottleneck;  ///< "nvlink", "network" or "" (latency bound)
};

/// The time of one dispatch or combine on a group of expert-parallel ranks. `model` supplies
/// the NCCL path and the link rates of the group's GPUs.
base::Result<MoeA2aEstimate> estimate_moe_a2a(CollectiveModel& model,
                                              const topology::Topology& topo,
                                              const A2aParams& params, const Group& g,
                                              const MoeA2aRequest& r);

/// The closed form of one DeepEP or NVLink one-sided kernel (not nccl) on given link rates:
/// what estimate_moe_a2a computes for those kernels once it has the group's shape (`domains` x
/// `per_domain` ranks) and its GPUs' NVLink rate (per direction) and NIC rate (per GPU). For
/// callers without a topology (the serving step tabulates it per layout).
base::Result<MoeA2aEstimate> moe_a2a_kernel(const A2aKernelParams& kp, const MoeA2aRequest& r,
                                            int domains, int per_domain, BytesPerSecond nvlink,
                                            BytesPerSecond nic);

/// `clustertwin collective --op all_to_all --impl ...`: one kernel on one group at several
/// token counts.
struct MoeSweepSpec {
  std::string cluster = "azure-ndv6-gb300";
  int gpus = 0;
  int gpus_per_domain = 0;
  MoeA2aRequest request;  ///< tokens_per_rank is replaced by each of `tokens`
  std::vector<int64_t> tokens{128};
  std::string routing_from;  ///< where the routing came from (a model name), for output
};
struct MoeSweepResult {
  MoeSweepSpec spec;
  std::string cluster_name, gpu;
  int ranks = 0, domains = 0, per_domain = 0;
  std::string source;  ///< the kernel parameters' citation ("" for nccl)
  std::vector<std::pair<int64_t, MoeA2aEstimate>> rows;
};
base::Result<MoeSweepResult> run_moe_sweep(const hardware::Catalog& catalog,
                                           const MoeSweepSpec& spec);
std::string render_moe_table(const MoeSweepResult& r);
nlohmann::json moe_to_json(const MoeSweepResult& r);

}  // namespace clustertwin::collective
