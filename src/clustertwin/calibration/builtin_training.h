#pragma once
/// The training validation cases and the built-in training calibration
/// (docs/models/training.md, "Calibration"; docs/models/calibration.md, "The built-in training
/// constants").
///
/// The cases (catalog/calibration/training-cases.yaml: published step times and throughputs, each
/// with its layout, cluster, model and source) are one list for two readers: the training
/// validation test predicts every case with the catalog's constants, and `clustertwin calibrate
/// --builtin training` fits the step model's two constants of catalog/calibration/training.yaml
/// on them and writes that file:
///
///   fp8_overhead          time added to every Transformer Engine FP8 GEMM, a fraction
///                         (execution::TrainingSetup::fp8_overhead)
///   host_per_expert_gemm  host time per eagerly issued expert GEMM
///                         (execution::TrainingSetup::host_per_expert_gemm)
///
/// with the generic fitter (fitter.h): log residuals, each case weighted by 1 / (its source's
/// case count), so that every source weighs the same whatever its number of cases, as the
/// training page has always fitted them; least squares (the soft-L1 scale is far above every
/// error), no prior (the starts are places to begin, not measurements), each parameter gridded
/// over its bounds before the solver. Then each source whose cases see a parameter is left out
/// and the fit rerun on the others: its cases predicted blind, and the spread of the refitted
/// values written into the file's sources. Every case runs as the validation test runs it
/// (execution::make_training_rig: the catalog's compute model, analytical communication), so
/// what is fitted is what the validation test checks.
///
/// Deterministic: the starts are the recipe's (this file's constants), never the file being
/// rewritten, and the file is written whole, so a rerun on the same cases and catalog writes the
/// same bytes.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/calibration/fitter.h"
#include "clustertwin/calibration/kernel_fit.h"
#include "clustertwin/calibration/measurements.h"
#include "clustertwin/execution/training.h"
#include "clustertwin/execution/training_rig.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::calibration {

/// What a case's source reports.
enum class TrainingMetric {
  kHardwareTflops,     ///< hardware FLOPs (recomputation included) per GPU, TFLOP/s
  kModelTflops,        ///< model FLOPs per GPU, full (non-causal) attention, TFLOP/s
  kModelTflopsCausal,  ///< model FLOPs per GPU with causal attention (Megatron-Core 2025 counting)
  kStepTime,           ///< seconds per step
  kTokensPerGpu,       ///< tokens per second per GPU
};
const char* training_metric_name(TrainingMetric m);

struct TrainingSource {
  std::string id;    ///< "mlperf-gpt3"
  std::string name;  ///< "MLPerf Training GPT-3 175B"
  std::string cite;  ///< where the figures are published
};

/// One published run.
struct TrainingCase {
  std::string id;
  std::string source;  ///< a TrainingSource id
  int line = 0;        ///< in the case file
  std::string cluster;
  int64_t gpus = 0;
  std::string model;  ///< a catalog model, or "gpt" (a Megatron-style GPT of `gpt_*`)
  int gpt_layers = 0;
  int64_t gpt_hidden = 0, gpt_heads = 0;
  workload::TrainingLayout layout;  ///< dp = gpus / (tp pp cp)
  uint32_t cuda_graphs = 0;         ///< execution::cuda_graph bits
  TrainingMetric metric = TrainingMetric::kStepTime;
  double measured = 0;
  std::string text;         ///< the layout as the source prints it
  double tolerance = 0.20;  ///< the validation bound, |predicted / measured - 1|
  std::string pending;      ///< non-empty: work still open (left out of the fit and the median)
};

struct TrainingCases {
  std::string file;  ///< "catalog/calibration/training-cases.yaml"
  std::string text;  ///< its bytes (for the SHA-256 in reports)
  std::vector<TrainingSource> sources;
  std::vector<TrainingCase> cases;
  [[nodiscard]] const TrainingSource* source(std::string_view id) const;
};

/// Reads a case file's text. Every error at once, each at its file:line (an unknown key, a
/// source that is not listed, a layout value that does not parse, a gpus count the layout does
/// not divide).
base::Result<TrainingCases> parse_training_cases(std::string_view text, std::string file);
/// The catalog's case file (catalog/calibration/training-cases.yaml).
base::Result<TrainingCases> training_cases(const hardware::Catalog& catalog);

