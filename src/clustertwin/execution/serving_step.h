#pragma once
/// Time of one serving iteration (one forward pass of a continuous batch) on one instance
/// (docs/models/inference.md, "step time").
///
/// A batch mixes decode sequences (1 + draft tokens each, attending over their KV cache) and
/// prefill chunks (new prompt tokens attending over the chunk and any cached prefix). For the
/// ranks r of an instance (attention-DP GPUs, or the one rank of a TP/PP instance):
///
///   t_r    = dense(T_r) + mla_decode(D_r) + mla_prefill(P_r) + attn_decode(b_r, ctx_r)
///            + attn_prefill(chunks_r) + head(seqs_r)           T_r = D_r + P_r tokens
///   t_iter = f x (max_r t_r + moe(T_group) + mtp) + comm + t_host
///
/// dense(T): every GEMM and memory-bound kernel of every layer except the attention core and the
///   routed experts (projections, norms, dense MLP, shared experts, router, embedding), timed by
///   the compute model at m = T tokens (tables over T, interpolated); MLA models split off the
///   prefill-only kv_b_proj and the decode-only absorbed BMMs (DeepSeek-V2 §2.1.2).
/// attention: the compute model's decode kernel at (b, mean context) and prefill kernel at the
///   chunks' causal query-key pairs, x layers.
/// moe(T_group): the fused MoE of one GPU with T_group tokens entering its EP group (the sum
///   over ADP ranks, or the instance's T) at `moe_imbalance` x the uniform share of pairs
///   (measured straggler/balanced ratios 1.2-1.8 at >= 1k tokens, AIC moe.csv power_law_1.01).
/// comm: TP: 2 all-reduces of T x hidden x 2 B per layer, TensorRT-LLM's custom all-reduce
///   measured per GPU and group size (AIC custom_allreduce.csv, interpolated in log-log); with
///   tp_overlap (GEMM + all-reduce fusion) only what exceeds the GEMM time is exposed;
///   ADP + EP: per MoE layer a dispatch (NVFP4 / FP8 payload with its scales) and a combine
///   (bf16) of the busiest rank's T = max_r T_r tokens, by the kernel the framework selects
///   (TensorRT-LLM's select_alltoall_method_type; SGLang / DeepEP for EP across nodes):
///     ep <= top_k inside a domain: no all-to-all (a token reaches nearly every rank):
///       NCCL all-gather of ep x T dispatch payloads (padded to the busiest rank) and
///       reduce-scatter of ep x T bf16 outputs;
///     ep > top_k inside an NVLink domain with one-sided kernels (GB200 / GB300 NVL72):
///       nvlink-onesided;
///     ep beyond the NVLink domain (HGX over IB): DeepEP low-latency in iterations without
///       prompt tokens (decode, CUDA graphs), DeepEP normal in iterations with prompt tokens;
///     otherwise: ncclAllToAll of every routed copy.
///   The kernels are the collective layer's (collective/moe_a2a.h, catalog/collectives/
///   moe-a2a.yaml; NCCL curves from CollectiveModel), with group-limited routing reach;
///   TP beyond the NVLink domain goes over the NICs; PP: (pp - 1) activation sends of
///   T x hidden x 2 B.
/// f, t_host: a kernel-time factor and a fixed time per iteration for what kernel tables do
///   not show; both neutral (1 and 0) unless a calibration profile sets them -- nothing in the
///   catalog is fitted to them (the validation test says what is fitted).
/// Eager iterations (workload::ServingRuntime::kPytorch): an iteration that cannot replay a CUDA
///   graph -- prompt tokens on any rank, or a decode batch beyond the largest captured graph --
///   has its kernels issued one by one by Python host code. The host runs ahead of the GPU
///   (kernel launches are asynchronous), so the GPU waits only where issuing is slower than
///   running: t_iter = max(t_gpu, layers x h_eager) + t_host, h_eager the host time of one
///   decoder layer (StepCalibration::eager_host_per_layer_s). Synchronisations inside the
///   iteration would add to it; max() is the lower bound. Decode-only iterations within the
///   captured sizes replay a graph and pay no issue time (TensorRT-LLM blog 3, "CUDA Graph").
/// Two-batch overlap (InstanceLayout::two_batch_overlap, attention-DP only): two micro-batches
///   of half the rank's work alternate so that one's MoE exchange runs during the other's
///   computation: t = 2 max(C_h, M_h) + min(C_h, M_h) / layers, never more than without it
///   (DeepSeek's profile-data design; LMSYS 2025-05-05: +27-35% prefill throughput). DeepEP's
///   normal kernels hold 20 SMs while they run, so the computation they overlap runs on the
///   others: C_h grows by min(C_h, M_h) x 20 / (SMs - 20); the low-latency kernels do not.
///   Both are an upper bound on the overlap: no interference between the streams beyond SMs.
/// MTP speculative decoding: each decode sequence runs 1 + k tokens through the model and the
///   MTP module runs k draft passes (one layer + head each).
///
/// Cost: building a StepModel times ~2 layers x ~20 ops x ~60 token counts (< 1 ms); one
/// iteration is O(ranks) table lookups and compute-model attention calls.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/collective/moe_a2a.h"
#include "clustertwin/compute/compute_model.h"
#include "clustertwin/execution/comm.h"
#include "clustertwin/hardware/catalog.h"
#include "clustertwin/models/model.h"
#include "clustertwin/workload/serving.h"

