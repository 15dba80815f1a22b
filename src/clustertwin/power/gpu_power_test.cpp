#include "clustertwin/power/gpu_power.h"

#include <gtest/gtest.h>

#include "clustertwin/power/test_fixture.h"

namespace clustertwin::power {
namespace {

using testing::catalog;
using testing::power_catalog;

GpuPowerModel model_of(const std::string& gpu) {
  return GpuPowerModel(**catalog().gpu(gpu), **power_catalog().gpu(gpu));
}

TEST(GpuPower, EveryCatalogGpuHasPowerParameters) {
  for (const auto& [name, spec] : catalog().gpus()) {
    auto p = power_catalog().gpu(name);
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_EQ((*p)->max_limit.base(), spec.tgp.base())
        << name << ": highest settable limit is the TGP";
    EXPECT_FALSE((*p)->provenance.empty()) << name;
  }
  for (const auto& [name, spec] : catalog().systems()) {
    EXPECT_TRUE(power_catalog().system(name)) << name;
  }
}

TEST(GpuPower, DemandRunsFromTheFloorToTheLimitAndHitsTheMemoryAnchor) {
  for (const char* g : {"h200", "b200", "gb200", "gb300"}) {
    const auto m = model_of(g);
    const auto& p = m.params();
    EXPECT_DOUBLE_EQ(m.demand(0, 0), p.floor.base()) << g;
    EXPECT_NEAR(m.demand(1, 0), p.limit_margin * m.tgp_W(), 1e-9) << g;
    EXPECT_NEAR(m.demand(p.compute_saturation, 0), p.limit_margin * m.tgp_W(), 1e-9) << g;
    EXPECT_NEAR(m.demand(0, 0.8), p.memory_anchor.base(), 1e-6) << g;
    EXPECT_NEAR(m.demand(0, 0, 1) - m.demand(0, 0), p.link_power.base(), 1e-9) << g;
    // Monotone in each utilisation.
    double prev = 0;
    for (double u = 0; u <= 1.0; u += 0.05) {
      const double d = m.demand(u, u);
      EXPECT_GE(d, prev - 1e-9) << g << " u=" << u;
      prev = d;
    }
  }
}

TEST(GpuPower, CapSlowsComputeBoundWorkButNotMemoryBoundWorkBelowIt) {
  const auto m = model_of("gb200");
  const double full = m.demand(1, 0);
  const double mem = m.demand(0, 0.85);
  const GpuSettings none{};
  EXPECT_DOUBLE_EQ(m.apply(full, true, none).slowdown, 1.0);
  const GpuSettings cap{.cap = base::watts(960)};  // Meta's 80% provisioning point
  const auto e = m.apply(full, true, cap);
  EXPECT_NEAR(e.power_W, 0.98 * 960, 1e-9);
  // s = ((P - P_idle) / (m C - P_idle))^(1/alpha)
  const double expect = std::pow((full - m.idle_W()) / (0.98 * 960 - m.idle_W()), 1.0 / 3.0);
  EXPECT_NEAR(e.slowdown, expect, 1e-12);
  EXPECT_GT(e.slowdown, 1.05);
  EXPECT_LT(e.slowdown, 1.15);
  // Memory-bound work at ~700 W is not touched by a 960 W cap, but is by a 500 W one.
  EXPECT_DOUBLE_EQ(m.apply(mem, false, cap).slowdown, 1.0);
  EXPECT_DOUBLE_EQ(m.apply(mem, false, cap).power_W, mem);
  EXPECT_GT(m.apply(mem, false, GpuSettings{.cap = base::watts(500)}).slowdown, 1.0);
}

TEST(GpuPower, ClockLockSlowsComputeBoundAndSavesMemoryBoundPower) {
  const auto m = model_of("h200");
  const auto& p = m.params();
  const GpuSettings lock{.clock_lock_MHz = 0.8 * p.sustained_clock_MHz};
  const auto c = m.apply(m.demand(1, 0), true, lock);
  EXPECT_NEAR(c.slowdown, 1.25, 1e-9);
  EXPECT_LT(c.power_W, m.demand(1, 0));
  const double mem = m.demand(0, 0.6);
  const auto d = m.apply(mem, false, lock);
  EXPECT_DOUBLE_EQ(d.slowdown, 1.0);
  EXPECT_LT(d.power_W, mem);
  // A lock above the sustained clock does not slow power-limited GEMMs.
  EXPECT_DOUBLE_EQ(
      m.apply(m.demand(1, 0), true, GpuSettings{.clock_lock_MHz = p.max_clock_MHz}).slowdown, 1.0);
}

TEST(GpuPower, SettingsOutsideTheDeviceRangeAreErrors) {
  const auto m = model_of("gb200");
  EXPECT_TRUE(m.check(GpuSettings{.cap = base::watts(960)}));
  auto low = m.check(GpuSettings{.cap = base::watts(150)});
  ASSERT_FALSE(low);
  EXPECT_NE(low.error().message.find("200-1200 W"), std::string::npos) << low.error().message;
  EXPECT_FALSE(m.check(GpuSettings{.cap = base::watts(1300)}));
  EXPECT_FALSE(m.check(GpuSettings{.clock_lock_MHz = 100}));
  EXPECT_FALSE(m.check(GpuSettings{.clock_lock_MHz = 5000}));
}

TEST(GpuPower, PhasePowerIsTheTimeWeightedMeanAndEnergyIsPowerTimesTime) {
  const auto m = model_of("b200");
  const std::vector<OpPower> ops = {
      {.time_s = 1e-3, .demand_W = m.demand(1, 0), .compute_bound = true, .count = 3},
      {.time_s = 2e-3, .demand_W = m.demand(0, 0.9), .compute_bound = false}};
  const auto p = phase_power(ops, m, GpuSettings{});
  EXPECT_NEAR(p.time_s, 5e-3, 1e-15);
  EXPECT_NEAR(p.energy_J, 3e-3 * ops[0].demand_W + 2e-3 * ops[1].demand_W, 1e-12);
  EXPECT_NEAR(p.compute_bound_s, 3e-3, 1e-15);
  const auto c = phase_power(ops, m, GpuSettings{.cap = base::watts(600)});
  EXPECT_GT(c.slowdown(), 1.0);
  EXPECT_LE(c.power_W(), 0.985 * 600 + 1e-9);
}

TEST(PowerCatalog, MalformedFilesReportEveryError) {
  const char* gpus = R"(power_gpus:
  x:
    floor: {value: 10 kW, source: s}
    limit_margin: {value: 2, source: s}
    compute_saturation: {value: 0.4, source: s}
    exponent: {value: 0.75, source: s}
    memory_anchor: {value: 500 W, source: s}
    link_power: {value: 10 W, source: s}
    min_limit: {value: 200 W, source: s}
    max_limit: {value: 100 W, source: s}
    dvfs_exponent: {value: 3, source: nope}
    max_clock_MHz: {value: 2000, source: s}
    sustained_clock_MHz: {value: 1800, source: s}
    colour: blue
sources:
  s: "test"
)";
  const char* systems = "power_systems: {}\n";
  const char* facility = "power_facility: {coolants: {}, coolant: pg25}\n";
  auto r = PowerCatalog::parse(gpus, systems, facility);
  ASSERT_FALSE(r);
  const auto& msg = r.error().message;
  EXPECT_NE(msg.find("limit_margin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown source 'nope'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("colour"), std::string::npos) << msg;
  EXPECT_NE(msg.find("memory_anchor must exceed floor"), std::string::npos) << msg;
  EXPECT_NE(msg.find("min_limit must be below max_limit"), std::string::npos) << msg;
  EXPECT_NE(msg.find("catalog/power/gpus.yaml"), std::string::npos) << msg;
}

TEST(PowerCatalog, EfficiencyCurveInterpolatesAndClamps) {
  EfficiencyCurve c{{{0.1, 0.9}, {0.5, 0.95}, {1.0, 0.93}}};
  EXPECT_DOUBLE_EQ(c.at(0.0), 0.9);
  EXPECT_DOUBLE_EQ(c.at(0.3), 0.925);
  EXPECT_DOUBLE_EQ(c.at(0.75), 0.94);
  EXPECT_DOUBLE_EQ(c.at(2.0), 0.93);
}

TEST(PowerCatalog, UnknownNamesSuggestTheClosest) {
  auto g = power_catalog().gpu("gb30");
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("gb300"), std::string::npos);
  EXPECT_FALSE(power_catalog().system("gb300-nvl7"));
}

}  // namespace
}  // namespace clustertwin::power
