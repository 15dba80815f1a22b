// Closed-form parameter, FLOP and byte counts of a ModelSpec; equations in model.h and
// docs/models/models.md.

#include "clustertwin/models/model.h"

#include <algorithm>
#include <string>

#include "clustertwin/base/number.h"

namespace clustertwin::models {

const char* mlp_kind_name(MlpKind k) {
  switch (k) {
    case MlpKind::kGelu:
      return "gelu";
    case MlpKind::kSwiglu:
      return "swiglu";
    case MlpKind::kGeglu:
      return "geglu";
  }
  return "?";
}
const char* local_attention_name(LocalAttention k) {
  return k == LocalAttention::kSliding ? "sliding" : "chunked";
}
const char* norm_kind_name(NormKind k) {
  return k == NormKind::kLayerNorm ? "layernorm" : "rmsnorm";
}
const char* position_kind_name(PositionKind k) {
  return k == PositionKind::kLearned ? "learned" : "rope";
}

bool ModelSpec::is_moe_layer(int layer) const {
  if (!moe || layer < moe->first_dense_layers) return false;
  if (std::find(moe->dense_layers.begin(), moe->dense_layers.end(), layer) !=
      moe->dense_layers.end()) {
    return false;
  }
  return (layer - moe->first_dense_layers) % std::max(moe->layer_step, 1) == moe->layer_phase;
}

bool ModelSpec::is_local_layer(int layer) const {
  if (!local_attention) return false;
  const int n = local_attention->full_every;
  return n <= 0 || layer % n != n - 1;
}

int ModelSpec::local_layer_count() const {
  int n = 0;
  for (int i = 0; i < layers; ++i) n += is_local_layer(i) ? 1 : 0;
  return n;
}

int64_t ModelSpec::attention_window(int layer) const {
  return is_local_layer(layer) ? local_attention->window : 0;
}

double ModelSpec::attended_keys(int layer, int64_t seq_len, bool causal) const {
  const double s = static_cast<double>(seq_len);
  const int64_t w = attention_window(layer);
  if (w <= 0 || w >= seq_len) return causal ? (s + 1.0) / 2.0 : s;
  const double wd = static_cast<double>(w);
  if (!causal) return wd;
  if (local_attention->kind == LocalAttention::kSliding) {
    // Tokens 1..w see 1..w keys, the other s - w tokens w each.
    return (wd * (wd + 1.0) / 2.0 + (s - wd) * wd) / s;
  }
  // Chunked: n full chunks of w and a last one of r tokens, causal inside each.
  const double n = static_cast<double>(seq_len / w);
  const double r = static_cast<double>(seq_len % w);
  return (n * wd * (wd + 1.0) / 2.0 + r * (r + 1.0) / 2.0) / s;
}

int64_t ModelSpec::shared_expert_ffn() const {
  if (!moe) return 0;
  return moe->shared_ffn > 0 ? moe->shared_ffn : moe->expert_ffn;
}

int ModelSpec::moe_layer_count() const {
  int n = 0;
  for (int i = 0; i < layers; ++i) n += is_moe_layer(i) ? 1 : 0;
  return n;
}

int64_t ModelSpec::q_head_dim() const {
  return mla ? mla->qk_nope_head_dim + mla->qk_rope_head_dim : head_dim;
}

int64_t ModelSpec::v_head_dim() const { return mla ? mla->v_head_dim : head_dim; }

base::Status validate(const ModelSpec& m) {
  auto bad = [&](const std::string& what) { return base::fail("model '" + m.name + "': " + what); };
  if (m.layers <= 0) return bad("layers must be >= 1");
  if (m.hidden <= 0 || m.heads <= 0 || m.vocab <= 0)
    return bad("hidden, heads and vocab must be >= 1");
  // Sizes that drive per-layer loops and FLOP counts, within the named limits (base/number.h):
  // a 2^31-layer model once ran for hours instead of being refused (issue 19).
  if (m.layers > base::kMaxLayers) {
    return bad("layers = " + std::to_string(m.layers) + " is more than the limit of " +
               std::to_string(base::kMaxLayers));
  }
  for (auto [name, v] : {std::pair<const char*, int64_t>{"hidden", m.hidden},
                         {"heads", m.heads},
                         {"kv_heads", m.kv_heads},
                         {"head_dim", m.head_dim},
                         {"ffn", m.ffn},
                         {"vocab", m.vocab},
                         {"experts", m.moe ? m.moe->experts : 0},
                         {"expert_ffn", m.moe ? m.moe->expert_ffn : 0}}) {
    if (v > base::kMaxModelDim) {
      return bad(std::string(name) + " = " + std::to_string(v) + " is more than the limit of " +
                 std::to_string(base::kMaxModelDim));
    }
  }
  if (m.kv_heads <= 0 || m.heads % m.kv_heads != 0) {
    return bad("heads (" + std::to_string(m.heads) + ") must be a multiple of kv_heads (" +
               std::to_string(m.kv_heads) + ")");
  }
  if (!m.mla && m.head_dim <= 0) return bad("head_dim must be >= 1");
  if (m.ffn <= 0 && !m.moe) return bad("ffn must be >= 1");
  if (m.position == PositionKind::kLearned && m.max_seq_len <= 0) {
    return bad("learned position embeddings need max_seq_len");
  }
  if (m.mla && (m.mla->kv_lora_rank <= 0 || m.mla->qk_nope_head_dim <= 0 ||
                m.mla->v_head_dim <= 0 || m.mla->qk_rope_head_dim < 0 || m.mla->q_lora_rank < 0)) {
    return bad("MLA needs kv_lora_rank, qk_nope_head_dim and v_head_dim >= 1");
  }
  if (m.moe) {
    const auto& e = *m.moe;
    if (e.experts <= 0 || e.topk <= 0 || e.expert_ffn <= 0) {
      return bad("MoE needs experts, topk and expert_ffn >= 1");
    }
    if (e.topk > e.experts) {
      return bad("topk (" + std::to_string(e.topk) + ") exceeds the routed experts (" +
                 std::to_string(e.experts) + ")");
    }
    if (e.first_dense_layers < 0 || e.first_dense_layers > m.layers || e.layer_step < 1) {
      return bad("MoE first_dense_layers must be in [0, layers] and layer_step >= 1");
    }
    if (e.layer_phase < 0 || e.layer_phase >= e.layer_step) {
      return bad("MoE layer_phase (" + std::to_string(e.layer_phase) + ") must be in [0, " +
                 std::to_string(e.layer_step - 1) + "]");
    }
    for (int l : e.dense_layers) {
      if (l < 0 || l >= m.layers) {
        return bad("MoE dense layer " + std::to_string(l) + " is not in [0, " +
                   std::to_string(m.layers - 1) + "]");
      }
    }
    if (m.moe_layer_count() == 0) return bad("MoE model without a MoE layer");
    if (m.moe_layer_count() < m.layers && m.ffn <= 0) {
      return bad("ffn must be >= 1: " + std::to_string(m.layers - m.moe_layer_count()) +
                 " layers keep a dense MLP");
    }
  }
  if (m.local_attention) {
    if (m.local_attention->window < 1) return bad("local attention window must be >= 1");
    if (m.local_attention->full_every < 0) return bad("local attention full_every must be >= 0");
  }
  if (m.norms_per_layer < 1) return bad("norms_per_layer must be >= 1");
  if (m.mtp_layers < 0) return bad("mtp_layers must be >= 0");
  return {};
}

namespace {

double d(int64_t v) { return static_cast<double>(v); }

struct LayerParams {
  double attention = 0, attention_matmul = 0, mlp = 0, mlp_active_matmul = 0, routed = 0,
         routed_active = 0, shared = 0, router = 0, norms = 0;
};

double mlp_params(const ModelSpec& m, double f, bool with_bias) {
  const double h = d(m.hidden);
  if (m.mlp == MlpKind::kGelu) return 2 * h * f + (with_bias ? f + h : 0.0);
  return 3 * h * f + (with_bias ? 2 * f + h : 0.0);  // SwiGLU, GeGLU: gate, up, down
}

LayerParams layer_params(const ModelSpec& m, int layer) {
  LayerParams p;
  const double h = d(m.hidden);
  const double a = d(m.heads);
  const double norm = m.norm == NormKind::kLayerNorm ? 2 * h : h;
  p.norms = m.norms_per_layer * norm;
  if (m.mla) {
    const auto& x = *m.mla;
    const double qk = d(x.qk_nope_head_dim + x.qk_rope_head_dim);
    double q = 0;
    if (x.q_lora_rank > 0) {
      q = h * d(x.q_lora_rank) + d(x.q_lora_rank) * a * qk;
      p.norms += d(x.q_lora_rank);
    } else {
      q = h * a * qk;
    }
    const double kv = h * d(x.kv_lora_rank + x.qk_rope_head_dim) +
                      d(x.kv_lora_rank) * a * d(x.qk_nope_head_dim + x.v_head_dim);
    p.norms += d(x.kv_lora_rank);
    p.attention_matmul = q + kv + a * d(x.v_head_dim) * h;
    p.attention = p.attention_matmul;
  } else {
    const double g = d(m.kv_heads);
    const double hd = d(m.head_dim);
    p.attention_matmul = h * a * hd + 2 * h * g * hd + a * hd * h;
    p.attention = p.attention_matmul;
    if (m.linear_bias) {
      p.attention += a * hd + 2 * g * hd + h;
    } else if (m.qkv_bias) {
      p.attention += a * hd + 2 * g * hd;
    }
    if (m.attention_sinks) p.attention += a;
    if (m.qk_norm) p.norms += 2 * hd;
  }
  if (m.is_moe_layer(layer)) {
    const auto& e = *m.moe;
    const double fe = d(e.expert_ffn);
    const double one = 3 * h * fe + (e.expert_bias ? 2 * fe + h : 0.0);
    const double shared = 3 * h * d(m.shared_expert_ffn());
    p.routed = e.experts * one;
    p.routed_active = e.topk * one;
    p.shared = e.shared_experts * shared + (e.shared_gate ? h : 0.0);
    p.router = h * e.experts + (e.router_bias || e.expert_bias ? e.experts : 0);
    p.mlp_active_matmul =
        e.topk * 3 * h * fe + e.shared_experts * shared + h * e.experts + (e.shared_gate ? h : 0.0);
  } else {
    p.mlp = mlp_params(m, d(m.ffn), m.linear_bias);
    p.mlp_active_matmul = mlp_params(m, d(m.ffn), false);
  }
  return p;
}

}  // namespace

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  const double h = d(m.hidden);
  double unselected = 0;
  for (int i = 0; i < m.layers; ++i) {
    const LayerParams p = layer_params(m, i);
    c.attention += p.attention;
    c.dense_mlp += p.mlp;
    c.routed_experts += p.routed;
    c.shared_experts += p.shared;
    c.routers += p.router;
    c.norms += p.norms;
    unselected += p.routed - p.routed_active;
  }
  c.norms += m.norm == NormKind::kLayerNorm ? 2 * h : h;  // final norm
  c.embedding =
      d(m.vocab) * h + (m.position == PositionKind::kLearned ? d(m.max_seq_len) * h : 0.0);
  c.output = m.tied_embeddings ? 0.0 : d(m.vocab) * h;
  c.non_embedding =
      c.attention + c.dense_mlp + c.routed_experts + c.shared_experts + c.routers + c.norms;
  c.total = c.non_embedding + c.embedding + c.output;
  c.active = c.total - unselected;
  if (m.mtp_layers > 0) {
    // DeepSeek-V3 MTP module: two norms, the 2h -> h projection, one decoder layer (the last
    // layer's kind) and its own final norm; embedding and output head are shared.
    const LayerParams p = layer_params(m, m.layers - 1);
    const double norm = m.norm == NormKind::kLayerNorm ? 2 * h : h;
    const double one =
        3 * norm + 2 * h * h + p.attention + p.mlp + p.routed + p.shared + p.router + p.norms;
    c.mtp = m.mtp_layers * one;
  }
  return c;
}

