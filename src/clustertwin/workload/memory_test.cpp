#include "clustertwin/workload/memory.h"

#include <gtest/gtest.h>

#include "clustertwin/workload/catalog_test_support.h"

namespace clustertwin::workload {
namespace {

// Korthikanti et al. 2022, Table 2 / eq. (1): with tensor and sequence parallelism and no
// recomputation a GPT layer stores s*b*h*34/t bytes (plus the softmax term FlashAttention drops).
TEST(Memory, GptLayerActivationsMatchKorthikanti) {
  auto m = test_support::model("gpt3-175b");
  TrainingLayout l{
      .tp = 8, .pp = 96, .dp = 1, .micro_batch = 1, .global_batch = 96, .seq_len = 2048};
  auto stages = training_memory(m, l);
  // Middle stage: one layer, pp - s in-flight micro-batches.
  const auto& s = stages[50];
  const double per_layer = 2048.0 * 12288 * 34 / 8;
  EXPECT_NEAR(s.activations.base() / (per_layer * (96 - 50)), 1.0, 0.03);
}

TEST(Memory, OptimizerShardsWithZero) {
  auto m = test_support::model("llama3.1-70b");
  TrainingLayout z0{
      .tp = 8, .pp = 1, .dp = 8, .micro_batch = 1, .global_batch = 64, .seq_len = 4096, .zero = 0};
  TrainingLayout z1 = z0;
  z1.zero = 1;
  const auto a = training_memory(m, z0)[0];
  const auto b = training_memory(m, z1)[0];
  EXPECT_NEAR(a.optimizer.base() / b.optimizer.base(), 8.0, 1e-6);
  EXPECT_NEAR(a.params, 70.6e9 / 8, 0.05 * 70.6e9 / 8);
}

TEST(Memory, DoesNotFitNamesTotalCapacityAndBiggestTerm) {
  auto m = test_support::model("llama3.1-405b");
  TrainingLayout l{.tp = 1, .pp = 1, .dp = 8, .micro_batch = 1, .global_batch = 8, .seq_len = 8192};
  auto r = check_memory(m, l, base::gigabytes(80));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("does not fit in GPU memory"), std::string::npos);
  EXPECT_NE(r.error().message.find("biggest term: gradients"), std::string::npos)
      << r.error().message;
}

// Megatron-LM's theoretical-memory report (theoretical_memory_usage.py): with the distributed
// optimizer 6 + 12/dp bytes per parameter; activations per layer s*b*h*(18 + 4 f/h) / tp with
// sequence parallelism and selective recomputation, which for a GPT MLP (f = 4h, GELU, dropout)
// is the 34h of Korthikanti's Table 2 that this model also reaches (FlashAttention, bf16).
TEST(Memory, MatchesMegatronTheoreticalReportForGpt) {
  auto m = test_support::model("gpt3-175b");
  TrainingLayout l{.tp = 8,
                   .pp = 8,
                   .dp = 16,
                   .micro_batch = 1,
                   .global_batch = 1024,
                   .seq_len = 2048,
                   .recompute = Recompute::kSelective};
  const auto s = training_memory(m, l)[3];
  const double per_param = (s.weights + s.gradients + s.optimizer).base() / s.params;
  EXPECT_NEAR(per_param, 6.0 + 12.0 / 16, 1e-9);
  const double h = 12288, f = 4 * h;
  const double megatron_layer = 2048.0 * h * (18 + 4 * f / h) / 8;
  const double layers = 96.0 / 8;
  EXPECT_NEAR(s.activation_bytes_per_micro_batch / (megatron_layer * layers), 1.0, 0.02);
  EXPECT_DOUBLE_EQ(s.inflight_micro_batches, 8 - 3);
}

// DeepSeek-V3 on 2,048 H800 with DeepSeek's layout (report §3.2-3.3): PP16 DualPipe, EP64, ZeRO-1,
// block FP8, norms and MLA up-projections recomputed, SwiGLU outputs recomputed from FP8-cached
// inputs, bf16 Adam moments: it trained on 80 GB GPUs, so it must fit; without the recomputation
// it must not, and the error must say by how much and what fits.
TEST(Memory, DeepSeekV3LayoutFitsOnH800) {
  namespace rm = recompute_module;
  auto m = test_support::model("deepseek-v3");
  TrainingLayout l{.tp = 1,
                   .pp = 16,
                   .dp = 128,
                   .ep = 64,
                   .micro_batch = 1,
                   .global_batch = 15360,
                   .seq_len = 4096,
                   .dtype = compute::DType::kFp8Block,
                   .recompute = Recompute::kSelective};
  l.recompute_modules = rm::kLayernorm | rm::kMlaUpProj | rm::kMoeAct;
  l.schedule = PipelineSchedule::kDualPipe;
  l.moment_bytes = 2;
  l.fp8_activation_store = true;
  auto ok = check_memory(m, l, base::gigabytes(80));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_GT(ok->total().base(), 60e9);               // a tight fit, not a vacuous one
  EXPECT_DOUBLE_EQ(ok->inflight_micro_batches, 17);  // pp + 1
  auto none = l;
  none.recompute = Recompute::kNone;
  none.recompute_modules = 0;
  auto r = check_memory(m, none, base::gigabytes(80));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("over by"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("the cheapest change that fits: {recompute_modules}"),
            std::string::npos)
      << r.error().message;
  auto fix = cheapest_memory_fix(m, none, base::gigabytes(80), Bytes{});
  ASSERT_TRUE(fix);
  EXPECT_LE(fix->memory.total().base(), 80e9);
}

TEST(Memory, RecomputeModulesDropWhatTheyRecompute) {
  namespace rm = recompute_module;
  auto m = test_support::model("deepseek-v3");
  TrainingLayout l{.tp = 1,
                   .pp = 16,
                   .dp = 8,
                   .ep = 8,
                   .micro_batch = 1,
                   .global_batch = 128,
                   .seq_len = 4096,
                   .dtype = compute::DType::kFp8};
  auto act = [&](uint32_t bits) {
    auto x = l;
    x.recompute = bits ? Recompute::kSelective : Recompute::kNone;
    x.recompute_modules = bits;
    return training_memory(m, x)[5].activation_bytes_per_micro_batch;
  };
  const double none = act(0);
  double prev = none;
  uint32_t bits = 0;
  for (uint32_t b : {rm::kLayernorm, rm::kMoeAct, rm::kMlaUpProj, rm::kSharedExperts, rm::kMoe}) {
    bits |= b;
    const double a = act(bits);
    EXPECT_LT(a, prev) << recompute_modules_name(bits);
    prev = a;
  }
  // moe_act drops the down-projection input of every routed copy: top-k x f_e FP8 bytes per
  // token and MoE layer (this stage holds 4 MoE layers).
  EXPECT_NEAR(none - act(rm::kMoeAct), 4096.0 * 4 * 8 * 2048, 1.0);
  // Full recomputation keeps less than any module set.
  auto full = l;
  full.recompute = Recompute::kFull;
  EXPECT_LT(training_memory(m, full)[5].activations.base(), prev * 4);
}

TEST(Memory, DualPipeHoldsTwoStagesAndPpPlusOneMicroBatches) {
  auto m = test_support::model("llama3.1-70b");
  TrainingLayout l{
      .tp = 8, .pp = 8, .dp = 2, .micro_batch = 1, .global_batch = 64, .seq_len = 4096};
  auto d = l;
  d.schedule = PipelineSchedule::kDualPipe;
  const auto a = training_memory(m, l), b = training_memory(m, d);
  EXPECT_NEAR(b[3].params / a[3].params, 2.0, 0.01);
  EXPECT_DOUBLE_EQ(b[3].inflight_micro_batches, 9);
  EXPECT_DOUBLE_EQ(a[3].inflight_micro_batches, 5);
}

TEST(Memory, OffloadMovesActivationsToTheHost) {
  auto m = test_support::model("llama3.1-70b");
  TrainingLayout l{
      .tp = 8, .pp = 8, .dp = 2, .micro_batch = 1, .global_batch = 64, .seq_len = 8192};
  auto o = l;
  o.offload_activations = true;
  const auto a = training_memory(m, l)[0], b = training_memory(m, o)[0];
  EXPECT_NEAR(b.activations.base() + b.offloaded.base(), a.activations.base(), 1.0);
  EXPECT_NEAR(b.activations.base(), a.activation_bytes_per_micro_batch, 1.0);
  // Not enough host memory is an error naming both sides.
  auto r = check_memory(m, o, base::gigabytes(80), base::gigabytes(1));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("host memory"), std::string::npos);
}

