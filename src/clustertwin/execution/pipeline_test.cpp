#include "clustertwin/execution/pipeline.h"

#include <gtest/gtest.h>

namespace clustertwin::execution {
namespace {

PipelineInput equal(int pp, int vpp, int64_t m, double f_ms, double b_ms) {
  PipelineInput in{.pp = pp, .vpp = vpp, .micro_batches = m};
  in.forward.assign(static_cast<size_t>(pp * vpp), base::seconds(f_ms * 1e-3 / vpp));
  in.backward.assign(static_cast<size_t>(pp * vpp), base::seconds(b_ms * 1e-3 / vpp));
  in.p2p.assign(static_cast<size_t>(pp * vpp - 1), base::Seconds{});
  return in;
}

// Closed form (Narayanan et al. 2021, §2.2): with equal stages and free sends, a 1F1B step takes
// (M + pp - 1)(tf + tb); interleaving with v chunks cuts the bubble to (pp-1)(tf+tb)/v.
TEST(Pipeline, OneFOneBMatchesTheClosedForm) {
  for (int pp : {1, 2, 4, 8}) {
    for (int64_t m : {1, 4, 8, 32}) {
      auto r = run_pipeline(equal(pp, 1, m, 1.0, 2.0));
      EXPECT_EQ(r.makespan, static_cast<engine::Tick>((m + pp - 1) * 3'000'000)) << pp << " " << m;
    }
  }
}

TEST(Pipeline, InterleavingShrinksTheBubble) {
  for (int pp : {2, 4, 8}) {
    for (int v : {2, 4}) {
      const int64_t m = 4 * pp;
      auto r = run_pipeline(equal(pp, v, m, 1.0, 2.0));
      const double ideal = static_cast<double>(m) * 3e6;
      const double bubble = (pp - 1) * 3e6 / v;
      EXPECT_NEAR(static_cast<double>(r.makespan), ideal + bubble, 1.0) << pp << " " << v;
    }
  }
}

TEST(Pipeline, SendsDelayDependents) {
  auto in = equal(2, 1, 1, 1.0, 2.0);
  in.p2p[0] = base::seconds(0.5e-3);
  auto r = run_pipeline(in);
  // F0, send, F1, B1, send, B0.
  EXPECT_EQ(r.makespan, 7'000'000);
}

TEST(Pipeline, EveryTaskRunsOnceInOrder) {
  for (int v : {1, 2}) {
    const int pp = 4;
    const int64_t m = 8;
    auto r = run_pipeline(equal(pp, v, m, 1.0, 2.0));
    EXPECT_EQ(r.tasks.size(), static_cast<size_t>(pp * v * m * 2));
    for (const auto& t : r.tasks) EXPECT_LT(t.start, t.end);
  }
}

}  // namespace
}  // namespace clustertwin::execution
