#include "clustertwin/search/serving_search.h"

#include <gtest/gtest.h>

#include "clustertwin/execution/serving_calibration.h"
#include "clustertwin/models/model_catalog.h"

namespace clustertwin::search {
namespace {

const hardware::Catalog& cat() {
  static const hardware::Catalog c = *hardware::Catalog::load_embedded();
  return c;
}

TEST(ServingSearch, InstanceLayoutsRespectTheModel) {
  auto r1 = *models::load_model(cat(), "deepseek-r1");
  auto ls = instance_layouts(r1, 72, 72);
  bool dep64 = false, dep8 = false;
  for (const auto& l : ls) {
    EXPECT_LE(l.gpus(), 72);
    if (l.dp_attention) {
      EXPECT_EQ(l.ep, l.tp);
      dep64 |= l.tp == 64;
      dep8 |= l.tp == 8;
    }
  }
  EXPECT_TRUE(dep64);
  EXPECT_TRUE(dep8);
  auto l2 = *models::load_model(cat(), "llama2-70b");
  for (const auto& l : instance_layouts(l2, 8, 8)) {
    EXPECT_FALSE(l.dp_attention);
    EXPECT_EQ(l.ep, 1);
  }
}

// Llama 2 70B FP8 on one 8 x H200 node, at the dataset's p99 limits of scenario `sc`.
execution::ServingSetup h200_llama2(workload::ServingScenario sc) {
  static const auto spec = *hardware::resolve_cluster(cat(), "hgx-h200*1");
  static const hardware::GpuSpec& gpu = **cat().gpu("h200");
  static const auto cm = *compute::ComputeModel::for_gpu(gpu, cat());
  static const auto model = *models::load_model(cat(), "llama2-70b");
  execution::ServingSetup s;
  execution::serving_step_calibration(cat())->apply(s);
  s.model = &model;
  s.compute = &cm;
  s.fabric = *execution::serving_fabric(cat(), spec);
  s.memory_capacity = gpu.hbm_usable;
  s.dataset = *workload::dataset_for_model(cat(), "llama2-70b");
  s.scenario = sc;
  s.limits = s.dataset.limits(s.scenario);
  s.layout.weights = compute::DType::kFp8;
  return s;
}

// `--no-chunked-prefill` (chunked prefill off in the base layout) is a constraint of the search:
// it used to try chunking on as well and keep it when it won (the flag was dropped).
TEST(ServingSearch, ChunkedPrefillOffInTheBaseIsAConstraint) {
  execution::ServingSetup s = h200_llama2(workload::ServingScenario::kInteractive);
  ServingSpace sp{.gpus = 8, .domain_size = 8, .verify = 0};
  auto chunks_in = [](const ServingSearchResult& r) {
    int n = 0;
    for (const auto& p : r.points) n += p.layout.instance.chunked_prefill ? 1 : 0;
    return n;
  };
  auto both = search_serving(s, sp, 1);
  ASSERT_TRUE(both) << both.error().to_string();
  EXPECT_GT(chunks_in(*both), 0);
  EXPECT_LT(chunks_in(*both), static_cast<int>(both->points.size()));
  s.layout.instance.chunked_prefill = false;
  auto off = search_serving(s, sp, 1);
  ASSERT_TRUE(off) << off.error().to_string();
  ASSERT_FALSE(off->points.empty());
  EXPECT_EQ(chunks_in(*off), 0);
}

TEST(ServingSearch, FindsACompliantLayoutAndAFrontier) {
  execution::ServingSetup s = h200_llama2(workload::ServingScenario::kServer);
  ServingSpace sp{.gpus = 8, .domain_size = 8, .verify = 1, .verify_requests = 12000};
  auto one = search_serving(s, sp, 1);
  ASSERT_TRUE(one) << one.error().to_string();
  auto many = search_serving(s, sp, 4);
  ASSERT_TRUE(many);
  // Deterministic whatever the thread count.
  ASSERT_EQ(one->points.size(), many->points.size());
  for (size_t i = 0; i < one->points.size(); ++i) {
    EXPECT_EQ(one->points[i].label(), many->points[i].label());
    EXPECT_EQ(one->points[i].batch, many->points[i].batch);
  }
  ASSERT_GE(one->best, 0);
  const auto& best = one->points[static_cast<size_t>(one->best)];
  EXPECT_TRUE(one->found);
  EXPECT_TRUE(best.verified);
  EXPECT_GT(best.tokens_per_s_per_gpu, 1000);
  ASSERT_TRUE(one->rate);
  EXPECT_TRUE(one->rate->result.meets_limits);
  int frontier = 0;
  for (const auto& p : one->points) frontier += p.pareto ? 1 : 0;
  EXPECT_GE(frontier, 2);
  // Limits nothing meets: the closest point comes back with a note, not an error.
  s.limits = workload::LatencyLimits{base::seconds(1e-4), base::seconds(1e-4)};
  sp.verify = 0;
  auto none = search_serving(s, sp, 2);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->found);
  EXPECT_FALSE(none->notes.empty());
}

TEST(ServingSearch, ModelThatFitsNowhereIsAnError) {
  auto spec = *hardware::resolve_cluster(cat(), "hgx-h100*1");
  const auto& gpu = **cat().gpu("h100");
  auto cm = *compute::ComputeModel::for_gpu(gpu, cat());
  auto model = *models::load_model(cat(), "deepseek-r1");
  execution::ServingSetup s;
  execution::serving_step_calibration(cat())->apply(s);
  s.model = &model;
  s.compute = &cm;
  s.fabric = *execution::serving_fabric(cat(), spec);
  s.memory_capacity = gpu.hbm_usable;
  s.dataset = *workload::dataset_for_model(cat(), "deepseek-r1");
  s.layout.weights = compute::DType::kFp8;
  auto r = search_serving(s, {.gpus = 8, .domain_size = 8, .verify = 0}, 2);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("does not fit"), std::string::npos) << r.error().message;
}

