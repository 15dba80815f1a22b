#pragma once
/// A training job's parallel layout (Megatron-LM / Megatron-Core semantics) and how its ranks map
/// onto GPUs. Rank order is Megatron-Core's default "tp-cp-ep-dp-pp": tensor parallel fastest, so
/// a TP group is contiguous GPUs inside one NVLink domain, then context, data (experts carved from
/// data x context), and pipeline stages outermost.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/compute/op.h"
#include "clustertwin/models/model.h"
#include "clustertwin/models/ops.h"

namespace clustertwin::workload {

using models::Recompute;

/// How MoE tokens travel to their experts: the collective layer's kernels (collective/moe_a2a.h).
/// kAllToAll ("alltoall", "nccl"): ncclAllToAll, one copy per routed expert (Megatron's
/// all-to-all token dispatcher).
/// kDedup ("dedup", "deepep", "deepep-normal"): DeepEP's normal kernels, one copy per destination
/// domain over the network, forwarded over NVLink inside it (DeepSeek-V3 report §3.2.2; Megatron's
/// flex dispatcher with the DeepEP backend).
/// kNvlinkOneSided ("nvlink-onesided"): one-sided NVLink stores inside one multi-node NVLink
/// domain (GB200/GB300 NVL72; TensorRT-LLM's NVLinkOneSided, the kind of kernel Megatron's
/// HybridEP backend runs there).
/// kAuto: resolve_moe_dispatch.
enum class MoeDispatch { kAuto, kAllToAll, kDedup, kNvlinkOneSided };
const char* moe_dispatch_name(MoeDispatch d);
std::optional<MoeDispatch> parse_moe_dispatch(std::string_view s);
/// What `auto` runs, as Megatron-Core and DeepEP would: inside one multi-node NVLink domain
/// (more than 8 GPUs, NVL72) the one-sided NVLink kernel; an EP group spanning NVLink domains
/// with group-limited routing (co-designed with DeepEP's deduplicated dispatch, DeepSeek-V3
/// §3.2.2) DeepEP normal; else NCCL all-to-all (Megatron's default alltoall dispatcher). An EP
/// group is ep ranks `stride` GPUs apart. Other choices are returned as they are.
MoeDispatch resolve_moe_dispatch(MoeDispatch d, const models::MoeSpec& moe, int ep, int stride,
                                 int domain_gpus);

/// Expected number of distinct NVLink domains a token's routed experts lie in, when the experts
/// are split evenly over `domains` domains (contiguous blocks, as EP ranks hold them) and routing
/// is uniform (balanced load). Reachable domains R: all of them, or with group-limited routing
/// the domains of the topk_groups chosen groups (M*D/G when a group spans D/G domains; else
/// D * (1 - C(G-G/D, M) / C(G, M)), the expected domains hit by M of G groups). With s experts
/// per reachable domain, the k experts drawn without replacement miss a given domain with
/// probability prod_{i<k} (Rs - s - i) / (Rs - i), so E = R * (1 - that). DeepSeek-V3 on 8
/// domains (G = 8, M = 4, k = 8): 3.6, against 8 copies without deduplication.
double moe_domains_per_token(const models::MoeSpec& e, int domains);

/// Megatron-Core `--recompute-modules` (selective recomputation by module; Megatron-LM
/// `transformer_config.py`): each set bit discards that module's saved activations in the forward
/// pass and re-runs it in the backward pass.
namespace recompute_module {
inline constexpr uint32_t kCoreAttn = 1u << 0;       ///< the attention core (scores, softmax)
inline constexpr uint32_t kMlp = 1u << 1;            ///< a dense MLP block
inline constexpr uint32_t kMoeAct = 1u << 2;         ///< the experts' activation (SwiGLU)
inline constexpr uint32_t kLayernorm = 1u << 3;      ///< input and pre-MLP norms (their outputs)
inline constexpr uint32_t kMlaUpProj = 1u << 4;      ///< MLA up projections and RoPE (q, k, v)
inline constexpr uint32_t kMoe = 1u << 5;            ///< a whole MoE block (dispatch included)
inline constexpr uint32_t kSharedExperts = 1u << 6;  ///< the shared experts
inline constexpr uint32_t kAll = (1u << 7) - 1;
}  // namespace recompute_module
/// "core_attn,moe_act" -> bits; an error names the unknown module and the known ones.
base::Result<uint32_t> parse_recompute_modules(std::string_view csv);
/// bits -> "core_attn,moe_act" ("none" when empty).
std::string recompute_modules_name(uint32_t bits);

/// Pipeline schedule. k1F1B covers Megatron's 1F1B and, with vpp > 1, interleaved 1F1B;
/// kDualPipe is DeepSeek-V3's bidirectional schedule (report §3.2.1, Table 2): every rank holds
/// two stages (one per direction), so twice the parameters, pp + 1 micro-batches of activations,
/// and a bubble of (pp/2 - 1)(F&B + B - 3W) with EP and PP communication hidden.
enum class PipelineSchedule { k1F1B, kDualPipe };
const char* pipeline_schedule_name(PipelineSchedule s);
std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view s);

