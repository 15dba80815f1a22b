#include "clustertwin/models/model_catalog.h"

#include <algorithm>
#include <charconv>
#include <fstream>

#include "clustertwin/base/file.h"
#include "clustertwin/base/text.h"
#include "clustertwin/config/reader.h"

namespace clustertwin::models {
namespace {

using base::fail;
using config::Reader;
using Need = config::Reader::Need;

int to_int(std::optional<int64_t> v) { return static_cast<int>(v.value_or(0)); }

std::optional<ModelSpec> read_model(Reader& r) {
  ModelSpec m;
  m.name = r.string("name").value_or("");
  if (m.name.empty() || m.name.find_first_of(" */\t") != std::string::npos) {
    r.error("expected a name without spaces, '*' or '/', got '" + m.name + "'", "name");
  }
  m.display_name = r.string("display_name", Need::kOptional).value_or(m.name);
  m.family = r.string("family").value_or("");
  r.allow("description");
  m.layers = to_int(r.integer_figure("layers", Need::kRequired, 1, 100000));
  m.hidden = r.integer_figure("hidden", Need::kRequired, 1).value_or(0);
  m.heads = r.integer_figure("heads", Need::kRequired, 1).value_or(0);
  m.kv_heads = r.integer_figure("kv_heads", Need::kOptional, 1).value_or(m.heads);
  m.head_dim = r.integer_figure("head_dim", Need::kOptional, 1)
                   .value_or(m.heads > 0 ? m.hidden / m.heads : 0);
  m.vocab = r.integer_figure("vocab", Need::kRequired, 1).value_or(0);
  m.max_seq_len = r.integer_figure("max_seq_len", Need::kRequired, 1).value_or(0);
  const auto mlp = r.choice("mlp", {"gelu", "swiglu", "geglu"});
  m.mlp = mlp == "gelu" ? MlpKind::kGelu : mlp == "geglu" ? MlpKind::kGeglu : MlpKind::kSwiglu;
  const auto norm = r.choice("norm", {"layernorm", "rmsnorm"});
  m.norm = norm == "layernorm" ? NormKind::kLayerNorm : NormKind::kRmsNorm;
  const auto pos = r.choice("position", {"learned", "rope"});
  m.position = pos == "learned" ? PositionKind::kLearned : PositionKind::kRope;
  m.linear_bias = r.boolean("linear_bias", Need::kOptional).value_or(false);
  m.tied_embeddings = r.boolean("tied_embeddings", Need::kOptional).value_or(false);
  m.qkv_bias = r.boolean("qkv_bias", Need::kOptional).value_or(false);
  m.qk_norm = r.boolean("qk_norm", Need::kOptional).value_or(false);
  m.attention_sinks = r.boolean("attention_sinks", Need::kOptional).value_or(false);
  m.norms_per_layer = to_int(r.integer_figure("norms_per_layer", Need::kOptional, 1, 8));
  if (m.norms_per_layer == 0) m.norms_per_layer = 2;
  if (auto x = r.child("local_attention", Need::kOptional)) {
    LocalAttentionSpec a;
    const auto kind = x->choice("kind", {"sliding", "chunked"});
    a.kind = kind == "chunked" ? LocalAttention::kChunked : LocalAttention::kSliding;
    a.window = x->integer_figure("window", Need::kRequired, 1).value_or(1);
    a.full_every = to_int(x->integer_figure("full_every", Need::kOptional, 0, 100000));
    x->finish();
    m.local_attention = a;
  }
  if (auto x = r.child("mla", Need::kOptional)) {
    MlaSpec a;
    a.q_lora_rank = x->integer_figure("q_lora_rank", Need::kRequired, 0).value_or(0);
    a.kv_lora_rank = x->integer_figure("kv_lora_rank").value_or(0);
    a.qk_nope_head_dim = x->integer_figure("qk_nope_head_dim").value_or(0);
    a.qk_rope_head_dim = x->integer_figure("qk_rope_head_dim", Need::kRequired, 0).value_or(0);
    a.v_head_dim = x->integer_figure("v_head_dim").value_or(0);
    x->finish();
    m.mla = a;
  }
  if (auto x = r.child("moe", Need::kOptional)) {
    MoeSpec e;
    e.experts = to_int(x->integer_figure("experts", Need::kRequired, 1, 1 << 20));
    e.shared_experts = to_int(x->integer_figure("shared_experts", Need::kOptional, 0, 1 << 20));
    e.topk = to_int(x->integer_figure("topk", Need::kRequired, 1, 1 << 20));
    e.expert_ffn = x->integer_figure("expert_ffn").value_or(0);
    e.first_dense_layers =
        to_int(x->integer_figure("first_dense_layers", Need::kOptional, 0, 100000));
    e.layer_step =
        static_cast<int>(x->integer_figure("layer_step", Need::kOptional, 1, 100000).value_or(1));
    e.router_bias = x->boolean("router_bias", Need::kOptional).value_or(false);
    e.shared_ffn = x->integer_figure("shared_ffn", Need::kOptional, 1).value_or(0);
    e.layer_phase = to_int(x->integer_figure("layer_phase", Need::kOptional, 0, 100000));
    e.shared_gate = x->boolean("shared_gate", Need::kOptional).value_or(false);
    e.expert_bias = x->boolean("expert_bias", Need::kOptional).value_or(false);
    e.checkpoint_expert_bytes =
        x->number_figure("checkpoint_expert_bytes", Need::kOptional, 0.1, 8).value_or(0);
    e.groups = to_int(x->integer_figure("groups", Need::kOptional, 0, 1 << 20));
    e.topk_groups = to_int(x->integer_figure("topk_groups", Need::kOptional, 0, 1 << 20));
    if ((e.groups > 0) != (e.topk_groups > 0)) {
      x->error("expected groups and topk_groups together, got groups " + std::to_string(e.groups) +
                   " and topk_groups " + std::to_string(e.topk_groups),
               "groups");
    } else if (e.groups > 0 && (e.experts % e.groups != 0 || e.topk_groups > e.groups)) {
      x->error("expected groups dividing experts (" + std::to_string(e.experts) +
                   ") and topk_groups <= groups, got groups " + std::to_string(e.groups) +
                   " and topk_groups " + std::to_string(e.topk_groups),
               "groups");
    }
    x->finish();
    m.moe = e;
  }
  // Without a dense layer the dense ffn is optional (Mixtral: every layer is MoE).
  const bool needs_ffn = !m.moe || m.moe->first_dense_layers > 0 || m.moe->layer_step > 1;
  m.ffn = r.integer_figure("ffn", needs_ffn ? Need::kRequired : Need::kOptional, 1).value_or(0);
  m.mtp_layers = to_int(r.integer_figure("mtp_layers", Need::kOptional, 0, 64));
  if (auto p = r.child("published", Need::kOptional)) {
    if (auto v = p->number_figure("params_billion", Need::kOptional, 1e-6, 1e9))
      m.published_params = *v * 1e9;
    if (auto v = p->number_figure("active_params_billion", Need::kOptional, 1e-6, 1e9)) {
      m.published_active_params = *v * 1e9;
    }
    p->finish();
  }
  return m;
}

bool looks_like_file(std::string_view s) {
  return s.find('/') != std::string_view::npos || s.ends_with(".yaml") || s.ends_with(".yml") ||
         s.ends_with(".json");
}

base::Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot open file (does it exist and is it readable?)", path);
  auto text = base::read_all(in);
  if (!text) return fail(text.error().message, path);
  return text;
}

}  // namespace

