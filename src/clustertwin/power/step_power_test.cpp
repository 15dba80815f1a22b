#include "clustertwin/power/step_power.h"

#include <gtest/gtest.h>

#include <cmath>

#include "clustertwin/power/test_fixture.h"

namespace clustertwin::power {
namespace {

using testing::Job;
using testing::power_catalog;

// Forward time of one layer's ops at the compute model, for the pass execution makes.
double layer_forward_s(const Job& j, const workload::TrainingLayout& l, int layer) {
  auto pass = execution::training_pass(j.model, l);
  pass.moe_imbalance = 1.0;
  double t = 0;
  for (const auto& o : models::forward_ops(j.model, models::Part::kLayer, layer, pass))
    t += j.cm.op(o).base();
  return t;
}

TEST(StepPower, ProfilesAreTheStepsOwnOps) {
  // Experts split over etp = 2 ranks: the power view's ops are the step's (execution's
  // training_pass), not whole experts per rank.
  static const Job j("gb300-nvl72*2", "mixtral-8x7b");
  workload::TrainingLayout l{
      .tp = 2, .pp = 2, .dp = 36, .micro_batch = 1, .global_batch = 288, .seq_len = 4096};
  l.ep = 4;
  l.etp = 2;
  const GpuPowerModel gm(*j.gpu, **power_catalog().gpu(j.gpu->name));
  const auto p = build_profiles(gm, j.setup(l));
  ASSERT_TRUE(p.has_moe);
  int layer = 0;
  while (!j.model.is_moe_layer(layer)) ++layer;
  double got = 0;
  for (const auto& o : p.moe.fwd) got += o.time_s;
  const double want = layer_forward_s(j, l, layer);
  EXPECT_NEAR(got, want, 1e-9 * want);
  auto whole = l;
  whole.etp = 1;
  EXPECT_GT(std::abs(layer_forward_s(j, whole, layer) - want), 1e-3 * want)
      << "etp must change the experts' ops for this test to mean anything";
  // Without a cap or clock lock nothing slows down.
  const auto cps = chunk_powers(p, j.setup(l), gm, {});
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_DOUBLE_EQ(slowdown_of(cps), 1.0);  // no cap, no clock lock
}

}  // namespace
}  // namespace clustertwin::power
