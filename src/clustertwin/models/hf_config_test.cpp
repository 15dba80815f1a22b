// Hugging Face config.json files of the architectures people train now (tests/models/hf/, each
// copied from the model's Hugging Face page; attribution in tests/models/hf/README.md): each is
// read, and its parameter count is checked against the total (and, for MoE, the active count)
// its publisher gives.

#include <gtest/gtest.h>

#include <string>

#include "clustertwin/models/model_catalog.h"
#include "clustertwin/models/ops.h"

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

std::string hf_path(const std::string& folder) {
  return std::string(CT_HF_MODELS) + "/" + folder + "/config.json";
}

ModelSpec load_hf(const std::string& folder) {
  auto m = load_model(catalog(), hf_path(folder));
  EXPECT_TRUE(m) << folder << ": " << (m ? "" : m.error().to_string());
  return m ? *m : ModelSpec{};
}

// What a publisher prints for a checkpoint and which of our counts it is.
enum class Counted {
  kTotal,         // every weight of the language model (vision towers apart)
  kNonEmbedding,  // total - input embedding - output head
};
struct Published {
  const char* folder;
  const char* arch;
  Counted counted;
  double params;               // as published
  double active;               // 0: dense; else per token, output head included
  bool active_with_embedding;  // whether the publisher counts the input embedding as active
  double tolerance;
  const char* source;
};

// Published figures. The tolerance is the publisher's rounding (a "355B" is 354.5-355.5B, a
// "3.8B" 3.75-3.85B), widened where the publisher does not say what it counts: GLM-4.5's "355B"
// and "32B" (we count 352.8B without its 4.0B MTP layer, 32.85B active without the input
// embedding), Llama 4's "400B" (400.7B) and "17B" (17.18B with the input embedding, Meta's
// convention as Mixtral's). Active counts include the output head; with or without the input
// embedding as the publisher counts it (OpenAI says without: 5.13B of gpt-oss-120b).
constexpr Published kPublished[] = {
    {"Qwen2.5-7B", "Qwen2ForCausalLM", Counted::kNonEmbedding, 6.53e9, 0, false, 0.002,
     "model card: 7.61B parameters, 6.53B non-embedding"},
    {"Qwen1.5-MoE-A2.7B", "Qwen2MoeForCausalLM", Counted::kTotal, 14.3e9, 2.7e9, true, 0.01,
     "model card: 14.3B total, 2.7B activated (2.0B non-embedding)"},
    {"Qwen3-8B", "Qwen3ForCausalLM", Counted::kNonEmbedding, 6.95e9, 0, false, 0.002,
     "model card: 8.2B parameters, 6.95B non-embedding"},
    {"Qwen3-235B-A22B", "Qwen3MoeForCausalLM", Counted::kTotal, 235e9, 22e9, true, 0.01,
     "model card: 235B total, 22B activated, 234B non-embedding"},
    {"gpt-oss-120b", "GptOssForCausalLM", Counted::kTotal, 116.83e9, 5.13e9, false, 0.002,
     "gpt-oss-120b model card (arXiv:2508.10925) Table 1: 116.83B total, 5.13B active"},
    {"gemma-2-9b", "Gemma2ForCausalLM", Counted::kNonEmbedding, 8324201984.0, 0, false, 1e-9,
     "Gemma 2 report (arXiv:2408.00118) Table 2: 8,324,201,984 non-embedding"},
    {"gemma-3-1b-it", "Gemma3ForCausalLM", Counted::kNonEmbedding, 698e6, 0, false, 0.002,
     "Gemma 3 report (arXiv:2503.19786) Table 1: 302M embedding, 698M non-embedding"},
    {"gemma-3-27b-it", "Gemma3ForConditionalGeneration", Counted::kNonEmbedding, 25600e6, 0, false,
     0.002, "Gemma 3 report Table 1: 417M vision, 1,416M embedding, 25,600M non-embedding"},
    {"Llama-4-Maverick-17B-128E-Instruct", "Llama4ForConditionalGeneration", Counted::kTotal, 400e9,
     17e9, true, 0.02, "model card: 17B active, 128 experts, 400B total"},
    {"GLM-4.5", "Glm4MoeForCausalLM", Counted::kTotal, 355e9, 32e9, false, 0.03,
     "GLM-4.5 report (arXiv:2508.06471): 355B total, 32B activated"},
    {"Phi-3-mini-4k-instruct", "Phi3ForCausalLM", Counted::kTotal, 3.8e9, 0, false, 0.02,
     "Phi-3 report (arXiv:2404.14219): phi-3-mini, 3.8B parameters"},
    {"Kimi-K2-Instruct", "DeepseekV3ForCausalLM", Counted::kTotal, 1.04e12, 32e9, false, 0.02,
     "Kimi K2 report (arXiv:2507.20534): 1.04T total, 32B activated"},
};

