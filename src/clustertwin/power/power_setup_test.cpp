#include "clustertwin/power/power_setup.h"

#include <gtest/gtest.h>

#include "clustertwin/power/energy.h"
#include "clustertwin/power/test_fixture.h"

namespace clustertwin::power {
namespace {

using testing::catalog;
using testing::power_catalog;

hardware::ClusterSpec gb300() { return *hardware::resolve_cluster(catalog(), "gb300-nvl72*2"); }

TEST(PowerSetup, ResolvesTheSystemAndTheSettingsOnce) {
  auto s = resolve_power_setup(catalog(), power_catalog(), gb300(), {});
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->system->name, "gb300-nvl72");
  EXPECT_EQ(s->cap_reason, "default (TGP)");
  EXPECT_EQ(s->cap_W(), s->gpu->tgp.base());
  EXPECT_FALSE(s->smoothing);
  // A cap is the user's; a node policy below it lowers it and says so.
  PowerSettings capped{.gpu = {.cap = base::watts(1200)}};
  auto c = resolve_power_setup(catalog(), power_catalog(), gb300(), capped);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->cap_W(), 1200);
  EXPECT_EQ(c->cap_reason, "power cap (asked)");
  const auto& policies = s->system_params->node_policies;
  ASSERT_FALSE(policies.empty());
  PowerSettings pol{.node_policy = policies.front().first};
  auto p = resolve_power_setup(catalog(), power_catalog(), gb300(), pol);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->cap_reason.rfind("node policy " + policies.front().first, 0), 0u);
  EXPECT_LE(p->cap_W(), s->cap_W());
  // Smoothing from the system's catalog profile.
  PowerSettings sm{.smoothing = SmoothingRequest{}};
  auto m = resolve_power_setup(catalog(), power_catalog(), gb300(), sm);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->smoothing);
}

TEST(PowerSetup, BadSettingsNameTheirField) {
  auto bad = resolve_power_setup(catalog(), power_catalog(), gb300(), {.node_policy = "nope"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("{node_policy} 'nope' is not a policy of gb300-nvl72", 0),
            0u);
  auto low =
      resolve_power_setup(catalog(), power_catalog(), gb300(), {.gpu = {.cap = base::watts(10)}});
  EXPECT_FALSE(low);
  auto pue = resolve_power_setup(catalog(), power_catalog(), gb300(), {.cooling = {.pue = 0.5}});
  EXPECT_FALSE(pue);
}

TEST(PowerEnergy, PerTokenAndARun) {
  const auto e = energy_per_token(1000, 10, 1.2);
  EXPECT_DOUBLE_EQ(e.it_J, 100);
  EXPECT_DOUBLE_EQ(e.facility_J, 120);
  const auto none = energy_per_token(1000, 0, 1.2);
  EXPECT_EQ(none.it_J, 0);
  EXPECT_EQ(none.facility_J, 0);
  // 1e6 tokens at 1e3 per 2 s step and 7.2e6 J per step: 1000 steps, 2000 s, 7.2e9 J = 2000 kWh.
  const auto r = run_energy({.token_budget = 1e6,
                             .tokens_per_step = 1e3,
                             .step_time_s = 2,
                             .facility_energy_per_step_J = 7.2e6,
                             .price_per_kWh = 0.1,
                             .grid_gCO2_per_kWh = 400,
                             .gpus = 8,
                             .gpu_tgp_W = 1000});
  EXPECT_DOUBLE_EQ(r.steps, 1000);
  EXPECT_DOUBLE_EQ(r.time_s, 2000);
  EXPECT_DOUBLE_EQ(r.energy_J, 7.2e9);
  EXPECT_NEAR(r.cost, 200, 1e-9);
  EXPECT_NEAR(r.carbon_kg, 800, 1e-9);
  EXPECT_DOUBLE_EQ(r.tdp_energy_J, 8 * 1000 * 2000.0);
  EXPECT_EQ(run_energy({.tokens_per_step = 1e3}).steps, 0);
}

TEST(PowerSmoothing, ControllersScaleWithTheirGpusAndTotalsAdd) {
  const SmoothingSettings s{.floor = 0.5,
                            .ramp_up_W_per_s = 100,
                            .ramp_down_W_per_s = 50,
                            .hysteresis_s = 0,
                            .storage_per_gpu_J = 0,
                            .storage_efficiency = 1,
                            .average_s = 0};
  Smoother one = smoother_for(s, 1), four = smoother_for(s, 4);
  // The same per-GPU load on 4 GPUs is 4x the unit's: the grid side follows 4x as fast.
  for (int i = 0; i < 10; ++i) {
    const double g1 = one.step(1000, 0.1), g4 = four.step(4000, 0.1);
    EXPECT_NEAR(g4, 4 * g1, 1e-9);
  }
  SmoothingSummary sum;
  add_totals(sum, 3, one.totals());
  EXPECT_NEAR(sum.unserved_J, 3 * one.totals().unserved_J, 1e-12);
  EXPECT_NEAR(sum.ramp_burn_J, 3 * one.totals().burned_J, 1e-12);
}

}  // namespace
}  // namespace clustertwin::power
