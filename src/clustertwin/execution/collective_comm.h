#pragma once
/// CommModel backed by the collective layer (NCCL algorithms, protocols and tuning, calibrated on
/// measured NCCL tables) over either network model. With the flow model, concurrent groups that
/// cross NVLink domains are solved together, so the step sees contention on the fabric
/// (oversubscription, ECMP collisions, degraded links); groups inside one domain use private
/// NVLink links and one representative stands for all. Results are memoised per request shape.

#include <map>
#include <memory>
#include <tuple>

#include "clustertwin/collective/collective_model.h"
#include "clustertwin/execution/comm.h"

namespace clustertwin::execution {

class CollectiveComm final : public CommModel {
 public:
  CollectiveComm(const hardware::Catalog& catalog, const topology::Topology& topo,
                 collective::Calibration calibration, collective::ModelOptions options);
  [[nodiscard]] Seconds time(const CommRequest& r) const override;
  [[nodiscard]] std::string name() const override;
  [[nodiscard]] int domain_size() const override { return topo_->domain_size(); }
  /// Flow-level solves run so far (0 with the analytical network): what a step costs.
  [[nodiscard]] int64_t flow_solves() const { return model_->flow_solves(); }

 private:
  const topology::Topology* topo_;
  collective::Calibration calibration_;
  collective::NetworkModelKind kind_;
  mutable std::unique_ptr<collective::CollectiveModel> model_;
  mutable std::map<std::tuple<int, double, int, int, int, int>, double> memo_;
};

}  // namespace clustertwin::execution
