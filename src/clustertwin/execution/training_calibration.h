#pragma once
/// The training step model's fitted constants, read from the catalog
/// (catalog/calibration/training.yaml, every figure with its source) rather than compiled in:
/// what `TrainingSetup` takes for the FP8 GEMM overhead and the eager host issue per expert
/// GEMM (docs/models/training.md, "Calibration: what was fitted on what").

#include <string>

#include "clustertwin/base/result.h"
#include "clustertwin/base/units.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::execution {

struct TrainingSetup;

struct TrainingCalibration {
  /// TrainingSetup::fp8_overhead: time added to every Transformer Engine FP8 GEMM, a fraction.
  double fp8_overhead = 0.0;
  /// TrainingSetup::host_per_expert_gemm: host time per eagerly issued expert GEMM.
  base::Seconds host_per_expert_gemm;
  /// TrainingSetup::eager_host_per_layer: the serving model's eager issue time per decoder layer
  /// (catalog/calibration/serving.yaml, serving_calibration.h).
  base::Seconds eager_host_per_layer;
  /// Where the figures come from: "catalog/calibration/training.yaml" and each figure's source.
  std::string path;
  std::string sources;

  /// Sets the setup's fitted constants to these.
  void apply(TrainingSetup& s) const;
};

/// Reads catalog/calibration/training.yaml, and the eager issue time per layer from
/// catalog/calibration/serving.yaml. Errors name file:line and the expected value; a catalog
/// without either file is an error (the step model has no compiled-in fit).
base::Result<TrainingCalibration> training_calibration(const hardware::Catalog& catalog);

}  // namespace clustertwin::execution
