#include "clustertwin/workload/serving.h"

#include <gtest/gtest.h>

#include <cmath>

#include "clustertwin/models/model_catalog.h"
#include "clustertwin/workload/serving_dataset.h"

namespace clustertwin::workload {
namespace {

const hardware::Catalog& cat() {
  static const hardware::Catalog c = *hardware::Catalog::load_embedded();
  return c;
}

models::ModelSpec model(const char* name) { return *models::load_model(cat(), name); }

TEST(ServingDataset, CatalogDatasetsParseAndMatchTheirMeans) {
  auto all = catalog_datasets(cat());
  ASSERT_TRUE(all) << all.error().to_string();
  ASSERT_EQ(all->size(), 3u);
  for (const auto& d : *all) {
    auto s = sample_requests(d, 20000, 7);
    double in = 0, out = 0;
    for (auto r : s) {
      in += r.input;
      out += r.output;
      EXPECT_GE(r.input, 1);
      EXPECT_LE(r.input, d.input.max);
      EXPECT_LE(r.output, d.output.max);
    }
    // Sampled means within 3% of the stated means (clamping at the cap costs a little).
    EXPECT_NEAR(in / 20000.0, d.input.mean, 0.03 * d.input.mean) << d.name;
    EXPECT_NEAR(out / 20000.0, d.output.mean, 0.03 * d.output.mean) << d.name;
  }
}

TEST(ServingDataset, SamplingIsDeterministicAndCorrelated) {
  auto d = *find_dataset(cat(), "mlperf-deepseek-r1");
  auto a = sample_requests(d, 5000, 42);
  auto b = sample_requests(d, 5000, 42);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].input, b[i].input);
    EXPECT_EQ(a[i].output, b[i].output);
  }
  double mx = 0, my = 0;
  for (auto r : a) {
    mx += r.input;
    my += r.output;
  }
  mx /= 5000;
  my /= 5000;
  double sxy = 0, sxx = 0, syy = 0;
  for (auto r : a) {
    sxy += (r.input - mx) * (r.output - my);
    sxx += (r.input - mx) * (r.input - mx);
    syy += (r.output - my) * (r.output - my);
  }
  EXPECT_LT(sxy / std::sqrt(sxx * syy), -0.15);  // negative, as published (-0.34)
  ASSERT_TRUE(d.server);
  EXPECT_DOUBLE_EQ(d.server->tpot.base(), 0.08);
  EXPECT_FALSE(d.interactive);
}

TEST(ServingDataset, UnknownDatasetIsAClearError) {
  auto d = find_dataset(cat(), "mlperf-deepseek-r2");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("did you mean 'mlperf-deepseek-r1'"), std::string::npos)
      << d.error().message;
  auto none = dataset_for_model(cat(), "gpt3-175b");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("{isl}"), std::string::npos);
}

TEST(ServingDataset, BadFileReportsEveryError) {
  auto d = parse_dataset_yaml(R"(dataset:
  name: x
  model: y
  samples: {value: 10, source: s}
  max_input: {value: 10, source: s}
  max_output: {value: 10, source: s}
  input: {mean: {value: 5, source: s}, percentiles: [0, 50], tokens: [1, 2], source: s}
  output: {mean: {value: 5, source: s}, percentiles: [10, 100], tokens: [3, 1], source: q}
  colour: blue
sources: {s: "here"}
)",
                              "bad.yaml");
  ASSERT_FALSE(d);
  const auto& m = d.error().message;
  EXPECT_NE(m.find("start at 0 and end at 100"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown source 'q'"), std::string::npos) << m;
  EXPECT_NE(m.find("colour"), std::string::npos) << m;
}

TEST(ServingLayout, ValidatesAgainstModelAndGpus) {
  const auto r1 = model("deepseek-r1");
  ServingLayout l;
  l.instance = {.tp = 8, .ep = 8, .dp_attention = true, .max_batch = 512};
  l.replicas = 9;
  EXPECT_TRUE(validate(l, r1, 72));
  EXPECT_EQ(l.label(), "DEP8 x9");
  auto bad = validate(l, r1, 64);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("uses 72 GPUs but the deployment has 64"), std::string::npos)
      << bad.error().message;
  ServingLayout e = l;
  e.instance.ep = 3;
  e.instance.dp_attention = false;
  EXPECT_FALSE(validate(e, r1, 72));
  const auto l2 = model("llama2-70b");
  ServingLayout d;
  d.instance = {.tp = 3};
  d.replicas = 1;
  auto heads = validate(d, l2, 3);
  ASSERT_FALSE(heads);
  EXPECT_NE(heads.error().message.find("heads = 64"), std::string::npos);
  ServingLayout dis;
  dis.disaggregated = true;
  dis.prefill = {.tp = 4};
  dis.prefill_replicas = 14;
  dis.instance = {.tp = 8};
  dis.replicas = 2;
  EXPECT_TRUE(validate(dis, model("llama3.1-405b"), 72));
  EXPECT_EQ(dis.label(), "ctx TP4 x14 + gen TP8 x2");
}

