#pragma once
/// Serving results (MLPerf LoadGen summaries, vLLM / SGLang benchmark_serving JSON) fitted to the
/// serving step model (docs/models/calibration.md, "Serving results").
///
///   t_iter(batch; f, h) = f x (the iteration's kernel time) + comm + h (execution/serving_step.h)
///   f = StepCalibration::gpu_factor   (kernel-time multiplier)
///   h = StepCalibration::host_s       (fixed host / scheduler time per iteration)
///
/// Each result is simulated by the request-level serving simulator at its own request rate, on
/// the layout of its serving setup (the caller prepares each run exactly as `serve` does), and
/// compared on what the result measures and the model predicts:
///   - offline runs (LoadGen Offline, a benchmark_serving run with request rate inf): output
///     tokens/s;
///   - runs at a request rate: the mean time per output token and the mean time to first token
///     (the medians where a tool prints no mean; LoadGen's sample latency where it prints
///     neither), and output tokens/s when the run was saturated (achieved requests/s below 95%
///     of the requested rate; below saturation throughput is the rate x the output length and
///     says nothing about the model).
/// Means, not medians: a median over a few hundred requests moves in steps as f and h change (a
/// request crosses it), a mean moves smoothly, which the solver needs. p99s are not fitted: they
/// are the queueing tail, which a few requests move.
///
/// `f` is seen by every iteration in proportion to its kernel time, `h` once per iteration: runs
/// whose iterations differ in kernel time (different request rates, hence batch sizes; offline
/// and low-rate runs) tell them apart. Where they do not (one result, or results of one batch
/// size), the fitter reports `h` "only together with" `f` and holds it at its start, 100 us
/// (negligible against an iteration of milliseconds). The eager issue time per layer and the
/// streaming front end's time per response keep their catalog values (their own fits:
/// catalog/calibration/serving.yaml): they are not offered, since at one runtime they move
/// with `h`.

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
#include "clustertwin/execution/serving_calibration.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::calibration {

/// What the serving model predicts for one measured result (the fields a measurement can be
/// compared on).
struct ServingPrediction {
  double output_tokens_per_s = 0;
  double requests_per_s = 0;
  double ttft_p50_ms = 0, ttft_mean_ms = 0;
  double tpot_p50_ms = 0, tpot_mean_ms = 0;
  double e2e_p50_ms = 0, e2e_mean_ms = 0;
};

/// Predicts measured result `index` at kernel-time factor `gpu_factor` and host time per
/// iteration `host_s`.
using ServingPredictor =
    std::function<base::Result<ServingPrediction>(size_t index, double gpu_factor, double host_s)>;

/// One observation of the fit: which result, which metric.
struct ServingObservation {
  size_t result = 0;
  std::string metric;  ///< "output_tokens_per_s", "tpot_p50_ms", "ttft_p50_ms", ...
};

struct ServingFit {
  std::string gpu;  ///< catalog GPU the fit applies to
  std::vector<Parameter> parameters;
  std::vector<Observation> observations;
  std::vector<ServingObservation> where;  ///< per observation
  FitResult result;
  double gpu_factor = 1;  ///< fitted (the start when nothing constrains it)
  double host_s = 0;      ///< likewise
  /// The setups the results ran under (file names, for the profile's record).
  std::vector<std::string> setups;
};

/// Bounds of the kernel-time factor (as the training scale's: beyond 4x the layout or the model
/// is wrong, not the factor) and of the host time per iteration (start 100 us; above 1 s per
/// iteration the runtime is not a serving loop the model describes).
inline constexpr double kMinGpuFactor = 0.25;
inline constexpr double kMaxGpuFactor = 4.0;
inline constexpr double kServingHostStart = 1e-4;
inline constexpr double kMinServingHost = 1e-6;
inline constexpr double kMaxServingHost = 1.0;

/// The fit's forward-difference step in log space and its simplex stage's iterations per run
/// (serving_fit.cpp says why; measured on the round trip of docs/models/calibration.md: without
/// the simplex stage the solver stayed at the grid's start, f 1.54 and h 0.12 ms, 4.8% rms).
inline constexpr double kServingDiffStep = 0.02;
inline constexpr int kServingSimplexIterations = 30;
/// The fit's global stage (fitter.h): 16 Latin-hypercube starts within 100x of the start, which
/// spans the factor's bounds and the host time from 1 us to 10 ms. Measured on the round trip
/// (docs/models/calibration.md): after the serving constants' refit (0.45, 29 us, 1.10 ms) the
/// simplex and solver alone ended at f 1.52, h 0.16 ms (4.6% rms) on data the model made at f
/// 1.25, h 2 ms; with the hypercube f 1.217, h 2.148 ms (0.42%), for 1.5x the CPU.
inline constexpr int kServingGlobalSamples = 16;
inline constexpr double kServingGlobalSpan = 100;

/// The observations of the results (above); an error names a result that gives none.
base::Result<std::vector<ServingObservation>> serving_observations(
    std::span<const ServingResult> results);

/// Fits f and h to the results. Errors: no results, a result that gives nothing to compare, a
/// predictor error (at the result's file:line).
base::Result<ServingFit> fit_serving(std::string gpu, std::span<const ServingResult> results,
                                     const ServingPredictor& predict, FitOptions options = {});

