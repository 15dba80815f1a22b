#include "clustertwin/power/system_power.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "clustertwin/power/test_fixture.h"
#include "clustertwin/topology/summary.h"

namespace clustertwin::power {
namespace {

using testing::catalog;
using testing::model_of;
using testing::power_catalog;

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
  // The same limit where the AC waveforms are drawn: 132 kW DC shared by all 48 PSUs at half
  // load (0.95) plus 17 W each is (132e3 + 48 x 17) / 0.95 = 139.8 kW AC.
  EXPECT_NEAR(sm.usable_ac_W(), (132e3 + 48 * 17.0) / 0.95, 1.0);
  EXPECT_EQ(sm.usable_basis(),
            "24 of 48 PSUs x 5.50 kW DC, the rest redundant (catalog/power/systems.yaml)");
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

TEST(SystemPower, RatedNodeFigureBoundsTheNonGpuShare) {
  // GB300 NVL72: with every GPU at 1,400 W and the hosts busy, a compute tray draws its rated
  // 6.5 kW DC; the components keep their proportions and their dependence on load.
  const auto gb300 = model_of("gb300-nvl72");
  EXPECT_LT(gb300.non_gpu_scale(), 1.0);
  const auto full = gb300.at(72 * 1400.0, true);
  EXPECT_NEAR((full.dc_W - full.switch_trays_W - full.misc_W) / 18, 6.5e3, 1e-6);
  const auto idle = gb300.at(72 * 1400.0, false);
  EXPECT_LT(idle.cpus_W, full.cpus_W);
  EXPECT_NEAR(idle.board_W, full.board_W, 1e-9);
  // Without the figure the components alone are used (and exceed it: the case for the bound).
  auto p = gb300.params();
  p.rated_node_power = Watts{};
  const SystemPowerModel unbounded(catalog(), **catalog().system("gb300-nvl72"), p);
  EXPECT_DOUBLE_EQ(unbounded.non_gpu_scale(), 1.0);
  EXPECT_GT(unbounded.at(72 * 1400.0, true).dc_W, full.dc_W);
  // DGX H100: the components at full load stay within the 10.2 kW wall rating (the catalog's
  // node_other_power was derived from it), so it does not bind; a 9.5 kW rating would, at the
  // wall (the node's own draw; the rack overheads this model routes through the node PSUs come
  // on top).
  const auto h100 = model_of("hgx-h100");
  EXPECT_DOUBLE_EQ(h100.non_gpu_scale(), 1.0);
  const auto node = h100.at(8 * 700.0, true);
  EXPECT_LT(h100.psu_input_W(node.dc_W - node.misc_W), 10.2e3);
  auto tight_p = h100.params();
  tight_p.rated_node_power = base::watts(9.5e3);
  const SystemPowerModel tight(catalog(), **catalog().system("hgx-h100"), tight_p);
  EXPECT_LT(tight.non_gpu_scale(), 1.0);
  const auto t = tight.at(8 * 700.0, true);
  EXPECT_NEAR(tight.psu_input_W(t.dc_W - t.misc_W), 9.5e3, 1.0);
  for (const char* s : {"gb300-nvl72", "gb200-nvl72", "hgx-b300", "hgx-b200", "hgx-h200",
                        "hgx-h100", "hgx-h800", "dgx-a100"}) {
    const auto m = model_of(s);
    const auto b = m.at(m.tgp_W() * m.gpus(), true);
    std::printf("  %-12s non-GPU scale %.3f; full load %.2f kW DC per node, %.2f kW non-GPU\n", s,
                m.non_gpu_scale(), (b.dc_W - b.switch_trays_W - b.misc_W) / m.spec().nodes / 1e3,
                (b.dc_W - b.gpus_W - b.switch_trays_W - b.misc_W) / m.spec().nodes / 1e3);
  }
  // A rating above what the components draw does not raise them.
  auto loose = h100.params();
  loose.rated_node_power = base::watts(20e3);
  const SystemPowerModel roomy(catalog(), **catalog().system("hgx-h100"), loose);
  EXPECT_DOUBLE_EQ(roomy.non_gpu_scale(), 1.0);
}

}  // namespace
}  // namespace clustertwin::power