TEST(HfConfig, EachArchitectureCountsToItsPublishedParameters) {
  for (const auto& p : kPublished) {
    SCOPED_TRACE(p.folder);
    const ModelSpec m = load_hf(p.folder);
    EXPECT_NE(m.display_name.find(p.arch), std::string::npos) << m.display_name;
    const ParamCounts c = count_params(m);
    const double ours = p.counted == Counted::kTotal ? c.total : c.non_embedding;
    EXPECT_NEAR(ours / p.params, 1.0, p.tolerance) << ours / 1e9 << "B vs " << p.source;
    if (p.active > 0) {
      ASSERT_TRUE(m.moe);
      const double active = p.active_with_embedding ? c.active : c.active - c.embedding;
      EXPECT_NEAR(active / p.active, 1.0, std::max(p.tolerance, 0.03))
          << active / 1e9 << "B active vs " << p.source;
    } else {
      EXPECT_DOUBLE_EQ(c.active, c.total);
    }
  }
}

TEST(HfConfig, ArchitectureFeaturesAreRead) {
  // Qwen2: q/k/v biases, no sliding window although sliding_window is set (use_sliding_window
  // false).
  const ModelSpec qwen2 = load_hf("Qwen2.5-7B");
  EXPECT_TRUE(qwen2.qkv_bias);
  EXPECT_FALSE(qwen2.linear_bias);
  EXPECT_FALSE(qwen2.local_attention);
  // Qwen3: per-head q/k norms, head_dim given.
  const ModelSpec qwen3 = load_hf("Qwen3-235B-A22B");
  EXPECT_TRUE(qwen3.qk_norm);
  EXPECT_EQ(qwen3.head_dim, 128);
  EXPECT_EQ(qwen3.moe_layer_count(), 94);
  // Qwen2-MoE: one gated shared expert 4x the routed width.
  const ModelSpec qmoe = load_hf("Qwen1.5-MoE-A2.7B");
  ASSERT_TRUE(qmoe.moe);
  EXPECT_EQ(qmoe.moe->shared_experts, 1);
  EXPECT_EQ(qmoe.shared_expert_ffn(), 5632);
  EXPECT_TRUE(qmoe.moe->shared_gate);
  // GPT-OSS: alternating sliding (128) and full layers, sinks, biased experts, MXFP4 experts.
  const ModelSpec oss = load_hf("gpt-oss-120b");
  ASSERT_TRUE(oss.local_attention);
  EXPECT_EQ(oss.local_attention->window, 128);
  EXPECT_TRUE(oss.is_local_layer(0));
  EXPECT_FALSE(oss.is_local_layer(1));
  EXPECT_EQ(oss.local_layer_count(), 18);
  EXPECT_TRUE(oss.attention_sinks);
  EXPECT_TRUE(oss.moe->expert_bias);
  // The checkpoint: experts in MXFP4, the rest bf16: 60.8 GiB published (model card Table 1).
  EXPECT_NEAR(checkpoint_bytes(oss, 2.0) / (1024.0 * 1024 * 1024) / 60.8, 1.0, 0.005);
  // Gemma 3: 5 sliding layers (window 1024) then one full, tied embeddings, GeGLU, 4 norms.
  const ModelSpec g3 = load_hf("gemma-3-27b-it");
  ASSERT_TRUE(g3.local_attention);
  EXPECT_EQ(g3.local_attention->window, 1024);
  EXPECT_EQ(g3.local_attention->full_every, 6);
  EXPECT_FALSE(g3.is_local_layer(5));
  EXPECT_TRUE(g3.is_local_layer(6));
  EXPECT_TRUE(g3.tied_embeddings);
  EXPECT_EQ(g3.mlp, MlpKind::kGeglu);
  EXPECT_EQ(g3.norms_per_layer, 4);
  EXPECT_EQ(g3.vocab, 262208);  // Gemma3TextConfig's default: the text_config leaves it out
  const ModelSpec g2 = load_hf("gemma-2-9b");
  EXPECT_TRUE(g2.is_local_layer(0));
  EXPECT_FALSE(g2.is_local_layer(1));
  // Llama 4 Maverick: MoE on odd layers, dense layers of intermediate_size_mlp, chunked
  // attention (8192) on three layers of four.
  const ModelSpec l4 = load_hf("Llama-4-Maverick-17B-128E-Instruct");
  ASSERT_TRUE(l4.moe);
  EXPECT_FALSE(l4.is_moe_layer(0));
  EXPECT_TRUE(l4.is_moe_layer(1));
  EXPECT_EQ(l4.moe_layer_count(), 24);
  EXPECT_EQ(l4.ffn, 16384);
  EXPECT_EQ(l4.moe->shared_experts, 1);
  ASSERT_TRUE(l4.local_attention);
  EXPECT_EQ(l4.local_attention->kind, LocalAttention::kChunked);
  EXPECT_EQ(l4.local_attention->full_every, 4);
  EXPECT_FALSE(l4.is_local_layer(3));
  // GLM-4.5: 3 dense layers, q/k/v biases, q/k norms, one MTP layer.
  const ModelSpec glm = load_hf("GLM-4.5");
  EXPECT_EQ(glm.moe->first_dense_layers, 3);
  EXPECT_TRUE(glm.qkv_bias);
  EXPECT_TRUE(glm.qk_norm);
  EXPECT_EQ(glm.mtp_layers, 1);
  // Phi-3 mini 4k: a 2047-token sliding window on every layer.
  const ModelSpec phi = load_hf("Phi-3-mini-4k-instruct");
  ASSERT_TRUE(phi.local_attention);
  EXPECT_EQ(phi.local_layer_count(), 32);
  // Kimi K2: the DeepSeek-V3 shape with 384 experts, 64 heads, one dense layer.
  const ModelSpec kimi = load_hf("Kimi-K2-Instruct");
  ASSERT_TRUE(kimi.mla && kimi.moe);
  EXPECT_EQ(kimi.moe->experts, 384);
  EXPECT_EQ(kimi.moe->first_dense_layers, 1);
  EXPECT_EQ(kimi.mtp_layers, 0);
}