double attention_flops_per_key(const ModelSpec& m) {
  return 2.0 * d(m.heads) * d(m.q_head_dim() + m.v_head_dim());
}

double forward_flops_per_token(const ModelSpec& m, int64_t seq_len, bool causal) {
  double matmul = 0;
  for (int i = 0; i < m.layers; ++i) {
    const LayerParams p = layer_params(m, i);
    matmul += p.attention_matmul + p.mlp_active_matmul;
  }
  matmul += d(m.vocab) * d(m.hidden);  // output head (tied or not, it is a GEMM)
  double keys = 0;
  for (int i = 0; i < m.layers; ++i) keys += m.attended_keys(i, seq_len, causal);
  return 2.0 * matmul + attention_flops_per_key(m) * keys;
}

double training_flops_per_token(const ModelSpec& m, int64_t seq_len, bool causal) {
  return 3.0 * forward_flops_per_token(m, seq_len, causal);
}

double megatron_training_flops(int64_t batch, int64_t seq_len, int64_t layers, int64_t hidden,
                               int64_t vocab) {
  const double b = d(batch), s = d(seq_len), l = d(layers), h = d(hidden), v = d(vocab);
  return 72.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h));
}

double weight_bytes(const ModelSpec& m, double bytes_per_param) {
  const ParamCounts c = count_params(m);
  return (c.total + c.mtp) * bytes_per_param;
}

