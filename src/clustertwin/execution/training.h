#pragma once
/// One training step as a discrete-event run (docs/models/training.md).
///
/// Symmetry: every data-parallel replica runs the same schedule and every tensor-parallel rank
/// the same ops, so one pipeline (one GPU per stage) is simulated; the other replicas appear
/// where they share resources: their collectives run concurrently on the fabric (CommRequest
/// `concurrent`), which is how oversubscription and contention reach the step time.
///
/// Per chunk c and micro-batch: forward(c) = Σ layers' forward op times (compute model) + exposed
/// TP collectives (2 all-gathers + 2 reduce-scatters per layer with sequence parallelism, 2
/// all-reduces without; hidden behind GEMMs up to their time when TP overlap is on) + EP
/// all-to-all (dispatch + combine) + CP ring-attention sends not hidden by attention; backward(c)
/// = backward ops + recomputed ops + the same communication; plus, in eager PyTorch, what the GPU
/// waits for the host to issue kernels (per layer and per local expert GEMM; a dropless MoE
/// layer's device-to-host sync makes its forward and backward each max(GPU, host); CUDA graphs
/// remove what they capture). Pipeline sends between chunks.
/// The pipeline runs as events (pipeline.h); then each stage reduces its gradients over DP
/// (reduce-scatter with ZeRO >= 1, all-reduce without), hidden behind the last micro-batch's
/// backward when overlap is on, runs the optimizer (a memory-bound pass over its shard) and
/// all-gathers updated parameters (ZeRO 1 and 2; hidden behind the next step's first forward when
/// overlapped). ZeRO 3 (FSDP) instead gathers each part's parameters before its forward and its
/// backward and reduce-scatters its gradients after its backward, in every micro-batch, each
/// hidden behind the part's own compute up to its time (the excess adds to the chunk).
/// Step time = max over stages.
///
/// Model FLOPs (for TFLOP/s and MFU) use the PaLM / Megatron convention: 6 x parameters per
/// token + full (non-causal) attention, no recomputation; hardware FLOPs add recomputation
/// (Megatron-LM 2021 eq. 3 reports these).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/compute/compute_model.h"
#include "clustertwin/execution/comm.h"
#include "clustertwin/execution/pipeline.h"
#include "clustertwin/execution/serving_step.h"
#include "clustertwin/models/ops.h"
#include "clustertwin/workload/layout.h"
#include "clustertwin/workload/memory.h"

