#pragma once
/// What the training and serving simulations ask of communication: the time of one collective
/// of a group of GPUs while `concurrent` identical groups run the same collective (all DP groups
/// reduce at once; every pipeline sends at once). The collective layer answers it with NCCL's
/// algorithms over the network model; `AnalyticalComm` is the closed-form fallback used when a
/// caller wants microseconds per estimate (layout search).

#include <memory>
#include <string>

#include "clustertwin/base/units.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::execution {

using base::Bytes;
using base::Seconds;

enum class CommOp { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
const char* comm_op_name(CommOp op);

struct CommRequest {
  CommOp op = CommOp::kAllReduce;
  /// nccl-tests convention: all-reduce: the buffer; all-gather / reduce-scatter: the total
  /// (gathered) buffer; all-to-all: each rank's send buffer; send/recv: the message.
  Bytes bytes;
  int group_size = 1;
  int first_gpu = 0;     ///< GPU of rank 0 of the representative group
  int stride = 1;        ///< GPU distance between consecutive ranks of a group
  int concurrent = 1;    ///< identical groups running at the same time
  int group_stride = 0;  ///< GPU offset from one concurrent group to the next
};

class CommModel {
 public:
  virtual ~CommModel() = default;
  [[nodiscard]] virtual Seconds time(const CommRequest& r) const = 0;
  [[nodiscard]] virtual std::string name() const = 0;
  /// GPUs per NVLink domain of the cluster (0: unknown; callers then treat the fabric as flat).
  [[nodiscard]] virtual int domain_size() const { return 0; }
};

/// Closed forms (Thakur et al. 2005; NCCL's ring and hierarchical algorithms) on the topology's
/// bandwidths: ring all-reduce 2(n-1)/n * S/B + 2(n-1) * alpha; all-gather / reduce-scatter
/// (n-1)/n * S/B + (n-1) * alpha; all-to-all (n-1)/n * S/B_min + alpha; groups spanning NVLink
/// domains run hierarchically (intra-domain reduce-scatter, inter-domain ring over the NICs,
/// intra-domain all-gather). B is the link bandwidth times an achievable fraction (NVLink 0.8,
/// NIC 0.92: nccl-tests reach ~370 GB/s ring on 450 GB/s NVLink 4 and 46-48 GB/s per 400G NIC;
/// shared/reference/hardware-and-models.md §1.4-1.5); concurrent groups that cross an
/// oversubscribed fabric tier share it.
class AnalyticalComm final : public CommModel {
 public:
  explicit AnalyticalComm(const topology::Topology& topo) : topo_(&topo) {}
  [[nodiscard]] Seconds time(const CommRequest& r) const override;
  [[nodiscard]] std::string name() const override { return "analytical"; }
  [[nodiscard]] int domain_size() const override { return topo_->domain_size(); }

 private:
  const topology::Topology* topo_;
};

}  // namespace clustertwin::execution
