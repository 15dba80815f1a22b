#pragma once
/// Training step times (Megatron-LM logs, step-time CSVs) fitted to the training model
/// (docs/models/calibration.md, "Step times").
///
///   t_step(layout; s, h) = the event-driven step of the layout with every compute task x s,
///                          plus h once per step
///   s = 1 + framework_overhead   (execution::TrainingSetup::framework_overhead)
///   h = per-iteration host time  (execution::TrainingSetup::host_time)
///
/// `s` is the compute-time scale: what a real job loses beyond the kernel tables' times
/// (launch gaps, host overhead between kernels, stragglers, kernels slower or faster at the
/// job's shapes than at the tables'); `s` < 1 says the kernels ran faster than the compute
/// model's tables. One factor for all the runs of one GPU and stack, fitted with the generic
/// fitter (fitter.h): log residuals, soft-L1, uncertainty, cross-validation when there are at
/// least four runs.
///
/// `h` is what the host adds once per iteration (optimizer step launch, data loader, logging,
/// Python between steps). Only runs of different step lengths tell it from `s`: with one run, or
/// runs whose steps scale alike, the fitter reports it "only together with" the scale and holds
/// it at its start, 1 ms (negligible against a step of seconds), rather than returning a value
/// nothing measured. It starts from a grid over its bounds and has no prior (a pull toward 1 ms
/// in log space would hold it there).
///
/// Two more parameters, the step model's constants that `calibrate --builtin training` fits on the
/// catalog's cases (builtin_training.h, one definition of each: name, bounds), are offered when
/// the runs can see them, each starting from, and held when nothing constrains it at, the
/// catalog's value (catalog/calibration/training.yaml):
///
///   fp8_overhead          only when some run trains with FP8 GEMMs (precision fp8). It scales
///                         the FP8 GEMMs alone, the compute scale every task: runs whose GEMM
///                         share of the step is the same (one model, one shape) see the two only
///                         together, and the fitter says so and keeps the catalog's value.
///   host_per_expert_gemm  only when some run trains a MoE model; it binds only where the eager
///                         issue of the expert GEMMs outlasts the GPU's work.
///
/// A constrained one is written into the profile's `training:` mapping with its source, and
/// `train`, `search`, `power` and `goodput --calibration` run it in place of training.yaml's.
///
/// The predictor is the caller's (the CLI prepares each run's layout exactly as `train` does), so
/// what is fitted is what `train --calibration` then runs.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/calibration/collective_fit.h"
#include "clustertwin/calibration/fitter.h"
#include "clustertwin/calibration/measurements.h"
#include "clustertwin/collective/sweep.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::calibration {

/// The values one prediction runs at.
struct StepValues {
  double scale = 1;                   ///< compute-time scale (1 + framework_overhead)
  double host_s = 0;                  ///< per-iteration host time
  double fp8_overhead = 0;            ///< execution::TrainingSetup::fp8_overhead
  double host_per_expert_gemm_s = 0;  ///< execution::TrainingSetup::host_per_expert_gemm
};

/// Predicts measured step `index` (seconds, > 0) at the values.
using StepPredictor = std::function<base::Result<double>(size_t index, const StepValues& values)>;

/// The step model's constants as the catalog has them, and which of them the fit offers.
struct StepConstants {
  double fp8_overhead = 0;
  double host_per_expert_gemm_s = 0;
  std::string path = "catalog/calibration/training.yaml";  ///< where the values come from
  bool offer_fp8 = false;                                  ///< some run trains with FP8 GEMMs
  bool offer_host_per_expert = false;                      ///< some run trains a MoE model
};

struct StepFit {
  std::string gpu;  ///< catalog GPU the fit applies to
  std::vector<Parameter> parameters;
  std::vector<Observation> observations;  ///< one per run, seconds
  FitResult result;
  double compute_scale = 1;  ///< the fitted value (the start when nothing constrains it)
  double host_time_s = 0;    ///< likewise
  StepConstants constants;   ///< the catalog's values and what was offered
  double fp8_overhead = 0;   ///< fitted, else the catalog's
  double host_per_expert_gemm_s = 0;
  /// The offered constants' results (nullptr when not offered).
  [[nodiscard]] const ParameterResult* fp8_result() const;
  [[nodiscard]] const ParameterResult* host_per_expert_result() const;
};

