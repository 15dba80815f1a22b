#include "clustertwin/models/ops.h"

#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "clustertwin/compute/compute_model.h"
#include "clustertwin/models/model_catalog.h"

namespace clustertwin::models {
namespace {

using compute::OpKind;
using compute::Pass;

const hardware::Catalog& catalog() {
  static const hardware::Catalog cat = [] {
    auto c = hardware::Catalog::load_embedded();
    EXPECT_TRUE(c) << c.error().to_string();
    return *c;
  }();
  return cat;
}

ModelSpec model(std::string_view name) {
  auto m = load_model(catalog(), name);
  EXPECT_TRUE(m) << m.error().to_string();
  return m ? *m : ModelSpec{};
}

double flops(const std::vector<compute::Op>& ops) {
  double f = 0;
  for (const auto& o : ops) f += o.flops.base();
  return f;
}

bool has(const std::vector<compute::Op>& ops, std::string_view name) {
  for (const auto& o : ops) {
    if (name == o.name) return true;
  }
  return false;
}

// The op lists and the closed forms are two derivations of the same work: they must agree.
TEST(Ops, ForwardOpFlopsAddUpToTheClosedForm) {
  for (const char* name :
       {"llama3.1-8b", "gpt3-175b", "mixtral-8x7b", "deepseek-v3", "gpt-moe-1.8t"}) {
    const ModelSpec m = model(name);
    const PassSpec p{.batch = 2, .seq_len = 4096};
    const double expected = forward_flops_per_token(m, p.seq_len) * static_cast<double>(p.tokens());
    EXPECT_NEAR(flops(model_forward_ops(m, p)) / expected, 1.0, 1e-9) << name;
  }
}

TEST(Ops, TensorParallelismSplitsTheWorkEvenly) {
  const ModelSpec m = model("llama3.1-70b");
  const PassSpec one{.batch = 1, .seq_len = 8192};
  PassSpec eight = one;
  eight.tp = 8;
  ASSERT_TRUE(check_layout(m, eight));
  EXPECT_NEAR(flops(model_forward_ops(m, eight)) * 8 / flops(model_forward_ops(m, one)), 1.0, 1e-9);
  // Sequence parallelism shrinks the element-wise kernels, not the GEMMs.
  PassSpec sp = eight;
  sp.sequence_parallel = true;
  const auto a = forward_ops(m, Part::kLayer, 0, eight);
  const auto b = forward_ops(m, Part::kLayer, 0, sp);
  EXPECT_DOUBLE_EQ(a[0].bytes.base(), b[0].bytes.base() * 8);  // input_norm
  EXPECT_DOUBLE_EQ(flops(a), flops(b));
}

TEST(Ops, LlamaLayerStructure) {
  const ModelSpec m = model("llama3.1-405b");
  const PassSpec p{.batch = 1, .seq_len = 8192, .tp = 8};
  const auto ops = forward_ops(m, Part::kLayer, 0, p);
  std::vector<std::string> names;
  for (const auto& o : ops) names.emplace_back(o.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"input_norm", "qkv_proj", "rope", "attention", "o_proj",
                                      "post_attn_norm", "mlp_gate_up", "mlp_act", "mlp_down"}));
  // QKV: (128 + 2 x 8) heads x 128 over 8 GPUs.
  EXPECT_EQ(ops[1].gemm.n, (16 + 2) * 128);
  EXPECT_EQ(ops[1].gemm.k, 16384);
  EXPECT_EQ(ops[3].attention.heads, 16);
  EXPECT_EQ(ops[3].attention.kv_heads, 1);
  EXPECT_EQ(ops[6].gemm.n, 2 * 53248 / 8);
}