namespace clustertwin::execution {

/// NCCL all-gather, reduce-scatter and all-to-all of groups inside one NVLink domain, as the
/// collective layer's CollectiveModel predicts them on one system of the cluster (tabulated once
/// per cluster: group sizes 2, 4, 8, ... and the whole domain; sizes 1 KiB .. 16 GiB).
struct DomainNcclCurves {
  enum Kind { kAllGather = 0, kReduceScatter = 1, kAllToAll = 2 };
  struct Curve {
    int ranks = 0;
    std::vector<double> bytes;              ///< nccl-tests sizes
    std::vector<std::vector<double>> time;  ///< [kind][size] seconds
  };
  std::vector<Curve> curves;  ///< ascending ranks
  /// Seconds of one collective of `bytes` (nccl-tests convention) over `ranks` GPUs: the curve
  /// of the smallest tabulated group >= ranks (the largest beyond), log-log interpolation,
  /// linear in size beyond the largest.
  [[nodiscard]] double time(Kind k, int ranks, double bytes) const;
};

/// The links serving traffic uses, per GPU, and the kernels that move MoE tokens on them.
struct ServingFabric {
  std::string gpu;              ///< GPU catalog name (selects the measured all-reduce curves)
  int domain_size = 8;          ///< GPUs in one NVLink domain
  base::BytesPerSecond nvlink;  ///< per GPU per direction
  base::BytesPerSecond nic;     ///< scale-out bandwidth per GPU per direction
  int sms = 0;                  ///< the GPU's SMs (0: not in the catalog)
  /// MoE dispatch / combine kernels measured for this GPU (catalog/collectives/moe-a2a.yaml);
  /// unset where the catalog has none.
  std::optional<collective::A2aKernelParams> deepep_normal, deepep_ll, nvlink_onesided;
  std::shared_ptr<const DomainNcclCurves> nccl;  ///< null only for a hand-made fabric
};
/// The fabric of a cluster's systems (GPU, NVLink domain, NICs per GPU).
base::Result<ServingFabric> serving_fabric(const hardware::Catalog& catalog,
                                           const hardware::ClusterSpec& cluster);

/// Fitted framework constants (see the header comment and docs/models/inference.md). The
/// catalog's fits come from catalog/calibration/serving.yaml (ServingStepCalibration::apply,
/// serving_calibration.h); a StepCalibration holds none until they are applied.
struct StepCalibration {
  double gpu_factor = 1.0;  ///< kernel-time multiplier f
  double host_s = 0.0;      ///< fixed time per iteration
  /// Host time to issue one decoder layer's kernels in an eager iteration of the PyTorch
  /// runtime (h_eager in the header comment; seconds). Fitted on TensorRT-LLM's CUDA-graph
  /// ablation (blog 3): catalog/calibration/serving.yaml; 0 until applied.
  double eager_host_per_layer_s = 0.0;
  /// Host time of the serving front end per streamed response of the PyTorch runtime
  /// (detokenization, OpenAI protocol objects, inter-process messages under one Python GIL;
  /// TensorRT-LLM blog 8 "Support Stream Interval"), seconds. The front end of an instance
  /// handles its responses first come first served (execution::ServingSetup); offline runs do
  /// not stream. Fitted on S0099: catalog/calibration/serving.yaml; 0 until applied.
  double stream_host_per_response_s = 0.0;
  /// Host time of the TensorRT-LLM C++ executor between two iterations of a TensorRT engine
  /// (workload::ServingRuntime::kTrtEngine; seconds): scheduling, KV-block bookkeeping, the
  /// input buffers, TensorRT's shape inference for the iteration's token count, the decoder and
  /// the streamed responses, while the GPU waits (the engines run without CUDA graphs and the
  /// executor does not overlap the next iteration's host work with this one's kernels). Added to
  /// every iteration of an engine, none of the PyTorch runtime (whose host time is the eager
  /// issue and the front end above). Fitted on VC0020 / S0074 (NVIDIA DGX B200 Llama 2 70B
  /// Interactive): catalog/calibration/serving.yaml; 0 until applied.
  double engine_host_per_iteration_s = 0.0;
};

struct StepSetup {
  const models::ModelSpec* model = nullptr;
  workload::InstanceLayout instance;
  compute::DType weights = compute::DType::kNvfp4;
  double kv_bytes = 1.0;
  int mtp = 0;              ///< draft tokens per decode step
  double tp_overlap = 0.0;  ///< see workload::ServingLayout::tp_overlap
  /// NVFP4: the norm-fed GEMMs read an input the norm already quantised (see
  /// workload::ServingLayout::norm_quant_fusion); false: they pay their own quantisation pass.
  bool norm_quant_fusion = true;
  const compute::ComputeModel* compute = nullptr;
  const CommModel* comm = nullptr;  ///< for groups beyond one NVLink domain; may be null
  ServingFabric fabric;
  int first_gpu = 0;
  /// Busiest GPU's token-expert pairs / the uniform share; <= 0 picks 1.5 (1.2 with ep > 8,
  /// where TensorRT-LLM's EP load balancer places redundant experts).
  double moe_imbalance = 0;
  StepCalibration calibration;
  /// Kernel-time multiplier of a GPU power cap or SM clock lock (the power layer's feedback,
  /// power::analyze_serving_power); 1: none. Applied on top of the calibration's gpu_factor.
  double cap_slowdown = 1.0;
  /// Whose host issues the kernels of an iteration that is not a CUDA graph (header comment).
  workload::ServingRuntime runtime = workload::ServingRuntime::kPytorch;
};

/// One rank's work in one iteration.
struct RankBatch {
  int64_t decode = 0;          ///< sequences generating
  double decode_context = 0;   ///< sum over them of tokens already in the KV cache
  int64_t prefill_tokens = 0;  ///< prompt tokens this iteration
  int64_t prefill_seqs = 0;    ///< prompts (or chunks) they belong to
  double prefill_pairs = 0;    ///< sum over chunks of causal query-key pairs
  int64_t logits = 0;          ///< sequences that produce a token (decode + finished prompts)
};

/// Query-key pairs of a chunk of `q` new tokens after `context` cached ones.
double causal_pairs(int64_t q, int64_t context);

/// How one MoE layer's tokens move between expert-parallel ranks (header comment).
enum class MoeComm { kNone, kAllGather, kNcclAllToAll, kNvlinkOneSided, kDeepEp };
/// The kernel's name ("deepep-ll" / "deepep-normal" for kDeepEp by `prefill`).
const char* moe_comm_name(MoeComm c, bool prefill);

/// Seconds of one iteration, and where they went (summed over layers; attention, dense and moe
/// are the slowest rank's and include the factor f).
struct StepTime {
  double total = 0;
  double attention = 0, dense = 0, moe = 0, head = 0, mtp = 0, comm = 0, host = 0;
  bool eager = false;  ///< not a CUDA-graph replay (prompt tokens, or beyond the largest graph)
};

class StepModel {
 public:
  static base::Result<StepModel> build(const StepSetup& s);

