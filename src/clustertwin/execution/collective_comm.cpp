#include "clustertwin/execution/collective_comm.h"

#include <cmath>

#include "clustertwin/base/check.h"

namespace clustertwin::execution {

CollectiveComm::CollectiveComm(const hardware::Catalog& catalog, const topology::Topology& topo,
                               collective::Calibration calibration,
                               collective::ModelOptions options)
    : topo_(&topo), calibration_(std::move(calibration)), kind_(options.network) {
  model_ = std::make_unique<collective::CollectiveModel>(catalog, topo, calibration_, options);
}

std::string CollectiveComm::name() const {
  std::string n = kind_ == collective::NetworkModelKind::kFlow
                      ? "collective model (NCCL algorithms, flow-level network)"
                      : "collective model (NCCL algorithms, analytical network)";
  for (const auto& p : calibration_.profiles()) n += ", calibration profile " + p.path;
  return n;
}

namespace {
collective::Op to_op(CommOp op) {
  switch (op) {
    case CommOp::kAllReduce:
      return collective::Op::kAllReduce;
    case CommOp::kAllGather:
      return collective::Op::kAllGather;
    case CommOp::kReduceScatter:
      return collective::Op::kReduceScatter;
    case CommOp::kAllToAll:
      return collective::Op::kAllToAll;
    case CommOp::kSendRecv:
      return collective::Op::kSendRecv;
  }
  return collective::Op::kAllReduce;
}
}  // namespace

Seconds CollectiveComm::time(const CommRequest& r) const {
  if (r.group_size <= 1 && r.op != CommOp::kSendRecv) return Seconds{};
  const auto key = std::make_tuple(static_cast<int>(r.op), r.bytes.base(), r.group_size,
                                   r.first_gpu, r.stride, r.concurrent);
  if (auto it = memo_.find(key); it != memo_.end()) return Seconds::from_base(it->second);
  auto members = [&](int start) {
    std::vector<int> g;
    for (int k = 0; k < std::max(2, r.group_size); ++k) g.push_back(start + k * r.stride);
    return g;
  };
  collective::Request req{.op = to_op(r.op),
                          .bytes = static_cast<int64_t>(std::llround(r.bytes.base())),
                          .dtype = {"bfloat16", 2, true}};
  const auto first = members(r.first_gpu);
  CT_CHECK(first.back() < topo_->gpus(), "collective group beyond the cluster");
  auto g = collective::make_group(*topo_, first);
  CT_CHECK(g.has_value(), "collective group construction failed");
  double t = 0;
  const bool cross = g->domains() > 1;
  if (kind_ == collective::NetworkModelKind::kFlow && cross && r.concurrent > 1) {
    // The concurrent groups in Megatron rank order: offsets inside one block of stride GPUs,
    // then the next block of group_size * stride GPUs (the next stage or data-parallel block).
    std::vector<collective::Group> groups;
    const int inner = std::max(1, r.stride);
    const int block = std::max(2, r.group_size) * r.stride;
    for (int i = 0; i < r.concurrent; ++i) {
      const int start = r.first_gpu + (i % inner) + (i / inner) * block;
      auto m = members(start);
      if (m.back() >= topo_->gpus()) break;
      auto gi = collective::make_group(*topo_, m);
      if (gi) groups.push_back(std::move(*gi));
    }
    auto c = model_->concurrent(groups, req);
    CT_CHECK(c.has_value(), "concurrent collective estimate failed");
    for (const auto& gr : c->groups) t = std::max(t, gr.estimate.time.base());
  } else {
    auto e = model_->estimate(*g, req);
    CT_CHECK(e.has_value(), "collective estimate failed");
    t = e->time.base();
  }
  memo_[key] = t;
  return Seconds::from_base(t);
}

}  // namespace clustertwin::execution
