#pragma once
/// A serving study as the user asks for it (`ServingRequest`), the one table of its fields
/// (`serving_fields`: `serve`, the scenario files' `workload.inference` and Python's `serve`),
/// and its run: the serving step model and request-level simulator on one layout, or the layout
/// search (`serving: auto`), with the power view when asked (docs/models/inference.md).

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "clustertwin/compute/compute_model.h"
#include "clustertwin/execution/serving_calibration.h"
#include "clustertwin/execution/serving_sim.h"
#include "clustertwin/hardware/catalog.h"
#include "clustertwin/models/model.h"
#include "clustertwin/scenario/environment.h"
#include "clustertwin/scenario/fields.h"

namespace clustertwin::scenario {

/// What the user asked, as typed values. 0 (and "") mean "the default rule".
struct ServingRequest {
  std::string cluster = "azure-ndv6-gb300";
  int64_t gpus = 0;
  std::string model = "deepseek-r1";
  std::string dataset;
  int64_t isl = 0, osl = 0;
  std::string scenario = "server";
  std::string precision = "fp4", kv = "fp8";
  std::string serving;  ///< "", "auto" or a layout file
  std::string ttft_limit, tpot_limit;
  int tp = 0, pp = 0, ep = 0, replicas = 0;
  bool dp_attention = false, no_chunked = false, disaggregated = false;
  int64_t max_batch = 0, max_tokens = 0;
  int redundant_experts = 0;       ///< EPLB expert copies of the aggregated / decode instance
  bool two_batch_overlap = false;  ///< attention DP: overlap two micro-batches
  int adp_timeout_iters = 0, adp_batching_wait_iters = 0;  ///< attention-DP balance
  std::string cuda_graph_batches;  ///< "128,256,384,512": CUDA-graph padding
  int chunk_unit = 0;              ///< chunked prefill's chunk unit (0: the layout's default)
  bool pp_chunk_overlap = false;   ///< PP: a chunking prompt's next chunk in the next micro-batch
  int prefill_tp = 0, prefill_ep = 0, prefill_replicas = 0;
  bool prefill_dp_attention = false;
  int64_t prefill_max_tokens = 8192, prefill_max_batch = 16;
  int mtp = 0;
  double mtp_acceptance = 0.7;
  std::string kv_policy = "preempt";
  std::string adp_assign = "balanced";
  std::string runtime = "pytorch";  ///< host side of the runtime (workload::ServingRuntime)
  int stream_interval = 1;          ///< iterations between streamed responses (ServingLayout)
  std::string dispatch = "auto";    ///< arrivals to instances (workload::ServingDispatch)
  double tp_overlap = -1;
  bool no_norm_quant_fusion = false;  ///< NVFP4: norm-fed GEMMs quantise their own input
  double rate = 0;
  int64_t requests = 0;
  int64_t seed = 1;
  int threads = 0;
  std::string compare;
  /// A calibration profile with a `serving:` mapping (calibration/serving_fit.h): the step
  /// model's kernel-time factor and host time per iteration.
  std::string calibration;
  /// Where the profile was given, for messages: the field unless the door says otherwise (a
  /// scenario file's file:line).
  std::string calibration_where = "{calibration}";
  bool power = false;      ///< add the power view of the run
  std::string power_cap;   ///< with power: a GPU power limit ("1000W")
  std::string clock_lock;  ///< with power: an SM clock lock ("1500MHz")
  /// With power: cooling and facility settings (0, -1000 and "" = the facility defaults).
  double pue = 0, supply_temp = -1000, delta_t = 0;
  std::string coolant;
  /// With power: a smoothing profile, or none; default: the system's profile where it has one.
  std::string smoothing;
  bool no_smoothing = false;
};

/// The fields of a serving request, in the order `--help` shows them.
const FieldTable<ServingRequest>& serving_fields();
/// Words of the table, for `render`.
const std::vector<FieldWord>& serving_words();
/// Checks every field's range and choices; messages name the field.
base::Status check_serving(const ServingRequest& r);

/// A serving run prepared as `serve` prepares it: the catalog, cluster, model, dataset, compute
/// model and fabric resolved, the simulator's setup filled (all but the layout) and the
/// calibration profile's serving constants applied. Heap-held: the setup points into it.
struct ServingJob {
  hardware::Catalog catalog;
  hardware::ClusterSpec cluster;
  const hardware::GpuSpec* gpu = nullptr;  ///< in `catalog`
  int64_t gpus = 0;
  models::ModelSpec model;
  std::optional<compute::ComputeModel> compute;
  workload::ServingScenario scenario = workload::ServingScenario::kOffline;
  compute::DType precision = compute::DType::kNvfp4;  ///< as asked
  compute::DType weights = compute::DType::kNvfp4;    ///< as the GPU runs them
  execution::ServingSetup setup;
  /// The catalog's fitted constants of the serving step model (catalog/calibration/serving.yaml),
  /// applied to `setup` and to every layout the request gives that does not set its own.
  execution::ServingStepCalibration serving_calibration;
  std::vector<std::string> notes;
};
/// Resolves a request (messages name fields, {key}).
base::Result<std::unique_ptr<ServingJob>> prepare_serving(const Environment& env,
                                                          const ServingRequest& r);
/// Whether the request fixes a layout with its layout fields (else `serve` searches one).
bool serving_layout_given(const ServingRequest& r);
/// The request's explicit layout (its layout fields, or its `serving` file), checked against the
/// job's model and GPUs.
base::Result<workload::ServingLayout> serving_layout(const ServingRequest& r,
                                                     const ServingJob& job);

/// The power section of a serving run: JSON (report::serving_power_json), the text block and a
/// summary line for the flagship.
struct ServingPowerRun {
  nlohmann::json json;
  std::string text, summary;
};

/// What a serving run gives back: its JSON section (report::serving_json), the text page, the
/// searched points as CSV, a one-line summary, and the power section when asked.
struct ServingRun {
  nlohmann::json json;
  std::string text, csv, summary;
  std::optional<ServingPowerRun> power;
};

/// One serving study as `serve` runs it; `quiet` silences the search's progress bar on stderr;
/// `trace_path` non-empty also writes the batches' Chrome trace there.
base::Result<ServingRun> run_serving(const Environment& env, const ServingRequest& r,
                                     bool quiet = true, const std::string& trace_path = {});

}  // namespace clustertwin::scenario
