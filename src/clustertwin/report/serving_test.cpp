#include "clustertwin/report/serving.h"

#include <gtest/gtest.h>

#include "clustertwin/execution/serving_calibration.h"
#include "clustertwin/models/model_catalog.h"

namespace clustertwin::report {
namespace {

TEST(ServingReport, JsonKeysCarryUnitsAndTheTraceIsValid) {
  const auto cat = *hardware::Catalog::load_embedded();
  auto spec = *hardware::resolve_cluster(cat, "hgx-h200*1");
  const auto& gpu = **cat.gpu("h200");
  auto cm = *compute::ComputeModel::for_gpu(gpu, cat);
  auto model = *models::load_model(cat, "llama2-70b");
  execution::ServingSetup s;
  execution::serving_step_calibration(cat)->apply(s);
  s.model = &model;
  s.compute = &cm;
  s.fabric = *execution::serving_fabric(cat, spec);
  s.memory_capacity = gpu.hbm_usable;
  s.dataset = *workload::dataset_for_model(cat, "llama2-70b");
  s.scenario = workload::ServingScenario::kServer;
  s.limits = s.dataset.limits(s.scenario);
  s.rate_qps = 40;
  s.requests = 400;
  s.trace_iterations = 500;
  s.layout.weights = compute::DType::kFp8;
  s.layout.instance = {.tp = 1, .max_batch = 128, .max_tokens = 2048};
  s.layout.replicas = 8;
  auto r = execution::simulate_serving(s);
  ASSERT_TRUE(r) << r.error().to_string();
  ServingReport rep{.cluster = "hgx-h200*1",
                    .model = "llama2-70b",
                    .gpu = "h200",
                    .dataset = s.dataset.name,
                    .gpus = 8,
                    .scenario = s.scenario,
                    .limits = s.limits,
                    .layout = s.layout,
                    .result = *r};
  const Json j = serving_json(rep);
  for (const char* key : {"tokens_per_s_per_gpu", "tokens_per_s_per_user", "ttft_p99_s",
                          "tpot_p99_s", "requests_per_s", "kv_utilization_mean", "ttft_limit_s",
                          "tpot_limit_s", "memory_per_gpu", "step_s"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["layout"]["summary"], "TP1 x8");
  EXPECT_TRUE(j["memory_per_gpu"].contains("kv_cache_B"));
  const std::string text = serving_text(rep);
  EXPECT_NE(text.find("TTFT"), std::string::npos);
  EXPECT_NE(text.find("tokens/s"), std::string::npos);
  const Json trace = serving_trace(rep).to_json();
  const auto problems = validate_trace(trace);
  EXPECT_TRUE(problems.empty()) << (problems.empty() ? "" : problems.front());
  EXPECT_GT(trace["traceEvents"].size(), 10u);
}

}  // namespace
}  // namespace clustertwin::report