/// The step model's fitted constants a prediction runs with.
struct TrainingConstants {
  double fp8_overhead = 0;
  base::Seconds host_per_expert_gemm;
};

struct TrainingPrediction {
  double value = 0;  ///< in the case's metric
  double memory_GB = 0;
};

/// One case ready to run: its rig (cluster, compute model, model, analytical communication) and
/// the MoE dispatch kernels of its cluster, built once.
class TrainingCaseRunner {
 public:
  /// Errors: the cluster or model the catalog does not have, a cluster the topology refuses.
  static base::Result<std::unique_ptr<TrainingCaseRunner>> make(const hardware::Catalog& catalog,
                                                                const TrainingCase& c);
  /// The case's metric with the catalog's constants, or with `constants` when given. Errors:
  /// the step model refuses the layout (out of memory, a layout that does not divide).
  [[nodiscard]] base::Result<TrainingPrediction> predict(
      const std::optional<TrainingConstants>& constants = std::nullopt) const;
  [[nodiscard]] const TrainingCase& training_case() const { return case_; }
  /// The setup predict() runs (the catalog's constants applied); callers may change a copy.
  [[nodiscard]] execution::TrainingSetup setup() const;
  /// The metric of a step result.
  [[nodiscard]] double metric(const execution::TrainingResult& r) const;

 private:
  TrainingCaseRunner() = default;
  TrainingCase case_;
  std::unique_ptr<execution::TrainingRig> rig_;
  std::optional<execution::ServingFabric> fabric_;
};

/// One case's outcome in the built-in fit.
struct TrainingCaseResult {
  std::string id, source, text;
  TrainingMetric metric = TrainingMetric::kStepTime;
  double measured = 0;
  double predicted = 0;       ///< at the fitted constants
  bool sees = false;          ///< its prediction depends on a fitted constant
  bool has_loso = false;      ///< its source was left out and the fit rerun
  double loso_predicted = 0;  ///< predicted by the fit without its source
};

/// A fit with one source left out.
struct TrainingLoso {
  std::string source;
  std::vector<double> values;  ///< per parameter, in the fit's order
  /// Per parameter: whether the other sources constrain it (an unconstrained one is held at
  /// its start and left out of the file's range).
  std::vector<bool> constrained;
};

struct BuiltinTraining {
  std::vector<GeneratedFile> files;  ///< catalog/calibration/training.yaml
  std::vector<Parameter> parameters;
  FitResult fit;
  std::vector<std::string> fit_sources;  ///< per parameter: names of the sources that see it
  std::vector<TrainingLoso> loso;
  std::vector<TrainingCaseResult> cases;
  std::vector<std::string> summary;
  std::vector<InputFile> inputs;  ///< the case file with its SHA-256
};

/// The step model's two fitted constants as fit parameters: one definition for the built-in fit
/// (here) and a user's step-time fit (step_fit.h), in this order: fp8_overhead, then
/// host_per_expert_gemm (seconds).
struct TrainingConstantSpec {
  const char* name;    ///< the parameter's name in a fit ("training.fp8_overhead")
  const char* key;     ///< in catalog/calibration/training.yaml and a profile's training: mapping
  const char* source;  ///< the figure's source key in training.yaml
  const char* unit;    ///< "" or "us" (the value written in microseconds)
  double start, lower, upper;  ///< the recipe's start and the bounds (seconds for the host term)
  const char* comment;         ///< the lines above the figure in training.yaml
};
const std::vector<TrainingConstantSpec>& training_constant_specs();
inline constexpr size_t kFp8OverheadSpec = 0;
inline constexpr size_t kHostPerExpertGemmSpec = 1;

/// Fits the two constants on the catalog's cases and returns catalog/calibration/training.yaml
/// (nothing is written here). Errors: a bad case file, a case the model refuses (at its line), a
/// fit that fails.
base::Result<BuiltinTraining> builtin_training(const hardware::Catalog& catalog);

/// The report's section (`calibrate --builtin training --report`): measured vs predicted per
/// case, the residuals, the constants with their uncertainty and what sees them, and every case
/// with its leave-one-source-out prediction. Escaped.
std::string training_html_section(const BuiltinTraining& b);

}  // namespace clustertwin::calibration
