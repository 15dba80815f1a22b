#include "clustertwin/execution/serving_sim.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "clustertwin/execution/serving_calibration.h"
#include "clustertwin/models/model_catalog.h"

namespace clustertwin::execution {
namespace {

const hardware::Catalog& cat() {
  static const hardware::Catalog c = *hardware::Catalog::load_embedded();
  return c;
}

// The catalog's fitted constants of the step model (catalog/calibration/serving.yaml).
const ServingStepCalibration& fitted() {
  static const ServingStepCalibration c = *serving_step_calibration(cat());
  return c;
}

struct Fixture {
  models::ModelSpec model;
  compute::ComputeModel compute;
  ServingSetup setup;
};

// A small deployment: Llama 2 70B FP8 on one 8 x H200 node, TP1 x 8, 1,000 requests.
Fixture llama2_h200(int64_t requests = 1000) {
  auto spec = *hardware::resolve_cluster(cat(), "hgx-h200*1");
  const auto& gpu = **cat().gpu("h200");
  Fixture f{
      *models::load_model(cat(), "llama2-70b"), *compute::ComputeModel::for_gpu(gpu, cat()), {}};
  fitted().apply(f.setup);
  auto& s = f.setup;
  s.fabric = *serving_fabric(cat(), spec);
  s.memory_capacity = gpu.hbm_usable;
  s.dataset = *workload::dataset_for_model(cat(), "llama2-70b");
  s.layout.weights = compute::DType::kFp8;
  s.layout.instance = {.tp = 1, .max_batch = 256, .max_tokens = 2048};
  s.layout.replicas = 8;
  s.requests = requests;
  return f;
}

void bind(Fixture& f) {
  f.setup.model = &f.model;
  f.setup.compute = &f.compute;
}

TEST(CustomAllReduce, InterpolatesTheMeasuredCurves) {
  // h200 8 GPUs at 256 B x 4^5 = 256 KiB: 10.11 us (AIC custom_allreduce.csv).
  EXPECT_NEAR(custom_allreduce_s("h200", 8, 262144) * 1e6, 10.11, 0.01);
  // Between two sizes it is monotone.
  const double a = custom_allreduce_s("b200", 4, 1e6), b = custom_allreduce_s("b200", 4, 4e6);
  EXPECT_LT(a, b);
  EXPECT_EQ(custom_allreduce_s("b200", 1, 1e6), 0.0);
  // Larger than 8 in an NVL72 domain scales the bus factor.
  EXPECT_GT(custom_allreduce_s("gb200", 16, 1e7), custom_allreduce_s("gb200", 8, 1e7));
}

TEST(StepModel, NeverBeatsTheWeightRoofline) {
  Fixture f = llama2_h200();
  bind(f);
  StepSetup st{.model = &f.model,
               .instance = f.setup.layout.instance,
               .weights = compute::DType::kFp8,
               .compute = &f.compute,
               .fabric = f.setup.fabric};
  fitted().apply(st);
  auto sm = StepModel::build(st);
  ASSERT_TRUE(sm) << sm.error().to_string();
  // Reading 70 GB of FP8 weights at 4.8 TB/s takes ~14.5 ms; a decode step cannot be faster.
  const double weights = models::weight_bytes(f.model, 1.0);
  const double floor = weights / f.compute.hbm_bandwidth().base();
  for (int64_t b : {1, 16, 128, 256}) {
    const StepTime t = sm->uniform(b, 1000, 0, 0);
    EXPECT_GT(t.total, floor) << b;
    EXPECT_GT(t.attention, 0);
  }
  // More sequences never take less time; a prompt chunk adds time.
  EXPECT_LT(sm->uniform(16, 1000, 0, 0).total, sm->uniform(256, 1000, 0, 0).total);
  EXPECT_LT(sm->uniform(16, 1000, 0, 0).total, sm->uniform(16, 1000, 512, 512).total);
}

// norm_quant_fusion (TensorRT-LLM; NVIDIA's MLPerf Llama configs, setups §3.3): with it the
// RMSNorm writes the NVFP4 input of the GEMM after it; without it the QKV and gate/up GEMMs
// quantise their input in a pass of their own, which AIC's measured nvfp4 GEMMs include. The
// other GEMMs and FP8 GEMMs do not change.
TEST(StepModel, NormQuantFusionTakesTheQuantisationOutOfNormFedGemms) {
  auto spec = *hardware::resolve_cluster(cat(), "hgx-b200*1");
  const auto& gpu = **cat().gpu("b200");
  auto model = *models::load_model(cat(), "llama2-70b");
  auto cm = *compute::ComputeModel::for_gpu(gpu, cat());
  StepSetup st{.model = &model,
               .instance = {.tp = 1, .max_batch = 768, .max_tokens = 768},
               .weights = compute::DType::kNvfp4,
               .compute = &cm,
               .fabric = *serving_fabric(cat(), spec)};
  fitted().apply(st);
  st.runtime = workload::ServingRuntime::kTrtEngine;
  auto fused = StepModel::build(st);
  ASSERT_TRUE(fused) << fused.error().to_string();
  st.norm_quant_fusion = false;
  auto own = StepModel::build(st);
  ASSERT_TRUE(own) << own.error().to_string();
  for (int64_t b : {64, 256, 700}) {
    const StepTime a = fused->uniform(b, 500, 0, 0), c = own->uniform(b, 500, 0, 0);
    // Two passes per layer over a [b, hidden] activation: 1.76 us + 0.611 ps per element on
    // B200 (serving_step.cpp kFp4ActivationQuant, the fit to quant_scale_matrix.csv).
    const double pass = 1.76e-6 + 0.611e-12 * static_cast<double>(b) * 8192.0;
    EXPECT_NEAR(c.dense - a.dense, 80 * 2 * pass, 0.02 * 80 * 2 * pass) << b;
    EXPECT_DOUBLE_EQ(c.attention, a.attention) << b;
  }
  // FP8 GEMMs (static scales) do not depend on it.
  st.weights = compute::DType::kFp8;
  auto fp8_own = StepModel::build(st);
  st.norm_quant_fusion = true;
  auto fp8_fused = StepModel::build(st);
  ASSERT_TRUE(fp8_own && fp8_fused);
  EXPECT_DOUBLE_EQ(fp8_own->uniform(256, 500, 0, 0).total,
                   fp8_fused->uniform(256, 500, 0, 0).total);
}

// CUDA-graph padding (TensorRT-LLM cuda_graph_config, enable_padding): a decode-only iteration
// runs the smallest captured graph that holds its largest rank batch, every rank padded to it;
// an iteration with a prompt, or beyond the largest graph, runs as it is.
TEST(StepModel, DecodeIterationsPadToTheCapturedGraphBatch) {
  Fixture f = llama2_h200();
  bind(f);
  StepSetup st{.model = &f.model,
               .instance = f.setup.layout.instance,
               .weights = compute::DType::kFp8,
               .compute = &f.compute,
               .fabric = f.setup.fabric};
  fitted().apply(st);
  // Padding alone: no host time for the eager iterations (EagerIterationsWaitForTheHost).
  st.runtime = workload::ServingRuntime::kTrtEngine;
  auto plain = StepModel::build(st);
  ASSERT_TRUE(plain) << plain.error().to_string();
  st.instance.cuda_graph_batches = {64, 128};
  auto graphs = StepModel::build(st);
  ASSERT_TRUE(graphs) << graphs.error().to_string();
  auto batch = [](int64_t b, int64_t prompt) {
    RankBatch r{.decode = b, .decode_context = 1000.0 * static_cast<double>(b), .logits = b};
    if (prompt > 0) {
      r.prefill_tokens = prompt;
      r.prefill_seqs = 1;
      r.prefill_pairs = causal_pairs(prompt, 0);
      r.logits++;
    }
    return std::vector<RankBatch>{r};
  };
  // 100 sequences replay the 128 graph: 28 dummy sequences of one token of context each.
  auto padded = batch(128, 0);
  padded[0].decode_context = 100 * 1000.0 + 28;
  EXPECT_DOUBLE_EQ(graphs->time(batch(100, 0)).total, plain->time(padded).total);
  EXPECT_GT(graphs->time(batch(100, 0)).total, plain->time(batch(100, 0)).total);
  EXPECT_DOUBLE_EQ(graphs->time(batch(128, 0)).total, plain->time(batch(128, 0)).total);
  EXPECT_DOUBLE_EQ(graphs->time(batch(100, 512)).total, plain->time(batch(100, 512)).total);
  EXPECT_DOUBLE_EQ(graphs->time(batch(200, 0)).total, plain->time(batch(200, 0)).total);
}

// The host time of eager iterations (serving_step.h) and its default, fitted on TensorRT-LLM's
// CUDA-graph ablation (blog 3, "Runtime Optimizations": CUDA graphs +22% E2E for DeepSeek-R1 FP4
// throughput on 8 x B200, DEP8; reproduced with the max-throughput recipe of
// Best_perf_practice_on_DeepSeek-R1: batch 384 per rank, ISL / OSL 1K / 2K, graphs 1..384). The
// fit takes the recipe's decode iteration (every rank 384 sequences at the mean context 1,024 +
// 1,024): run eagerly it must take 1.22 x its graph replay.
TEST(StepModel, EagerIterationsWaitForTheHost) {
  auto spec = *hardware::resolve_cluster(cat(), "hgx-b200*1");
  const auto& gpu = **cat().gpu("b200");
  auto cm = *compute::ComputeModel::for_gpu(gpu, cat());
  auto r1 = *models::load_model(cat(), "deepseek-r1");
  StepSetup st{.model = &r1,
               .instance = {.tp = 8,
                            .ep = 8,
                            .dp_attention = true,
                            .max_batch = 384,
                            .max_tokens = 1536,
                            .chunked_prefill = false},
               .compute = &cm,
               .fabric = *serving_fabric(cat(), spec)};
  fitted().apply(st);
  auto graph = StepModel::build(st);
  ASSERT_TRUE(graph) << graph.error().to_string();
  // Only batches up to 128 captured: 384 runs eagerly.
  st.instance.cuda_graph_batches = {128};
  auto eager = StepModel::build(st);
  ASSERT_TRUE(eager) << eager.error().to_string();
  st.runtime = workload::ServingRuntime::kTrtEngine;
  auto engine = StepModel::build(st);
  ASSERT_TRUE(engine) << engine.error().to_string();
  RankBatch d{.decode = 384, .decode_context = 384 * 2048.0, .logits = 384};
  const std::vector<RankBatch> decode(8, d);
  const StepTime g = graph->time(decode);
  const StepTime e = eager->time(decode);
  EXPECT_FALSE(g.eager);
  EXPECT_TRUE(e.eager);
  EXPECT_EQ(g.host, 0.0);
  // The host constant is fitted to this ratio by `calibrate --builtin serving` on a 0.01 ms grid
  // (catalog/calibration/serving.yaml: 1.10 ms reads 1.219); the tolerance stays at 0.012 from
  // before that refit (1.11 ms, fitted with the Python-fitted collective lines, read 1.230).
  EXPECT_NEAR(e.total / g.total, 1.22, 0.012) << "graph " << g.total << " s, eager " << e.total;
  EXPECT_NEAR(e.host, e.total - g.total, 1e-12);
  // The C++ engine issues no kernels from Python: eager costs what the GPU does, plus the
  // executor's fixed time between iterations.
  const double engine_host = fitted().engine_host_per_iteration.base();
  EXPECT_NEAR(engine->time(decode).total, g.total + engine_host, 1e-12);
  EXPECT_NEAR(engine->time(decode).host, engine_host, 1e-12);
  // A prompt on one rank makes the whole iteration eager (the ranks meet in every MoE layer).
  std::vector<RankBatch> mixed = decode;
  mixed[3].prefill_tokens = 1024;
  mixed[3].prefill_seqs = 1;
  mixed[3].prefill_pairs = causal_pairs(1024, 0);
  mixed[3].logits++;
  const StepTime m = graph->time(mixed);
  EXPECT_TRUE(m.eager);
  EXPECT_GE(m.total, e.total - 1e-12);
  // A long enough iteration hides the host: issuing is faster than running.
  std::vector<RankBatch> prompts(8, RankBatch{.prefill_tokens = 16384,
                                              .prefill_seqs = 16,
                                              .prefill_pairs = 16 * causal_pairs(1024, 0),
                                              .logits = 16});
  const StepTime p = graph->time(prompts);
  EXPECT_TRUE(p.eager);
  EXPECT_EQ(p.host, 0.0);
  EXPECT_NEAR(p.total + engine_host, engine->time(prompts).total, 1e-12);
}

// The C++ executor's host time between iterations (StepCalibration::engine_host_per_iteration_s)
// lengthens every iteration of a TensorRT engine by exactly that much, decode or prompt, and no
// iteration of the PyTorch runtime (whose host time is the eager issue and the front end).
TEST(StepModel, EngineHostTimeLengthensEveryEngineIterationOnly) {
  const auto& gpu = **cat().gpu("b200");
  auto cm = *compute::ComputeModel::for_gpu(gpu, cat());
  auto l2 = *models::load_model(cat(), "llama2-70b");
  StepSetup st{.model = &l2,
               .instance = {.tp = 1, .max_batch = 768, .max_tokens = 768},
               .weights = compute::DType::kNvfp4,
               .compute = &cm,
               .fabric = *serving_fabric(cat(), *hardware::resolve_cluster(cat(), "hgx-b200*1"))};
  fitted().apply(st);
  st.calibration.engine_host_per_iteration_s = 0;
  st.runtime = workload::ServingRuntime::kTrtEngine;
  auto bare = *StepModel::build(st);
  st.calibration.engine_host_per_iteration_s = 4.5e-3;
  auto engine = *StepModel::build(st);
  st.runtime = workload::ServingRuntime::kPytorch;
  auto torch = *StepModel::build(st);
  st.calibration.engine_host_per_iteration_s = 0;
  auto torch_bare = *StepModel::build(st);
  const std::vector<RankBatch> decode{{.decode = 64, .decode_context = 64 * 900.0, .logits = 64}};
  const std::vector<RankBatch> mixed{{.decode = 60,
                                      .decode_context = 60 * 900.0,
                                      .prefill_tokens = 700,
                                      .prefill_seqs = 1,
                                      .prefill_pairs = causal_pairs(700, 0),
                                      .logits = 61}};
  for (const auto* b : {&decode, &mixed}) {
    const StepTime e = engine.time(*b), n = bare.time(*b);
    EXPECT_NEAR(e.total - n.total, 4.5e-3, 1e-12);
    EXPECT_NEAR(e.host - n.host, 4.5e-3, 1e-12);
    EXPECT_DOUBLE_EQ(e.dense, n.dense);
    EXPECT_DOUBLE_EQ(torch.time(*b).total, torch_bare.time(*b).total);
  }
  EXPECT_GT(engine.time(decode).total, torch.time(decode).total);
}

TEST(StepModel, WideExpertParallelMeetsInTheAllToAll) {
  auto spec = *hardware::resolve_cluster(cat(), "gb300-nvl72*1");
  const auto& gpu = **cat().gpu("gb300");
  auto cm = *compute::ComputeModel::for_gpu(gpu, cat());
  auto r1 = *models::load_model(cat(), "deepseek-r1");
  StepSetup st{.model = &r1,
               .instance = {.tp = 72, .ep = 72, .dp_attention = true},
               .compute = &cm,
               .fabric = *serving_fabric(cat(), spec)};
  fitted().apply(st);
  auto sm = StepModel::build(st);
  ASSERT_TRUE(sm) << sm.error().to_string();
  std::vector<RankBatch> ranks(72);
  for (auto& r : ranks) {
    r.decode = 64;
    r.decode_context = 64 * 2000.0;
    r.logits = 64;
  }
  const StepTime even = sm->time(ranks);
  EXPECT_GT(even.comm, 0);
  EXPECT_GT(even.moe, 0);
  // One straggling rank sets the pace of all.
  ranks[5].decode = 256;
  ranks[5].decode_context = 256 * 2000.0;
  EXPECT_GT(sm->time(ranks).total, even.total);
}

// Two-batch overlap hides the DeepEP exchange of one micro-batch behind the other's computation:
// never slower than without it, and a large prefill batch on 4 x 8 H100 (EP32) gains most of its
// exchange back, less the SMs DeepEP's normal kernels hold.
TEST(StepModel, TwoBatchOverlapHidesTheExchange) {
  auto v3 = *models::load_model(cat(), "deepseek-v3");
  auto spec = *hardware::resolve_cluster(cat(), "hgx-h100*4");
  const auto& gpu = **cat().gpu("h100");
  auto cm = *compute::ComputeModel::for_gpu(gpu, cat());
  auto build = [&](bool tbo) {
    StepSetup st{.model = &v3,
                 .instance = {.tp = 32,
                              .ep = 32,
                              .dp_attention = true,
                              .max_batch = 256,
                              .max_tokens = 16384,
                              .two_batch_overlap = tbo},
                 .weights = compute::DType::kFp8Block,
                 .kv_bytes = 2.0,
                 .compute = &cm,
                 .fabric = *serving_fabric(cat(), spec)};
    fitted().apply(st);
    auto sm = StepModel::build(st);
    EXPECT_TRUE(sm) << sm.error().to_string();
    return *sm;
  };
  const StepModel plain = build(false), tbo = build(true);
  RankBatch prefill{.prefill_tokens = 16384,
                    .prefill_seqs = 4,
                    .prefill_pairs = 4 * causal_pairs(4096, 0),
                    .logits = 4};
  RankBatch decode{.decode = 256, .decode_context = 256 * 2000.0, .logits = 256};
  RankBatch one{.decode = 1, .decode_context = 2000.0, .logits = 1};
  for (const RankBatch& r : {prefill, decode, one}) {
    std::vector<RankBatch> ranks(32, r);
    const StepTime a = plain.time(ranks), b = tbo.time(ranks);
    EXPECT_LE(b.total, a.total);
    // The overlap cannot beat the computation alone nor the exchange alone.
    EXPECT_GE(b.total, a.total - a.comm - 1e-12);
  }
  std::vector<RankBatch> ranks(32, prefill);
  const StepTime a = plain.time(ranks), b = tbo.time(ranks);
  EXPECT_LT(b.comm, 0.5 * a.comm);
  EXPECT_GT(b.comm, 0);  // the SMs the normal kernels take from the computation
  // A GPU whose SM count the catalog lacks cannot run the overlap with DeepEP's normal kernels.
  StepSetup st{.model = &v3,
               .instance = {.tp = 32, .ep = 32, .dp_attention = true, .two_batch_overlap = true},
               .compute = &cm,
               .fabric = *serving_fabric(cat(), spec)};
  fitted().apply(st);
  st.fabric.sms = 0;
  auto refused = StepModel::build(st);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("gpu key `sms`"), std::string::npos);
}

TEST(StepModel, MoeExchangeUsesTheKernelTheFrameworkSelects) {
  auto r1 = *models::load_model(cat(), "deepseek-r1");
  auto step = [&](const char* cluster, int ep) {
    auto spec = *hardware::resolve_cluster(cat(), cluster);
    const auto& sys = **cat().system(spec.system);
    const auto& gpu = **cat().gpu(sys.gpu);
    auto cm = *compute::ComputeModel::for_gpu(gpu, cat());
    StepSetup st{.model = &r1,
                 .instance = {.tp = ep,
                              .ep = ep,
                              .dp_attention = true,
                              .max_batch = 256,
                              .max_tokens = 4096},
                 .compute = &cm,
                 .fabric = *serving_fabric(cat(), spec)};
    fitted().apply(st);
    auto sm = StepModel::build(st);
    EXPECT_TRUE(sm) << cluster << ": " << (sm ? "" : sm.error().to_string());
    return std::pair{sm->moe_comm(),
                     std::pair{sm->moe_comm_s(256, false), sm->moe_comm_s(4096, true)}};
  };
  // EP8 <= top-8: all-gather + reduce-scatter (TensorRT-LLM skips the all-to-all).
  auto [k8, t8] = step("hgx-b200*1", 8);
  EXPECT_EQ(k8, MoeComm::kAllGather);
  // EP16 inside an NVL72 rack: the one-sided NVLink kernel; across HGX nodes: DeepEP.
  auto [k16, t16] = step("gb300-nvl72*1", 16);
  EXPECT_EQ(k16, MoeComm::kNvlinkOneSided);
  auto [kib, tib] = step("hgx-h200*2", 16);
  EXPECT_EQ(kib, MoeComm::kDeepEp);
  EXPECT_STREQ(moe_comm_name(kib, false), "deepep-ll");
  EXPECT_STREQ(moe_comm_name(kib, true), "deepep-normal");
  for (auto [dec, pre] : {t8, t16, tib}) {
    EXPECT_GT(dec, 0);
    EXPECT_GT(pre, dec);  // more tokens take longer
  }
  // Over 400G NICs the same tokens take longer than over one rack's NVLink.
  EXPECT_GT(tib.first, t16.first);
}

TEST(ServingSim, AttentionDpAssignmentBalancesTheRanks) {
  auto spec = *hardware::resolve_cluster(cat(), "gb300-nvl72*1");
  const auto& gpu = **cat().gpu("gb300");
  Fixture f{
      *models::load_model(cat(), "deepseek-r1"), *compute::ComputeModel::for_gpu(gpu, cat()), {}};
  fitted().apply(f.setup);
  auto& s = f.setup;
  s.fabric = *serving_fabric(cat(), spec);
  s.memory_capacity = gpu.hbm_usable;
  s.dataset = *workload::dataset_for_model(cat(), "deepseek-r1");
  s.layout.instance = {.tp = 8,
                       .ep = 8,
                       .dp_attention = true,
                       .max_batch = 256,
                       .max_tokens = 4096,
                       .chunked_prefill = false};
  s.layout.replicas = 1;
  s.scenario = workload::ServingScenario::kServer;
  s.rate_qps = 2;
  s.requests = 600;
  bind(f);
  auto balanced = simulate_serving(s);
  ASSERT_TRUE(balanced) << balanced.error().to_string();
  s.layout.adp_balance = false;
  auto fill = simulate_serving(s);
  ASSERT_TRUE(fill) << fill.error().to_string();
  // Filling rank 0 first stalls all eight ranks behind its batch: every sequence is slower.
  EXPECT_LT(balanced->tpot_s.p50, fill->tpot_s.p50);
}

// TensorRT-LLM's attention-DP balance (attention_dp_config timeout_iters / batching_wait_iters,
// blog 10): prompts wait until every rank has one, so fewer iterations carry prompts and each
// prompt waits longer for its first token. The counters cycle as TensorRT-LLM's do.
TEST(ServingSim, AttentionDpBalanceHoldsPromptsUntilEveryRankHasOne) {
  auto spec = *hardware::resolve_cluster(cat(), "gb300-nvl72*1");
  const auto& gpu = **cat().gpu("gb300");
  Fixture f{
      *models::load_model(cat(), "deepseek-r1"), *compute::ComputeModel::for_gpu(gpu, cat()), {}};
  fitted().apply(f.setup);
  auto& s = f.setup;
  s.fabric = *serving_fabric(cat(), spec);
  s.memory_capacity = gpu.hbm_usable;
  s.dataset = *workload::dataset_for_model(cat(), "deepseek-r1");
  s.layout.instance = {.tp = 8,
                       .ep = 8,
                       .dp_attention = true,
                       .max_batch = 256,
                       .max_tokens = 4096,
                       .chunked_prefill = false};
  s.layout.replicas = 1;
  s.scenario = workload::ServingScenario::kServer;
  s.rate_qps = 2;
  s.requests = 600;
  bind(f);
  auto off = simulate_serving(s);
  ASSERT_TRUE(off) << off.error().to_string();
  EXPECT_EQ(off->adp_held_iterations, 0);
  s.layout.instance.adp_timeout_iters = 9;
  s.layout.instance.adp_batching_wait_iters = 3;
  auto on = simulate_serving(s);
  ASSERT_TRUE(on) << on.error().to_string();
  EXPECT_GT(on->adp_held_iterations, 0);
  EXPECT_LT(on->prompt_iterations, off->prompt_iterations);
  EXPECT_GT(on->ttft_s.p50, off->ttft_s.p50);
  EXPECT_EQ(on->requests, off->requests);
  // Without attention DP the balance is a layout error, not ignored.
  s.layout.instance.dp_attention = false;
  auto bad = simulate_serving(s);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("needs dp_attention"), std::string::npos)
      << bad.error().message;
}