TEST(HfConfig, CatalogModelsMatchTheirConfigs) {
  const struct {
    const char* folder;
    const char* name;
  } cases[] = {{"Qwen3-235B-A22B", "qwen3-235b-a22b"},
               {"gpt-oss-120b", "gpt-oss-120b"},
               {"Kimi-K2-Instruct", "kimi-k2"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const ModelSpec hf = load_hf(c.folder);
    auto cat = load_model(catalog(), c.name);
    ASSERT_TRUE(cat) << cat.error().to_string();
    const auto x = count_params(hf), y = count_params(*cat);
    EXPECT_DOUBLE_EQ(x.total, y.total);
    EXPECT_DOUBLE_EQ(x.active, y.active);
    for (int64_t s : {1024, 4096, 131072}) {
      EXPECT_DOUBLE_EQ(forward_flops_per_token(hf, s), forward_flops_per_token(*cat, s));
    }
    EXPECT_DOUBLE_EQ(kv_cache_bytes(hf, 100000, 2.0), kv_cache_bytes(*cat, 100000, 2.0));
    EXPECT_DOUBLE_EQ(checkpoint_bytes(hf, 2.0), checkpoint_bytes(*cat, 2.0));
  }
}

TEST(HfConfig, LocalAttentionCutsAttentionFlopsAndKvCache) {
  const ModelSpec oss = load_hf("gpt-oss-120b");
  ModelSpec full = oss;
  full.local_attention.reset();
  // Below the window nothing changes; above it the sliding layers attend to 128 keys.
  EXPECT_DOUBLE_EQ(forward_flops_per_token(oss, 100), forward_flops_per_token(full, 100));
  const int64_t s = 8192;
  const double saved = forward_flops_per_token(full, s) - forward_flops_per_token(oss, s);
  const double keys_full = (s + 1) / 2.0;
  const double keys_local = (128.0 * 129.0 / 2.0 + (s - 128.0) * 128.0) / s;
  EXPECT_NEAR(saved, 18 * attention_flops_per_key(oss) * (keys_full - keys_local), 1.0);
  // KV cache of a 100k-token sequence: 18 full layers hold 100k tokens, 18 sliding ones 128.
  const double per_token_layer = 2.0 * 8 * 64 * 2.0;
  EXPECT_DOUBLE_EQ(kv_cache_bytes(oss, 100000, 2.0),
                   (18 * 100000.0 + 18 * 128.0) * per_token_layer);
  EXPECT_DOUBLE_EQ(kv_cache_bytes(full, 100000, 2.0),
                   kv_cache_bytes_per_token(full, 2.0) * 100000.0);
  // Chunked (Llama 4): a token attends to the earlier tokens of its 8192-chunk.
  const ModelSpec l4 = load_hf("Llama-4-Maverick-17B-128E-Instruct");
  EXPECT_DOUBLE_EQ(l4.attended_keys(0, 3 * 8192, true), (8192.0 + 1) / 2.0);
  EXPECT_DOUBLE_EQ(l4.attended_keys(3, 3 * 8192, true), (3 * 8192.0 + 1) / 2.0);
}

TEST(HfConfig, OperatorFlopsAddUpForEveryArchitecture) {
  // The forward ops of every layer (attention windows included) add up to the closed form.
  for (const auto& p : kPublished) {
    SCOPED_TRACE(p.folder);
    const ModelSpec m = load_hf(p.folder);
    PassSpec pass{.phase = Phase::kTraining, .batch = 1, .seq_len = 4096};
    double flops = 0;
    for (const auto& op : model_forward_ops(m, pass)) flops += op.flops.base();
    EXPECT_NEAR(flops / (forward_flops_per_token(m, 4096) * 4096), 1.0, 1e-9);
  }
}

TEST(HfConfig, UnknownArchitecturesListTheSupportedOnesAndTheFieldsNeeded) {
  auto r = parse_hf_config(R"({"architectures": ["MambaForCausalLM"], "hidden_size": 64})",
                           "mamba/config.json");
  ASSERT_FALSE(r);
  const std::string msg = r.error().to_string();
  EXPECT_NE(msg.find("mamba/config.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unsupported architecture 'MambaForCausalLM'"), std::string::npos);
  for (const char* a :
       {"Qwen3MoeForCausalLM", "GptOssForCausalLM", "Gemma3ForConditionalGeneration",
        "Llama4ForConditionalGeneration", "Glm4MoeForCausalLM", "Phi3ForCausalLM"}) {
    EXPECT_NE(msg.find(a), std::string::npos) << a;
  }
  for (const char* f : {"num_hidden_layers", "hidden_size", "num_attention_heads",
                        "num_key_value_heads", "intermediate_size", "vocab_size"}) {
    EXPECT_NE(msg.find(f), std::string::npos) << f;
  }
  // Without `architectures`, model_type names the architecture.
  auto by_type = parse_hf_config(R"({"model_type": "qwen3", "num_hidden_layers": 2,
    "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})",
                                 "t/config.json");
  ASSERT_TRUE(by_type) << by_type.error().to_string();
  EXPECT_TRUE(by_type->qk_norm);
  auto unknown_type = parse_hf_config(R"({"model_type": "rwkv"})", "u/config.json");
  ASSERT_FALSE(unknown_type);
  EXPECT_NE(unknown_type.error().message.find("model_type rwkv"), std::string::npos);
  // A layer pattern that is not periodic is refused, naming the key.
  auto odd = parse_hf_config(R"({"architectures": ["GptOssForCausalLM"], "num_hidden_layers": 3,
    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 16,
    "intermediate_size": 64, "vocab_size": 100, "num_local_experts": 4, "num_experts_per_tok": 2,
    "sliding_window": 8,
    "layer_types": ["sliding_attention", "full_attention", "full_attention"]})",
                             "o/config.json");
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.error().to_string().find("layer_types"), std::string::npos)
      << odd.error().to_string();
}

}  // namespace
}  // namespace clustertwin::models
