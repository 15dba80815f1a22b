#include "clustertwin/power/energy.h"

#include <gtest/gtest.h>

namespace clustertwin::power {
namespace {

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

}  // namespace
}  // namespace clustertwin::power