  /// One iteration of the instance: all its attention-DP ranks at once (they meet in every MoE
  /// layer), or the single rank of a TP instance, or one pipeline slot (the whole pass through
  /// all stages). Empty ranks run a one-token dummy batch as TensorRT-LLM pads ADP ranks.
  [[nodiscard]] StepTime time(std::span<const RankBatch> ranks) const;
  /// Steady-state helper: every rank runs `b` decode sequences at mean context `context` plus,
  /// on average, `prefill_tokens` prompt tokens per iteration in chunks of `chunk` (their cost is
  /// amortised linearly between an iteration without and one with a chunk).
  [[nodiscard]] StepTime uniform(int64_t b, double context, double prefill_tokens,
                                 int64_t chunk) const;
  /// Time to move one sequence's KV cache of `tokens` tokens to another instance (disaggregated
  /// serving): over NVLink inside a domain, else over the NICs.
  [[nodiscard]] double kv_transfer_s(int64_t tokens, bool same_domain) const;

  [[nodiscard]] const StepSetup& setup() const { return s_; }
  [[nodiscard]] int ranks() const { return s_.instance.ranks(); }
  [[nodiscard]] double moe_imbalance() const { return imbalance_; }
  [[nodiscard]] int64_t max_table_tokens() const { return grid_.empty() ? 0 : grid_.back(); }
  [[nodiscard]] MoeComm moe_comm() const { return moe_comm_; }
  /// Dispatch + combine of one MoE layer with `tokens` on the busiest rank; `prefill`: the
  /// iteration carries prompt tokens (DeepEP normal instead of low-latency).
  [[nodiscard]] double moe_comm_s(double tokens, bool prefill) const;

