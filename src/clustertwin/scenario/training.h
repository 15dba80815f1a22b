#pragma once
/// A training job as the user asks for it (`TrainingRequest`), the one table of its fields
/// (`training_fields`: train, power, goodput, search and the scenario files' `workload.training`
/// all take exactly these), and its resolution, once, with one set of defaults, into what the
/// simulators run (`TrainingJob`).

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "clustertwin/collective/sweep.h"
#include "clustertwin/compute/compute_model.h"
#include "clustertwin/execution/serving_step.h"
#include "clustertwin/execution/training.h"
#include "clustertwin/execution/training_calibration.h"
#include "clustertwin/models/model.h"
#include "clustertwin/scenario/environment.h"
#include "clustertwin/scenario/fields.h"
#include "clustertwin/workload/layout.h"

namespace clustertwin::scenario {

/// What the user asked, as typed values; nothing resolved yet. 0 (and "") mean "the default
/// rule", which `resolve_training` applies.
struct TrainingRequest {
  std::string cluster = "azure-ndv6-gb300";
  int64_t gpus = 0;  ///< 0: the whole cluster
  std::string model = "llama3.1-405b";
  int layers = 0;
  int64_t hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 51200;
  int tp = 1, pp = 1, dp = 0, cp = 1, ep = 1, vpp = 1, zero = 1;
  int etp = 1;  ///< expert tensor parallel (MoE parallel folding)
  int64_t micro_batch = 1, global_batch = 0, seq_len = 0;
  std::string precision = "bf16", recompute = "none", comm = "collective";
  /// A calibration profile (file or built-in name) laid over the catalog's collective lines.
  std::string calibration;
  /// Where the profile was given, for messages: the field ("{calibration}") unless the door says
  /// otherwise (a scenario file's top-level `calibration:` at file:line).
  std::string calibration_where = "{calibration}";
  bool no_sp = false, tp_overlap = false, no_dp_overlap = false, ep_overlap = false;
  std::string moe_dispatch = "auto";
  std::string attention = "flash";
  std::string recompute_modules;     ///< Megatron --recompute-modules list ("" = none)
  std::string cuda_graphs = "none";  ///< Megatron --cuda-graph-scope list ("none" = eager)
  std::string schedule = "1f1b";     ///< 1f1b (interleaved with vpp > 1) or dualpipe
  std::string routing = "balanced";  ///< MoE routing: balanced or measured
  double capacity_factor = 0;        ///< 0 = dropless
  bool offload = false;              ///< activation offloading to host memory
  int lora_rank = 0;                 ///< LoRA fine-tuning (frozen base) when > 0
  bool bf16_moments = false;         ///< Adam moments in bf16
  bool fp8_attention = false;        ///< FP8 dot-product attention
  bool fp8_act_store = false;        ///< MLP activation inputs kept in FP8
  double overhead = -1;              ///< framework overhead; < 0: none, or the profile's
  std::string tokens;                ///< token budget ("15T"); "" = none
  bool power = false;                ///< add the power view (train and scenario files)
  std::string power_cap;             ///< with power: a GPU power limit ("1000W")
};

/// The fields every way into a training job takes (train, power, goodput, search, scenario
/// files, Python): one row each, in the order `--help` shows them.
const FieldTable<TrainingRequest>& training_fields();
/// The power view of `train` and of a scenario's training (`power`, `power_cap`); the `power`
/// verb has its own, fuller settings.
const FieldTable<TrainingRequest>& training_power_fields();
/// Words of both tables, for `render`.
const std::vector<FieldWord>& training_words();

/// Checks every field's range and choices (the CLI and the scenario reader check as they read;
/// the Python door and library callers through this). Messages name the field.
base::Status check_training(const TrainingRequest& r);

/// Everything a training run needs, resolved from a request: the cluster, the model, the layout
/// and the compute and communication models. `setup` points into this object, so it is handed
/// out behind a unique_ptr and never moved.
struct TrainingJob {
  std::unique_ptr<LoadedCluster> cluster;
  models::ModelSpec model;
  workload::TrainingLayout layout;
  int64_t gpus = 0;
  double token_budget = 0;
  std::optional<compute::ComputeModel> compute;
  std::unique_ptr<execution::CommModel> comm;
  std::optional<execution::ServingFabric> moe_fabric;  ///< MoE dispatch kernels (MoE models)
  execution::TrainingSetup setup;
  std::string calibration_note;  ///< a compute-time scale from the profile, for the notes
  /// Non-empty when the profile's kernel tables (its compute: mapping) were laid over the
  /// catalog's compute model: the note saying which.
  std::string compute_note;
  /// The profile's fitted compute-time scale, when it has one (calibration/step_fit.h).
  std::optional<double> compute_scale;
  base::Seconds host_time;  ///< the profile's per-iteration host time (0: none)
  /// The catalog's fitted constants of the step model (catalog/calibration/training.yaml).
  execution::TrainingCalibration training_calibration;
  std::string calibration_path;  ///< the profile the scale came from
  /// The request's calibration profile, read once for every reader of the job (empty name: none).
  collective::ProfileSource profile;
  /// The step model's constants the profile set over training.yaml's, for the notes ("" when
  /// none).
  std::string constants_note;
  /// Non-empty when the profile's `serving:` mapping set the eager issue time per decoder layer
  /// (its eager_host_per_layer_s over serving.yaml's): the note saying which.
  std::string stack_note;
  uint32_t cuda_graphs = 0;  ///< execution::cuda_graph bits of the request's cuda_graphs
};

/// Resolves a request: the defaults (dp = gpus / (tp*pp*cp), global batch micro_batch*dp*4*pp,
/// sequence length the model's up to 8192, MoE dispatch as workload::resolve_moe_dispatch),
/// the checks, the compute and communication models. Messages name fields ({key}).
base::Result<std::unique_ptr<TrainingJob>> resolve_training(const Environment& env,
                                                            const TrainingRequest& r);

/// Resolves a request for the layout search: everything but the parallel layout, which the
/// search chooses (so a request that fixes tp, pp, dp, cp, ep, etp, vpp, micro_batch, recompute
/// or zero is refused); communication by closed forms; the global batch defaults to a sequence
/// per 8 GPUs (at least 1), as the data-parallel size is not known yet.
base::Result<std::unique_ptr<TrainingJob>> resolve_training_search(const Environment& env,
                                                                   const TrainingRequest& r);

/// What a training run gives back: its JSON section (report::training_json), the text page, a
/// one-line summary, and the power section when asked.
struct TrainingRun {
  nlohmann::json json;
  std::string text;
  std::string summary;
  nlohmann::json power;       ///< the power section when asked (null otherwise)
  std::string power_summary;  ///< one or two lines for the flagship summary
};

/// One training step as `train` runs it (with the power view when `r.power`); `trace_path`
/// non-empty also writes the step's Chrome trace there.
base::Result<TrainingRun> run_training(const Environment& env, const TrainingRequest& r,
                                       const std::string& trace_path = {});

}  // namespace clustertwin::scenario
