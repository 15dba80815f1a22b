#pragma once
/// The serving step model's fitted constants, read from the catalog
/// (catalog/calibration/serving.yaml, every figure with its source) rather than compiled in:
/// the TP all-reduce overlap of a build with GEMM + all-reduce fusion (the default of
/// workload::ServingLayout::tp_overlap), the streaming front end's host time per response and
/// the eager host time per decoder layer of the PyTorch runtime (StepCalibration; the training
/// step's eager issue takes the same figure) and the C++ executor's host time per iteration of a
/// TensorRT engine. docs/models/inference.md says what each is fitted
/// on; `clustertwin calibrate --builtin serving` refits them (docs/models/calibration.md).

#include <string>

#include "clustertwin/base/result.h"
#include "clustertwin/base/units.h"
#include "clustertwin/execution/serving_sim.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::execution {

struct ServingStepCalibration {
  /// workload::ServingLayout::tp_overlap of a layout that does not set its own: the fraction of
  /// the TP all-reduce that hides behind the GEMMs with TensorRT-LLM's fused GEMM + all-reduce.
  double tp_overlap = 0.0;
  /// StepCalibration::stream_host_per_response_s.
  base::Seconds stream_host_per_response;
  /// StepCalibration::eager_host_per_layer_s (and TrainingSetup::eager_host_per_layer).
  base::Seconds eager_host_per_layer;
  /// StepCalibration::engine_host_per_iteration_s: the TensorRT-LLM C++ executor's host time
  /// between two iterations of a TensorRT engine.
  base::Seconds engine_host_per_iteration;
  /// Where the figures come from: "catalog/calibration/serving.yaml" and each figure's source.
  std::string path;
  std::string sources;

  /// Sets the step calibration's eager issue, front-end and engine host times to these (the
  /// kernel-time factor and the host time per iteration stay as they are: a profile's, or
  /// neutral).
  void apply(StepCalibration& c) const;
  /// Sets the layout's TP overlap to this one (a layout that sets its own sets it afterwards).
  void apply(workload::ServingLayout& l) const;
  /// Both of the above on a simulator setup.
  void apply(ServingSetup& s) const;
  /// Both on one step model's setup (its calibration and TP overlap).
  void apply(StepSetup& s) const;
};

/// Reads catalog/calibration/serving.yaml. Errors name file:line and the expected value; a
/// catalog without the file is an error (the serving step model has no compiled-in fit).
base::Result<ServingStepCalibration> serving_step_calibration(const hardware::Catalog& catalog);

}  // namespace clustertwin::execution
