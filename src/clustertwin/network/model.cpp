#include "clustertwin/network/model.h"

namespace clustertwin::network {

Seconds AnalyticalModel::transfer_time(const Transfer& t) const {
  const int64_t n = topo_->path_count(t.src, t.dst);
  if (n == 0) return t.start;
  std::vector<topology::LinkId> path;
  topo_->path(t.src, t.dst, topo_->ecmp_index(t.src, t.dst, t.key), path);
  double bw = topo_->bottleneck(path).base() / t.weight;
  if (t.rate_cap.base() > 0) bw = std::min(bw, t.rate_cap.base());
  if (bw <= 0) return Seconds::from_base(std::numeric_limits<double>::infinity());
  return t.start + topo_->latency(path) + Seconds::from_base(t.bytes.base() / bw);
}

std::vector<Seconds> AnalyticalModel::finish_times(std::span<const Transfer> transfers) {
  std::vector<Seconds> out;
  out.reserve(transfers.size());
  for (const auto& t : transfers) out.push_back(transfer_time(t));
  return out;
}

std::vector<Seconds> FlowModel::finish_times(std::span<const Transfer> transfers) {
  FlowSimulator sim(*topo_, routing_);
  for (const auto& t : transfers) sim.add(t);
  for (const auto& [link, cap] : overrides_) sim.set_capacity(Seconds{}, link, cap);
  sim.run();
  stats_ = sim.stats();
  std::vector<Seconds> out;
  out.reserve(transfers.size());
  for (size_t i = 0; i < transfers.size(); ++i) out.push_back(sim.finish(static_cast<int>(i)));
  return out;
}

std::unique_ptr<NetworkModel> make_model(const std::string& name, const topology::Topology& topo,
                                         Routing routing) {
  if (name == "flow") return std::make_unique<FlowModel>(topo, routing);
  return std::make_unique<AnalyticalModel>(topo);
}

}  // namespace clustertwin::network
