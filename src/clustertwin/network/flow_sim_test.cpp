#include "clustertwin/network/flow_sim.h"

#include <gtest/gtest.h>

#include <random>

#include "clustertwin/network/model.h"

namespace clustertwin::network {
namespace {
using namespace base::literals;

const topology::Topology& flagship() {
  static const topology::Topology t = [] {
    static const hardware::Catalog cat = *hardware::Catalog::load_embedded();
    return *topology::Topology::build(cat, *hardware::resolve_cluster(cat, "azure-ndv6-gb300"));
  }();
  return t;
}

TEST(FlowSim, OneTransferAloneMatchesTheAnalyticalModel) {
  const auto& t = flagship();
  for (auto [a, b] : {std::pair{0, 1}, std::pair{0, 72}, std::pair{5, 4000}}) {
    Transfer tr{.src = a, .dst = b, .bytes = 1_GB};
    FlowModel flow(t);
    AnalyticalModel ana(t);
    const Transfer one[] = {tr};
    EXPECT_NEAR(flow.finish_times(one)[0].base(), ana.finish_times(one)[0].base(), 1e-12);
  }
  // NVLink: 1 GB at 900 GB/s; across racks: 1 GB at 100 GB/s (plus latency).
  Transfer nv{.src = 0, .dst = 1, .bytes = 1_GB};
  EXPECT_NEAR(AnalyticalModel(t).transfer_time(nv).base(), 1.0 / 900, 1e-6);
  Transfer ib{.src = 0, .dst = 72, .bytes = 1_GB};
  EXPECT_NEAR(AnalyticalModel(t).transfer_time(ib).base(), 0.01, 1e-5);
}

TEST(FlowSim, TwoTransfersShareTheNic) {
  FlowSimulator sim(flagship());
  sim.add({.src = 0, .dst = 72, .bytes = 1_GB});
  sim.add({.src = 0, .dst = 144, .bytes = 1_GB});
  sim.run();
  EXPECT_NEAR(sim.finish(0).base(), 0.02, 1e-5);
  EXPECT_NEAR(sim.finish(1).base(), 0.02, 1e-5);
}

TEST(FlowSim, StaggeredStartRecomputesRates) {
  FlowSimulator sim(flagship());
  sim.add({.src = 0, .dst = 72, .bytes = 1_GB});
  sim.add({.src = 0, .dst = 144, .bytes = 1_GB, .start = 5_ms});
  sim.run();
  // Flow 0 alone for 5 ms (0.5 GB), then both at 50 GB/s: 0.5 GB more takes 10 ms.
  EXPECT_NEAR(sim.finish(0).base(), 0.015, 1e-5);
  // Flow 1: 0.5 GB at 50 GB/s (10 ms) then 0.5 GB alone at 100 GB/s (5 ms).
  EXPECT_NEAR(sim.finish(1).base(), 0.020, 1e-5);
}

TEST(FlowSim, DegradedAndFailedLinks) {
  const auto& t = flagship();
  {
    FlowSimulator sim(t);
    sim.add({.src = 0, .dst = 72, .bytes = 1_GB});
    sim.set_capacity(5_ms, t.nic_up(t.nic_of(0), 0), base::gigabytes_per_s(50));
    sim.run();
    EXPECT_NEAR(sim.finish(0).base(), 0.015, 1e-5);
  }
  {
    FlowSimulator sim(t);
    sim.add({.src = 0, .dst = 72, .bytes = 1_GB});
    sim.set_capacity(5_ms, t.nic_up(t.nic_of(0), 0), base::BytesPerSecond{});
    sim.run();
    EXPECT_TRUE(std::isinf(sim.finish(0).base()));
  }
}

// Property: bytes sent equal bytes received for random transfer sets, and nothing finishes
// before its alpha-beta lower bound.
TEST(FlowSim, BytesAreConservedAndNoFlowBeatsItsLowerBound) {
  const auto& t = flagship();
  AnalyticalModel ana(t);
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 rng(seed);
    const Routing routing[] = {Routing::kEcmp, Routing::kAdaptive, Routing::kSpray};
    FlowSimulator sim(t, routing[seed % 3]);
    std::vector<Transfer> trs;
    for (int i = 0; i < 200; ++i) {
      Transfer tr{.src = static_cast<int>(rng() % 4608),
                  .dst = static_cast<int>(rng() % 4608),
                  .bytes = base::bytes(static_cast<double>(rng() % 100'000'000)),
                  .start = base::microseconds(static_cast<double>(rng() % 1000)),
                  .key = rng()};
      trs.push_back(tr);
      sim.add(tr);
    }
    sim.run();
    for (size_t i = 0; i < trs.size(); ++i) {
      EXPECT_NEAR(sim.delivered(static_cast<int>(i)).base(), trs[i].bytes.base(),
                  1e-6 * std::max(1.0, trs[i].bytes.base()))
          << "seed " << seed;
      EXPECT_GE(sim.finish(static_cast<int>(i)).base(),
                ana.transfer_time(trs[i]).base() * (1 - 1e-9))
          << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace clustertwin::network

namespace clustertwin::network {
namespace {
using namespace base::literals;

const topology::Topology& two_racks() {
  static const topology::Topology t = [] {
    static const hardware::Catalog cat = *hardware::Catalog::load_embedded();
    return *topology::Topology::build(cat, *hardware::resolve_cluster(cat, "gb300-nvl72*2"));
  }();
  return t;
}

TEST(FlowSimSteady, SharedNicHalvesTheRate) {
  FlowSimulator sim(two_racks());
  sim.add({.src = 0, .dst = 72, .bytes = 1_GB});
  sim.add({.src = 0, .dst = 73, .bytes = 1_GB});
  sim.add({.src = 1, .dst = 2, .bytes = 1_GB});
  const auto st = sim.solve_steady();
  EXPECT_NEAR(st.rate[0], 50e9, 1e3);
  EXPECT_NEAR(st.rate[1], 50e9, 1e3);
  EXPECT_NEAR(st.rate[2], 900e9, 1e3);
}

TEST(FlowSimSteady, KindScaleAndWeights) {
  FlowSimulator sim(two_racks());
  sim.add({.src = 0, .dst = 1, .bytes = 1_GB, .weight = 4});
  SteadyOptions o;
  o.kind_scale[static_cast<size_t>(topology::LinkKind::kNvlink)] = 0.5;
  const auto st = sim.solve_steady(o);
  EXPECT_NEAR(st.rate[0], 900e9 * 0.5 / 4, 1e3);
}

// Coupling: a pipeline stage that could run faster is held to its group's pace, and the
// capacity it leaves goes to another group sharing its link.
TEST(FlowSimSteady, CouplingHandsSpareCapacityToOtherGroups) {
  FlowSimulator sim(two_racks());
  // Group 0: two stages, one through a NIC shared with group 1, one through a slowed link.
  sim.add({.src = 0, .dst = 72, .bytes = 1_GB});  // group 0, NIC of GPU 0
  sim.add({.src = 1, .dst = 73, .bytes = 1_GB});  // group 0, NIC of GPU 1 (degraded below)
  sim.add({.src = 0, .dst = 74, .bytes = 1_GB});  // group 1, shares GPU 0's NIC
  sim.set_capacity(base::Seconds{}, two_racks().nic_up(two_racks().nic_of(1), 0),
                   base::gigabytes_per_s(20));
  const std::vector<int32_t> group = {0, 0, 1};
  SteadyOptions o;
  o.group = group;
  const auto st = sim.solve_steady(o);
  // Group 0 runs at 20 GB/s (its degraded stage); its other stage needs only 20 of GPU 0's
  // 100 GB/s NIC, so group 1 gets 80 instead of the uncoupled 50.
  EXPECT_NEAR(st.group_time[0], 1e9 / 20e9, 1e-9);
  EXPECT_NEAR(st.rate[2], 80e9, 1e3);
  EXPECT_NEAR(st.group_time[1], 1e9 / 80e9, 1e-9);
}

TEST(FlowSimSteady, FailedLinkGivesZeroRate) {
  FlowSimulator sim(two_racks());
  sim.add({.src = 0, .dst = 72, .bytes = 1_GB});
  sim.set_capacity(base::Seconds{}, two_racks().nic_up(two_racks().nic_of(0), 0),
                   base::BytesPerSecond{});
  const auto st = sim.solve_steady();
  EXPECT_EQ(st.rate[0], 0.0);
}

}  // namespace
}  // namespace clustertwin::network

namespace clustertwin::network {
namespace {
using namespace base::literals;

// Spraying (the fluid limit of adaptive routing) on the non-blocking Azure fabric: 72 flows
// from one rack's leaf to the next rack's leaf each get a full NIC, where ECMP's hash collisions
// leave some flows a fraction of it.
TEST(FlowSimSpray, NonBlockingFabricCarriesEveryNicAtLineRate) {
  const auto& t = flagship();
  std::vector<double> min_rate;
  for (Routing r : {Routing::kEcmp, Routing::kSpray}) {
    FlowSimulator sim(t, r);
    for (int i = 0; i < 72; ++i) sim.add({.src = i, .dst = 72 + i, .bytes = 1_GB, .key = 7});
    const auto st = sim.solve_steady();
    min_rate.push_back(*std::min_element(st.rate.begin(), st.rate.end()));
  }
  EXPECT_LT(min_rate[0], 60e9);
  EXPECT_NEAR(min_rate[1], 100e9, 1e3);
}

TEST(FlowSimSpray, AFailedUplinkShrinksTheBundle) {
  const auto& t = flagship();
  FlowSimulator sim(t, Routing::kSpray);
  for (int i = 0; i < 72; ++i) sim.add({.src = i, .dst = 72 + i, .bytes = 1_GB});
  // The first fabric link of GPU 0's path to rack 1 is one of leaf 0's 72 up-links.
  std::vector<topology::LinkId> path;
  t.path(0, 72, 0, path);
  topology::LinkId up = -1;
  for (auto l : path) {
    if (t.link(l).kind == topology::LinkKind::kFabricUp) up = l;
  }
  ASSERT_GE(up, 0);
  sim.set_capacity(base::Seconds{}, up, base::BytesPerSecond{});
  const auto st = sim.solve_steady();
  EXPECT_NEAR(st.rate[0], 100e9 * 71 / 72, 1e3);
  // The event-driven run agrees: 1 GB at 71/72 of 100 GB/s, plus the path latency.
  sim.run();
  EXPECT_NEAR(sim.finish(0).base(), 1e9 / (100e9 * 71 / 72), 1e-5);
}

TEST(FlowSimSpray, LeavesWhoseNeighboursShareTheirDomainAreBundledToo) {
  // 2 GB200 NVL72 racks on 64-port switches: 32 NICs per leaf, so leaf 0 (GPUs 0-31) and its
  // neighbour leaf 1 (GPUs 32-63) are both in rack 0. Their up-links must still form a bundle;
  // they once did not, and every sprayed flow from leaf 0 crossed one up-link (GB200 racks over
  // 400G InfiniBand were predicted flat at ~190 GB/s all-reduce).
  static const hardware::Catalog cat = *hardware::Catalog::load_embedded();
  const auto t = *topology::Topology::build(cat, *hardware::resolve_cluster(cat, "gb200-nvl72*2"));
  FlowSimulator sim(t, Routing::kSpray);
  for (int i = 0; i < 72; ++i) sim.add({.src = i, .dst = 72 + i, .bytes = 1_GB});
  const auto st = sim.solve_steady();
  EXPECT_NEAR(*std::min_element(st.rate.begin(), st.rate.end()), 50e9, 1e3);
}

TEST(FlowSimSpray, SharedBundlesAndCompactSolveGiveTheSameRates) {
  // Bundles built once and shared (what the collective model does for every solve) give the
  // rates of a simulator that builds its own, with a failed up-link and mixed paths (intra-rack
  // NVLink, cross-rack fabric) in one set, and the failed member still shrinks its bundle.
  const auto& t = flagship();
  const auto shared = SprayBundles::build(t);
  std::vector<topology::LinkId> path;
  t.path(0, 72, 0, path);
  topology::LinkId up = -1;
  for (auto l : path) {
    if (t.link(l).kind == topology::LinkKind::kFabricUp) up = l;
  }
  ASSERT_GE(up, 0);
  std::vector<std::vector<double>> rates;
  for (bool share : {false, true}) {
    FlowSimulator sim(t, Routing::kSpray);
    if (share) sim.share_bundles(&shared);
    for (int i = 0; i < 72; ++i) sim.add({.src = i, .dst = 72 + i, .bytes = 1_GB});
    for (int i = 0; i < 36; ++i) sim.add({.src = 144 + i, .dst = 180 + i, .bytes = 1_GB});
    sim.set_capacity(base::Seconds{}, up, base::BytesPerSecond{});
    rates.push_back(sim.solve_steady().rate);
  }
  ASSERT_EQ(rates[0].size(), rates[1].size());
  for (size_t i = 0; i < rates[0].size(); ++i) EXPECT_DOUBLE_EQ(rates[0][i], rates[1][i]) << i;
  EXPECT_NEAR(rates[1][0], 100e9 * 71 / 72, 1e3);
  EXPECT_GT(rates[1][72], 100e9);  // NVLink inside rack 2
}

}  // namespace
}  // namespace clustertwin::network
