#include "clustertwin/report/training.h"

#include <gtest/gtest.h>

#include "clustertwin/models/model_catalog.h"

namespace clustertwin::report {
namespace {

// The Chrome trace of a real training step passes the trace-format validator (what Perfetto
// needs: named tracks, microsecond times, properly nested slices per track), and the JSON has
// the documented keys with units.
TEST(TrainingReport, TraceIsValidChromeTraceAndJsonHasUnits) {
  const auto cat = *hardware::Catalog::load_embedded();
  auto topo = *topology::Topology::build(cat, *hardware::resolve_cluster(cat, "hgx-h100*16"));
  const auto& gpu = **cat.gpu("h100");
  auto cm = *compute::ComputeModel::for_gpu(gpu, cat);
  auto model = *models::load_model(cat, "llama3.1-8b");
  execution::AnalyticalComm comm(topo);
  workload::TrainingLayout l{
      .tp = 2, .pp = 4, .dp = 16, .vpp = 2, .micro_batch = 1, .global_batch = 128, .seq_len = 4096};
  execution::TrainingSetup s{.model = &model,
                             .layout = l,
                             .compute = &cm,
                             .comm = &comm,
                             .memory_capacity = gpu.hbm_usable,
                             .peak = gpu.peak_for(hardware::Precision::kBf16)->dense};
  auto r = execution::simulate_training_step(s);
  ASSERT_TRUE(r) << r.error().to_string();
  const auto trace = training_trace(*r, l).to_json();
  const auto problems = validate_trace(trace);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_GT(trace["traceEvents"].size(), 8u * 4u * 2u);
  const auto j = training_json(
      *r, l, {.cluster = "hgx-h100*16", .model = "llama3.1-8b", .gpu = "h100", .gpus = 128});
  for (const char* k : {"step_time_s", "tokens_per_s", "tokens_per_s_per_gpu",
                        "model_tflops_per_gpu", "mfu", "breakdown_s", "memory_per_gpu"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_NEAR(j["step_time_s"].get<double>(), r->step_time_s, 1e-5 * r->step_time_s);
}

}  // namespace
}  // namespace clustertwin::report
