#pragma once
/// LLM architectures as data (docs/models/models.md): dense GPT (GELU, learned positions,
/// biases), Llama-style (SwiGLU, RMSNorm, RoPE, GQA), DeepSeek-V3 (MLA, shared + routed experts,
/// first layers dense, MTP), Mixtral (MoE every layer), and what the 2025 families add: q/k
/// biases and per-head q/k norms (Qwen2/3, GLM-4.5), interleaved dense/MoE layers (Llama 4,
/// Qwen mlp_only_layers), shared experts of their own width (Qwen2-MoE), biased experts and
/// attention sinks (GPT-OSS), sandwich norms and GeGLU (Gemma 2/3), and local attention on some
/// layers (sliding window: Gemma, GPT-OSS, Phi-3, Mistral; chunked: Llama 4). Parameter counts,
/// FLOPs and bytes per token follow from the spec by the closed forms below, never from stored
/// totals; the published totals are kept only to check them.
///
/// Parameters (per decoder layer, h = hidden, a = heads, g = kv heads, d = head_dim):
///   attention (GQA)  h*a*d + 2*h*g*d + a*d*h  (+ a*d + 2*g*d + h biases; + a*d + 2*g*d q/k/v
///                    biases only; + a sink logits; + 2*d q/k norm weights)
///   attention (MLA)  h*q_lora + q_lora*a*(nope+rope) + h*(kv_lora+rope) + kv_lora*a*(nope+v)
///                    + a*v*h  (+ q_lora + kv_lora norm weights); h*a*(nope+rope) without q_lora
///   MLP              GELU 2*h*f (+ f + h biases); SwiGLU / GeGLU 3*h*f (+ 2f + h biases)
///   MoE layer        routed * 3*h*f_e (+ 2 f_e + h biases each) + shared * 3*h*f_s
///                    + h*routed router (+ routed score or router bias) (+ h shared gate)
///   norms            2 per layer (4 with Gemma's sandwich norms; x2 with LayerNorm biases), one
///                    final
///   embeddings       V*h input (+ s*h learned positions), V*h output unless tied
/// FLOPs per token, forward: 2 * (matmul parameters used by the token, output head included,
/// input embedding excluded) + attention 2*a*(d_qk + d_v) per attended key and layer; a causal
/// sequence of length s attends to (s+1)/2 keys per token on average; a sliding-window layer
/// (window w) to (w(w+1)/2 + (s-w)w)/s when s > w; a chunked layer (chunk c, s = n c + r) to
/// (n c(c+1)/2 + r(r+1)/2)/s.
/// Megatron-LM 2021 (Narayanan et al., arXiv:2104.04473, eq. 3) for GPT training without
/// recomputation: 72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)) = 3 x the non-causal forward above.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "clustertwin/compute/op.h"
#include "clustertwin/config/reader.h"

namespace clustertwin::models {

/// kGeglu: the gated MLP of SwiGLU with a tanh-GELU gate (Gemma); same weights and FLOPs.
enum class MlpKind { kGelu, kSwiglu, kGeglu };
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
  int shared_experts = 0;      ///< always-active experts
  int topk = 0;                ///< routed experts per token
  int64_t expert_ffn = 0;      ///< intermediate size of one expert (SwiGLU)
  int64_t shared_ffn = 0;      ///< intermediate size of one shared expert; 0 = expert_ffn
  int first_dense_layers = 0;  ///< leading layers with a dense MLP of size `ffn`
  /// Layer i >= first_dense_layers is MoE when (i - first_dense_layers) % layer_step ==
  /// layer_phase: DeepSeek moe_layer_freq (phase 0), Llama 4 interleave_moe_layer_step and Qwen
  /// decoder_sparse_step (phase step - 1: layers step-1, 2 step-1, ...).
  int layer_step = 1;
  int layer_phase = 0;
  std::vector<int> dense_layers;  ///< listed layers keep a dense MLP (Qwen mlp_only_layers)
  bool router_bias = false;       ///< per-expert score-correction bias (DeepSeek noaux_tc)
  bool shared_gate = false;       ///< sigmoid gate h -> 1 on the shared expert (Qwen2-MoE)
  bool expert_bias = false;       ///< biased experts (2 f_e + h each) and router (GPT-OSS)
  /// Bytes per routed-expert weight in the published checkpoint when it differs from the rest
  /// (GPT-OSS: MXFP4, 4-bit values + one 8-bit scale per 32 = 0.53125); 0 = as the rest.
  double checkpoint_expert_bytes = 0;
  /// Group-limited routing (DeepSeek-V3 "node-limited routing", HF n_group / topk_group): the
  /// experts form `groups` equal groups and a token's top-k experts come from at most
  /// `topk_groups` of them. 0 = unrestricted.
  int groups = 0;
  int topk_groups = 0;
};

