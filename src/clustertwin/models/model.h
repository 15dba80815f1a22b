#pragma once
/// LLM architectures as data (docs/models/models.md): dense GPT (GELU, learned positions,
/// biases), Llama-style (SwiGLU, RMSNorm, RoPE, GQA), DeepSeek-V3 (MLA, shared + routed experts,
/// first layers dense, MTP) and Mixtral (MoE every layer). Parameter counts, FLOPs and bytes per
/// token follow from the spec by the closed forms below, never from stored totals; the published
/// totals are kept only to check them.
///
/// Parameters (per decoder layer, h = hidden, a = heads, g = kv heads, d = head_dim):
///   attention (GQA)  h*a*d + 2*h*g*d + a*d*h  (+ a*d + 2*g*d + h biases)
///   attention (MLA)  h*q_lora + q_lora*a*(nope+rope) + h*(kv_lora+rope) + kv_lora*a*(nope+v)
///                    + a*v*h  (+ q_lora + kv_lora norm weights); h*a*(nope+rope) without q_lora
///   MLP              GELU 2*h*f (+ f + h biases); SwiGLU 3*h*f
///   MoE layer        (routed + shared) * 3*h*f_e + h*routed router (+ routed score bias)
///   norms            2 per layer (x2 with LayerNorm biases), one final
///   embeddings       V*h input (+ s*h learned positions), V*h output unless tied
/// FLOPs per token, forward: 2 * (matmul parameters used by the token, output head included,
/// input embedding excluded) + attention 2*a*(d_qk + d_v) per attended key and layer; a causal
/// sequence of length s attends to (s+1)/2 keys per token on average.
/// Megatron-LM 2021 (Narayanan et al., arXiv:2104.04473, eq. 3) for GPT training without
/// recomputation: 72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)) = 3 x the non-causal forward above.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "clustertwin/compute/op.h"
#include "clustertwin/config/reader.h"

namespace clustertwin::models {

enum class MlpKind { kGelu, kSwiglu };
enum class NormKind { kLayerNorm, kRmsNorm };
enum class PositionKind { kLearned, kRope };
const char* mlp_kind_name(MlpKind k);
const char* norm_kind_name(NormKind k);
const char* position_kind_name(PositionKind k);

/// DeepSeek multi-head latent attention.
struct MlaSpec {
  int64_t q_lora_rank = 0;  ///< 0: queries are projected directly from the hidden state
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

struct MoeSpec {
  int experts = 0;             ///< routed experts
  int shared_experts = 0;      ///< always-active experts of the same width
  int topk = 0;                ///< routed experts per token
  int64_t expert_ffn = 0;      ///< intermediate size of one expert (SwiGLU)
  int first_dense_layers = 0;  ///< leading layers with a dense MLP of size `ffn`
  int layer_step = 1;          ///< every layer_step-th layer after those is MoE (1 = all)
  bool router_bias = false;    ///< per-expert score-correction bias (DeepSeek noaux_tc)
  /// Group-limited routing (DeepSeek-V3 "node-limited routing", HF n_group / topk_group): the
  /// experts form `groups` equal groups and a token's top-k experts come from at most
  /// `topk_groups` of them. 0 = unrestricted.
  int groups = 0;
  int topk_groups = 0;
};

struct ModelSpec {
  std::string name;  ///< catalog key ("llama3.1-405b") or file-derived name
  std::string display_name;
  std::string family;  ///< "gpt", "llama", "mixtral", "deepseek", ...
  int layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;  ///< = heads for MHA
  int64_t head_dim = 0;  ///< hidden / heads unless given
  int64_t ffn = 0;       ///< dense MLP intermediate size
  int64_t vocab = 0;
  int64_t max_seq_len = 0;  ///< context length (and learned position table size)
  MlpKind mlp = MlpKind::kSwiglu;
  NormKind norm = NormKind::kRmsNorm;
  PositionKind position = PositionKind::kRope;
  bool linear_bias = false;
  bool tied_embeddings = false;
  std::optional<MlaSpec> mla;
  std::optional<MoeSpec> moe;
  int mtp_layers = 0;                      ///< multi-token-prediction modules (DeepSeek-V3: 1)
  std::optional<double> published_params;  ///< as the source prints it, for checks
  std::optional<double> published_active_params;
  config::Provenance provenance;
  std::string origin;  ///< "catalog", a file path, "huggingface:<file>" or "custom"

  [[nodiscard]] bool is_moe_layer(int layer) const;
  [[nodiscard]] int moe_layer_count() const;
  [[nodiscard]] int64_t q_head_dim() const;  ///< qk width per head (MLA: nope + rope)
  [[nodiscard]] int64_t v_head_dim() const;
};

/// Structural checks: positive sizes, heads divisible by kv heads, top-k <= experts, ...
base::Status validate(const ModelSpec& m);

/// Parameter counts (weights, not bytes). `total` is the main model as published (MTP modules
/// counted separately in `mtp`, as DeepSeek-V3's 671B excludes its 14B MTP module).
struct ParamCounts {
  double total = 0;
  double active = 0;         ///< used by one token: all but the unselected routed experts
  double embedding = 0;      ///< input token (+ position) embeddings
  double output = 0;         ///< output head; 0 when tied to the input embedding
  double non_embedding = 0;  ///< total - embedding - output
  double attention = 0;      ///< all layers
  double dense_mlp = 0;      ///< dense layers' MLPs
  double routed_experts = 0;
  double shared_experts = 0;
  double routers = 0;
  double norms = 0;
  double mtp = 0;  ///< MTP modules (not in total)
};
ParamCounts count_params(const ModelSpec& m);

/// Attention FLOPs of one token in one layer attending to `keys` keys (2 * heads * (d_qk + d_v)
/// per key; MLA prefill widths).
double attention_flops_per_key(const ModelSpec& m);

/// Forward FLOPs per token of a sequence of `seq_len` tokens: 2 x active matmul parameters
/// (output head included, embedding gather excluded) + attention; causal: (s+1)/2 keys on
/// average, non-causal (the Megatron/PaLM model-FLOPs convention): s keys.
double forward_flops_per_token(const ModelSpec& m, int64_t seq_len, bool causal = true);
/// Training FLOPs per token without recomputation: 3 x forward (dgrad + wgrad = 2 x forward).
double training_flops_per_token(const ModelSpec& m, int64_t seq_len, bool causal = true);
/// Megatron-LM 2021 eq. 3 (GPT, no recomputation), FLOPs per iteration of `batch` sequences.
double megatron_training_flops(int64_t batch, int64_t seq_len, int64_t layers, int64_t hidden,
                               int64_t vocab);

/// Weight bytes of all parameters at `bytes_per_param` (2 bf16, 1 fp8, 0.5625 nvfp4, ...).
double weight_bytes(const ModelSpec& m, double bytes_per_param);
/// KV-cache bytes per token over the decoder layers: GQA 2*g*d per layer, MLA (kv_lora + rope)
/// per layer, at `bytes_per_element` (2 bf16, 1 fp8). An MTP module used for speculative
/// decoding caches one more layer's worth.
double kv_cache_bytes_per_token(const ModelSpec& m, double bytes_per_element);

}  // namespace clustertwin::models