/// How tokens spread over experts. kBalanced: every EP rank gets the uniform share (Megatron
/// `--moe-router-force-load-balancing`, as the Megatron-Bridge benchmarks run). kMeasured: the
/// busiest EP rank carries the straggler share measured for a power-law (Zipf) expert popularity
/// in the MoE kernel tables (`moe_imbalance_measured`).
enum class MoeRouting { kBalanced, kMeasured };
const char* moe_routing_name(MoeRouting r);
std::optional<MoeRouting> parse_moe_routing(std::string_view s);

/// Busiest EP rank's token-expert pairs over the uniform share under real (unforced) routing with
/// `ep` expert-parallel ranks: the ratio of power_law_1.01 to balanced latency in NVIDIA
/// AIConfigurator's measured MoE tables (shared/reference/measured/{h100,b200}/moe.csv, DeepSeek-V3
/// shape, fp8_block, 2,048-8,192 tokens per GPU; median over those points and GPUs), which places
/// the most popular experts on the measured rank. Each ratio is divided by the same ratio at ep 1
/// (where skew changes only the grouped GEMM's shapes, not a rank's load); medians over 4 GPUs
/// (H100, H200, B200, GB200) x 3 token counts: 1.00, 1.02, 1.09, 1.19, 1.28, 1.45, 1.54, 1.68,
/// 1.81 at ep 1, 2, 4, ..., 256, interpolated in log2(ep).
double moe_imbalance_measured(int ep);