base::Result<ModelSpec> parse_model_yaml(std::string_view text, const std::string& file) {
  auto doc = config::parse_document(text, file);
  if (!doc) return fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  Reader top(doc->root, ctx);
  top.read_sources();
  auto body = top.child("model");
  std::optional<ModelSpec> m;
  if (body) {
    m = read_model(*body);
    body->finish();
  }
  top.finish();
  if (!ctx.errors.empty() || !m) return fail(ctx.errors.combined());
  m->provenance = std::move(ctx.provenance);
  if (auto st = validate(*m); !st) return fail(st.error().message, file, body->line());
  return *m;
}

namespace {

// Hugging Face architectures we read, with the model_type that names each when a file has no
// `architectures` list. Defaults below are those of the transformers configuration classes
// (configuration_<model>.py), used when a config.json leaves a key out.
struct HfArch {
  const char* arch;
  const char* model_type;
};
constexpr HfArch kHfArchs[] = {
    {"LlamaForCausalLM", "llama"},
    {"MistralForCausalLM", "mistral"},
    {"MixtralForCausalLM", "mixtral"},
    {"Qwen2ForCausalLM", "qwen2"},
    {"Qwen2MoeForCausalLM", "qwen2_moe"},
    {"Qwen3ForCausalLM", "qwen3"},
    {"Qwen3MoeForCausalLM", "qwen3_moe"},
    {"GptOssForCausalLM", "gpt_oss"},
    {"Gemma2ForCausalLM", "gemma2"},
    {"Gemma3ForCausalLM", "gemma3_text"},
    {"Gemma3ForConditionalGeneration", "gemma3"},
    {"Llama4ForCausalLM", "llama4_text"},
    {"Llama4ForConditionalGeneration", "llama4"},
    {"Glm4MoeForCausalLM", "glm4_moe"},
    {"Phi3ForCausalLM", "phi3"},
    {"DeepseekV2ForCausalLM", "deepseek_v2"},
    {"DeepseekV3ForCausalLM", "deepseek_v3"},
    {"DeepseekV3ForCausalLM", "kimi_k2"},
};

std::vector<std::string> hf_supported() {
  std::vector<std::string> out;
  for (const auto& a : kHfArchs) {
    if (out.empty() || out.back() != a.arch) out.emplace_back(a.arch);
  }
  return out;
}

// An integer list (mlp_only_layers, no_rope_layers); nullopt when absent or null.
std::optional<std::vector<int64_t>> integers(Reader& r, std::string_view key) {
  if (!r.has(key)) return std::nullopt;
  auto items = r.strings(key, Need::kOptional);
  if (!items) return std::nullopt;
  std::vector<int64_t> out;
  for (const auto& item : *items) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || p != item.data() + item.size()) {
      r.error("expected a list of integers, got an item '" + item + "'", key);
      return std::nullopt;
    }
    out.push_back(v);
  }
  return out;
}

