#include "clustertwin/workload/layout.h"

#include <gtest/gtest.h>

#include "clustertwin/workload/catalog_test_support.h"

namespace clustertwin::workload {
namespace {

const models::ModelSpec& llama405b() {
  static const models::ModelSpec m = test_support::model("llama3.1-405b");
  return m;
}

TEST(Layout, Llama3SplitMatchesThePaper) {
  // 126 layers over 16 stages: one layer fewer on the first and the last (Llama 3 §3.3.2).
  auto s = split_layers(126, 16);
  EXPECT_EQ(s.front(), 7);
  EXPECT_EQ(s.back(), 7);
  for (size_t i = 1; i + 1 < s.size(); ++i) EXPECT_EQ(s[i], 8);
  auto even = split_layers(96, 8);
  for (int v : even) EXPECT_EQ(v, 12);
  int sum = 0;
  for (int v : split_layers(61, 7)) sum += v;
  EXPECT_EQ(sum, 61);
}

TEST(Layout, ValidatesAgainstGpusAndModel) {
  TrainingLayout l{
      .tp = 8, .pp = 16, .dp = 128, .micro_batch = 1, .global_batch = 2048, .seq_len = 8192};
  EXPECT_TRUE(validate(l, llama405b(), 16384));
  auto bad = validate(l, llama405b(), 8192);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("tp*pp*dp*cp = 8*16*128*1 = 16384 does not match gpus = 8192"),
            std::string::npos)
      << bad.error().message;
  TrainingLayout heads = l;
  heads.tp = 3;
  heads.dp = 1;
  heads.pp = 1;
  EXPECT_FALSE(validate(heads, llama405b(), 3));
  TrainingLayout batch = l;
  batch.global_batch = 2000;
  auto b = validate(batch, llama405b(), 16384);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("does not divide global_batch = 2000"), std::string::npos);
  TrainingLayout ep = l;
  ep.ep = 8;
  EXPECT_FALSE(validate(ep, llama405b(), 16384));  // dense model
}

TEST(Layout, MoeParallelFoldingLetsExpertsSpanTensorParallelRanks) {
  const auto qwen = test_support::model("qwen3-235b-a22b");  // 94 layers, 128 experts
  // Megatron-MoE-ModelZoo Qwen3-235B on 256 H100: TP2 PP8 VPP4 EP32 DP16, ETP 1: ep*etp = 32
  // divides tp*cp*dp = 32 although ep does not divide dp*cp = 16.
  TrainingLayout l{.tp = 2,
                   .pp = 8,
                   .dp = 16,
                   .ep = 32,
                   .vpp = 4,
                   .micro_batch = 1,
                   .global_batch = 2048,
                   .seq_len = 4096};
  EXPECT_TRUE(validate(l, qwen, 256)) << validate(l, qwen, 256).error().message;
  TrainingLayout etp2 = l;
  etp2.etp = 2;  // 64 expert ranks per stage, the stage has 32 GPUs
  auto bad = validate(etp2, qwen, 256);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("etp*ep = 2*32 = 64 does not divide tp*cp*dp = 32"),
            std::string::npos)
      << bad.error().message;
  TrainingLayout no_sp = l;
  no_sp.sequence_parallel = false;
  EXPECT_FALSE(validate(no_sp, qwen, 256));
  // PP32 x VPP3 = 96 chunks on 94 layers: the first chunk holds the embedding only, the last
  // the output head only (Megatron's --account-for-embedding/loss-in-pipeline-split).
  TrainingLayout deep = l;
  deep.pp = 32;
  deep.vpp = 3;
  deep.dp = 4;
  deep.ep = 8;
  deep.global_batch = 2048;
  EXPECT_TRUE(validate(deep, qwen, 256)) << validate(deep, qwen, 256).error().message;
  auto split = split_layers(94, 96);
  EXPECT_EQ(split.front(), 0);
  EXPECT_EQ(split.back(), 0);
  TrainingLayout deeper = deep;
  deeper.vpp = 4;  // 128 chunks
  deeper.global_batch = 2048;
  EXPECT_FALSE(validate(deeper, qwen, 256));
}