// LMSYS's 96-H100 decode pool ran DeepSeek-V3 at EP72 with 32 redundant experts (288 slots):
// without them 256 experts do not split over 72 GPUs, with them the layout is accepted and the
// copies cost memory.
TEST(ServingLayout, RedundantExpertsMakeWideEpDivisible) {
  const auto v3 = model("deepseek-v3");
  ServingLayout l;
  l.weights = compute::DType::kFp8Block;
  l.instance = {.tp = 72, .ep = 72, .dp_attention = true, .max_batch = 256};
  l.replicas = 1;
  auto refused = validate(l, v3, 72);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("not divisible by ep = 72 (32 redundant experts would"),
            std::string::npos)
      << refused.error().message;
  l.instance.redundant_experts = 32;
  EXPECT_TRUE(validate(l, v3, 72));
  EXPECT_EQ(l.label(), "DEP72 +32r x1");
  ServingLayout plain = l;
  plain.instance.redundant_experts = 0;
  const double extra =
      serving_memory(v3, l.instance, l, base::gigabytes(80)).weights.base() -
      serving_memory(v3, plain.instance, plain, base::gigabytes(80)).weights.base();
  // 32 more expert copies of ~44 M parameters (FP8) in each of 58 MoE layers, over 72 GPUs.
  EXPECT_NEAR(extra / 1e9, 32.0 * 58 * 3 * 7168 * 2048 / 72 / 1e9, 0.05);
  l.instance.redundant_experts = -1;
  EXPECT_FALSE(validate(l, v3, 72));
  ServingLayout dense;
  dense.instance = {.tp = 8, .redundant_experts = 8};
  auto no_experts = validate(dense, model("llama2-70b"), 8);
  ASSERT_FALSE(no_experts);
  EXPECT_NE(no_experts.error().message.find("need a MoE model"), std::string::npos);
}

TEST(ServingMemory, DeepSeekR1Fp4OnB200MatchesNvidiaBudget) {
  // TensorRT-LLM blog 3: FP4 DeepSeek-R1 with attention DP8 + EP8 on 8 x B200 uses ~80 GB for
  // weights and activations, leaving ~100 GB for the KV cache.
  const auto r1 = model("deepseek-r1");
  ServingLayout l;
  l.instance = {.tp = 8, .ep = 8, .dp_attention = true, .max_batch = 384, .max_tokens = 1536};
  auto mem = serving_memory(r1, l.instance, l, base::gigabytes(180));
  EXPECT_GT(mem.weights.base(), 50e9);
  EXPECT_LT(mem.weights.base() + mem.buffers.base(), 85e9);
  EXPECT_GT(mem.kv_cache.base(), 85e9);
  // MLA latent cache, FP8: (512 + 64) x 61 layers = 35,136 bytes per token.
  EXPECT_DOUBLE_EQ(mem.kv_bytes_per_token, 576.0 * 61);
}

TEST(ServingMemory, ModelThatDoesNotFitSaysByHowMuch) {
  const auto big = model("llama3.1-405b");
  ServingLayout l;
  l.weights = compute::DType::kFp8;
  l.instance = {.tp = 2};
  auto r = check_serving_memory(big, l.instance, l, base::gigabytes(141), 4096);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("exceed the 141.0 GB usable by"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("at least ~"), std::string::npos);
  l.instance.tp = 8;
  auto ok = check_serving_memory(big, l.instance, l, base::gigabytes(141), 22000);
  ASSERT_TRUE(ok) << ok.error().to_string();
  // GQA with 8 KV heads on TP8: one head per GPU, 2 x 128 x 126 layers x 1 byte per token.
  EXPECT_DOUBLE_EQ(ok->kv_bytes_per_token, 2.0 * 128 * 126);
}

TEST(ServingLayout, MtpTokensPerStep) {
  ServingLayout l;
  l.mtp = 3;
  l.mtp_acceptance = 0.5;
  EXPECT_DOUBLE_EQ(l.tokens_per_step(), 1.0 + 0.5 + 0.25 + 0.125);
}

