#include "clustertwin/compute/op.h"

#include <algorithm>

namespace clustertwin::compute {
namespace {
// Activations enter and leave every measured kernel in bf16.
constexpr double kActBytes = 2.0;
}  // namespace

const char* dtype_name(DType d) {
  switch (d) {
    case DType::kBf16:
      return "bf16";
    case DType::kFp8:
      return "fp8";
    case DType::kFp8Block:
      return "fp8_block";
    case DType::kNvfp4:
      return "nvfp4";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (DType d : kAllDTypes) {
    if (s == dtype_name(d)) return d;
  }
  if (s == "fp16" || s == "bfloat16") return DType::kBf16;
  if (s == "fp4") return DType::kNvfp4;
  if (s == "fp8-block") return DType::kFp8Block;
  return std::nullopt;
}

double weight_bytes(DType d) {
  switch (d) {
    case DType::kBf16:
      return 2.0;
    case DType::kFp8:
      return 1.0;
    case DType::kFp8Block:
      return 1.0 + 4.0 / (128.0 * 128.0);  // fp32 scale per 128x128 block
    case DType::kNvfp4:
      return 0.5 + 1.0 / 16.0;  // fp8 scale per 16 values
  }
  return 2.0;
}

hardware::Precision peak_precision(DType d) {
  switch (d) {
    case DType::kBf16:
      return hardware::Precision::kBf16;
    case DType::kFp8:
    case DType::kFp8Block:
      return hardware::Precision::kFp8;
    case DType::kNvfp4:
      return hardware::Precision::kFp4;
  }
  return hardware::Precision::kBf16;
}

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::kGemm:
      return "gemm";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kAttentionBackward:
      return "attention_backward";
    case OpKind::kMoe:
      return "moe";
    case OpKind::kMoeBackward:
      return "moe_backward";
    case OpKind::kMemory:
      return "memory";
  }
  return "?";
}

const char* pass_name(Pass p) {
  switch (p) {
    case Pass::kForward:
      return "forward";
    case Pass::kDgrad:
      return "dgrad";
    case Pass::kWgrad:
      return "wgrad";
    case Pass::kBackward:
      return "backward";
    case Pass::kRecompute:
      return "recompute";
  }
  return "?";
}

// Query-key pairs per sequence: the new tokens are the last q_len of kv_len positions; with a
// causal mask token i attends to i + 1 keys.
// With a window w, position j (1-based) attends to min(j, w) keys (sliding) or to
// ((j - 1) mod w) + 1 (chunked); the new tokens are positions kv - q + 1 .. kv, so the pairs are
// a difference of prefix sums.
static double local_prefix_pairs(int64_t n, int64_t w, bool chunked) {
  if (n <= 0) return 0.0;
  const double wd = static_cast<double>(w);
  if (chunked) {
    const double r = static_cast<double>(n % w);
    return static_cast<double>(n / w) * wd * (wd + 1.0) / 2.0 + r * (r + 1.0) / 2.0;
  }
  const double nd = static_cast<double>(n);
  if (n <= w) return nd * (nd + 1.0) / 2.0;
  return wd * (wd + 1.0) / 2.0 + (nd - wd) * wd;
}

static double attended_pairs(const AttentionShape& a) {
  const double q = static_cast<double>(a.q_len);
  const int64_t kv_i = std::max(a.kv_len, a.q_len);
  const double kv = static_cast<double>(kv_i);
  if (a.window > 0 && a.window < kv_i) {
    if (!a.causal) return q * static_cast<double>(a.window);
    return local_prefix_pairs(kv_i, a.window, a.chunked) -
           local_prefix_pairs(kv_i - a.q_len, a.window, a.chunked);
  }
  return a.causal ? q * kv - q * (q - 1.0) / 2.0 : q * kv;
}

int64_t AttentionShape::touched_kv_len() const {
  const int64_t total = std::max(kv_len, q_len);
  if (window <= 0) return total;
  return std::min(total, window + q_len - 1);
}

double AttentionShape::flops() const {
  const double b = static_cast<double>(batch);
  const double h = static_cast<double>(heads);
  double per_pair = 0.0;  // FLOPs per head per (query, key) pair
  switch (variant) {
    case AttentionVariant::kGqa:
    case AttentionVariant::kMlaPrefill:
      per_pair = 2.0 * static_cast<double>(head_dim_qk + head_dim_v);
      break;
    case AttentionVariant::kMlaDecode:
      // Scores over the latent (kv_lora + rope) and values in the latent (kv_lora) space.
      per_pair = 2.0 * static_cast<double>(kv_lora_rank + rope_dim + kv_lora_rank);
      break;
  }
  return b * h * per_pair * attended_pairs(*this);
}

double AttentionShape::bytes() const {
  const double b = static_cast<double>(batch);
  const double h = static_cast<double>(heads);
  const double kv = static_cast<double>(kv_heads);
  const double dqk = static_cast<double>(head_dim_qk);
  const double dv = static_cast<double>(head_dim_v);
  const double fresh = static_cast<double>(q_len);
  const double total = static_cast<double>(touched_kv_len());
  switch (variant) {
    case AttentionVariant::kGqa:
      // New tokens: Q, K, V in and O out; the cache: new K, V written, past K, V read.
      return b * (fresh * kActBytes * (h * dqk + kv * (dqk + dv) + h * dv) +
                  kv_bytes * kv * (dqk + dv) * total);
    case AttentionVariant::kMlaPrefill:
      // K and V expanded per head for the new tokens; the latent cache written / read.
      return b * (fresh * kActBytes * h * (2.0 * dqk + 2.0 * dv) +
                  kv_bytes * static_cast<double>(kv_lora_rank + rope_dim) * total);
    case AttentionVariant::kMlaDecode: {
      const double latent = static_cast<double>(kv_lora_rank + rope_dim);
      return b * (fresh * kActBytes * h * (latent + static_cast<double>(kv_lora_rank)) +
                  kv_bytes * latent * total);
    }
  }
  return 0.0;
}

double MoeShape::pairs() const {
  return static_cast<double>(tokens) * topk / std::max(ep, 1) * std::max(imbalance, 1.0);
}

double MoeShape::active_experts() const {
  const double local = static_cast<double>(experts) / std::max(ep, 1);
  return std::max(std::min(local, pairs()), 1e-9);
}

double MoeShape::expert_params() const {
  return 3.0 * static_cast<double>(hidden) * static_cast<double>(inter) / std::max(tp, 1);
}

double MoeShape::flops() const { return 2.0 * pairs() * expert_params(); }

double MoeShape::bytes(DType d) const {
  const double i_local = static_cast<double>(inter) / std::max(tp, 1);
  const double h = static_cast<double>(hidden);
  // Weights of the active experts once; permute, activation and finalize passes over the
  // token-expert pairs (bf16).
  return active_experts() * expert_params() * weight_bytes(d) +
         kActBytes * (pairs() * (2.0 * h + 3.0 * i_local) + 2.0 * static_cast<double>(tokens) * h);
}

}  // namespace clustertwin::compute
