#pragma once
/// Memory per GPU of a training layout (docs/models/training.md §memory).
///
/// Parameters on a GPU of stage s: its layers' attention, dense MLP, shared experts and norms / tp,
/// routed experts / ep, embedding on the first stage / tp and output head on the last / tp.
/// Bytes per parameter (Megatron mixed precision with Adam): weights 2 (bf16), or 1 / 0.5625 as
/// FP8 / NVFP4 primary weights when training in low precision (--fp8-param-gather), fp32 main
/// gradients `grad_bytes`, optimizer 12 (fp32 master weights, Adam m and v). ZeRO 1 shards the
/// optimizer over the data-parallel group (dp*cp for dense parameters, dp*cp/ep for experts), ZeRO
/// 2 the gradients too, ZeRO 3 the weights too (plus two gathered layers in flight).
///
/// Activations per layer per token (bf16; Korthikanti et al. 2022, arXiv:2205.05198, Table 2,
/// with FlashAttention so the 5as/h softmax term is not stored unless attention is unfused,
/// generalised to GQA, MLA, SwiGLU and MoE; e = 1 byte for GEMM inputs saved in FP8, else 2;
/// dropout masks (1 B) only for GELU/GPT models): attention e*h + 2(q+k+v widths) +
/// 2(attention output) + mask; MLP e*h + 2f + e*f (GELU) or e*h + 4f + e*f (SwiGLU) + mask;
/// MoE top_k * (e*h + 4f_e + e*f_e) + shared * (4f_e + e*f_e); norms 4h. For GPT in bf16 this is
/// Korthikanti's 34h per token.
/// Sequence parallelism divides everything by tp; without it 10h stays replicated. Full
/// recomputation keeps only each layer's input (2h/tp) plus one layer recomputed at a time.
/// Selective recomputation of core attention saves nothing more once FlashAttention already
/// recomputes the scores, so it equals none here (said in the output).
/// In-flight micro-batches on stage s: 1F1B pp - s; interleaved with v chunks the first stage holds
/// (v+1)pp - 1 chunk-micro-batches of L/(pp v) layers (Narayanan et al. 2021, §2.2.2).

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
  double params = 0;  ///< parameters held by one GPU of the stage (before ZeRO-3 sharding)
  [[nodiscard]] Bytes total() const {
    return weights + gradients + optimizer + activations + logits + buffers;
  }
  /// (name, bytes) of each term, in a fixed order.
  [[nodiscard]] std::vector<std::pair<std::string, Bytes>> terms() const;
};

/// Framework, allocator and communication buffers per GPU (assumption, stated in the output):
/// CUDA context, cuBLAS workspaces, NCCL buffers.
inline constexpr double kFrameworkBufferBytes = 3e9;

/// The breakdown of every pipeline stage.
std::vector<MemoryBreakdown> training_memory(const models::ModelSpec& m, const TrainingLayout& l);

/// The stage with the largest total; an error when it does not fit `capacity`, naming the total,
/// the capacity and the biggest term.
base::Result<MemoryBreakdown> check_memory(const models::ModelSpec& m, const TrainingLayout& l,
                                           Bytes capacity);

/// Parameters of one transformer layer by part (for stage sums and per-layer op building).
struct LayerParams {
  double attention = 0, mlp_dense = 0, routed = 0, shared = 0, router = 0, norms = 0;
};
LayerParams layer_params(const models::ModelSpec& m, int layer);

}  // namespace clustertwin::workload