struct TrainingLayout {
  int tp = 1;  ///< tensor parallel (with sequence parallelism when `sequence_parallel`)
  int pp = 1;  ///< pipeline stages
  int dp = 1;  ///< data parallel replicas
  int cp = 1;  ///< context parallel (ring attention)
  /// Expert parallel. Megatron-Core's MoE parallel folding (Liu et al. 2025, arXiv 2504.14960;
  /// parallel_state.py): the experts' grid etp x ep x edp x pp covers the same GPUs as the dense
  /// tp x cp x dp x pp, so etp*ep must divide tp*cp*dp and an EP group may span TP ranks.
  int ep = 1;
  /// Expert tensor parallel (Megatron --expert-tensor-parallel-size): each expert's width split
  /// over etp ranks. 1 (whole experts per rank) as the MoE recipes of Megatron-Bridge and the
  /// Megatron-MoE-ModelZoo run; Megatron's own default is etp = tp.
  int etp = 1;
  int vpp = 1;               ///< virtual stages per pipeline stage (interleaved 1F1B when > 1)
  int64_t micro_batch = 1;   ///< sequences per micro-batch per DP replica
  int64_t global_batch = 1;  ///< sequences per step
  int64_t seq_len = 2048;
  compute::DType dtype = compute::DType::kBf16;  ///< GEMM precision (bf16, fp8, nvfp4)
  Recompute recompute = Recompute::kNone;
  int zero = 1;  ///< 0: replicated optimizer; 1: sharded optimizer (Megatron distributed
                 ///< optimizer); 2: + sharded gradients; 3: + sharded weights (FSDP)
  bool sequence_parallel = true;
  bool tp_comm_overlap = false;  ///< TP collectives overlapped with GEMMs (Transformer Engine)
  bool dp_overlap = true;        ///< DP gradient reduce overlapped with the last backward
  bool ep_overlap = false;       ///< EP all-to-all hidden behind compute (DualPipe-style)
  MoeDispatch moe_dispatch = MoeDispatch::kAuto;
  /// Megatron `--recompute-modules` bits (recompute_module::); with recompute = selective and
  /// no bits, core_attn (Megatron's default); ignored under full recomputation.
  uint32_t recompute_modules = 0;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  MoeRouting routing = MoeRouting::kBalanced;
  /// MoE token capacity per expert as a multiple of the uniform share; 0 = dropless (Megatron's
  /// default): the busiest rank then holds imbalance x its share.
  double capacity_factor = 0;
  /// Activation offloading to host memory (Megatron-Core / Transformer Engine CPU offloading):
  /// the stored activations of all but the running and the next layer's micro-batch leave HBM.
  bool offload_activations = false;
  /// LoRA fine-tuning with adapters of this rank on the attention projections (qkv and output,
  /// the target modules of MLPerf's llama2_70b_lora), 0 = full training: the base weights are
  /// frozen (no weight gradients, optimizer state or wgrad GEMMs; frozen MLP GEMMs keep no
  /// inputs).
  int lora_rank = 0;
  /// FP8 attention (Transformer Engine FP8 dot-product attention): Q, K, V and O in FP8.
  bool fp8_attention = false;
  /// The MLP activation's input (SwiGLU / GELU) kept in FP8 for its backward (Megatron-Core
  /// `--activation-func-fp8-input-store`; DeepSeek-V3 §3.3.3 caches the MoE SwiGLU inputs so).
  bool fp8_activation_store = false;
  /// Bytes per Adam moment in the optimizer state: 4 (fp32) or 2 (bf16: DeepSeek-V3 §3.3.3,
  /// Megatron `--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16`).
  int moment_bytes = 4;
  int grad_bytes = 4;  ///< bytes per gradient element reduced over DP (4 fp32, 2 bf16)
  /// FlashAttention (fused, scores never in HBM) or the unfused attention of 2021-22 Megatron-LM
  /// (scores and probabilities materialised: more HBM traffic, the 5as/h activation term, and
  /// selective recomputation then pays off).
  bool flash_attention = true;

  [[nodiscard]] int64_t gpus() const { return static_cast<int64_t>(tp) * pp * dp * cp; }
  [[nodiscard]] int64_t micro_batches() const { return global_batch / (micro_batch * dp); }
  [[nodiscard]] int64_t tokens_per_step() const { return global_batch * seq_len; }
  /// The recompute-module bits in effect: all for full recomputation, core_attn for plain
  /// selective, else `recompute_modules`.
  [[nodiscard]] uint32_t recompute_bits() const;
};

/// tp*pp*cp (the GPUs of one data-parallel replica), checked against base::kMaxGpus.
base::Result<int64_t> model_parallel_size(const TrainingLayout& l);
/// The global batch when none is given: micro_batch x dp x 4 pp (the pipeline filled four
/// times, so the bubble stays small), checked against base::kMaxBatch.
base::Result<int64_t> default_global_batch(const TrainingLayout& l);

/// Checks the layout against the model and the GPU count; every violation is one error naming
/// both sides (`tp*pp*dp*cp = 8192 does not match gpus = 16384`).
base::Status validate(const TrainingLayout& l, const models::ModelSpec& m, int64_t gpus);

/// Layers per pipeline chunk (pp * vpp chunks, in schedule order; with layers + 1 or + 2 chunks
/// the first and the last hold only the embedding / output head). Uneven splits follow the
/// Llama 3 practice: every chunk gets ceil(L / chunks), and the deficit is taken one layer at a
/// time from the first chunk, the last, the second, the second-to-last, ... (126 layers over 16
/// stages: 7, 8 x 14, 7), where embedding and loss already make those stages heavier.
std::vector<int> split_layers(int layers, int chunks);

/// Rank coordinates under "tp-cp-ep-dp-pp" ordering; gpu = rank (ranks packed in order).
struct RankCoord {
  int tp, cp, dp, pp;
};
RankCoord coord_of(const TrainingLayout& l, int64_t rank);
int64_t rank_of(const TrainingLayout& l, RankCoord c);

}  // namespace clustertwin::workload
