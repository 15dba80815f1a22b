#include "clustertwin/models/model_catalog.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace clustertwin::models {
namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog cat = [] {
    auto c = hardware::Catalog::load_embedded();
    EXPECT_TRUE(c) << c.error().to_string();
    return *c;
  }();
  return cat;
}

// Excerpts of the Hugging Face config.json files (keys as published, plus a few that do not
// matter, which the loader must ignore).
constexpr const char* kLlama31_8b = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "bos_token_id": 128000,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 131072,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "vocab_size": 128256
})";

constexpr const char* kMixtral = R"({
  "architectures": ["MixtralForCausalLM"],
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mixtral",
  "num_attention_heads": 32,
  "num_experts_per_tok": 2,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "num_local_experts": 8,
  "router_aux_loss_coef": 0.02,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "vocab_size": 32000
})";

constexpr const char* kDeepSeekV3 = R"({
  "architectures": ["DeepseekV3ForCausalLM"],
  "first_k_dense_replace": 3,
  "hidden_size": 7168,
  "intermediate_size": 18432,
  "kv_lora_rank": 512,
  "max_position_embeddings": 163840,
  "model_type": "deepseek_v3",
  "moe_intermediate_size": 2048,
  "moe_layer_freq": 1,
  "n_group": 8,
  "n_routed_experts": 256,
  "n_shared_experts": 1,
  "norm_topk_prob": true,
  "num_attention_heads": 128,
  "num_experts_per_tok": 8,
  "num_hidden_layers": 61,
  "num_key_value_heads": 128,
  "num_nextn_predict_layers": 1,
  "q_lora_rank": 1536,
  "qk_nope_head_dim": 128,
  "qk_rope_head_dim": 64,
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
                          "quant_method": "fp8", "weight_block_size": [128, 128]},
  "routed_scaling_factor": 2.5,
  "scoring_func": "sigmoid",
  "tie_word_embeddings": false,
  "topk_group": 4,
  "topk_method": "noaux_tc",
  "v_head_dim": 128,
  "vocab_size": 129280
})";

std::string temp_file(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "clustertwin_models_test";
  std::filesystem::create_directories(dir / name);
  const auto path = (dir / name / "config.json").string();
  std::ofstream(path) << text;
  return path;
}

void expect_same_counts(const ModelSpec& a, const ModelSpec& b) {
  const auto x = count_params(a), y = count_params(b);
  EXPECT_DOUBLE_EQ(x.total, y.total) << a.name << " vs " << b.name;
  EXPECT_DOUBLE_EQ(x.active, y.active);
  EXPECT_DOUBLE_EQ(x.mtp, y.mtp);
  EXPECT_DOUBLE_EQ(forward_flops_per_token(a, 4096), forward_flops_per_token(b, 4096));
}

TEST(ModelCatalog, HuggingFaceConfigsGiveTheCatalogModels) {
  const struct {
    const char* folder;
    const char* json;
    const char* catalog_name;
  } cases[] = {{"Llama-3.1-8B", kLlama31_8b, "llama3.1-8b"},
               {"Mixtral-8x7B-v0.1", kMixtral, "mixtral-8x7b"},
               {"DeepSeek-V3", kDeepSeekV3, "deepseek-v3"}};
  for (const auto& c : cases) {
    const std::string path = temp_file(c.folder, c.json);
    auto hf = load_model(catalog(), path);
    ASSERT_TRUE(hf) << hf.error().to_string();
    EXPECT_EQ(hf->name, c.folder);
    EXPECT_EQ(hf->origin, "huggingface:" + path);
    auto cat = load_model(catalog(), c.catalog_name);
    ASSERT_TRUE(cat);
    expect_same_counts(*hf, *cat);
    EXPECT_EQ(hf->moe.has_value(), cat->moe.has_value());
    if (hf->moe) {
      EXPECT_EQ(hf->moe->groups, cat->moe->groups) << c.folder;
      EXPECT_EQ(hf->moe->topk_groups, cat->moe->topk_groups) << c.folder;
    }
  }
  EXPECT_EQ(load_model(catalog(), "deepseek-v3")->moe->topk_groups, 4);
}