/// Text for stdout: per observation measured, before, after; the parameters with uncertainty.
std::string serving_fit_summary(const ServingFit& fit, std::span<const ServingResult> results);

/// The `serving:` mapping of a profile (after `collectives:`/`training:`).
std::string serving_profile_yaml(const ServingFit& fit, std::span<const ServingResult> results);

/// A whole profile from serving results alone: the `profile:` record, an empty `collectives:`
/// mapping for the GPU (the catalog's lines stay), the `serving:` mapping, `sources:`.
std::string serving_only_profile_yaml(const ServingFit& fit, std::span<const InputFile> inputs,
                                      std::span<const ServingResult> results,
                                      const ProfileMeta& meta);

/// The fit for `--json` (stable keys with units).
nlohmann::json serving_fit_json(const ServingFit& fit, std::span<const ServingResult> results);

/// What a profile's `serving:` mapping sets: the kernel-time factor and host time per iteration
/// of a fit of serving results (`gpu_factor` and `host_s`, together), and the serving step
/// model's catalog constants of the profile's software stack (`tp_overlap`,
/// `stream_host_per_response_s`, `eager_host_per_layer_s`, `engine_host_per_iteration_s`, each
/// optional: given, it replaces catalog/calibration/serving.yaml's figure; a layout's own
/// `tp_overlap` still wins).
struct ServingCalibration {
  std::string gpu;
  bool fitted = false;  ///< gpu_factor and host_s given
  double gpu_factor = 1;
  double host_s = 0;
  std::optional<double> tp_overlap;
  std::optional<double> stream_host_per_response_s;
  std::optional<double> eager_host_per_layer_s;
  std::optional<double> engine_host_per_iteration_s;
  std::string path;  ///< the profile, for notes and messages

  /// The catalog's constants with the ones this profile gives in their place.
  void apply(execution::ServingStepCalibration& c) const;
};

/// Bounds of the step constants a `serving:` mapping may carry (those of serving.yaml: a host
/// time above 100 ms per response, per layer or per iteration is a unit slip, not a serving
/// loop).
inline constexpr double kMaxServingConstantHost = 0.1;

/// Reads the `serving:` mapping of a profile's text (nullopt when it has none). Errors name the
/// file and line (a factor outside [kMinGpuFactor, kMaxGpuFactor], gpu_factor without host_s or
/// the reverse, a constant out of its bounds, a mapping that sets nothing, a missing gpu).
base::Result<std::optional<ServingCalibration>> read_serving_calibration(
    const hardware::CatalogFile& file);

/// The serving constants of a built-in profile (catalog/collectives/<name>.yaml): the profiles
/// are fitted with the catalog's software stack, so they carry catalog/calibration/serving.yaml's
/// four constants (ServingCalibration::path names that file; not `fitted`). nullopt when `name`
/// is no built-in profile.
base::Result<std::optional<ServingCalibration>> builtin_serving_calibration(
    const hardware::Catalog& catalog, const std::string& name);

/// The `serving:` mapping of the profile given as `--calibration NAME|FILE`, read once
/// (collective::read_profile_source; `where` names the
/// flag or the scenario's file:line): a built-in profile's name gives its serving constants
/// (builtin_serving_calibration: the catalog's, so the output stays as without it); a file is
/// refused when it cannot be read, or was fitted on another GPU than `gpu`. A file without a
/// `serving:` mapping is refused unless `compute_given` (the profile's `compute:` mapping, which
/// serving also runs, was found: nullopt then); a profile of collective lines or training steps
/// alone is refused (serving reads neither).
base::Result<std::optional<ServingCalibration>> serving_calibration_of(
    const hardware::Catalog& catalog, const collective::ProfileSource& source, std::string_view gpu,
    const std::string& where, bool compute_given);

/// One of the serving step model's catalog constants (catalog/calibration/serving.yaml) fitted
/// to one measurement on a grid: `param` names it and bounds it (Parameter::lower and upper, in
/// the constant's unit), `resolution` is the grid step. The prediction of a replay moves in steps
/// (the rate search's probes, an iteration boundary crossing an arrival), where a solver's
/// derivative is zero almost everywhere, so the fit brackets the measurement on the grid: both
/// bounds first (the measurement must lie between their predictions, else an error says where
/// it lies), then bisection on the sign of log(predicted / measured), ending at the two
/// neighbouring grid values around the crossing; the nearer one is the value (the lower on a
/// tie). About 2 + log2(grid points) replays; deterministic.
struct ServingConstantFit {
  std::string name;
  double value = 0;      ///< on the grid, in the constant's unit
  double measured = 0;   ///< as given
  double predicted = 0;  ///< at `value`
  /// The neighbour on the other side of the crossing and its prediction (the grid's resolution
  /// of the measurement: what one grid step moves the prediction by).
  double other = 0, other_predicted = 0;
  std::vector<std::pair<double, double>> probes;  ///< (value, predicted), in evaluation order
};
using ServingConstantPredictor = std::function<base::Result<double>(double value)>;
base::Result<ServingConstantFit> fit_serving_constant(const Parameter& param, double resolution,
                                                      double measured,
                                                      const ServingConstantPredictor& predict);

}  // namespace clustertwin::calibration
