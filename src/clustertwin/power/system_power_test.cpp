#include "clustertwin/power/system_power.h"

#include <gtest/gtest.h>

#include "clustertwin/power/test_fixture.h"
#include "clustertwin/topology/summary.h"

namespace clustertwin::power {
namespace {

using testing::catalog;
using testing::power_catalog;

SystemPowerModel model_of(const std::string& system) {
  return SystemPowerModel(catalog(), **catalog().system(system), **power_catalog().system(system));
}

TEST(SystemPower, FabricAndNameplateMatchTheTopologySummary) {
  for (const char* c : {"azure-ndv6-gb300", "hgx-h100*64", "eos-h100", "gb200-nvl72*8"}) {
    auto spec = *hardware::resolve_cluster(catalog(), c);
    auto topo = *topology::Topology::build(catalog(), spec);
    const auto s = topology::summarize(catalog(), topo);
    const auto f = fabric_power(catalog(), topo, power_catalog().facility());
    EXPECT_EQ(f.switches, s.scale_out_switches) << c;
    EXPECT_EQ(f.transceivers, s.transceivers) << c;
    EXPECT_NEAR(f.dc_W, s.fabric_power.base(), 1e-6) << c;
    EXPECT_NEAR(f.ac_W * power_catalog().facility().switch_psu_efficiency, f.dc_W, 1e-6) << c;
    const auto sm = model_of(spec.system);
    EXPECT_NEAR(sm.nameplate_W(), s.system_power.base(), 1e-6) << c;
  }
}

TEST(SystemPower, BreakdownSumsAndPsuLossesFollowTheCurve) {
  const auto sm = model_of("gb300-nvl72");
  const auto b = sm.at(72 * 1000.0, true);
  EXPECT_NEAR(b.dc_W,
              b.gpus_W + b.cpus_W + b.nics_W + b.board_W + b.fans_W + b.switch_trays_W + b.misc_W,
              1e-9);
  EXPECT_NEAR(b.ac_W, b.dc_W + b.psu_loss_W, 1e-9);
  // 48 PSUs of 5.5 kW at ~40% load: 0.95 on the catalog curve, plus 17 W constant loss each.
  EXPECT_NEAR(b.ac_W, (b.dc_W + 48 * 17.0) / sm.params().psu.efficiency.at(b.dc_W / 264e3), 1e-6);
  EXPECT_NEAR(sm.params().psu.efficiency.at(b.dc_W / 264e3), 0.947, 0.004);
  // Hosts idle draw less than hosts loaded.
  EXPECT_LT(sm.at(72 * 1000.0, false).cpus_W, b.cpus_W);
  // N+N shelves: 132 kW usable.
  EXPECT_DOUBLE_EQ(sm.usable_W(), 132e3);
  // Every GPU at its TGP fits the shelves (the budget is then all of it); with a 99 kW limit
  // (18 usable units) the budget is where the DC power meets it.
  EXPECT_DOUBLE_EQ(sm.gpu_budget_W(true), 72 * 1400.0);
  auto p = sm.params();
  p.psu.redundant_units = 30;
  const SystemPowerModel tight(catalog(), **catalog().system("gb300-nvl72"), p);
  EXPECT_NEAR(tight.at(tight.gpu_budget_W(true), true).dc_W, 99e3, 1.0);
}

TEST(SystemPower, AirCooledFansFollowTheAffinityLaw) {
  const auto sm = model_of("hgx-h100");
  const auto& p = sm.params();
  const auto lo = sm.at(8 * 100.0, false), hi = sm.at(8 * 700.0, true);
  EXPECT_GT(lo.fans_W, p.fans_max.base() * p.fan_min - 1e-9);
  EXPECT_GT(hi.fans_W, lo.fans_W);
  EXPECT_LE(hi.fans_W, p.fans_max.base() + 1e-9);
  EXPECT_EQ(model_of("gb300-nvl72").at(72 * 1400.0, true).fans_W, 0.0);
}

}  // namespace
}  // namespace clustertwin::power
