#pragma once
/// Per-layer operator lists of a model for one GPU of a parallel layout: the GEMMs, attention
/// calls, fused MoE layers and memory-bound kernels of one pass, with FLOPs, bytes and shapes
/// (compute::Op), forward, backward and recomputed (docs/models/models.md, "operators").
///
/// Conventions (Megatron-LM / TensorRT-LLM layouts):
///   tokens per GPU T = batch * seq_len / cp (training, prefill) or batch (decode);
///   tensor parallelism splits heads, the MLP width and the vocabulary (column then row
///   parallel); MLA's down projections (q_a, kv_a) are replicated; sequence parallelism runs
///   norms and element-wise kernels on T / tp tokens; expert parallelism spreads the routed
///   experts (each GPU gets T * topk token-expert pairs with uniform routing, times the
///   imbalance); communication (TP all-reduce, EP all-to-all, PP send) is not an op here: the
///   workload layer inserts it between these ops.
///   Backward of a GEMM = dgrad + wgrad GEMMs (shapes in compute/op.h); of attention =
///   FlashAttention-2 backward (2.5x forward FLOPs); of MoE = 2x; of memory-bound ops = 2x bytes.
///   Recompute: none; selective = the attention core again (Korthikanti et al. 2022,
///   arXiv:2205.05198); full = the layer's whole forward again.
///   Element-wise kernels carry bytes, not FLOPs (model-FLOP convention), so that the FLOPs of a
///   training forward pass add up to forward_flops_per_token() x tokens exactly.

#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/compute/op.h"
#include "clustertwin/models/model.h"

namespace clustertwin::models {

enum class Phase { kTraining, kPrefill, kDecode };
enum class Recompute { kNone, kSelective, kFull };
const char* phase_name(Phase p);
const char* recompute_name(Recompute r);
std::optional<Recompute> parse_recompute(std::string_view s);

/// One pass over one GPU's share of the model.
struct PassSpec {
  Phase phase = Phase::kTraining;
  int64_t batch = 1;       ///< sequences (micro-batch, or requests in a serving batch)
  int64_t seq_len = 2048;  ///< new tokens per sequence (training, prefill); decode uses 1
  int64_t context = 0;  ///< tokens already in the KV cache per sequence (decode, chunked prefill)
  int tp = 1;           ///< tensor parallelism
  bool sequence_parallel = false;
  int cp = 1;   ///< context parallelism (ring attention, load-balanced)
  int ep = 1;   ///< expert parallelism
  int etp = 1;  ///< expert tensor parallelism (splits each expert's width)
  compute::DType dtype = compute::DType::kBf16;  ///< GEMM weights and math
  double kv_bytes = 2.0;                         ///< KV-cache element: 2 (bf16) or 1 (fp8)
  bool fp8_attention = false;
  double moe_imbalance = 1.0;  ///< busiest GPU's token-expert pairs / the uniform share

  [[nodiscard]] int64_t tokens() const;  ///< T: tokens this GPU processes in the pass
};

/// Divisibility of the layout: heads, kv heads, MLP width and vocabulary by tp, experts by ep,
/// expert width by etp, sequence by cp. Errors name the numbers.
base::Status check_layout(const ModelSpec& m, const PassSpec& p);

enum class Part { kEmbedding, kLayer, kHead, kMtp };
const char* part_name(Part p);

/// "dense" or "moe" (layer i of the decoder stack).
const char* layer_kind(const ModelSpec& m, int layer);

/// Forward ops of one part: the embedding (gather), decoder layer `index`, the head (final
/// norm, logits, loss in training; logits of the last token per sequence in inference) or MTP
/// module `index`.
std::vector<compute::Op> forward_ops(const ModelSpec& m, Part part, int index, const PassSpec& p);
/// Backward ops (training only; empty for inference passes).
std::vector<compute::Op> backward_ops(const ModelSpec& m, Part part, int index, const PassSpec& p);
/// Ops re-run in the backward pass under activation recomputation.
std::vector<compute::Op> recompute_ops(const ModelSpec& m, Part part, int index, const PassSpec& p,
                                       Recompute r);
/// Backward ops derived from any forward op list (dgrad + wgrad per GEMM, ...).
std::vector<compute::Op> backward_of(const std::vector<compute::Op>& forward);

/// All forward ops of the whole model (embedding, every layer, head; no MTP), in order.
std::vector<compute::Op> model_forward_ops(const ModelSpec& m, const PassSpec& p);

}  // namespace clustertwin::models