TEST(ModelCatalog, GroupLimitedRoutingIsChecked) {
  const std::string base = R"(model:
  name: tiny-moe
  family: mixtral
  layers: {value: 2, source: me}
  hidden: {value: 64, source: me}
  heads: {value: 4, source: me}
  vocab: {value: 100, source: me}
  max_seq_len: {value: 512, source: me}
  mlp: swiglu
  norm: rmsnorm
  position: rope
  moe:
    experts: {value: 16, source: me}
    topk: {value: 4, source: me}
    expert_ffn: {value: 32, source: me}
GROUPS
sources:
  me: "test"
)";
  auto with = [&](const std::string& groups) {
    std::string t = base;
    t.replace(t.find("GROUPS\n"), 7, groups);
    return parse_model_yaml(t, "moe.yaml");
  };
  auto ok = with("    groups: {value: 4, source: me}\n    topk_groups: {value: 2, source: me}\n");
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(ok->moe->groups, 4);
  auto alone = with("    groups: {value: 4, source: me}\n");
  ASSERT_FALSE(alone);
  EXPECT_NE(alone.error().message.find("groups and topk_groups together"), std::string::npos)
      << alone.error().message;
  auto uneven =
      with("    groups: {value: 3, source: me}\n    topk_groups: {value: 2, source: me}\n");
  ASSERT_FALSE(uneven);
  EXPECT_NE(uneven.error().message.find("groups dividing experts (16)"), std::string::npos)
      << uneven.error().message;
}

TEST(ModelCatalog, HuggingFaceErrorsNameTheFileAndKey) {
  auto r = parse_hf_config(R"({"architectures": ["GPTNeoXForCausalLM"], "hidden_size": 64})",
                           "x/config.json");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("unsupported architecture 'GPTNeoXForCausalLM'"),
            std::string::npos);
  auto missing = parse_hf_config(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
    "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})",
                                 "y/config.json");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("num_hidden_layers"), std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().to_string().find("y/config.json"), std::string::npos);
}

TEST(ModelCatalog, UserYamlIsReadStrictly) {
  const std::string ok = R"(model:
  name: tiny
  family: llama
  layers: {value: 2, source: me}
  hidden: {value: 64, source: me}
  heads: {value: 4, source: me}
  kv_heads: {value: 2, source: me}
  ffn: {value: 128, source: me}
  vocab: {value: 100, source: me}
  max_seq_len: {value: 512, source: me}
  mlp: swiglu
  norm: rmsnorm
  position: rope
sources:
  me: "test"
)";
  auto m = parse_model_yaml(ok, "tiny.yaml");
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(m->head_dim, 16);
  // 2 x (attention 64*64*2 + 2*64*32 ... ) : check one closed form by hand.
  const double attn = 64.0 * 64 + 2 * 64.0 * 32 + 64.0 * 64;
  const double mlp = 3 * 64.0 * 128;
  EXPECT_DOUBLE_EQ(count_params(*m).total, 2 * (attn + mlp + 2 * 64) + 64 + 2 * 100.0 * 64);

  std::string typo = ok;
  typo.replace(typo.find("  mlp: swiglu"), 13, "  mpl: swiglu");
  auto bad = parse_model_yaml(typo, "tiny.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().to_string().find("tiny.yaml:"), std::string::npos);
  EXPECT_NE(bad.error().message.find("mpl"), std::string::npos) << bad.error().message;

  std::string no_source = ok;
  no_source.replace(no_source.find("{value: 2, source: me}"), 22, "2");
  auto bad2 = parse_model_yaml(no_source, "tiny.yaml");
  ASSERT_FALSE(bad2);
  EXPECT_NE(bad2.error().message.find("every catalog figure names its source"), std::string::npos);
}

TEST(ModelCatalog, UnknownNamesSuggestTheClosest) {
  auto r = load_model(catalog(), "llama3.1-450b");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("did you mean 'llama3.1-405b'"), std::string::npos)
      << r.error().message;
  auto f = load_model(catalog(), "does/not/exist.yaml");
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("cannot open"), std::string::npos);
}

TEST(ModelCatalog, CustomGptFromParameters) {
  auto m = gpt_model({.layers = 128, .hidden = 25600, .heads = 160});
  ASSERT_TRUE(m) << m.error().to_string();
  auto paper = load_model(catalog(), "megatron-gpt-1t");
  ASSERT_TRUE(paper);
  EXPECT_DOUBLE_EQ(count_params(*m).total, count_params(*paper).total);
  EXPECT_FALSE(gpt_model({.layers = 2, .hidden = 100, .heads = 3}));
  auto gqa =
      gpt_model({.layers = 2, .hidden = 128, .heads = 8, .kv_heads = 2, .ffn = 256, .vocab = 1000});
  ASSERT_TRUE(gqa);
  EXPECT_EQ(gqa->kv_heads, 2);
}

}  // namespace
}  // namespace clustertwin::models
