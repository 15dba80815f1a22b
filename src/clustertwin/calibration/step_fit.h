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
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::calibration {

/// Predicts measured step `index` (seconds, > 0) at compute-time scale `scale` and per-iteration
/// host time `host_s`.
using StepPredictor =
    std::function<base::Result<double>(size_t index, double scale, double host_s)>;

struct StepFit {
  std::string gpu;  ///< catalog GPU the fit applies to
  std::vector<Parameter> parameters;
  std::vector<Observation> observations;  ///< one per run, seconds
  FitResult result;
  double compute_scale = 1;  ///< the fitted value (the start when nothing constrains it)
  double host_time_s = 0;    ///< likewise
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

/// Fits the compute-time scale to the runs. Errors: no runs, a run without a step time, a
/// predictor error (named with the run's file:line).
base::Result<StepFit> fit_step_times(std::string gpu, std::span<const StepTime> steps,
                                     const StepPredictor& predict, FitOptions options = {});

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
  std::string path;        ///< the profile, for notes and messages
};

/// The `training:` mapping of a profile given as `--calibration FILE|NAME`: nullopt for a
/// built-in name (catalog collective files have none) or a file without one; a profile fitted on
/// another GPU than `gpu` is refused (`where` names the flag or the scenario's file:line).
base::Result<std::optional<TrainingCalibration>> training_calibration_of(
    const std::string& name_or_path, std::string_view gpu, const std::string& where);

/// Reads the `training:` mapping of a profile's text (nullopt when it has none). Errors name
/// the file and line (a scale outside [kMinComputeScale, kMaxComputeScale], a missing gpu).
base::Result<std::optional<TrainingCalibration>> read_training_calibration(
    const hardware::CatalogFile& file);

}  // namespace clustertwin::calibration