TEST(Ops, DeepSeekLayersDenseThenMoeAndAbsorbedMlaInDecode) {
  const ModelSpec m = model("deepseek-v3");
  const PassSpec train{.batch = 1, .seq_len = 4096, .ep = 64, .dtype = compute::DType::kFp8Block};
  EXPECT_STREQ(layer_kind(m, 2), "dense");
  EXPECT_STREQ(layer_kind(m, 3), "moe");
  EXPECT_TRUE(has(forward_ops(m, Part::kLayer, 2, train), "mlp_down"));
  const auto moe = forward_ops(m, Part::kLayer, 3, train);
  EXPECT_TRUE(has(moe, "router"));
  EXPECT_TRUE(has(moe, "shared_down"));
  EXPECT_TRUE(has(moe, "kv_b_proj"));
  for (const auto& o : moe) {
    if (o.kind == OpKind::kMoe) {
      EXPECT_EQ(o.moe.ep, 64);
      EXPECT_DOUBLE_EQ(o.moe.pairs(), 4096.0 * 8);  // T x topk on this GPU
    }
    if (o.kind == OpKind::kAttention) {
      EXPECT_EQ(o.attention.variant, compute::AttentionVariant::kMlaPrefill);
    }
  }
  const PassSpec decode{.phase = Phase::kDecode, .batch = 64, .context = 4096, .tp = 8};
  const auto dec = forward_ops(m, Part::kLayer, 10, decode);
  EXPECT_TRUE(has(dec, "q_absorb"));
  EXPECT_TRUE(has(dec, "v_absorb"));
  EXPECT_FALSE(has(dec, "kv_b_proj"));
  for (const auto& o : dec) {
    if (o.kind == OpKind::kAttention) {
      EXPECT_EQ(o.attention.variant, compute::AttentionVariant::kMlaDecode);
      EXPECT_EQ(o.attention.kv_len, 4097);
      EXPECT_EQ(o.attention.heads, 16);
    }
  }
  // MTP module: an extra decoder layer between an input projection and the shared head.
  const auto mtp = forward_ops(m, Part::kMtp, 0, train);
  EXPECT_TRUE(has(mtp, "mtp_eh_proj"));
  EXPECT_TRUE(has(mtp, "experts"));
  EXPECT_TRUE(has(mtp, "loss"));
  EXPECT_TRUE(forward_ops(m, Part::kMtp, 1, train).empty());
}

TEST(Ops, BackwardIsDgradWgradAndFlashAttention) {
  const ModelSpec m = model("llama3.1-8b");
  const PassSpec p{.batch = 1, .seq_len = 4096};
  const auto fwd = forward_ops(m, Part::kLayer, 0, p);
  const auto bwd = backward_ops(m, Part::kLayer, 0, p);
  double gemm_f = 0, gemm_b = 0, attn_f = 0, attn_b = 0;
  for (const auto& o : fwd) (o.kind == OpKind::kGemm ? gemm_f : attn_f) += o.flops.base();
  int dgrad = 0, wgrad = 0;
  for (const auto& o : bwd) {
    (o.kind == OpKind::kGemm ? gemm_b : attn_b) += o.flops.base();
    dgrad += o.pass == Pass::kDgrad;
    wgrad += o.pass == Pass::kWgrad;
  }
  EXPECT_DOUBLE_EQ(gemm_b, 2 * gemm_f);
  EXPECT_DOUBLE_EQ(attn_b, 2.5 * attn_f);
  EXPECT_EQ(dgrad, 4);
  EXPECT_EQ(wgrad, 4);
  EXPECT_STREQ(bwd.front().name, "mlp_down");  // gradients flow last op first
  PassSpec serve = p;
  serve.phase = Phase::kPrefill;
  EXPECT_TRUE(backward_ops(m, Part::kLayer, 0, serve).empty());
}

TEST(Ops, RecomputeSelectiveIsAttentionFullIsTheLayer) {
  const ModelSpec m = model("gpt3-175b");
  const PassSpec p{.batch = 1, .seq_len = 2048, .tp = 8};
  EXPECT_TRUE(recompute_ops(m, Part::kLayer, 0, p, Recompute::kNone).empty());
  const auto sel = recompute_ops(m, Part::kLayer, 0, p, Recompute::kSelective);
  ASSERT_EQ(sel.size(), 1U);
  EXPECT_EQ(sel[0].kind, OpKind::kAttention);
  EXPECT_EQ(sel[0].pass, Pass::kRecompute);
  const auto full = recompute_ops(m, Part::kLayer, 0, p, Recompute::kFull);
  EXPECT_EQ(full.size(), forward_ops(m, Part::kLayer, 0, p).size());
  EXPECT_TRUE(recompute_ops(m, Part::kHead, 0, p, Recompute::kFull).empty());
  EXPECT_EQ(parse_recompute("selective"), Recompute::kSelective);
  EXPECT_FALSE(parse_recompute("partial"));
}