/// The parameter's bounds: a job cannot run its kernels 4x faster or slower than the tables and
/// still be the same software; outside that the layout or the model is wrong, not the scale.
inline constexpr double kMinComputeScale = 0.25;
inline constexpr double kMaxComputeScale = 4.0;
/// The host time's start (negligible against a step) and bounds: above 10 s per iteration the
/// job is not a training loop the model describes.
inline constexpr double kHostTimeStart = 1e-3;
inline constexpr double kMinHostTime = 1e-5;
inline constexpr double kMaxHostTime = 10.0;

/// Fits the compute-time scale, the host time and the offered constants to the runs. Errors: no
/// runs, a run without a step time, a catalog value outside a constant's bounds, a predictor
/// error (named with the run's file:line).
base::Result<StepFit> fit_step_times(std::string gpu, std::span<const StepTime> steps,
                                     const StepPredictor& predict, FitOptions options = {},
                                     StepConstants constants = {});

/// Text for stdout: per run measured, before, after, cross-validated; the parameter with its
/// uncertainty; what is not modelled.
std::string step_fit_summary(const StepFit& fit, std::span<const StepTime> steps);

/// The `training:` mapping of a profile (appended after `collectives:`): the fitted scale and
/// the record of the fit (runs, errors, parameter).
std::string training_profile_yaml(const StepFit& fit, std::span<const StepTime> steps);

/// A whole profile from step times alone: the `profile:` record (inputs with their hashes), an
/// empty `collectives:` mapping for the GPU (the catalog's lines stay), the `training:` mapping.
std::string step_profile_yaml(const StepFit& fit, std::span<const InputFile> inputs,
                              std::span<const StepTime> steps, const ProfileMeta& meta);

/// The step fit for `--report`: measured vs predicted per run (bars and a table), the parameter,
/// what is not fitted. A fragment to add to the collective page, or a whole page. Escaped.
std::string step_fit_html_section(const StepFit& fit, std::span<const StepTime> steps);
std::string step_fit_html(const StepFit& fit, std::span<const InputFile> inputs,
                          std::span<const StepTime> steps, const ProfileMeta& meta);
/// The step fit for `--json` (stable keys with units).
nlohmann::json step_fit_json(const StepFit& fit, std::span<const StepTime> steps);

/// What a profile's `training:` mapping sets.
struct TrainingCalibration {
  std::string gpu;
  double compute_scale = 1;
  double host_time_s = 0;  ///< per-iteration host time (0 in profiles fitted without one)
  /// The step model's constants the fit constrained (absent: training.yaml's stay), each with
  /// its source.
  std::optional<double> fp8_overhead;
  std::optional<double> host_per_expert_gemm_s;
  std::string fp8_overhead_source, host_per_expert_gemm_source;
  std::string path;  ///< the profile, for notes and messages
};

/// The `training:` mapping of a profile given as `--calibration FILE|NAME` (read once,
/// collective::read_profile_source): nullopt for a
/// built-in name (catalog collective files have none) or a file without one; a profile fitted on
/// another GPU than `gpu` is refused (`where` names the flag or the scenario's file:line).
base::Result<std::optional<TrainingCalibration>> training_calibration_of(
    const collective::ProfileSource& source, std::string_view gpu, const std::string& where);

/// Reads the `training:` mapping of a profile's text (nullopt when it has none). Errors name
/// the file and line (a scale outside [kMinComputeScale, kMaxComputeScale], a missing gpu).
base::Result<std::optional<TrainingCalibration>> read_training_calibration(
    const hardware::CatalogFile& file);

}  // namespace clustertwin::calibration
