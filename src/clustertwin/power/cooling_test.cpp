#include "clustertwin/power/cooling.h"

#include <gtest/gtest.h>

#include "clustertwin/power/serving_power.h"
#include "clustertwin/power/test_fixture.h"
#include "clustertwin/power/training_power.h"

namespace clustertwin::power {
namespace {

using testing::power_catalog;

TEST(Cooling, FlowMatchesTheSizingRuleAndTheReferencePhysics) {
  const auto& f = power_catalog().facility();
  // shared/reference/power-and-cooling.md §3.4: a 135 kW rack needs ~194 L/min of water or
  // ~201 L/min of PG25 at 10 K; water is 1.44 L/min/kW.
  EXPECT_NEAR(coolant_flow_L_per_min(135e3, f.coolants.at("water"), 10), 194, 1.5);
  EXPECT_NEAR(coolant_flow_L_per_min(135e3, f.coolants.at("pg25"), 10), 201, 1.5);
  EXPECT_NEAR(coolant_flow_L_per_min(1e3, f.coolants.at("water"), 10), 1.44, 0.01);
  EXPECT_NEAR(coolant_flow_L_per_min(135e3, f.coolants.at("pg25"), 8), 251, 1.5);
}

TEST(Cooling, ReturnTemperatureClosesTheHeatBalance) {
  const auto& c = power_catalog().facility().coolants.at("pg25");
  const double flow = coolant_flow_L_per_min(120e3, c, 10);
  EXPECT_NEAR(return_temperature_C(120e3, flow, c, 25), 35, 1e-9);
  EXPECT_NEAR(return_temperature_C(60e3, flow, c, 25), 30, 1e-9);
  // Q = m_dot c_p dT
  const double m_dot = flow / 60 * c.density_kg_per_L;
  EXPECT_NEAR(m_dot * c.specific_heat_kJ_per_kgK * 1e3 * 10, 120e3, 1e-6);
}

TEST(Cooling, PlanRejectsBadInput) {
  const auto& f = power_catalog().facility();
  EXPECT_TRUE(plan_cooling(f, {}));
  auto hot = plan_cooling(f, {.supply_C = 60.0});
  ASSERT_FALSE(hot);
  EXPECT_NE(hot.error().message.find("supply range"), std::string::npos);
  EXPECT_FALSE(plan_cooling(f, {.supply_C = 2.0}));
  auto pue = plan_cooling(f, {.pue = 0.9});
  ASSERT_FALSE(pue);
  EXPECT_NE(pue.error().message.find("at least 1"), std::string::npos);
  EXPECT_FALSE(plan_cooling(f, {.coolant = "glycol"}));
  EXPECT_FALSE(plan_cooling(f, {.delta_T_K = 0.5}));
}

TEST(Cooling, FacilityPumpsFollowTheAffinityLawAndPueIsAboveOne) {
  const auto& f = power_catalog().facility();
  auto plan = *plan_cooling(f, {});
  const double cdu_flow = coolant_flow_L_per_min(f.cdu_capacity.base(), plan.coolant, f.delta_T_K);
  // One CDU at 50% flow: 1/8 of its design pump power.
  FacilityModel half(f, plan, 0.5 * f.cdu_capacity.base(), 0.5 * cdu_flow, 0.9);
  EXPECT_EQ(half.at(1e6).cdus, 1);
  EXPECT_NEAR(half.at(1e6).cdu_pumps_W, f.cdu_design_pump_power.base() / 8, 1e-6);
  FacilityModel full(f, plan, 10 * f.cdu_capacity.base(), 10 * cdu_flow, 0.9);
  EXPECT_EQ(full.at(1e7).cdus, 10);
  const auto p = full.at(1e7);
  EXPECT_GT(p.pue, 1.05);
  EXPECT_LT(p.pue, 1.4);
  EXPECT_NEAR(p.facility_W,
              p.it_W + p.distribution_loss_W + p.cdu_pumps_W + p.heat_rejection_W + p.chiller_W +
                  p.air_cooling_W + p.facility_pumps_W + p.auxiliary_W,
              1e-6);
  // A colder supply needs a chiller.
  auto cold = *plan_cooling(f, {.supply_C = 16.0});
  EXPECT_GT(FacilityModel(f, cold, 1e7, 10 * cdu_flow, 0.9).at(1e7).chiller_W, 0);
  EXPECT_EQ(p.chiller_W, 0);
  // A given PUE replaces the model.
  auto given = *plan_cooling(f, {.pue = 1.3});
  EXPECT_NEAR(FacilityModel(f, given, 1e7, 10 * cdu_flow, 0.9).at(1e7).facility_W, 1.3e7, 1e-3);
}

TEST(Cooling, SizedFacilityWarnsWhenOneRackOutgrowsACdu) {
  const auto& f = power_catalog().facility();
  const auto plan = *plan_cooling(f, {});
  const double cdu = f.cdu_capacity.base();
  // A rack whose liquid heat (liquid fraction x peak) is over one CDU's capacity: warned; one
  // under it: not; the fleet's flow is the racks' flows summed.
  const RackLoad big{.racks = 2, .peak_W = 1.5 * cdu / 0.8, .avg_W = cdu};
  const RackLoad small{.racks = 10, .peak_W = 0.5 * cdu / 0.8, .avg_W = 0.4 * cdu};
  auto hot = size_facility(f, plan, 0.8, big, {big, small}, 6 * cdu, 8 * cdu);
  ASSERT_EQ(hot.warnings.size(), 1u);
  EXPECT_NE(hot.warnings[0].find("exceeds a CDU's capacity"), std::string::npos);
  EXPECT_NEAR(hot.flow_L_per_min,
              2 * rack_cooling(big.peak_W, big.avg_W, 0.8, plan).flow_L_per_min +
                  10 * rack_cooling(small.peak_W, small.avg_W, 0.8, plan).flow_L_per_min,
              1e-9);
  EXPECT_GT(hot.peak_W, hot.at_average.facility_W);
  auto ok = size_facility(f, plan, 0.8, small, {small}, 4 * cdu, 5 * cdu);
  EXPECT_TRUE(ok.warnings.empty());
  // Air-cooled racks (no liquid) never warn.
  EXPECT_TRUE(size_facility(f, plan, 0.0, big, {big}, 3 * cdu, 3 * cdu).warnings.empty());
  // Both views record the sizing the same way: the warning reaches either result, after what
  // they had already said.
  TrainingPowerResult tr;
  ServingPowerResult sv;
  tr.warnings = {"rack limit"};
  auto hot2 = hot;
  record_facility(tr, hot);
  record_facility(sv, hot2);
  ASSERT_EQ(tr.warnings.size(), 2u);
  EXPECT_EQ(tr.warnings[0], "rack limit");
  EXPECT_NE(tr.warnings[1].find("exceeds a CDU's capacity"), std::string::npos);
  ASSERT_EQ(sv.warnings.size(), 1u);
  EXPECT_EQ(sv.warnings[0], tr.warnings[1]);
  for (const auto* r : {&tr.rack_cooling, &sv.rack_cooling})
    EXPECT_EQ(r->liquid_peak_W, hot2.hottest_rack.liquid_peak_W);
  EXPECT_EQ(tr.cluster_flow_L_per_min, hot2.flow_L_per_min);
  EXPECT_EQ(sv.facility.facility_W, hot2.at_average.facility_W);
  EXPECT_EQ(sv.facility_peak_W, hot2.peak_W);
}

}  // namespace
}  // namespace clustertwin::power