TEST(ServingSim, OfflineCompletesEveryRequestDeterministically) {
  Fixture f = llama2_h200(8000);
  bind(f);
  auto a = simulate_serving(f.setup);
  ASSERT_TRUE(a) << a.error().to_string();
  auto b = simulate_serving(f.setup);
  ASSERT_TRUE(b);
  EXPECT_EQ(a->requests, 8000);
  EXPECT_EQ(a->symmetry, 8);
  EXPECT_DOUBLE_EQ(a->tokens_per_s, b->tokens_per_s);
  EXPECT_DOUBLE_EQ(a->ttft_s.p99, b->ttft_s.p99);
  EXPECT_GT(a->tokens_per_s_per_gpu, 500);
  EXPECT_LE(a->ttft_s.p50, a->ttft_s.p99);
  EXPECT_LE(a->tpot_s.p50, a->tpot_s.p99);
  EXPECT_GT(a->kv_utilization_peak, 0);
  EXPECT_LE(a->kv_utilization_peak, 1.0);
  EXPECT_GT(a->mean_decode_batch, 1);
  // LoadGen: throughput = output tokens / time to the last completion.
  EXPECT_NEAR(a->tokens_per_s, a->mean_output_tokens * 8000 / a->duration_s,
              1e-6 * a->tokens_per_s);
  // The steady-state estimate brackets the simulation (it has no ramp and no tail).
  auto e = estimate_serving(f.setup, length_moments(f.setup.dataset));
  ASSERT_TRUE(e);
  EXPECT_GT(e->tokens_per_s_per_gpu, 0.7 * a->tokens_per_s_per_gpu);
  EXPECT_LT(e->tokens_per_s_per_gpu, 2.0 * a->tokens_per_s_per_gpu);
}

