#pragma once
/// How fast a training job runs where it landed (docs/models/orchestration.md §2.4). The step
/// time is the execution layer's analytical estimate (estimate_training_step) for the job's
/// model and layout, with communication priced on the placement the job actually got: ranks
/// follow Megatron order over the job's nodes (sorted), so a domain holding s of the job's GPUs
/// gives its collectives s GPUs of NVLink. Two numbers of the placement decide the price:
/// - the gcd of the per-domain GPU counts: a tensor-parallel group of tp consecutive ranks stays
///   inside a domain exactly when tp divides every domain's share; otherwise some TP group
///   straddles two domains and its collectives cross the scale-out network (PlacementComm
///   re-prices those with gcd GPUs per domain);
/// - the smallest per-domain share: a strided group (data, pipeline, context, expert parallel)
///   gets share/stride ranks per domain for its hierarchical algorithm.
/// A synchronous job runs at its slowest group, so the worst domain sets the step time.
/// Estimates are cached per (job type, gcd, smallest share): a month of jobs needs a handful.

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/compute/compute_model.h"
#include "clustertwin/execution/comm.h"
#include "clustertwin/execution/training_calibration.h"
#include "clustertwin/hardware/catalog.h"
#include "clustertwin/models/model.h"
#include "clustertwin/scheduler/job.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::scheduler {

/// A CommModel that prices a request as if NVLink domains held only the GPUs the job has in
/// them: `gcd_gpus` for contiguous groups (TP), `min_gpus` for strided ones.
class PlacementComm final : public execution::CommModel {
 public:
  PlacementComm(const topology::Topology& topo, int gcd_gpus, int min_gpus)
      : inner_(topo), domain_(topo.domain_size()), gcd_(gcd_gpus), min_(min_gpus) {}
  [[nodiscard]] base::Seconds time(const execution::CommRequest& r) const override;
  [[nodiscard]] std::string name() const override { return "placement"; }
  [[nodiscard]] int domain_size() const override { return domain_; }

 private:
  execution::AnalyticalComm inner_;
  int domain_, gcd_, min_;
};

class SpeedModel {
 public:
  SpeedModel(const hardware::Catalog& catalog, const topology::Topology& topo);

  /// Registers a training job type (model + layout for `gpus` GPUs); returns its id. Errors:
  /// unknown model, a layout that does not fit the model or the GPU memory.
  base::Result<int> add(const TrainingWork& work, int gpus);

  /// Step time on the best placement for the job's size (full domains, aligned).
  double best_step_s(int id);
  /// Step time with the given per-domain shares (gcd and smallest, in GPUs).
  double step_s(int id, int gcd_gpus, int min_gpus);
  /// Parameters of the model (for checkpoint size).
  [[nodiscard]] double parameters(int id) const { return types_[static_cast<size_t>(id)].params; }
  [[nodiscard]] const std::string& model_name(int id) const {
    return types_[static_cast<size_t>(id)].model;
  }
  [[nodiscard]] int64_t estimates() const { return estimates_; }
  /// The training model's framework overhead for every estimate (TrainingSetup::
  /// framework_overhead; a calibration profile's compute-time scale - 1). Clears the cache.
  void set_framework_overhead(double f) {
    framework_overhead_ = f;
    cache_.clear();
  }
  /// The per-iteration host time added to every estimate (TrainingSetup::host_time; a
  /// calibration profile's fitted `host_time_s`). Clears the cache.
  void set_host_time(base::Seconds h) {
    host_time_ = h;
    cache_.clear();
  }
  /// The step model's fitted constants of every estimate: the catalog's
  /// (catalog/calibration/training.yaml) unless this replaces them (a calibration profile's
  /// fitted fp8_overhead / host_per_expert_gemm laid over them). Clears the cache.
  void set_training_calibration(const execution::TrainingCalibration& c) {
    training_calibration_ = c;
    cache_.clear();
  }
  /// The compute model of every estimate: the catalog's for the cluster's GPU unless this
  /// replaces it (a calibration profile's kernel tables laid over it). Clears the cache.
  void set_compute(const compute::ComputeModel& m) {
    compute_ = std::make_unique<compute::ComputeModel>(m);
    cache_.clear();
  }
  [[nodiscard]] int domain_gpus() const { return domain_gpus_; }

 private:
  struct Type {
    std::string model;
    workload::TrainingLayout layout;
    int gpus = 0;
    double params = 0;
    const models::ModelSpec* spec = nullptr;
  };
  base::Result<double> estimate(const Type& t, int gcd, int min);

  const hardware::Catalog* catalog_;
  const topology::Topology* topo_;
  std::unique_ptr<compute::ComputeModel> compute_;
  base::Bytes hbm_;
  const hardware::GpuSpec* gpu_ = nullptr;
  int domain_gpus_ = 1;
  std::map<std::string, std::unique_ptr<models::ModelSpec>> models_;
  std::vector<Type> types_;
  std::map<std::tuple<std::string, int64_t, int, int, int, int, int, int64_t, int64_t, int>, int>
      type_ids_;
  std::map<std::tuple<int, int, int>, double> cache_;
  double framework_overhead_ = 0.0;
  base::Seconds host_time_;
  /// The step model's fitted constants (catalog/calibration/training.yaml); an error when the
  /// catalog lacks them, reported by add().
  base::Result<execution::TrainingCalibration> training_calibration_;
  int64_t estimates_ = 0;
};

}  // namespace clustertwin::scheduler
