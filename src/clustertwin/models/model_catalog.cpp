#include "clustertwin/models/model_catalog.h"

#include <algorithm>
#include <fstream>
#include <sstream>

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
  const auto mlp = r.choice("mlp", {"gelu", "swiglu"});
  m.mlp = mlp == "gelu" ? MlpKind::kGelu : MlpKind::kSwiglu;
  const auto norm = r.choice("norm", {"layernorm", "rmsnorm"});
  m.norm = norm == "layernorm" ? NormKind::kLayerNorm : NormKind::kRmsNorm;
  const auto pos = r.choice("position", {"learned", "rope"});
  m.position = pos == "learned" ? PositionKind::kLearned : PositionKind::kRope;
  m.linear_bias = r.boolean("linear_bias", Need::kOptional).value_or(false);
  m.tied_embeddings = r.boolean("tied_embeddings", Need::kOptional).value_or(false);
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
  const bool needs_ffn = !m.moe || m.moe->first_dense_layers > 0;
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
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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

base::Result<ModelSpec> parse_hf_config(std::string_view text, const std::string& file) {
  auto doc = config::parse_document(text, file);
  if (!doc) return fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  Reader r(doc->root, ctx);
  const auto arch_list = r.strings("architectures").value_or(std::vector<std::string>{});
  const std::string arch = arch_list.empty() ? "" : arch_list.front();
  const std::vector<std::string> supported = {"LlamaForCausalLM", "MistralForCausalLM",
                                              "MixtralForCausalLM", "DeepseekV3ForCausalLM",
                                              "DeepseekV2ForCausalLM"};
  if (ctx.errors.empty() &&
      std::find(supported.begin(), supported.end(), arch) == supported.end()) {
    r.error("unsupported architecture '" + arch + "' (supported: " + base::join(supported) + ")",
            "architectures");
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
  m.layers = to_int(r.integer("num_hidden_layers", Need::kRequired, 1, 100000));
  m.hidden = r.integer("hidden_size").value_or(0);
  m.heads = r.integer("num_attention_heads").value_or(0);
  m.kv_heads = r.integer("num_key_value_heads", Need::kOptional).value_or(m.heads);
  m.head_dim =
      r.integer("head_dim", Need::kOptional).value_or(m.heads > 0 ? m.hidden / m.heads : 0);
  m.vocab = r.integer("vocab_size").value_or(0);
  m.max_seq_len = r.integer("max_position_embeddings", Need::kOptional).value_or(4096);
  m.tied_embeddings = r.boolean("tie_word_embeddings", Need::kOptional).value_or(false);
  m.linear_bias = r.boolean("attention_bias", Need::kOptional).value_or(false);
  m.mlp = MlpKind::kSwiglu;
  m.norm = NormKind::kRmsNorm;
  m.position = PositionKind::kRope;
  const int64_t ffn = r.integer("intermediate_size").value_or(0);
  if (arch == "MixtralForCausalLM") {
    m.family = "mixtral";
    MoeSpec e;
    e.experts = to_int(r.integer("num_local_experts"));
    e.topk = to_int(r.integer("num_experts_per_tok"));
    e.expert_ffn = ffn;
    m.moe = e;
    m.ffn = ffn;
  } else if (arch == "DeepseekV3ForCausalLM" || arch == "DeepseekV2ForCausalLM") {
    m.family = "deepseek";
    MlaSpec a;
    a.q_lora_rank = r.integer("q_lora_rank", Need::kOptional, 0).value_or(0);
    a.kv_lora_rank = r.integer("kv_lora_rank").value_or(0);
    a.qk_nope_head_dim = r.integer("qk_nope_head_dim").value_or(0);
    a.qk_rope_head_dim = r.integer("qk_rope_head_dim", Need::kRequired, 0).value_or(0);
    a.v_head_dim = r.integer("v_head_dim").value_or(0);
    m.mla = a;
    m.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
    MoeSpec e;
    e.experts = to_int(r.integer("n_routed_experts"));
    e.shared_experts = to_int(r.integer("n_shared_experts", Need::kOptional, 0));
    e.topk = to_int(r.integer("num_experts_per_tok"));
    e.expert_ffn = r.integer("moe_intermediate_size").value_or(0);
    e.first_dense_layers = to_int(r.integer("first_k_dense_replace", Need::kOptional, 0));
    e.layer_step = static_cast<int>(r.integer("moe_layer_freq", Need::kOptional, 1).value_or(1));
    e.router_bias = r.string("topk_method", Need::kOptional).value_or("") == "noaux_tc";
    e.groups = to_int(r.integer("n_group", Need::kOptional, 0));
    e.topk_groups = to_int(r.integer("topk_group", Need::kOptional, 0));
    if (e.groups <= 1 || e.topk_groups >= e.groups) e.groups = e.topk_groups = 0;
    m.moe = e;
    m.ffn = ffn;
    m.mtp_layers = to_int(r.integer("num_nextn_predict_layers", Need::kOptional, 0));
  } else {
    m.family = "llama";
    m.ffn = ffn;
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