TEST(ServingSim, ServerLatencyGrowsWithTheRate) {
  Fixture f = llama2_h200(2000);
  bind(f);
  f.setup.scenario = workload::ServingScenario::kServer;
  f.setup.limits = f.setup.dataset.limits(f.setup.scenario);
  f.setup.rate_qps = 20;
  auto low = simulate_serving(f.setup);
  ASSERT_TRUE(low) << low.error().to_string();
  f.setup.rate_qps = 400;
  auto high = simulate_serving(f.setup);
  ASSERT_TRUE(high);
  EXPECT_LT(low->ttft_s.p99, high->ttft_s.p99);
  EXPECT_LT(low->tpot_s.p50, high->tpot_s.p50);
  EXPECT_TRUE(low->meets_limits);
  EXPECT_FALSE(high->meets_limits);
  EXPECT_NE(high->limit_note.find("p99"), std::string::npos) << high->limit_note;
  // Requests arrive over time: at a low rate they arrive over about requests / rate and the run
  // lasts that plus the last requests' latency.
  EXPECT_NEAR(low->arrival_window_s, 2000 / 20.0, 10.0);
  EXPECT_GT(low->duration_s, low->arrival_window_s);
  EXPECT_LT(low->duration_s, low->arrival_window_s + 60);
}