namespace clustertwin::execution {

/// What a recipe captures in CUDA graphs (Megatron-Core `--cuda-graph-impl` / `--cuda-graph-scope`,
/// Transformer Engine per-layer graphs, MLPerf's "CUDA graphs=per-layer(TE) / mcore /
/// full-iteration"): captured kernels replay without Python issuing them one by one. Bits.
namespace cuda_graph {
inline constexpr uint32_t kNone = 0;
inline constexpr uint32_t kAttn = 1u << 0;       ///< the attention block (norm, QKV, core, proj)
inline constexpr uint32_t kMoeRouter = 1u << 1;  ///< the router and its top-k
inline constexpr uint32_t kMoePreprocess = 1u << 2;  ///< token counts stay on the GPU: no sync
inline constexpr uint32_t kLayer = 1u << 3;          ///< whole decoder layers (TE / mcore graphs)
inline constexpr uint32_t kFullIteration = 1u << 4;  ///< forward and backward of the whole step
}  // namespace cuda_graph

/// A Megatron-Core `--cuda-graph-scope` list, comma-separated, as cuda_graph bits: `attn`,
/// `moe_router`, `moe_preprocess`, `full` (Megatron's name for whole decoder layers, as TE's
/// per-layer graphs and `--cuda-graph-impl local` capture them), `full_iteration`; "" or `none`:
/// eager (no graphs). Unknown names fail with the list of known ones.
base::Result<uint32_t> parse_cuda_graphs(std::string_view csv);
/// The names of cuda_graph bits, comma-separated ("none" for none): parse_cuda_graphs' inverse.
std::string cuda_graphs_name(uint32_t bits);

struct TrainingSetup {
  const models::ModelSpec* model = nullptr;
  workload::TrainingLayout layout;
  const compute::ComputeModel* compute = nullptr;
  const CommModel* comm = nullptr;
  base::Bytes memory_capacity;  ///< usable HBM per GPU
  base::FlopsPerSecond peak;    ///< per GPU at the layout's precision (for MFU)
  int first_gpu = 0;            ///< where the job starts (ranks packed from here)
  int64_t gpus = 0;             ///< GPUs given to the job; 0 = tp*pp*dp*cp (checked against it)
  /// Host memory and CPU<->GPU link per GPU (activation offloading); 0 = no offloading target.
  base::Bytes host_memory;
  base::BytesPerSecond host_bandwidth;
  /// Fraction of compute time lost to what kernels do not show: launch gaps, host overhead,
  /// stragglers. Fitted on the calibration cases (docs/models/training.md), 0 = ideal.
  double framework_overhead = 0.0;
  /// Compute-time multiplier of a GPU power cap or clock lock (the power layer's feedback,
  /// power/training_power.h; 1 = none): a setting of the run, kept apart from the fitted
  /// framework overhead.
  double cap_slowdown = 1.0;
  /// Per-iteration host time, added once to every step after the GPU work: what the host does
  /// between iterations that no kernel hides (optimizer step launch, data loader, logging,
  /// Python between steps). 0 unless a calibration profile fits one from measured step times
  /// (docs/models/calibration.md, "Step times").
  base::Seconds host_time;
  /// Time added to every Transformer Engine FP8 GEMM (per-tensor or MX scaling, the GEMM and its
  /// input casts) for what the inference-measured kernel tables leave out: amax history and
  /// scale updates, cast-transposes of inputs and output gradients, FP8 weight transposes, as a
  /// fraction of the GEMM. Fitted once on the FP8 training cases: catalog/calibration/
  /// training.yaml through TrainingCalibration (training_calibration.h); 0 until applied.
  double fp8_overhead = 0.0;
  /// The cluster's GPUs, NVLink and NIC rates and the MoE dispatch kernels measured for them
  /// (`serving_fabric`: catalog/collectives/moe-a2a.yaml). With it, DeepEP and NVLink one-sided
  /// dispatch are timed by the collective layer's kernels (collective/moe_a2a.h); without it by
  /// the closed forms over `comm` (docs/models/training.md).
  const ServingFabric* moe_fabric = nullptr;
  /// Host time to issue one decoder layer's forward kernels from eager PyTorch (seconds): the
  /// serving model's figure (catalog/calibration/serving.yaml eager_host_per_layer, fitted on
  /// TensorRT-LLM's CUDA-graph ablation; LightLLM's eager DeepSeek-V2-Lite decode <= 1.5 ms per
  /// layer), set through TrainingCalibration; 0 until applied. The backward issues as many
  /// (autograd replays the recorded ops), recomputation its share of the forward's ops. Exposed
  /// where issuing is slower than the GPU runs, and after each dropless MoE layer's device-to-host
  /// sync (docs/models/training.md, "Host issue").
  base::Seconds eager_host_per_layer;
  /// Host time per expert GEMM issued eagerly: Transformer Engine's GroupedLinear issues one GEMM
  /// per local expert with its per-expert Python work (fc1 and fc2: 2 per local expert forward,
  /// 4 backward). Fitted: catalog/calibration/training.yaml through TrainingCalibration; 0 until
  /// applied. Exposed only where the host is slower than the GPU (after each dropless MoE
  /// layer's sync, above).
  base::Seconds host_per_expert_gemm;
  /// The recipe's CUDA graphs (cuda_graph bits); captured ops are not issued by the host.
  uint32_t cuda_graphs = cuda_graph::kNone;
};

/// Where the time of one step goes, per GPU of the slowest stage (seconds).
struct StepBreakdown {
  double forward_compute = 0, backward_compute = 0, recompute = 0;
  double tp_comm = 0, cp_comm = 0, ep_comm = 0, pp_comm = 0, dp_comm = 0;
  double optimizer = 0, bubble = 0;
  double offload = 0;  ///< exposed activation offloading traffic
  double host = 0;     ///< per-iteration host time (TrainingSetup::host_time)
  /// GPU idle while eager PyTorch issues kernels (TrainingSetup::eager_host_per_layer)
  double host_issue = 0;
};

struct StageTime {
  int stage = 0;
  double pipeline_end_s = 0, busy_s = 0, dp_exposed_s = 0, optimizer_s = 0, end_s = 0;
  int layers = 0;
};

struct TrainingResult {
  double step_time_s = 0;
  double tokens_per_step = 0;
  double tokens_per_s = 0;
  double model_flops_per_step = 0;
  double hardware_flops_per_step = 0;
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double mfu = 0;
  StepBreakdown breakdown;  ///< exposed times of the busiest stage; bubble = the rest of the step
  std::vector<StageTime> stages;
  workload::MemoryBreakdown memory;  ///< the stage with the most memory
  std::vector<TaskRecord> tasks;     ///< the pipeline timeline (for traces)
  std::vector<double> chunk_forward_s, chunk_backward_s;
  std::vector<std::string> notes;  ///< assumptions the result depends on
  int64_t events = 0;
};

/// Simulates one step. Errors: a layout that does not fit the model or GPU count, or memory.
base::Result<TrainingResult> simulate_training_step(const TrainingSetup& s);

/// The pass one micro-batch makes through a stage's GPUs under the layout (the step's ops and
/// the power view's come from it): tp, sp, cp, ep, etp, dtype, FP8 attention; with measured
/// routing, the busiest EP rank's share of the MoE pairs (capped by the capacity factor).
models::PassSpec training_pass(const models::ModelSpec& m, const workload::TrainingLayout& l);

/// The analytical estimate (no event run): the same per-chunk costs combined by the closed form
/// (M + pp - 1)/... of the schedule; microseconds, for layout search.
base::Result<TrainingResult> estimate_training_step(const TrainingSetup& s);

/// Per-micro-batch costs of one part of the model on one GPU, forward and backward together
/// (seconds): what the pipeline chunks of simulate/estimate_training_step add up. A chunk's
/// forward time is fwd_compute + (tp + ep + cp)/2 + host_fwd, its backward bwd_compute +
/// recompute + the other half + host_bwd.
struct TrainingPartCost {
  double fwd_compute = 0, bwd_compute = 0, recompute = 0, tp = 0, ep = 0, cp = 0;
  double host_fwd = 0, host_bwd = 0;  ///< GPU idle waiting for the host to issue kernels
  [[nodiscard]] double fwd() const { return fwd_compute + (tp + ep + cp) / 2 + host_fwd; }
  [[nodiscard]] double bwd() const {
    return bwd_compute + recompute + (tp + ep + cp) / 2 + host_bwd;
  }
};
struct TrainingPartCosts {
  TrainingPartCost embedding;            ///< the first chunk's embedding
  TrainingPartCost head;                 ///< the last chunk's output head and MTP modules
  TrainingPartCost output;               ///< the output head alone
  TrainingPartCost mtp;                  ///< one MTP module (zero without MTP)
  std::vector<TrainingPartCost> layers;  ///< decoder layer i (layers of one kind share costs)
};

/// The part costs under `s.layout`'s tensor, context and expert parallelism, micro-batch,
/// precision and recomputation; its pipeline split, data parallelism and ZeRO stage play no part
/// (ZeRO 3's exposed per-part gathers and reduce-scatters, which depend on the DP group, are
/// left out: a chunk adds, per part, max(0, AG - fwd_compute) forward and
/// max(0, AG + RS - bwd_compute - recompute) backward, docs/models/training.md §ZeRO 3)
/// (layout search combines them over many of those without recomputing them). `s.gpus` must be
/// set (the concurrent groups on the fabric). Errors: a layout the model's shapes refuse
/// (models::check_layout); memory is not checked.
base::Result<TrainingPartCosts> training_part_costs(const TrainingSetup& s);

}  // namespace clustertwin::execution
