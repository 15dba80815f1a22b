#pragma once
/// Measurements as they come out of the tools users already run (docs/models/calibration.md):
/// nccl-tests stdout, AIConfigurator kernel tables, Megatron-LM iteration logs, MLPerf LoadGen
/// summaries and vLLM/SGLang benchmark JSON. Parsed once, at the edge (parse.h), into these
/// typed records; every record keeps the file and 1-based line it came from, so a fit can say
/// which measurement constrains which parameter and an error can point at the line.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "clustertwin/collective/types.h"

namespace clustertwin::calibration {

/// The formats detected from content (never from the file name alone).
enum class Format {
  kNcclTests,       ///< nccl-tests *_perf stdout
  kAicNccl,         ///< AIConfigurator nccl.csv (op_name,nccl_dtype,num_gpus,message_size,latency)
  kAicKernel,       ///< AIConfigurator kernel tables (gemm, attention, MoE, ...)
  kMegatronLog,     ///< Megatron-LM training log ("elapsed time per iteration (ms)")
  kStepCsv,         ///< a small CSV of layout and step time
  kLoadgenSummary,  ///< MLPerf LoadGen mlperf_log_summary.txt
  kServingJson,     ///< vLLM / SGLang benchmark_serving result JSON
  kAicSystem,       ///< AIConfigurator system spec YAML (peaks and HBM bandwidth of the GPU)
  kServingSetup,    ///< a scenario file's `workload.inference`: the layout serving results ran
  kAtScaleCases,    ///< the built-in at-scale cases (tests/validation/data/collective/*.csv)
  kTrainingCases,   ///< the training validation cases (catalog/calibration/training-cases.yaml)
  kServingCases,    ///< the built-in serving cases (catalog/calibration/serving-cases.yaml)
};
const char* format_name(Format f);

/// One input file: where it came from and what it holds.
struct InputFile {
  std::string path;    ///< as given on the command line
  std::string sha256;  ///< of the bytes read
  Format format = Format::kNcclTests;
  int records = 0;  ///< rows (collective sizes, kernel shapes, iterations, results) read
};

/// One size of an nccl-tests run (or one row of an AIConfigurator nccl table).
struct CollectiveRow {
  int64_t size_bytes = 0;                  ///< nccl-tests "size" (types.h convention per op)
  int64_t count = 0;                       ///< nccl-tests "count" (elements)
  double time_us = 0;                      ///< out-of-place time
  std::optional<double> in_place_time_us;  ///< absent where nccl-tests prints N/A
  double algbw_GBps = 0, busbw_GBps = 0;   ///< as printed (0 when the source has none)
  int line = 0;
};

/// One run of one collective on one communicator: a block of nccl-tests output.
struct CollectiveRun {
  std::string file;
  int line = 0;  ///< first line of the block (for messages)
  collective::Op op = collective::Op::kAllReduce;
  std::string dtype;  ///< nccl-tests type name ("float", "half", "bfloat16", "int8", ...)
  int ranks = 0;
  int nodes = 0;             ///< distinct hosts in the rank list (1 when the source says one node)
  int per_node = 0;          ///< the most ranks on one host
  std::string device;        ///< GPU name as printed ("NVIDIA H100 80GB HBM3"), may be empty
  std::string nccl_version;  ///< "2.29.2" where the output says, else empty
  std::vector<CollectiveRow> rows;
};

/// One kernel table in AIConfigurator's CSV layout (one shape per row, latency in ms).
struct KernelTable {
  std::string file;
  std::string kind;   ///< "gemm", "attention_context", "attention_generation", "moe", ...
  std::string dtype;  ///< from the file name where the table itself does not say ("fp8")
  std::vector<std::string> columns;  ///< shape columns, in file order (latency excluded)
  struct Row {
    std::vector<std::string> shape;  ///< one value per column
    double latency_ms = 0;
    int line = 0;
  };
  std::vector<Row> rows;
};

/// The peaks and HBM bandwidth an AIConfigurator system spec (`h100_sxm.yaml`) gives for the GPU
/// its kernel tables were measured on: the roofline the fitted efficiencies are fractions of.
struct KernelSpec {
  std::string file;
  int line = 0;                                         ///< of `mem_bw`
  double bf16_flops = 0, fp8_flops = 0, fp4_flops = 0;  ///< dense tensor-core FLOP/s; 0 = absent
  double hbm_Bps = 0;                                   ///< `mem_bw` (bytes/s)
};

/// A training step time with the layout it ran under.
struct StepTime {
  std::string file;
  int line = 0;
  std::string model;  ///< catalog model name when the source names one, else empty
  int gpus = 0, tp = 1, pp = 1, dp = 0, cp = 1, ep = 1, vpp = 1;
  int64_t micro_batch = 0, global_batch = 0, seq_len = 0;
  std::string precision;   ///< "bf16", "fp8", ... when known
  double step_time_s = 0;  ///< median of the iterations kept
  int iterations = 0;      ///< iterations the median is over (after the warm-up ones)
};

/// One serving measurement: a LoadGen run or one request rate of a benchmark_serving sweep.
struct ServingResult {
  std::string file;
  int line = 0;
  std::string tool;           ///< "mlperf-loadgen", "vllm", "sglang"
  std::string scenario;       ///< LoadGen scenario ("Offline", "Server", ...) or "online"
  std::string model;          ///< as the source names it
  bool valid = true;          ///< LoadGen "Result is : VALID"
  double request_rate = 0;    ///< requested rate (req/s); 0 = unbounded or offline
  double requests_per_s = 0;  ///< achieved
  double output_tokens_per_s = 0;
  std::map<std::string, double> latency_ms;  ///< "ttft_p50", "ttft_p99", "tpot_mean", ...
  /// The serving setup (Measurements::serving_setups) the result ran under: the last one given
  /// before its file on the command line, -1 when none came before (calibrate then takes the
  /// first).
  int setup = -1;
};

/// The serving setup of measured serving results: a clustertwin scenario file whose
/// `workload.inference` mapping holds `serve`'s keys (model, GPUs, layout, lengths,
/// precision). Kept as text; the scenario layer reads it over the serving request's field
/// table, so its keys and checks are `serve`'s.
struct ServingSetupFile {
  std::string file;
  std::string text;
};

/// Everything read from the files of one `calibrate` run.
struct Measurements {
  std::vector<InputFile> inputs;
  std::vector<CollectiveRun> collectives;
  std::vector<KernelTable> kernels;
  std::vector<KernelSpec> kernel_specs;
  std::vector<StepTime> steps;
  std::vector<ServingResult> serving;
  std::vector<ServingSetupFile> serving_setups;
};

}  // namespace clustertwin::calibration
