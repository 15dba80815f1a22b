#pragma once
/// The built-in serving calibration: the serving step model's catalog constants
/// (catalog/calibration/serving.yaml: the TP overlap of a fused GEMM + all-reduce build, the
/// streaming front end's host time per response, the eager host time per decoder layer, the C++
/// executor's host time per TensorRT-engine iteration) fitted
/// on the cases they come from (catalog/calibration/serving-cases.yaml, each with its attribution
/// and the settings its replay runs under) by `clustertwin calibrate --builtin serving`.
///
/// Each case fits one constant (fit_serving_constant, serving_fit.h: the value on the case's
/// grid whose prediction comes nearest the measurement), in the file's order; each fit sees the
/// constants fitted before it, and the ones after it at the catalog's values (no case depends
/// on them: attention-DP and TP1 runs have no TP all-reduce, TensorRT engines neither eager
/// iterations nor a streaming front end, the PyTorch runtime no engine host time; so the engine
/// host time is fitted before the TP overlap, whose TensorRT-engine case sees it). The replay
/// is tests/validation/inference_validation_test.cpp's:
///   - a decode iteration (`decode_iteration`): the step model's time of one decode iteration of
///     every rank at `sequences_per_rank` x `context`, issued eagerly (graphs captured only up
///     to `largest_graph`) over as a CUDA graph, against the measured ratio;
///   - a server or interactive run (`scenario: server | interactive`): the serving simulator at
///     the submitter's layout (and build: `norm_quant_fusion`), the model's dataset and latency
///     limits, the scenario's dispatch (workload::resolve_dispatch: least loaded for server,
///     round robin for interactive, as NVIDIA's harness), seed 1, the highest compliant Poisson
///     rate in 12 probes (execution::find_max_rate), tokens/s per GPU against the measured.
/// Only the values change in serving.yaml (every other byte stays); nothing starts from the
/// values being rewritten, so a rerun writes the same bytes.

#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/calibration/kernel_fit.h"
#include "clustertwin/calibration/serving_fit.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::calibration {

struct BuiltinServingCase {
  std::string id, source;
  std::string constant, unit;  ///< what it fits: "tp_overlap", ""; "stream_host_per_response", "us"
  ServingConstantFit fit;
};

struct BuiltinServing {
  std::vector<GeneratedFile> files;  ///< catalog/calibration/serving.yaml with the fitted values
  std::vector<BuiltinServingCase> cases;
  std::vector<std::string> summary;  ///< per case: the constant, its value, the probes
  std::vector<InputFile> inputs;     ///< the case file, with its SHA-256
};

/// Reads the catalog's calibration/serving-cases.yaml, fits, and returns the rewritten
/// serving.yaml (nothing is written here). Every error of the case file at once, each at its
/// file:line.
base::Result<BuiltinServing> builtin_serving(const hardware::Catalog& catalog);

/// The report's section (`calibrate --builtin serving --report`): per constant its case, value,
/// prediction against the measurement, and every replay the grid search ran.
std::string builtin_serving_html_section(const BuiltinServing& b);

}  // namespace clustertwin::calibration