// The streaming front end (serving_sim.h): with the PyTorch runtime every streamed response
// costs host time in the instance's front end, handled first come first served. Near its
// capacity the queue delays first tokens far more than it moves TPOT (an average over a
// sample's tokens); stream_interval N hands over one response per N iterations; offline runs and
// TensorRT engines do not pay it.
TEST(ServingSim, StreamingFrontEndQueuesResponses) {
  Fixture f = llama2_h200(2000);
  bind(f);
  auto& s = f.setup;
  s.scenario = workload::ServingScenario::kServer;
  s.limits = s.dataset.limits(s.scenario);
  s.rate_qps = 60;  // ~16,000 output tokens/s over 8 instances: ~2,000 per instance
  s.calibration.stream_host_per_response_s = 0;
  auto free_run = simulate_serving(s);
  ASSERT_TRUE(free_run) << free_run.error().to_string();
  // 440 us per response: one instance's front end handles ~2,270 responses/s, so at ~2,000
  // tokens/s per instance it is ~88% busy (420 us, ~85%, left the p99 TTFT 47 ms above the free
  // run's once the eager issue time was refitted to 1.10 ms: too near the knee to test it).
  s.calibration.stream_host_per_response_s = 440e-6;
  auto loaded = simulate_serving(s);
  ASSERT_TRUE(loaded);
  EXPECT_GT(loaded->ttft_s.p99, free_run->ttft_s.p99 + 0.05);
  EXPECT_LT(loaded->tpot_s.p50, 1.2 * free_run->tpot_s.p50);
  // Every token still arrives: the same output, a little later.
  EXPECT_NEAR(loaded->tokens_per_s, free_run->tokens_per_s, 0.05 * free_run->tokens_per_s);
  // One response every 8 iterations: the front end keeps up again.
  s.layout.stream_interval = 8;
  auto every8 = simulate_serving(s);
  ASSERT_TRUE(every8);
  EXPECT_LT(every8->ttft_s.p99, loaded->ttft_s.p99);
  EXPECT_LT(every8->ttft_s.p99, free_run->ttft_s.p99 + 0.05);
  // TensorRT engines under the C++ executor, and offline runs (no streaming), do not pay it.
  s.layout.stream_interval = 1;
  s.layout.runtime = workload::ServingRuntime::kTrtEngine;
  auto engine = simulate_serving(s);
  ASSERT_TRUE(engine);
  s.calibration.stream_host_per_response_s = 0;
  auto engine_free = simulate_serving(s);
  ASSERT_TRUE(engine_free);
  EXPECT_DOUBLE_EQ(engine->ttft_s.p99, engine_free->ttft_s.p99);
  s.layout.runtime = workload::ServingRuntime::kPytorch;
  s.scenario = workload::ServingScenario::kOffline;
  s.limits.reset();
  s.rate_qps = 0;
  auto offline_free = simulate_serving(s);
  s.calibration.stream_host_per_response_s = 420e-6;
  auto offline = simulate_serving(s);
  ASSERT_TRUE(offline && offline_free);
  EXPECT_DOUBLE_EQ(offline->tokens_per_s, offline_free->tokens_per_s);
  // The steady-state estimate caps an instance at the front end's capacity.
  s.scenario = workload::ServingScenario::kServer;
  s.limits = s.dataset.limits(s.scenario);
  const auto lm = length_moments(s.dataset);
  auto capped = estimate_serving(s, lm);
  ASSERT_TRUE(capped);
  EXPECT_LE(capped->tokens_per_s_per_gpu * 8, 8 / 420e-6 * 1.0001);
}

