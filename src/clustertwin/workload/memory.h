#pragma once
/// Memory per GPU of a training layout, as Megatron-Core with Transformer Engine allocates it
/// (docs/models/training.md §memory).
///
/// Parameters on a GPU of stage s: its layers' attention, dense MLP, shared experts and norms / tp,
/// routed experts / ep, embedding on the first stage / tp and output head (and MTP modules) on
/// the last / tp; DualPipe ranks hold two stages (s and pp-1-s). Bytes per parameter (Megatron
/// mixed precision with Adam): weights 2 (bf16), or 1 / 0.5625 as FP8 / NVFP4 primary weights
/// when training in low precision (--fp8-param-gather), main gradients `grad_bytes`, optimizer
/// 4 + 2 x moment_bytes (fp32 master weights, Adam m and v). ZeRO 1 (Megatron's distributed
/// optimizer) shards the optimizer over the data-parallel group (dp*cp for dense parameters,
/// dp*cp/ep for experts), ZeRO 2 the gradients too, ZeRO 3 the weights too (plus two gathered
/// layers in flight). Megatron's theoretical-memory report (megatron/training/
/// theoretical_memory_usage.py) uses the same 6 + 12/dp bytes per parameter.
///
/// Activations: the tensors each module saves for its backward pass, per token and layer, with
/// fused kernels (FlashAttention keeps Q, K, V, O and the softmax statistics, never the s^2 scores;
/// TE's fused SwiGLU keeps its input; TE norms keep their input; GEMMs keep their input, in FP8
/// when training in FP8), split by how tensor/sequence parallelism divides them:
///   attention  2h (layer input) + e*h (norm output) + 2(q + k + v widths) + O (2 a d_v, plus its
///              e-byte copy for the output projection in FP8; one 1.5-byte E5M6 copy with
///              DeepSeek-style block FP8, §3.3.3) [+ 5 a s unfused scores]
///              MLA: + 2(q_lora + kv_lora + rope) + e(q_lora + kv_lora) latent, replicated over TP
///   dense MLP  2h (residual) + e*h + 4f (SwiGLU input; GELU 2f; half with the FP8 input
///              store) + e*f (down-projection input)
///   MoE        2h + 2h (router input) + 8E (fp32 logits, scores) + per routed copy on the busiest
///              rank: e*h + 4f_e (2f_e with the FP8 input store) + e*f_e + 4 (row map);
///              shared experts e*h + 4f_s + e*f_s
///   GPT (dropout) masks h per block.
/// e = 1 for FP8, 2 for bf16. For GPT in bf16 this is Korthikanti et al.'s 34h per token
/// (arXiv:2205.05198 Table 2, without the 5as/h that FlashAttention drops); Megatron's report
/// uses 18h + 4f with selective recomputation, the same figure for f = 4h.
/// `--recompute-modules` drop what they recompute: layernorm the two norm outputs, core_attn the
/// scores (unfused) and FlashAttention's copy of O, mla_up_proj q/k/v, mlp the MLP's internals,
/// moe_act the experts' down-projection inputs, shared_experts and moe their blocks' internals.
/// Full recomputation keeps each layer's input (2h/tp) plus one layer's activations.
/// Routed copies on the busiest EP rank: topk x imbalance (balanced 1; measured routing from the
/// measured tables), capped at the capacity factor when one is set (dropless otherwise).
/// In flight on stage s (micro-batches of the stage's layers): 1F1B min(pp - s, M); interleaved
/// (v chunks) ((pp-s-1)*2 + (v-1)pp + 1) chunk-micro-batches / v (Megatron: the first stage holds
/// pp (1 + (pp-1)/(pp v)) micro-batches); DualPipe pp + 1 (DeepSeek-V3 Table 2).
/// Offloading keeps one micro-batch's activations in HBM and the rest in host memory.
/// Logits on the last stage: tokens x vocab x 6 bytes / tp (bf16 logits + fp32 softmax), per
/// output head (MTP modules add theirs).
/// Buffers: CUDA context, NCCL and GEMM workspaces (kTrainingBufferBytes). The caching
/// allocator's headroom is the gap between physical and usable HBM in the GPU catalog (80 GB
/// usable of 85.5 GB on H100, 186 of 198.7 GB on GB200), so it is not added again here.