TEST(Layout, RankOrderPacksTensorParallelFirst) {
  TrainingLayout l{.tp = 8, .pp = 4, .dp = 2};
  for (int64_t r = 0; r < l.gpus(); ++r) EXPECT_EQ(rank_of(l, coord_of(l, r)), r);
  EXPECT_EQ(coord_of(l, 7).tp, 7);
  EXPECT_EQ(coord_of(l, 8).dp, 1);
  EXPECT_EQ(coord_of(l, 16).pp, 1);
}

TEST(Layout, MoeDomainsPerTokenFollowsGroupLimitedRouting) {
  models::MoeSpec e{.experts = 256, .topk = 8};
  // Unrestricted: 8 experts over 8 domains of 32 hit 8 * (1 - C(224,8)/C(256,8)) domains.
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (224.0 - i) / (256.0 - i);
  EXPECT_NEAR(moe_domains_per_token(e, 8), 8 * (1 - miss), 1e-12);
  EXPECT_DOUBLE_EQ(moe_domains_per_token(e, 1), 1.0);
  EXPECT_LE(moe_domains_per_token(e, 64), 8.0);
  // DeepSeek-V3: 8 groups, at most 4 per token. On 8 domains a group is a domain: the 8 experts
  // come from 4 domains' 128 experts.
  e.groups = 8;
  e.topk_groups = 4;
  miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (96.0 - i) / (128.0 - i);
  EXPECT_NEAR(moe_domains_per_token(e, 8), 4 * (1 - miss), 1e-12);
  EXPECT_LT(moe_domains_per_token(e, 8), 4.0);
  // On 16 domains a group spans two; never more than 4 groups' domains, 8 experts.
  EXPECT_LE(moe_domains_per_token(e, 16), 8.0);
  EXPECT_GT(moe_domains_per_token(e, 16), moe_domains_per_token(e, 8));
  // On 2 domains (4 groups each) 4 groups of 8 miss a domain with probability C(4,4)/C(8,4).
  EXPECT_LE(moe_domains_per_token(e, 2), 2.0 * (1 - 1.0 / 70) + 1e-12);
}

TEST(Layout, MoeDispatchNames) {
  EXPECT_EQ(parse_moe_dispatch("deepep"), MoeDispatch::kDedup);
  EXPECT_EQ(parse_moe_dispatch("alltoall"), MoeDispatch::kAllToAll);
  EXPECT_FALSE(parse_moe_dispatch("ring"));
  EXPECT_STREQ(moe_dispatch_name(MoeDispatch::kDedup), "dedup");
}

// `auto` resolves to the kernel Megatron-Core / DeepEP would run: NVLink one-sided inside an NVL72
// domain, DeepEP across domains for group-limited routing, NCCL all-to-all otherwise.
TEST(Layout, MoeDispatchAutoFollowsTheFabric) {
  models::MoeSpec ds{.experts = 256, .topk = 8, .groups = 8, .topk_groups = 4};
  models::MoeSpec qwen{.experts = 128, .topk = 8};
  const auto a = MoeDispatch::kAuto;
  EXPECT_EQ(resolve_moe_dispatch(a, ds, 64, 1, 8), MoeDispatch::kDedup);
  EXPECT_EQ(resolve_moe_dispatch(a, qwen, 32, 1, 8), MoeDispatch::kAllToAll);
  EXPECT_EQ(resolve_moe_dispatch(a, ds, 8, 1, 8), MoeDispatch::kAllToAll);
  EXPECT_EQ(resolve_moe_dispatch(a, qwen, 64, 1, 72), MoeDispatch::kNvlinkOneSided);
  EXPECT_EQ(resolve_moe_dispatch(a, ds, 64, 2, 72), MoeDispatch::kDedup);  // 128 GPUs wide
  EXPECT_EQ(resolve_moe_dispatch(MoeDispatch::kAllToAll, ds, 64, 1, 8), MoeDispatch::kAllToAll);
  EXPECT_EQ(parse_moe_dispatch("nccl"), MoeDispatch::kAllToAll);
  EXPECT_EQ(parse_moe_dispatch("deepep-normal"), MoeDispatch::kDedup);
  EXPECT_EQ(parse_moe_dispatch("nvlink-onesided"), MoeDispatch::kNvlinkOneSided);
  EXPECT_FALSE(parse_moe_dispatch("deepep-ll"));
}

}  // namespace
}  // namespace clustertwin::workload