 private:
  [[nodiscard]] double lookup(const std::vector<int64_t>& grid, const std::vector<double>& v,
                              double t) const;
  [[nodiscard]] double rank_time(const RankBatch& r, StepTime* parts) const;
  /// time() without CUDA-graph padding and without the host time of eager iterations.
  [[nodiscard]] StepTime time_unpadded(std::span<const RankBatch> ranks) const;
  /// time() without the host time of eager iterations.
  [[nodiscard]] StepTime time_on_gpu(std::span<const RankBatch> ranks, bool* eager) const;
  /// time() without two-batch overlap.
  [[nodiscard]] StepTime kernel_time(std::span<const RankBatch> ranks) const;
  [[nodiscard]] double allreduce_s(double bytes) const;
  [[nodiscard]] base::Result<double> moe_comm_direct_s(int64_t tokens, bool prefill) const;
  [[nodiscard]] double send_s(double bytes) const;

  StepSetup s_;
  double imbalance_ = 1.0;
  double q_per_seq_ = 1.0;  // tokens per decode sequence per step (1 + mtp)
  int layers_ = 0, moe_layers_ = 0;
  int local_layers_ = 0;      // layers with sliding-window or chunked attention
  int64_t local_window_ = 0;  // their window (keys) or chunk
  bool local_chunked_ = false;
  double kv_token_bytes_ = 0;  // one token's KV cache (all layers, whole model)
  std::vector<int64_t> grid_, group_grid_, seq_grid_;
  std::vector<double> common_, decode_only_, prefill_only_, moe_, head_;
  MoeComm moe_comm_ = MoeComm::kNone;
  std::vector<double> a2a_decode_, a2a_prefill_;  // per MoE layer, over grid_ (busiest rank)
  compute::AttentionShape decode_shape_, prefill_shape_;
  bool has_attention_ = false;
  // Decode attention kernel time by (batch, kv_len): a pure function of the two, called for
  // every rank of every iteration with values that recur, so a direct-mapped memo saves the
  // compute model's interpolation. Exact; one StepModel serves one simulation (one thread).
  struct AttentionMemo {
    int64_t batch = -1, kv_len = -1;
    double seconds = 0;
  };
  mutable std::vector<AttentionMemo> decode_memo_;
};

/// TensorRT-LLM custom all-reduce time of `bytes` (bf16 buffer) over `n` GPUs of one NVLink
/// domain on `gpu` (measured curves; nearest GPU family when not measured).
double custom_allreduce_s(const std::string& gpu, int n, double bytes);

}  // namespace clustertwin::execution