// The seed's claim machinery (`serve --compare`): a per-GPU ratio broken into its reasons, each
// step the best configuration under the limits. 8 x B200 over 8 x H200 keeps it small; the
// GB300 NVL72 figures are in docs/models/inference.md.
TEST(ServingSearch, GenerationBreakdownNamesTheReasons) {
  auto h200 = *hardware::resolve_cluster(cat(), "hgx-h200*1");
  auto b200 = *hardware::resolve_cluster(cat(), "hgx-b200*1");
  const auto& gh = **cat().gpu("h200");
  const auto& gb = **cat().gpu("b200");
  auto ch = *compute::ComputeModel::for_gpu(gh, cat());
  auto cb = *compute::ComputeModel::for_gpu(gb, cat());
  auto model = *models::load_model(cat(), "deepseek-r1");
  execution::ServingSetup s;
  execution::serving_step_calibration(cat())->apply(s);
  s.model = &model;
  s.compute = &cb;
  s.fabric = *execution::serving_fabric(cat(), b200);
  s.memory_capacity = gb.hbm_usable;
  s.dataset = *workload::dataset_for_model(cat(), "deepseek-r1");
  s.scenario = workload::ServingScenario::kServer;
  s.limits = s.dataset.limits(s.scenario);
  GenerationTarget from{.gpu = &gh,
                        .compute = &ch,
                        .fabric = *execution::serving_fabric(cat(), h200),
                        .gpus = 8,
                        .weights = ch.effective(compute::DType::kNvfp4)};
  GenerationTarget to{
      .gpu = &gb, .compute = &cb, .fabric = s.fabric, .gpus = 8, .weights = compute::DType::kNvfp4};
  auto steps = generation_breakdown(s, from, to, 2);
  ASSERT_TRUE(steps) << steps.error().to_string();
  ASSERT_EQ(steps->size(), 5u);
  EXPECT_EQ((*steps)[0].change, "baseline");
  EXPECT_EQ((*steps)[3].change, "FP4 weights");
  double product = 1;
  for (const auto& g : *steps) {
    EXPECT_TRUE(g.meets) << g.change << ": " << g.label;
    EXPECT_GT(g.tokens_per_s_per_gpu, 0) << g.change;
    // Each step only adds capability and the search takes the best: never slower.
    EXPECT_GE(g.factor, 0.999) << g.change;
    product *= g.factor;
  }
  // The factors multiply to the ratio; B200 beats H200 per GPU by more than its bandwidth alone.
  const double ratio = steps->back().tokens_per_s_per_gpu / steps->front().tokens_per_s_per_gpu;
  EXPECT_NEAR(product, ratio, 1e-9 * ratio);
  EXPECT_GT(ratio, 1.5);
  EXPECT_GT((*steps)[1].factor, 1.2);  // GPU compute and bandwidth
}

}  // namespace
}  // namespace clustertwin::search
