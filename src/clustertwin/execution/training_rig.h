#pragma once
/// A training step's fixed parts for one cluster and model from the catalog: the topology, the
/// GPU's compute model, the model and the analytical CommModel over that topology, and the
/// TrainingSetup that ties them to a layout. One set-up for the training tests, the validation
/// cases and the scale benchmarks (bench/scale/train_bench.cpp, train_flow_bench.cpp), which
/// built the same chain by hand each.
///
/// The rig owns what a TrainingSetup points to, so it stays where it was made (no copy, no
/// move): `make_training_rig` hands it out in a unique_ptr.

#include <memory>
#include <string_view>

#include "clustertwin/base/result.h"
#include "clustertwin/execution/comm.h"
#include "clustertwin/execution/training.h"
#include "clustertwin/execution/training_calibration.h"

namespace clustertwin::execution {

struct TrainingRig {
  const hardware::GpuSpec* gpu = nullptr;
  topology::Topology topo;
  compute::ComputeModel compute;
  models::ModelSpec model;
  AnalyticalComm analytical;
  TrainingCalibration calibration;  ///< the catalog's fitted constants, applied by setup()

  TrainingRig(const hardware::GpuSpec& g, topology::Topology t, compute::ComputeModel c,
              models::ModelSpec m)
      : gpu(&g), topo(std::move(t)), compute(std::move(c)), model(std::move(m)), analytical(topo) {}
  TrainingRig(const TrainingRig&) = delete;
  TrainingRig& operator=(const TrainingRig&) = delete;

  /// The setup of `layout` on this rig: usable HBM as the memory capacity, the GPU's dense peak
  /// at the precision the layout's GEMMs run at, `comm` (the rig's analytical model unless given).
  [[nodiscard]] TrainingSetup setup(const workload::TrainingLayout& layout,
                                    const CommModel* comm = nullptr) const;
};

/// Errors: an unknown cluster or model, or a cluster the topology refuses (the catalog's
/// message).
base::Result<std::unique_ptr<TrainingRig>> make_training_rig(const hardware::Catalog& cat,
                                                             std::string_view cluster,
                                                             std::string_view model);
/// The same for a model built elsewhere (a Megatron-style GPT of given shape, say).
base::Result<std::unique_ptr<TrainingRig>> make_training_rig(const hardware::Catalog& cat,
                                                             std::string_view cluster,
                                                             models::ModelSpec model);

}  // namespace clustertwin::execution