// The period of a per-layer local/full pattern: layer i is full iff i % n == n - 1 (n = 0: all
// local). Returns -1 when the pattern is not of that form.
int full_every_of(const std::vector<bool>& local) {
  const int layers = static_cast<int>(local.size());
  int first_full = -1;
  for (int i = 0; i < layers; ++i) {
    if (!local[static_cast<size_t>(i)]) {
      first_full = i;
      break;
    }
  }
  if (first_full < 0) return 0;
  const int n = first_full + 1;
  for (int i = 0; i < layers; ++i) {
    if (local[static_cast<size_t>(i)] != (i % n != n - 1)) return -1;
  }
  return n;
}

}  // namespace

base::Result<ModelSpec> parse_hf_config(std::string_view text, const std::string& file) {
  auto doc = config::parse_document(text, file);
  if (!doc) return fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  Reader r(doc->root, ctx);
  const auto supported = hf_supported();
  std::string arch;
  if (r.has("architectures")) {
    const auto arch_list = r.strings("architectures").value_or(std::vector<std::string>{});
    arch = arch_list.empty() ? "" : arch_list.front();
  } else {
    const std::string type = r.string("model_type", Need::kOptional).value_or("");
    for (const auto& a : kHfArchs) {
      if (type == a.model_type) arch = a.arch;
    }
    if (arch.empty()) arch = "model_type " + type;
  }
  if (!ctx.errors.empty()) return fail(ctx.errors.combined());
  if (std::find(supported.begin(), supported.end(), arch) == supported.end()) {
    r.error("unsupported architecture '" + arch + "' (supported: " + base::join(supported) +
                "); another decoder-only model can be described as a model YAML "
                "(docs/models/models.md) from its config.json's num_hidden_layers, hidden_size, "
                "num_attention_heads, num_key_value_heads, head_dim, intermediate_size, "
                "vocab_size and max_position_embeddings, with, for a MoE model, its number of "
                "experts, experts per token and expert intermediate size",
            r.has("architectures") ? "architectures" : "model_type");
    return fail(ctx.errors.combined());
  }
  ModelSpec m;
  // Name: the checkpoint's own name if it has one, else the folder holding config.json.
  std::string name = r.string("_name_or_path", Need::kOptional).value_or("");
  if (name.empty()) {
    std::string p = file;
    const auto slash = p.rfind('/');
    name = slash == std::string::npos ? "hf-model" : p.substr(0, slash);
    const auto prev = name.rfind('/');
    if (prev != std::string::npos) name = name.substr(prev + 1);
  }
  if (const auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
  m.name = name;
  m.display_name = name + " (" + arch + ")";
  m.origin = "huggingface:" + file;

  const bool gemma2 = arch == "Gemma2ForCausalLM";
  const bool gemma3 = arch.starts_with("Gemma3");
  const bool llama4 = arch.starts_with("Llama4");
  const bool qwen2 = arch.starts_with("Qwen2");
  const bool qwen3 = arch.starts_with("Qwen3");
  const bool qwen_moe = arch == "Qwen2MoeForCausalLM" || arch == "Qwen3MoeForCausalLM";
  const bool deepseek = arch.starts_with("Deepseek");
  const bool glm = arch == "Glm4MoeForCausalLM";
  const bool gpt_oss = arch == "GptOssForCausalLM";
  // Multimodal checkpoints keep the language model's keys under text_config.
  std::optional<Reader> sub;
  if (arch.ends_with("ForConditionalGeneration")) sub = r.child("text_config");
  if (!ctx.errors.empty()) return fail(ctx.errors.combined());
  Reader& t = sub ? *sub : r;
  // Gemma 3's text_config leaves out what Gemma3TextConfig defaults (transformers
  // configuration_gemma3.py): vocabulary, heads, head_dim, context, window pattern.
  auto integer = [&](const char* key, std::optional<int64_t> fallback = std::nullopt,
                     int64_t min = 1) -> int64_t {
    if (fallback && !t.has(key)) return *fallback;
    return t.integer(key, fallback ? Need::kOptional : Need::kRequired, min)
        .value_or(fallback.value_or(0));
  };
  auto gemma3_default = [&](int64_t v) -> std::optional<int64_t> {
    return gemma3 ? std::optional<int64_t>(v) : std::nullopt;
  };
  m.layers = static_cast<int>(integer("num_hidden_layers", gemma3_default(26)));
  m.hidden = integer("hidden_size", gemma3_default(2304));
  m.heads = integer("num_attention_heads", gemma3_default(8));
  m.kv_heads = integer("num_key_value_heads", gemma3 ? 4 : m.heads);
  m.head_dim = integer("head_dim", gemma3 ? 256 : (m.heads > 0 ? m.hidden / m.heads : 0));
  m.vocab = integer("vocab_size", gemma3_default(262208));
  m.max_seq_len = integer("max_position_embeddings", gemma3 ? 131072 : 4096);
  // Gemma ties its output head to the embedding (the configs' default); the others do not.
  const bool tie_default = gemma2 || gemma3;
  m.tied_embeddings =
      r.boolean("tie_word_embeddings", Need::kOptional)
          .value_or(sub ? t.boolean("tie_word_embeddings", Need::kOptional).value_or(tie_default)
                        : tie_default);
  const bool attention_bias = t.boolean("attention_bias", Need::kOptional).value_or(false);
  m.mlp = gemma2 || gemma3 ? MlpKind::kGeglu : MlpKind::kSwiglu;
  m.norm = NormKind::kRmsNorm;
  m.position = PositionKind::kRope;
  const int64_t ffn = integer("intermediate_size", gemma3_default(9216));
  m.ffn = ffn;

  // Local attention: sliding window or chunked, on all layers or a periodic subset.
  auto set_local = [&](LocalAttention kind, int64_t window, int full_every) {
    m.local_attention =
        LocalAttentionSpec{.kind = kind, .window = window, .full_every = full_every};
  };
  auto local_from_list = [&](const std::vector<bool>& local, const char* key, LocalAttention kind,
                             int64_t window) {
    if (static_cast<int>(local.size()) != m.layers) {
      t.error("expected one entry per layer (" + std::to_string(m.layers) + "), got " +
                  std::to_string(local.size()),
              key);
      return;
    }
    const int n = full_every_of(local);
    if (n < 0) {
      t.error("expected a periodic pattern (every n-th layer full, the others local)", key);
      return;
    }
    if (n != 1) set_local(kind, window, n);
  };
  if (t.has("layer_types") && (gemma3 || gpt_oss)) {
    std::vector<bool> local;
    for (const auto& type : t.strings("layer_types").value_or(std::vector<std::string>{})) {
      local.push_back(type == "sliding_attention");
    }
    local_from_list(local, "layer_types", LocalAttention::kSliding,
                    integer("sliding_window", gemma3_default(4096)));
  } else if (gemma2) {
    set_local(LocalAttention::kSliding, integer("sliding_window", 4096), 2);
  } else if (gemma3) {
    set_local(LocalAttention::kSliding, integer("sliding_window", 4096),
              static_cast<int>(integer("sliding_window_pattern", 6)));
  } else if (gpt_oss) {
    set_local(LocalAttention::kSliding, integer("sliding_window", 128), 2);
  } else if (llama4) {
    if (auto chunk = t.integer("attention_chunk_size", Need::kOptional)) {
      // Chunked attention on the RoPE layers; every 4th layer (no_rope_layers 0) is global.
      std::vector<bool> local;
      if (auto list = integers(t, "no_rope_layers"); list && !list->empty()) {
        for (int64_t v : *list) local.push_back(v != 0);
      } else {
        const int64_t every = integer("no_rope_layer_interval", 4);
        for (int i = 0; i < m.layers; ++i) local.push_back((i + 1) % every != 0);
      }
      local_from_list(local, "no_rope_layers", LocalAttention::kChunked, *chunk);
    }
  } else if (arch == "MistralForCausalLM" || arch == "Phi3ForCausalLM") {
    // Mistral 7B v0.1 and Phi-3 mini 4k slide on every layer; a window at least as long as the
    // context (Phi-3 128k) changes nothing.
    if (auto w = t.integer("sliding_window", Need::kOptional); w && *w < m.max_seq_len) {
      set_local(LocalAttention::kSliding, *w, 0);
    }
  } else if (qwen2 || qwen3) {
    if (t.boolean("use_sliding_window", Need::kOptional).value_or(false)) {
      t.error("use_sliding_window: true (sliding window above max_window_layers) is not modelled",
              "use_sliding_window");
    }
  }

  if (arch == "MixtralForCausalLM") {
    m.family = "mixtral";
    MoeSpec e;
    e.experts = to_int(t.integer("num_local_experts"));
    e.topk = to_int(t.integer("num_experts_per_tok"));
    e.expert_ffn = ffn;
    m.moe = e;
  } else if (deepseek) {
    m.family = "deepseek";
    MlaSpec a;
    a.q_lora_rank = t.integer("q_lora_rank", Need::kOptional, 0).value_or(0);
    a.kv_lora_rank = t.integer("kv_lora_rank").value_or(0);
    a.qk_nope_head_dim = t.integer("qk_nope_head_dim").value_or(0);
    a.qk_rope_head_dim = t.integer("qk_rope_head_dim", Need::kRequired, 0).value_or(0);
    a.v_head_dim = t.integer("v_head_dim").value_or(0);
    m.mla = a;
    m.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  } else if (qwen2 || qwen3) {
    m.family = "qwen";
    // Qwen2 projects q, k and v with biases (no config key); Qwen3 drops them for per-head
    // q/k norms.
    m.qkv_bias = qwen2 || attention_bias;
    m.qk_norm = qwen3;
  } else if (gpt_oss) {
    m.family = "gpt-oss";
    m.linear_bias = attention_bias;
    m.attention_sinks = true;
  } else if (gemma2 || gemma3) {
    m.family = "gemma";
    m.norms_per_layer = 4;  // pre and post norms around attention and MLP
    m.qk_norm = gemma3;
  } else if (llama4) {
    m.family = "llama4";
  } else if (glm) {
    m.family = "glm";
    m.qkv_bias = attention_bias;
    m.qk_norm = t.boolean("use_qk_norm", Need::kOptional).value_or(false);
  } else if (arch == "Phi3ForCausalLM") {
    m.family = "phi3";
  } else {
    m.family = arch == "MistralForCausalLM" ? "mistral" : "llama";
    m.linear_bias = attention_bias;
  }

  if (deepseek || glm) {
    // DeepSeek V2/V3, Kimi K2 and GLM-4.5: shared + routed experts after k dense layers.
    MoeSpec e;
    e.experts = to_int(t.integer("n_routed_experts"));
    e.shared_experts = to_int(t.integer("n_shared_experts", Need::kOptional, 0));
    e.topk = to_int(t.integer("num_experts_per_tok"));
    e.expert_ffn = t.integer("moe_intermediate_size").value_or(0);
    e.first_dense_layers = to_int(t.integer("first_k_dense_replace", Need::kOptional, 0));
    e.layer_step = static_cast<int>(t.integer("moe_layer_freq", Need::kOptional, 1).value_or(1));
    // DeepSeek-V3's noaux_tc and GLM-4.5 keep a per-expert score-correction bias.
    e.router_bias = glm || t.string("topk_method", Need::kOptional).value_or("") == "noaux_tc";
    e.groups = to_int(t.integer("n_group", Need::kOptional, 0));
    e.topk_groups = to_int(t.integer("topk_group", Need::kOptional, 0));
    if (e.groups <= 1 || e.topk_groups >= e.groups) e.groups = e.topk_groups = 0;
    m.moe = e;
    m.mtp_layers = to_int(t.integer("num_nextn_predict_layers", Need::kOptional, 0));
  } else if (qwen_moe) {
    MoeSpec e;
    e.experts = to_int(t.integer("num_experts"));
    e.topk = to_int(t.integer("num_experts_per_tok"));
    e.expert_ffn = t.integer("moe_intermediate_size").value_or(0);
    // Qwen2-MoE: one gated shared expert of its own width; Qwen3-MoE has none.
    const int64_t shared =
        t.integer("shared_expert_intermediate_size", Need::kOptional, 0).value_or(0);
    if (shared > 0) {
      e.shared_experts = 1;
      e.shared_ffn = shared;
      e.shared_gate = true;
    }
    // Layer i is sparse when (i + 1) % decoder_sparse_step == 0 and i is not in mlp_only_layers.
    e.layer_step = static_cast<int>(t.integer("decoder_sparse_step", Need::kOptional).value_or(1));
    e.layer_phase = e.layer_step - 1;
    if (auto dense = integers(t, "mlp_only_layers")) {
      for (int64_t l : *dense) e.dense_layers.push_back(static_cast<int>(l));
    }
    m.moe = e;
  } else if (gpt_oss) {
    MoeSpec e;
    e.experts = to_int(t.integer("num_local_experts"));
    e.topk = to_int(t.has("num_experts_per_tok") ? t.integer("num_experts_per_tok")
                                                 : t.integer("experts_per_token"));
    e.expert_ffn = ffn;
    e.expert_bias = true;
    // MXFP4 experts (quantization_config.modules_to_not_convert keeps the rest in bf16).
    if (auto q = t.child("quantization_config", Need::kOptional)) {
      if (q->string("quant_method", Need::kOptional).value_or("") == "mxfp4") {
        e.checkpoint_expert_bytes = 0.5 + 1.0 / 32.0;
      }
    }
    m.moe = e;
  } else if (llama4) {
    // Routed experts and one shared expert of intermediate_size; dense layers of
    // intermediate_size_mlp; layer i is MoE when (i + 1) % interleave_moe_layer_step == 0.
    MoeSpec e;
    e.experts = to_int(t.integer("num_local_experts"));
    e.topk = to_int(t.integer("num_experts_per_tok"));
    e.expert_ffn = ffn;
    e.shared_experts = 1;
    e.layer_step =
        static_cast<int>(t.integer("interleave_moe_layer_step", Need::kOptional).value_or(1));
    e.layer_phase = e.layer_step - 1;
    m.moe = e;
    m.ffn = t.integer("intermediate_size_mlp", Need::kOptional).value_or(ffn);
    if (auto listed = integers(t, "moe_layers"); listed && ctx.errors.empty()) {
      int matches = 0;
      for (int64_t l : *listed) matches += m.is_moe_layer(static_cast<int>(l)) ? 1 : 0;
      if (matches != static_cast<int>(listed->size()) || matches != m.moe_layer_count()) {
        t.error("expected moe_layers to be every interleave_moe_layer_step-th layer", "moe_layers");
      }
    }
  }
  // config.json files carry many keys that do not matter here: no finish(), no unknown-key errors.
  if (!ctx.errors.empty()) return fail(ctx.errors.combined());
  if (auto st = validate(m); !st) return fail(st.error().message, file);
  return m;
}

base::Result<ModelSpec> gpt_model(const GptParams& p) {
  ModelSpec m;
  m.name = p.name;
  m.display_name = "GPT (custom): " + std::to_string(p.layers) + " layers, hidden " +
                   std::to_string(p.hidden) + ", " + std::to_string(p.heads) + " heads";
  m.family = "gpt";
  m.origin = "custom";
  m.layers = p.layers;
  m.hidden = p.hidden;
  m.heads = p.heads;
  m.kv_heads = p.kv_heads > 0 ? p.kv_heads : p.heads;
  m.head_dim = p.heads > 0 ? p.hidden / p.heads : 0;
  m.ffn = p.ffn > 0 ? p.ffn : 4 * p.hidden;
  m.vocab = p.vocab;
  m.max_seq_len = p.seq_len;
  m.mlp = MlpKind::kGelu;
  m.norm = NormKind::kLayerNorm;
  m.position = PositionKind::kLearned;
  m.linear_bias = true;
  m.tied_embeddings = true;
  if (p.heads > 0 && p.hidden % p.heads != 0) {
    return fail("gpt: hidden (" + std::to_string(p.hidden) + ") must be a multiple of heads (" +
                std::to_string(p.heads) + ")");
  }
  if (auto st = validate(m); !st) return fail(st.error());
  return m;
}

base::Result<std::vector<ModelSpec>> catalog_models(const hardware::Catalog& catalog) {
  std::vector<ModelSpec> out;
  base::Errors errors;
  for (const auto& f : catalog.other_files()) {
    if (f.path.rfind("models/", 0) != 0) continue;
    auto m = parse_model_yaml(f.text, "catalog/" + f.path);
    if (!m) {
      errors.add(m.error());
      continue;
    }
    m->origin = "catalog";
    out.push_back(std::move(*m));
  }
  std::sort(out.begin(), out.end(),
            [](const ModelSpec& a, const ModelSpec& b) { return a.name < b.name; });
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i].name == out[i - 1].name)
      errors.add({"model '" + out[i].name + "' is defined twice", "", 0});
  }
  if (!errors.empty()) return fail(errors.combined());
  return out;
}

base::Result<ModelSpec> load_model(const hardware::Catalog& catalog,
                                   std::string_view name_or_path) {
  const std::string arg(name_or_path);
  if (looks_like_file(arg)) {
    auto text = read_file(arg);
    if (!text) return fail(text.error());
    auto doc = config::parse_document(*text, arg);
    if (!doc) return fail(doc.error());
    const YAML::Node& root = doc->root;  // const: operator[] must not insert keys
    if (root["architectures"] || root["model_type"]) return parse_hf_config(*text, arg);
    auto m = parse_model_yaml(*text, arg);
    if (m) m->origin = arg;
    return m;
  }
  auto all = catalog_models(catalog);
  if (!all) return fail(all.error());
  std::vector<std::string> names;
  for (const auto& m : *all) {
    if (m.name == arg) return m;
    names.push_back(m.name);
  }
  return fail("unknown model '" + arg + "'" + base::did_you_mean(arg, names) +
              " (a catalog name, a model YAML file or a Hugging Face config.json)");
}

}  // namespace clustertwin::models