TEST(Memory, LoraTrainsOnlyTheAdapters) {
  auto m = test_support::model("llama2-70b");
  TrainingLayout l{.tp = 1,
                   .pp = 1,
                   .dp = 8,
                   .micro_batch = 1,
                   .global_batch = 8,
                   .seq_len = 8192,
                   .dtype = compute::DType::kFp8};
  l.lora_rank = 16;
  const auto s = training_memory(m, l)[0];
  // Adapters on qkv and o: 16 x ((h + (a + 2g) d) + (a d + h)) per layer, 80 layers.
  const double adapters = 16.0 * ((8192 + 10240) + (8192 + 8192)) * 80;
  EXPECT_NEAR(s.trainable_params, adapters, 1.0);
  EXPECT_LT(s.optimizer.base(), 1e9);
  EXPECT_NEAR(s.weights.base(), s.params * 1.0 + adapters * 2.0, 1e6);
}

// Qwen3's per-head q/k RMSNorms (Megatron-Core q_layernorm / k_layernorm, TE RMSNorm) keep their
// bf16 input and an fp32 1/rms per head row: (a + kv)(2d + 4) bytes per token and layer, over TP,
// and the `layernorm` recompute module (input and pre-MLP norms) does not drop them.
TEST(Memory, QkNormKeepsItsInputs) {
  namespace rm = recompute_module;
  auto m = test_support::model("qwen3-235b-a22b");
  ASSERT_TRUE(m.qk_norm);
  auto plain = m;
  plain.qk_norm = false;
  TrainingLayout l{.tp = 2,
                   .pp = 8,
                   .dp = 16,
                   .ep = 32,
                   .micro_batch = 1,
                   .global_batch = 2048,
                   .seq_len = 4096,
                   .recompute = Recompute::kSelective};
  l.recompute_modules = rm::kLayernorm | rm::kMoeAct;
  const double rows = static_cast<double>(m.heads + m.kv_heads);
  const double d = static_cast<double>(m.head_dim);
  EXPECT_NEAR(
      layer_activation_bytes_per_token(m, l, 3) - layer_activation_bytes_per_token(plain, l, 3),
      rows * (2 * d + 4) / 2, 1e-6);
}