// Server / interactive dispatch (workload::ServingDispatch): the least-loaded harness sends
// each arrival to the instance with the fewest requests in flight, so the shares follow the
// instances' load; round robin (NVIDIA's harness for Interactive) deals them in turn, whatever
// the load: 2,000 arrivals over 8 instances are 250 each.
TEST(ServingSim, RoundRobinDispatchDealsArrivalsInTurn) {
  Fixture f = llama2_h200(2000);
  bind(f);
  auto& s = f.setup;
  s.scenario = workload::ServingScenario::kInteractive;
  s.limits = s.dataset.limits(s.scenario);
  s.rate_qps = 60;
  // The default (kAuto) is what NVIDIA's harness does for the scenario: round robin here.
  EXPECT_EQ(s.layout.dispatch, workload::ServingDispatch::kAuto);
  auto by_default = simulate_serving(s);
  ASSERT_TRUE(by_default) << by_default.error().to_string();
  s.layout.dispatch = workload::ServingDispatch::kLeastLoaded;
  auto least = simulate_serving(s);
  ASSERT_TRUE(least) << least.error().to_string();
  ASSERT_EQ(least->dispatched.size(), 8u);
  int64_t total = 0;
  for (int64_t n : least->dispatched) total += n;
  EXPECT_EQ(total, 2000);
  const auto [lo, hi] = std::minmax_element(least->dispatched.begin(), least->dispatched.end());
  EXPECT_GT(*hi - *lo, 0) << "least loaded follows the load, not the turn";
  s.layout.dispatch = workload::ServingDispatch::kRoundRobin;
  auto rr = simulate_serving(s);
  ASSERT_TRUE(rr) << rr.error().to_string();
  ASSERT_EQ(rr->dispatched.size(), 8u);
  for (int64_t n : rr->dispatched) EXPECT_EQ(n, 250);
  EXPECT_NE(rr->ttft_s.p99, least->ttft_s.p99);
  EXPECT_EQ(by_default->dispatched, rr->dispatched);
  EXPECT_EQ(by_default->ttft_s.p99, rr->ttft_s.p99);
  // Server: the default is least loaded, as the harness's load balancing.
  EXPECT_EQ(workload::resolve_dispatch(workload::ServingDispatch::kAuto,
                                       workload::ServingScenario::kServer),
            workload::ServingDispatch::kLeastLoaded);
  s.scenario = workload::ServingScenario::kServer;
  s.limits = s.dataset.limits(s.scenario);
  s.layout.dispatch = workload::ServingDispatch::kAuto;
  auto server_default = simulate_serving(s);
  ASSERT_TRUE(server_default) << server_default.error().to_string();
  s.layout.dispatch = workload::ServingDispatch::kLeastLoaded;
  auto server_least = simulate_serving(s);
  ASSERT_TRUE(server_least) << server_least.error().to_string();
  EXPECT_EQ(server_default->dispatched, server_least->dispatched);
}