/// Attention restricted to nearby keys on some layers. Sliding window (Mistral, Gemma 2/3,
/// GPT-OSS, Phi-3): a token attends to the `window` most recent keys, itself included (HF
/// `sliding_window`); chunked (Llama 4 `attention_chunk_size`): to the earlier keys of its own
/// chunk of `window` tokens. Either way the KV cache such a layer needs per sequence is at most
/// `window` tokens.
enum class LocalAttention { kSliding, kChunked };
const char* local_attention_name(LocalAttention k);
struct LocalAttentionSpec {
  LocalAttention kind = LocalAttention::kSliding;
  int64_t window = 0;
  /// Every full_every-th layer (i % full_every == full_every - 1) keeps full attention (Gemma 3:
  /// 6, GPT-OSS and Gemma 2: 2, Llama 4: 4); 0 = every layer is local (Mistral 7B v0.1, Phi-3).
  int full_every = 0;
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
  bool linear_bias = false;      ///< every linear layer has a bias (GPT-2/3, GPT-OSS)
  bool qkv_bias = false;         ///< q, k and v projections only (Qwen2, GLM-4.5)
  bool qk_norm = false;          ///< per-head RMSNorm of q and k (Qwen3, Gemma 3, GLM-4.5)
  bool attention_sinks = false;  ///< one learned sink logit per head (GPT-OSS)
  int norms_per_layer = 2;       ///< 4 with Gemma's sandwich norms
  bool tied_embeddings = false;
  std::optional<LocalAttentionSpec> local_attention;
  std::optional<MlaSpec> mla;
  std::optional<MoeSpec> moe;
  int mtp_layers = 0;                      ///< multi-token-prediction modules (DeepSeek-V3: 1)
  std::optional<double> published_params;  ///< as the source prints it, for checks
  std::optional<double> published_active_params;
  config::Provenance provenance;
  std::string origin;  ///< "catalog", a file path, "huggingface:<file>" or "custom"

  [[nodiscard]] bool is_moe_layer(int layer) const;
  [[nodiscard]] int moe_layer_count() const;
  /// Whether layer i uses local (sliding-window or chunked) attention.
  [[nodiscard]] bool is_local_layer(int layer) const;
  [[nodiscard]] int local_layer_count() const;
  /// Keys layer i attends to at most (its window or chunk); 0 = unlimited.
  [[nodiscard]] int64_t attention_window(int layer) const;
  /// Average keys a token of a sequence of `seq_len` attends to in layer i: causal (s+1)/2
  /// (window and chunk formulas in the header), non-causal min(s, window).
  [[nodiscard]] double attended_keys(int layer, int64_t seq_len, bool causal) const;
  [[nodiscard]] int64_t shared_expert_ffn() const;  ///< width of one shared expert
  [[nodiscard]] int64_t q_head_dim() const;         ///< qk width per head (MLA: nope + rope)
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
/// KV-cache bytes of one sequence holding `context` tokens: full-attention layers keep every
/// token, local layers at most their window.
double kv_cache_bytes(const ModelSpec& m, int64_t context, double bytes_per_element);
/// Bytes of the published checkpoint at `bytes_per_param` (2 for bf16), with routed experts at
/// their own format when the checkpoint says so (GPT-OSS MXFP4); MTP modules included.
double checkpoint_bytes(const ModelSpec& m, double bytes_per_param);

}  // namespace clustertwin::models