namespace {
double kv_bytes_per_layer_token(const ModelSpec& m, double bytes_per_element) {
  const double per_layer = m.mla ? d(m.mla->kv_lora_rank + m.mla->qk_rope_head_dim)
                                 : 2.0 * d(m.kv_heads) * d(m.head_dim);
  return per_layer * bytes_per_element;
}
}  // namespace

double kv_cache_bytes_per_token(const ModelSpec& m, double bytes_per_element) {
  return m.layers * kv_bytes_per_layer_token(m, bytes_per_element);
}

double kv_cache_bytes(const ModelSpec& m, int64_t context, double bytes_per_element) {
  double tokens = 0;
  for (int i = 0; i < m.layers; ++i) {
    const int64_t w = m.attention_window(i);
    tokens += d(w > 0 ? std::min(w, context) : context);
  }
  return tokens * kv_bytes_per_layer_token(m, bytes_per_element);
}

double checkpoint_bytes(const ModelSpec& m, double bytes_per_param) {
  const ParamCounts c = count_params(m);
  const double all = (c.total + c.mtp) * bytes_per_param;
  if (!m.moe || m.moe->checkpoint_expert_bytes <= 0) return all;
  // Only the expert matrices change format; their biases stay in the rest's precision.
  const double fe = d(m.moe->expert_ffn);
  const double matrices = m.moe_layer_count() * m.moe->experts * 3 * d(m.hidden) * fe;
  return all + matrices * (m.moe->checkpoint_expert_bytes - bytes_per_param);
}

}  // namespace clustertwin::models