TEST(ServingSim, RateSearchReportsBestEffortWhenNothingMeetsTheLimits) {
  Fixture f = llama2_h200(4000);
  bind(f);
  f.setup.scenario = workload::ServingScenario::kServer;
  f.setup.limits = workload::LatencyLimits{base::seconds(0.001), base::seconds(0.001)};
  auto r = find_max_rate(f.setup, 8);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_FALSE(r->found);
  EXPECT_FALSE(r->probes.empty());
  EXPECT_GT(r->result.ttft_s.p99, 0);
  f.setup.limits = f.setup.dataset.limits(workload::ServingScenario::kServer);
  auto ok = find_max_rate(f.setup, 10);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->found);
  EXPECT_TRUE(ok->result.meets_limits);
  EXPECT_GT(ok->rate_qps, 1);
}

// Run length (serving_sim.h): a run too short to load the GPUs says so instead of passing off
// its drain as throughput or its empty queues as compliance.
TEST(ServingSim, ShortRunsNeverReachASteadyState) {
  // Offline: 1,000 requests on 8 instances of batch 256 are all admitted at once.
  Fixture f = llama2_h200(1000);
  bind(f);
  auto few = simulate_serving(f.setup);
  ASSERT_TRUE(few) << few.error().to_string();
  EXPECT_FALSE(few->steady);
  EXPECT_GT(few->steady_min_requests, 1000);
  EXPECT_NE(few->steady_note.find("too few for a steady state"), std::string::npos)
      << few->steady_note;
  EXPECT_FALSE(few->loadgen_length);
  f.setup.requests = 8000;
  auto enough = simulate_serving(f.setup);
  ASSERT_TRUE(enough);
  EXPECT_TRUE(enough->steady) << enough->steady_note;
  // The loaded window runs faster than the whole run with its drain.
  EXPECT_GT(enough->steady_tokens_per_s, enough->tokens_per_s);
  EXPECT_LT(enough->steady_tokens_per_s, 2.0 * enough->tokens_per_s);
  // Server: 400 requests at the rates the search probes arrive within seconds, far less than a
  // request's latency; the search refuses to call such a rate compliant.
  f.setup.requests = 400;
  f.setup.scenario = workload::ServingScenario::kServer;
  f.setup.limits = f.setup.dataset.limits(f.setup.scenario);
  auto r = find_max_rate(f.setup, 8);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("too few for a steady state"), std::string::npos)
      << r.error().message;
}

// A rate search stops a probe once its p99 limits are provably missed, and finds the same rate.
TEST(ServingSim, EarlyStopKeepsTheRateSearchResult) {
  Fixture f = llama2_h200(6000);
  bind(f);
  f.setup.scenario = workload::ServingScenario::kServer;
  f.setup.limits = f.setup.dataset.limits(f.setup.scenario);
  f.setup.rate_qps = 400;  // far beyond what 8 H200s serve
  auto full = simulate_serving(f.setup);
  ASSERT_TRUE(full);
  f.setup.stop_when_limits_fail = true;
  auto stopped = simulate_serving(f.setup);
  ASSERT_TRUE(stopped);
  EXPECT_FALSE(full->meets_limits);
  EXPECT_FALSE(stopped->meets_limits);
  EXPECT_TRUE(stopped->stopped_early);
  EXPECT_LT(stopped->events, full->events / 2);
}