TEST(Ops, InferenceHeadComputesOnlyTheLastPosition) {
  const ModelSpec m = model("llama3.1-8b");
  const PassSpec prefill{.phase = Phase::kPrefill, .batch = 4, .seq_len = 1000};
  const auto h = forward_ops(m, Part::kHead, 0, prefill);
  EXPECT_EQ(h[1].gemm.m, 4);
  EXPECT_TRUE(has(h, "sampling"));
  const PassSpec decode{.phase = Phase::kDecode, .batch = 32, .context = 100};
  EXPECT_EQ(decode.tokens(), 32);
  const auto layer = forward_ops(m, Part::kLayer, 0, decode);
  EXPECT_FALSE(has(layer, "rope"));
}

TEST(Ops, LayoutErrorsNameTheNumbers) {
  const ModelSpec m = model("llama3.1-8b");
  auto st = check_layout(m, PassSpec{.tp = 3});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("heads = 32 of model 'llama3.1-8b' is not divisible by tp = 3"),
            std::string::npos)
      << st.error().message;
  EXPECT_FALSE(check_layout(m, PassSpec{.ep = 2}));
  // TP beyond the KV heads replicates them (16 GPUs, 8 KV heads).
  EXPECT_TRUE(check_layout(m, PassSpec{.tp = 16}));
  EXPECT_FALSE(check_layout(model("deepseek-v3"), PassSpec{.ep = 3}));
  EXPECT_FALSE(check_layout(m, PassSpec{.seq_len = 1000, .cp = 3}));
}

TEST(Ops, ContextParallelismSplitsTheCausalWork) {
  const ModelSpec m = model("llama3.1-8b");
  const PassSpec one{.batch = 1, .seq_len = 8192};
  PassSpec four = one;
  four.cp = 4;
  auto attention_flops = [&](const PassSpec& p) {
    for (const auto& o : forward_ops(m, Part::kLayer, 0, p)) {
      if (o.kind == OpKind::kAttention) return o.flops.base();
    }
    return 0.0;
  };
  EXPECT_NEAR(attention_flops(four) * 4 / attention_flops(one), 1.0, 1e-3);
}

// End to end with the compute model: a Llama 3.1 405B layer on H100 (TP8, seq 8192, bf16).
// Megatron-style layers reach 40-55% of peak per layer in published runs (Llama 3 paper §3.3:
// 38-43% MFU at 16K GPUs including communication); the op-level model alone must sit above that.
TEST(Ops, TimingALlamaLayerOnH100GivesAPlausibleEfficiency) {
  auto g = catalog().gpu("h100");
  ASSERT_TRUE(g);
  auto cm = compute::ComputeModel::for_gpu(**g, catalog());
  ASSERT_TRUE(cm) << cm.error().to_string();
  const ModelSpec m = model("llama3.1-405b");
  const PassSpec p{.batch = 1, .seq_len = 8192, .tp = 8, .sequence_parallel = true};
  double t = 0, f = 0;
  for (const auto& ops :
       {forward_ops(m, Part::kLayer, 0, p), backward_ops(m, Part::kLayer, 0, p)}) {
    for (const auto& o : ops) {
      t += cm->op(o).base();
      f += o.flops.base();
      EXPECT_GE(cm->op(o).base(), cm->roofline(o).base() * 0.999) << o.name;
    }
  }
  const double mfu = f / t / 989e12;
  std::cout << "llama3.1-405b layer, H100 TP8 SP, seq 8192, fwd+bwd: " << t * 1e3 << " ms, "
            << 100 * mfu << "% of bf16 peak\n";
  EXPECT_GT(mfu, 0.5);
  EXPECT_LT(mfu, 0.85);
}

}  // namespace
}  // namespace clustertwin::models