#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/base/units.h"
#include "clustertwin/workload/layout.h"

namespace clustertwin::workload {

using base::Bytes;

struct MemoryBreakdown {
  int stage = 0;  ///< the stage this breakdown is for
  Bytes weights, gradients, optimizer, activations, logits, buffers;
  Bytes offloaded;              ///< activations held in host memory (not in total())
  double params = 0;            ///< parameters held by one GPU of the stage (before ZeRO-3)
  double trainable_params = 0;  ///< of those, the ones with gradients (LoRA: the adapters)
  double activation_bytes_per_micro_batch = 0;  ///< stored by one micro-batch on this stage
  double inflight_micro_batches = 0;            ///< micro-batches of the stage's layers held
  [[nodiscard]] Bytes total() const {
    return weights + gradients + optimizer + activations + logits + buffers;
  }
  /// (name, bytes) of each term, in a fixed order.
  [[nodiscard]] std::vector<std::pair<std::string, Bytes>> terms() const;
};

/// Framework, allocator and communication buffers per GPU for serving (workload/serving.cpp).
inline constexpr double kFrameworkBufferBytes = 3e9;
/// Training: CUDA context and module images (~0.6 GB), NCCL communicator buffers (~1 GB over
/// the TP, DP, PP and EP communicators), cuBLAS / Transformer Engine workspaces (~0.4 GB):
/// assumption, printed with the result.
inline constexpr double kTrainingBufferBytes = 2e9;

/// The breakdown of every pipeline stage.
std::vector<MemoryBreakdown> training_memory(const models::ModelSpec& m, const TrainingLayout& l);

/// The stage with the largest total. When it does not fit `capacity`, an error naming the total,
/// the capacity, by how much it is over, the biggest term and the cheapest change that fits
/// (recompute modules first, then a smaller micro-batch, offloading where `host_capacity` per
/// GPU holds it, ZeRO 2/3, full recomputation), or that none of them does.
/// `suggest` = false skips the search for a fix (layout search prunes thousands of layouts).
base::Result<MemoryBreakdown> check_memory(const models::ModelSpec& m, const TrainingLayout& l,
                                           Bytes capacity, Bytes host_capacity = Bytes{},
                                           bool suggest = true);

/// The cheapest change to `l` that makes it fit, in words naming fields, and the layout; nullopt
/// when none of the candidates fits.
struct MemoryFix {
  std::string change;  ///< "{recompute_modules} layernorm,moe_act": fields as {key},
                       ///< each door writes its word (scenario/fields.h)
  TrainingLayout layout;
  MemoryBreakdown memory;
};
std::optional<MemoryFix> cheapest_memory_fix(const models::ModelSpec& m, const TrainingLayout& l,
                                             Bytes capacity, Bytes host_capacity);

/// Parameters of one transformer layer by part (for stage sums and per-layer op building).
struct LayerParams {
  double attention = 0, mlp_dense = 0, routed = 0, shared = 0, router = 0, norms = 0;
};
LayerParams layer_params(const models::ModelSpec& m, int layer);

/// LoRA adapter parameters of one layer at rank r: r x (in + out) per adapted linear (the
/// attention projections: qkv and output; MLA's down, up and output projections).
double lora_layer_params(const models::ModelSpec& m, int layer, int rank);

/// Activation bytes per token that decoder layer `layer` stores on one GPU without full
/// recomputation (the modules `l` recomputes excluded); under full recomputation, what the layer
/// holds while it is recomputed. training_memory's per-layer term (for layout search).
double layer_activation_bytes_per_token(const models::ModelSpec& m, const TrainingLayout& l,
                                        int layer);
/// Micro-batches of stage `stage`'s layers whose activations are held at the peak (the
/// schedule's in-flight count, as training_memory uses it).
double inflight_micro_batches(const TrainingLayout& l, int stage);

}  // namespace clustertwin::workload