// A rate search pauses compliant probes once their verdict is in and continues only the best
// one to its end: its result is the full run's at that rate.
TEST(ServingSim, PausedProbesEndAsTheFullRun) {
  Fixture f = llama2_h200(0);  // LoadGen's 600 s of arrivals (pausing needs its run length)
  bind(f);
  f.setup.layout.instance = {.tp = 2, .max_batch = 256, .max_tokens = 2048};
  f.setup.layout.replicas = 4;
  f.setup.scenario = workload::ServingScenario::kServer;
  f.setup.limits = f.setup.dataset.limits(f.setup.scenario);
  auto r = find_max_rate(f.setup, {.max_probes = 4, .grow = 1.1});
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_TRUE(r->found);
  EXPECT_GT(r->paused, 0);
  ServingSetup at = f.setup;
  at.rate_qps = r->rate_qps;
  auto full = simulate_serving(at);
  ASSERT_TRUE(full) << full.error().to_string();
  EXPECT_TRUE(full->meets_limits);
  EXPECT_EQ(full->iterations, r->result.iterations);
  EXPECT_DOUBLE_EQ(full->tokens_per_s, r->result.tokens_per_s);
  EXPECT_DOUBLE_EQ(full->ttft_s.p99, r->result.ttft_s.p99);
  EXPECT_DOUBLE_EQ(full->tpot_s.p99, r->result.tpot_s.p99);
  for (const auto& p : r->probes) {
    if (p.rate_qps == r->rate_qps) {
      EXPECT_DOUBLE_EQ(p.tokens_per_s_per_gpu, full->tokens_per_s_per_gpu);
    }
  }
}

TEST(ServingSim, SmallKvCachePreemptsOrWaits) {
  Fixture f = llama2_h200(400);
  bind(f);
  // One GPU of 80 GB: FP8 weights (~70 GB) leave ~6 GB of KV, far less than 256 sequences need.
  f.setup.layout.replicas = 1;
  f.setup.memory_capacity = base::gigabytes(80);
  auto pre = simulate_serving(f.setup);
  ASSERT_TRUE(pre) << pre.error().to_string();
  f.setup.layout.kv_policy = workload::KvPolicy::kReserve;
  auto res = simulate_serving(f.setup);
  ASSERT_TRUE(res) << res.error().to_string();
  EXPECT_EQ(res->preemptions, 0);
  // Reserving the maximum output admits fewer sequences than admitting by the prompt.
  EXPECT_LT(res->mean_decode_batch, pre->mean_decode_batch);
}

TEST(ServingSim, DisaggregatedPoolsMoveTheKvCache) {
  Fixture f = llama2_h200(800);
  bind(f);
  f.setup.layout.disaggregated = true;
  f.setup.layout.prefill = {.tp = 1, .max_batch = 8, .max_tokens = 4096};
  f.setup.layout.prefill_replicas = 2;
  f.setup.layout.instance = {.tp = 1, .max_batch = 256, .max_tokens = 512};
  f.setup.layout.replicas = 6;
  auto r = simulate_serving(f.setup);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->symmetry, 2);
  EXPECT_EQ(r->simulated_instances, 4);
  EXPECT_GT(r->tokens_per_s, 0);
  EXPECT_EQ(r->requests, 800);
}

// Disaggregated TTFT = prefill + the wait for the sender's link + the KV transfer + the wait for
// a decode slot: the first token reaches the user from the decode side. A slow link shows in
// TTFT by at least one transfer of a short prompt, and queues the transfers of one rank.
TEST(ServingSim, DisaggregatedTtftCountsTheKvTransfer) {
  Fixture f = llama2_h200(300);
  bind(f);
  f.setup.layout.disaggregated = true;
  f.setup.layout.prefill = {.tp = 1, .max_batch = 8, .max_tokens = 4096};
  f.setup.layout.prefill_replicas = 2;
  f.setup.layout.instance = {.tp = 1, .max_batch = 256, .max_tokens = 512};
  f.setup.layout.replicas = 6;
  f.setup.scenario = workload::ServingScenario::kServer;
  f.setup.rate_qps = 4;
  auto fast = simulate_serving(f.setup);
  ASSERT_TRUE(fast) << fast.error().to_string();
  // Llama 2 70B, FP8 KV: 2 x 8 x 128 x 80 = 160 KiB per token; at 0.5 GB/s a 100-token prompt
  // takes 33 ms to move.
  f.setup.fabric.nvlink = base::gigabytes_per_s(0.5);
  auto slow = simulate_serving(f.setup);
  ASSERT_TRUE(slow) << slow.error().to_string();
  EXPECT_GT(slow->ttft_s.p50, fast->ttft_s.p50 + 0.03);
}

// TensorRT-LLM's first-come-first-served chunked prefill (MicroBatchScheduler): a chunk cut
// short by the token budget is rounded down to the chunk unit (the KV block size), a rest that
// fits is taken whole. One 200-token prompt with a 100-token budget: 100 + 100 without
// alignment, 96 + 96 + 8 with 32-token blocks; 128 + 72 with 128-token blocks and a budget of
// 160.
TEST(ServingSim, ChunkedPrefillAlignsChunksToTheKvBlock) {
  Fixture f = llama2_h200(1);
  bind(f);
  f.setup.dataset = workload::fixed_dataset(200, 2);
  f.setup.layout.replicas = 1;
  f.setup.layout.instance.max_tokens = 100;
  f.setup.layout.instance.max_batch = 1;
  auto prompt_iterations = [&](int unit, int64_t budget) {
    f.setup.layout.instance.chunk_unit = unit;
    f.setup.layout.instance.max_tokens = budget;
    auto r = simulate_serving(f.setup);
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    return r ? r->prompt_iterations : -1;
  };
  EXPECT_EQ(prompt_iterations(1, 100), 2);
  EXPECT_EQ(prompt_iterations(32, 100), 3);
  EXPECT_EQ(prompt_iterations(128, 160), 2);
  EXPECT_EQ(prompt_iterations(1, 200), 1);
  EXPECT_EQ(prompt_iterations(32, 200), 1);  // the whole prompt fits: no rounding
  f.setup.layout.instance.chunk_unit = 0;
  EXPECT_FALSE(workload::validate(f.setup.layout, f.model, 1));
}