TEST(ServingFile, ReadsALayoutAndRejectsUnknownKeys) {
  auto l = parse_serving_yaml(R"(serving:
  precision: fp4
  kv_cache: fp8
  instance: {tp: 8, ep: 8, dp_attention: true, max_batch: 512, max_tokens: 4608,
             chunked_prefill: false}
  replicas: 9
  mtp: {draft_tokens: 3, acceptance: 0.7}
)",
                              "r1.yaml");
  ASSERT_TRUE(l) << l.error().to_string();
  EXPECT_EQ(l->instance.label(), "DEP8");
  EXPECT_EQ(l->replicas, 9);
  EXPECT_FALSE(l->instance.chunked_prefill);
  EXPECT_EQ(l->mtp, 3);
  EXPECT_FALSE(l->disaggregated);
  auto bad =
      parse_serving_yaml("serving:\n  instance: {tp: 8, tpp: 2}\n  kv_cache: fp6\n", "bad.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("tpp"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("fp6"), std::string::npos) << bad.error().message;
  auto dis = parse_serving_yaml(
      "serving:\n  instance: {tp: 8}\n  prefill: {tp: 4}\n  prefill_replicas: 14\n", "d.yaml");
  ASSERT_TRUE(dis) << dis.error().to_string();
  EXPECT_TRUE(dis->disaggregated);
  EXPECT_EQ(dis->prefill_replicas, 14);
  // Attention-DP balance keys (TensorRT-LLM attention_dp_config): read, labelled, and refused
  // without attention DP or with a negative count.
  auto bal = parse_serving_yaml(
      "serving:\n  instance: {tp: 8, ep: 8, dp_attention: true, adp_timeout_iters: 9, "
      "adp_batching_wait_iters: 3}\n",
      "bal.yaml");
  ASSERT_TRUE(bal) << bal.error().to_string();
  EXPECT_EQ(bal->instance.adp_timeout_iters, 9);
  EXPECT_EQ(bal->instance.label(), "DEP8 bal 3/9");
  auto neg = parse_serving_yaml(
      "serving:\n  instance: {tp: 8, dp_attention: true, adp_timeout_iters: -1}\n", "n.yaml");
  ASSERT_FALSE(neg);
  EXPECT_NE(neg.error().to_string().find("adp_timeout_iters"), std::string::npos)
      << neg.error().to_string();
  // CUDA-graph batch sizes: a list in the file, ascending positive integers.
  auto graphs = parse_serving_yaml(
      "serving:\n  instance: {tp: 8, ep: 8, dp_attention: true, cuda_graph_batches: [128, 256, "
      "384, 512]}\n",
      "g.yaml");
  ASSERT_TRUE(graphs) << graphs.error().to_string();
  EXPECT_EQ(graphs->instance.cuda_graph_batches, (std::vector<int64_t>{128, 256, 384, 512}));
  auto down = parse_serving_yaml("serving:\n  instance: {tp: 8, cuda_graph_batches: [256, 128]}\n",
                                 "down.yaml");
  ASSERT_FALSE(down);
  EXPECT_NE(down.error().to_string().find("'128'"), std::string::npos) << down.error().to_string();
  EXPECT_FALSE(parse_graph_batches("128,,256"));
  EXPECT_FALSE(parse_graph_batches("0"));
  EXPECT_EQ(parse_graph_batches(" 1, 2,4 ")->size(), 3U);
  // Dispatch of server / interactive arrivals: the harness's for the scenario (least loaded for
  // server, round robin for interactive) unless the file says otherwise.
  EXPECT_EQ(l->dispatch, ServingDispatch::kAuto);
  EXPECT_EQ(resolve_dispatch(l->dispatch, ServingScenario::kServer), ServingDispatch::kLeastLoaded);
  EXPECT_EQ(resolve_dispatch(l->dispatch, ServingScenario::kInteractive),
            ServingDispatch::kRoundRobin);
  auto ll =
      parse_serving_yaml("serving:\n  instance: {tp: 1}\n  dispatch: least-loaded\n", "ll.yaml");
  ASSERT_TRUE(ll) << ll.error().to_string();
  EXPECT_EQ(resolve_dispatch(ll->dispatch, ServingScenario::kInteractive),
            ServingDispatch::kLeastLoaded);
  auto rr =
      parse_serving_yaml("serving:\n  instance: {tp: 1}\n  dispatch: round-robin\n", "rr.yaml");
  ASSERT_TRUE(rr) << rr.error().to_string();
  EXPECT_EQ(rr->dispatch, ServingDispatch::kRoundRobin);
  EXPECT_STREQ(dispatch_name(rr->dispatch), "round-robin");
  auto rnd = parse_serving_yaml("serving:\n  instance: {tp: 1}\n  dispatch: random\n", "x.yaml");
  ASSERT_FALSE(rnd);
  EXPECT_NE(rnd.error().to_string().find("random"), std::string::npos) << rnd.error().to_string();
  const auto m = model("deepseek-r1");
  InstanceLayout tp8{.tp = 8, .ep = 8, .adp_timeout_iters = 9};
  ServingLayout l2{.instance = tp8, .replicas = 1};
  auto st = validate(l2, m, 8);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("needs dp_attention"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace clustertwin::workload