// A layout that does not fit says by how much and names the cheapest change that fits; the change
// applied must fit and the layout without it must not (issue 14: dense and MoE).
void ExpectFixFits(const models::ModelSpec& m, const TrainingLayout& l, const std::string& change) {
  auto r = check_memory(m, l, base::gigabytes(80));
  ASSERT_FALSE(r) << change;
  const std::string& msg = r.error().message;
  EXPECT_NE(msg.find("GB usable (over by "), std::string::npos) << msg;
  EXPECT_NE(msg.find("the cheapest change that fits: " + change), std::string::npos) << msg;
  auto fix = cheapest_memory_fix(m, l, base::gigabytes(80), Bytes{});
  ASSERT_TRUE(fix);
  EXPECT_EQ(fix->change.substr(0, change.size()), change);
  EXPECT_TRUE(check_memory(m, fix->layout, base::gigabytes(80))) << fix->change;
}

TEST(Memory, DenseLayoutOverCapacityNamesCheapestFix) {
  // Llama 3 70B on 64 H100 as Megatron-Bridge lays it out (TP4 PP8 VPP5, seq 8192), in bf16
  // without its recomputation: 3.7 GB over; recomputing the norms fits.
  auto m = test_support::model("llama3.1-70b");
  TrainingLayout l{
      .tp = 4, .pp = 8, .dp = 2, .vpp = 5, .micro_batch = 1, .global_batch = 128, .seq_len = 8192};
  ExpectFixFits(m, l, "{recompute_modules} layernorm");
}

TEST(Memory, MoeLayoutOverCapacityNamesCheapestFix) {
  // Qwen3-235B-A22B on 256 H100 (TP2 PP8 VPP4 EP32) with the measured routing skew and nothing
  // recomputed: the experts' activations push it over; recomputing the norms and the experts'
  // activation fits (the ModelZoo recipe's own choice).
  auto m = test_support::model("qwen3-235b-a22b");
  TrainingLayout l{.tp = 2,
                   .pp = 8,
                   .dp = 16,
                   .ep = 32,
                   .vpp = 4,
                   .micro_batch = 1,
                   .global_batch = 2048,
                   .seq_len = 4096};
  l.routing = MoeRouting::kMeasured;
  ExpectFixFits(m, l, "{recompute_modules} moe_act,layernorm");
}

TEST(Memory, FewerMicroBatchesInFlightWithoutInterleaving) {
  // Full recomputation already on and ZeRO 1: interleaving (VPP 10) keeps 7.3 micro-batches'
  // chunk inputs on the last stage where plain 1F1B keeps one; dropping it is the cheapest fit.
  auto m = test_support::model("llama3.1-70b");
  TrainingLayout l{.tp = 8,
                   .pp = 8,
                   .dp = 4,
                   .vpp = 10,
                   .micro_batch = 1,
                   .global_batch = 32,
                   .seq_len = 262144,
                   .recompute = Recompute::kFull};
  ExpectFixFits(m, l,
                "{vpp} 1 (no interleaving: 1 instead of 7.3 micro-batches in flight on stage 7)");
}

TEST(Memory, RecomputeModuleNamesParse) {
  auto b = parse_recompute_modules("layernorm,moe_act,mla_up_proj");
  ASSERT_TRUE(b);
  EXPECT_EQ(recompute_modules_name(*b), "moe_act,layernorm,mla_up_proj");
  auto bad = parse_recompute_modules("layernorm,attn");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("'attn' is not one of core_attn"), std::string::npos);
}

}  // namespace
}  // namespace clustertwin::workload