// Pipeline parallelism as TensorRT-LLM runs it (trtGptModelInflightBatching.cpp): pp
// micro-batches in flight, each stage running one at a time, all drawn from one request pool
// (a micro-batch takes the requests not in flight in another). Two prompts of four chunks each:
// the first micro-batch takes one (the token budget holds one chunk), the second the other, and
// their passes overlap on the two stages; slots that each admit and chunk their own prompts, as
// the model had them, ran all eight chunks in the first slot, one after the other.
TEST(ServingSim, PipelineMicroBatchesShareTheStagesAndThePool) {
  Fixture f = llama2_h200(2);
  bind(f);
  f.setup.dataset = workload::fixed_dataset(400, 2);
  f.setup.layout.replicas = 1;
  f.setup.layout.instance = {.tp = 1, .pp = 2, .max_batch = 4, .max_tokens = 100};
  f.setup.trace_iterations = 100;
  auto r = simulate_serving(f.setup);
  ASSERT_TRUE(r) << r.error().to_string();
  std::vector<IterationRecord> chunks;
  for (const auto& it : r->trace) {
    if (it.prefill_tokens > 0) chunks.push_back(it);
  }
  ASSERT_EQ(chunks.size(), 8u);
  int second = 0;
  double serial = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    second += chunks[i].group;
    serial += chunks[i].duration_s;
    // The micro-batches take turns: each is scheduled while the other is in the pipeline.
    if (i > 0) {
      EXPECT_NE(chunks[i].group, chunks[i - 1].group) << i;
    }
  }
  EXPECT_EQ(second, 4);
  // Both first tokens come after about half the passes' time (four passes and a stage).
  EXPECT_LT(r->ttft_s.max, 0.65 * serial);
  EXPECT_GT(r->ttft_s.max, 0.5 * serial);
}

// One prompt of eight chunks on TP1 PP2. As in the TensorRT-LLM of MLPerf v5.0 / v5.1 a scheduled
// chunk keeps its request in flight, so the prompt advances one chunk per pass, all in one
// micro-batch; with pp_chunk_overlap (PR #9308) its next chunk goes into the next micro-batch
// while the previous one is on the second stage, so the chunks alternate and the first token
// comes after about 4.5 passes instead of 8.
TEST(ServingSim, PipelineChunkOverlapSendsTheNextChunkIntoTheNextMicroBatch) {
  Fixture f = llama2_h200(1);
  bind(f);
  f.setup.dataset = workload::fixed_dataset(800, 2);
  f.setup.layout.replicas = 1;
  f.setup.layout.instance = {.tp = 1, .pp = 2, .max_batch = 4, .max_tokens = 100};
  f.setup.trace_iterations = 100;
  auto run = [&](bool overlap, int& second, double& serial) {
    f.setup.layout.instance.pp_chunk_overlap = overlap;
    auto r = simulate_serving(f.setup);
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    second = 0;
    serial = 0;
    int chunks = 0;
    for (const auto& it : r->trace) {
      if (it.prefill_tokens == 0) continue;
      chunks++;
      second += it.group;
      serial += it.duration_s;
    }
    EXPECT_EQ(chunks, 8);
    return r->ttft_s.max;
  };
  int second = 0;
  double serial = 0;
  const double in_flight = run(false, second, serial);
  EXPECT_TRUE(second == 0 || second == 8) << second;  // one micro-batch runs them all
  EXPECT_NEAR(in_flight, serial, 0.01 * serial);
  const double overlapped = run(true, second, serial);
  EXPECT_EQ(second, 4);
  EXPECT_LT(overlapped, 0.65 * serial);
  EXPECT_GT(overlapped, 0.5 * serial);
}

TEST(ServingSim, MtpSpeedsUpEachUser) {
  auto spec = *hardware::resolve_cluster(cat(), "hgx-b200*1");
  const auto& gpu = **cat().gpu("b200");
  auto cm = *compute::ComputeModel::for_gpu(gpu, cat());
  auto r1 = *models::load_model(cat(), "deepseek-r1");
  ServingSetup s;
  fitted().apply(s);
  s.model = &r1;
  s.compute = &cm;
  s.fabric = *serving_fabric(cat(), spec);
  s.memory_capacity = gpu.hbm_usable;
  s.dataset = workload::fixed_dataset(1000, 500);
  s.layout.instance = {.tp = 8, .ep = 8, .dp_attention = true, .max_batch = 8, .max_tokens = 2048};
  s.requests = 64;
  auto plain = simulate_serving(s);
  ASSERT_TRUE(plain) << plain.error().to_string();
  s.layout.mtp = 3;
  s.layout.mtp_acceptance = 0.7;
  auto mtp = simulate_serving(s);
  ASSERT_TRUE(mtp) << mtp.error().to_string();
  EXPECT_GT(mtp->tokens_per_s_per_user, 1.3 * plain->tokens_per_s_per_user);
}

TEST(ServingSim, BadInputIsAnError) {
  Fixture f = llama2_h200();
  bind(f);
  f.setup.layout.replicas = 4;  // 4 GPUs used of a layout that claims 8
  f.setup.layout.instance.tp = 1;
  // validate() compares with the layout's own count, so give the deployment a mismatch via tp.
  f.setup.layout.instance.tp = 3;
  auto r = simulate_serving(f.setup);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("tp = 3"), std::string::npos) << r.error().message;
  Fixture g = llama2_h200();
  bind(g);
  g.setup.layout.weights = compute::DType::kBf16;
  g.setup.memory_capacity = base::gigabytes(80);
  auto big = simulate_serving(g.setup);
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("does not fit"), std::string::npos) << big.error().message;
  Fixture h = llama2_h200();
  bind(h);
  h.setup.scenario = workload::ServingScenario::kServer;
  auto norate = simulate_serving(h.setup);
  ASSERT_FALSE(norate);
  EXPECT_NE(norate.error().message.find("rate"), std::string::npos);
}

}  // namespace
}  // namespace clustertwin::execution
