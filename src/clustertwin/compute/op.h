#pragma once
/// One operator on one GPU, as the models layer describes it and the compute model times it:
/// a GEMM, an attention call (prefill, decode, MLA), a fused MoE layer, or a memory-bound kernel
/// (norm, activation, embedding gather, softmax/loss). Plain value types; `name` points at a
/// string literal so that building thousands of ops allocates nothing per op.

#include <cstdint>
#include <optional>
#include <string_view>

#include "clustertwin/base/units.h"
#include "clustertwin/hardware/specs.h"

namespace clustertwin::compute {

using base::Bytes;
using base::Flops;
using base::Seconds;

/// Tensor-core number formats of GEMMs, as the measured kernel tables name them.
/// kFp8 is per-tensor FP8 E4M3 (Transformer Engine style); kFp8Block has 128-wide block scales
/// (DeepSeek-V3 style); kNvfp4 is FP4 E2M1 with an FP8 scale per 16 elements (Blackwell only).
enum class DType { kBf16, kFp8, kFp8Block, kNvfp4 };
inline constexpr DType kAllDTypes[] = {DType::kBf16, DType::kFp8, DType::kFp8Block, DType::kNvfp4};

/// "bf16", "fp8", "fp8_block", "nvfp4" (catalog and CLI spelling).
const char* dtype_name(DType d);
/// Also accepts "fp16" (= bf16 peak and size), "fp4" (= nvfp4), "fp8-block".
std::optional<DType> parse_dtype(std::string_view s);
/// Bytes per weight element, scales included: 2, 1, 1 + 4/128^2, 0.5 + 1/16.
double weight_bytes(DType d);
/// The datasheet peak a dtype runs at.
hardware::Precision peak_precision(DType d);

/// C[m,n] = A[m,k] * B[k,n]: m tokens, n output features, k input features (forward).
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  [[nodiscard]] double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

/// Backward GEMMs of a forward GEMM (the measured tables hold forward kernels only; backward
/// kernels are looked up in the same tables by their own shapes):
///   dgrad: dX[m,k] = dY[m,n] * W[n,k]   -> shape {m, k, n}
///   wgrad: dW[n,k] = dY^T[n,m] * X[m,k] -> shape {n, k, m}
inline GemmShape dgrad_shape(GemmShape f) { return {f.m, f.k, f.n}; }
inline GemmShape wgrad_shape(GemmShape f) { return {f.n, f.k, f.m}; }

enum class AttentionVariant {
  kGqa,         ///< multi-head / grouped-query attention (FlashAttention-style kernel)
  kMlaPrefill,  ///< DeepSeek MLA with K and V expanded per head (context / training)
  kMlaDecode,   ///< DeepSeek MLA decode with W_UK / W_UV absorbed: attends over the latent cache
};

/// Attention core of one layer on one GPU (projections are separate GEMMs).
struct AttentionShape {
  AttentionVariant variant = AttentionVariant::kGqa;
  int64_t batch = 1;     ///< sequences
  int64_t q_len = 1;     ///< new tokens per sequence (prompt length in prefill, 1 in decode)
  int64_t kv_len = 1;    ///< keys per sequence including the new tokens (= q_len in plain prefill)
  int64_t heads = 1;     ///< query heads on this GPU (after tensor parallelism)
  int64_t kv_heads = 1;  ///< key/value heads on this GPU (GQA); unused for MLA
  int64_t head_dim_qk = 128;
  int64_t head_dim_v = 128;
  int64_t kv_lora_rank = 0;  ///< MLA latent width (512 for DeepSeek-V3)
  int64_t rope_dim = 0;      ///< MLA decoupled RoPE key width (64 for DeepSeek-V3)
  bool causal = true;
  /// Local attention (models/model.h LocalAttentionSpec): a query attends to at most `window`
  /// keys, the most recent ones (sliding window) or the earlier ones of its own chunk of
  /// `window` positions (`chunked`); 0 = every earlier key.
  int64_t window = 0;
  bool chunked = false;
  bool fp8_math = false;  ///< FP8 FMHA (prefill); decode math is bf16
  double kv_bytes = 2.0;  ///< bytes per KV-cache element: 2 (bf16) or 1 (fp8)

  /// Multiply-adds of QK^T and PV, counted as 2 FLOPs each, with causal masking skipping the
  /// upper triangle (the work FlashAttention actually does).
  [[nodiscard]] double flops() const;
  /// Q, K, V in, O out, plus the KV-cache write (prefill) or read (decode), each once: the
  /// FlashAttention I/O lower bound (scores never touch HBM).
  [[nodiscard]] double bytes() const;
  /// Keys per sequence the kernel touches: kv_len, or at most window + q_len - 1 with a window.
  [[nodiscard]] int64_t touched_kv_len() const;
};

/// One GPU's share of a MoE layer: routing, grouped expert GEMMs (SwiGLU gate+up, down),
/// activation and finalize; no all-to-all (that is the collective layer's).
struct MoeShape {
  int64_t tokens = 0;  ///< tokens entering the layer on this GPU's EP group member
  int64_t hidden = 0;
  int64_t inter = 0;  ///< intermediate size of one expert (before tensor parallelism)
  int topk = 1;
  int experts = 1;         ///< routed experts in the model
  int tp = 1;              ///< expert tensor parallelism (splits inter)
  int ep = 1;              ///< expert parallelism (splits experts)
  double imbalance = 1.0;  ///< token-expert pairs on the busiest GPU / the uniform share

  [[nodiscard]] double pairs() const;           ///< token-expert pairs on this GPU
  [[nodiscard]] double active_experts() const;  ///< local experts that receive a token
  [[nodiscard]] double expert_params() const;   ///< weights of one local expert
  [[nodiscard]] double flops() const;
  [[nodiscard]] double bytes(DType d) const;
};

enum class OpKind {
  kGemm,               ///< `gemm` (x `count` independent GEMMs of that shape in one launch)
  kAttention,          ///< `attention`, forward
  kAttentionBackward,  ///< `attention`, backward (dQ, dK, dV)
  kMoe,                ///< `moe`, forward
  kMoeBackward,        ///< `moe`, backward (dgrad + wgrad of the grouped GEMMs)
  kMemory,             ///< memory-bound: norms, activations, embedding gather, loss; `bytes`
};
const char* op_kind_name(OpKind k);

/// Which pass of training or inference an op belongs to (for traces and breakdowns; the time
/// depends only on kind and shape).
enum class Pass : uint8_t { kForward, kDgrad, kWgrad, kBackward, kRecompute };
const char* pass_name(Pass p);

struct Op {
  const char* name = "";  ///< a string literal: "qkv_proj", "attention", "mlp_down", ...
  OpKind kind = OpKind::kMemory;
  Pass pass = Pass::kForward;
  DType dtype = DType::kBf16;
  Flops flops;  ///< work of the op (for model-FLOP accounting; times come from the shapes)
  Bytes bytes;  ///< HBM traffic (for memory-bound ops this sets the time)
  GemmShape gemm;
  int64_t count = 1;  ///< identical GEMMs in one launch (batched / per-head BMM)
  AttentionShape attention;
  MoeShape moe;
};

}  // namespace clustertwin::compute
