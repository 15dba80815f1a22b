#include "clustertwin/topology/topology.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace clustertwin::topology {
namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog cat = *hardware::Catalog::load_embedded();
  return cat;
}

Topology build(const std::string& cluster) {
  auto spec = hardware::resolve_cluster(catalog(), cluster);
  EXPECT_TRUE(spec) << spec.error().to_string();
  auto t = Topology::build(catalog(), *spec);
  EXPECT_TRUE(t) << t.error().to_string();
  return std::move(*t);
}

TEST(FatTreePlan, FlagshipIsTwoTiersOf144PortSwitches) {
  auto p = plan_fat_tree(4608, 144, 0, {1.0});
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->tiers, 2);
  EXPECT_EQ(p->leaves, 64);
  EXPECT_EQ(p->leaf_down, 72);
  EXPECT_EQ(p->leaf_up, 72);
  // 64 leaves x 72 uplinks spread evenly: 2 cables per leaf-spine pair, 36 spines.
  EXPECT_EQ(p->spine_parallel, 2);
  EXPECT_EQ(p->spines, 36);
}

TEST(FatTreePlan, TierLimitsAreTheClassicClosBounds) {
  // Two tiers of radix R non-blocking: R^2/2 endpoints; three tiers: R^3/4.
  EXPECT_TRUE(plan_fat_tree(144 * 72, 144, 2, {}));
  auto too_many = plan_fat_tree(144 * 72 + 1, 144, 2, {});
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().message.find("connect at most 10368 endpoints"), std::string::npos)
      << too_many.error().message;
  auto three = plan_fat_tree(131072, 144, 0, {});
  ASSERT_TRUE(three);
  EXPECT_EQ(three->tiers, 3);
  EXPECT_TRUE(plan_fat_tree(64 * 64 * 64 / 4, 64, 3, {}));
  EXPECT_FALSE(plan_fat_tree(64 * 64 * 64 / 4 + 32 * 32 * 2, 64, 3, {}));
  EXPECT_FALSE(plan_fat_tree(200, 144, 1, {}));
}

TEST(FatTreePlan, OversubscriptionShiftsPortsDown) {
  auto p = plan_fat_tree(3000, 64, 2, {7.0});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->leaf_down, 56);
  EXPECT_EQ(p->leaf_up, 8);
}

TEST(Topology, FlagshipPathsAndCounts) {
  Topology t = build("azure-ndv6-gb300");
  EXPECT_EQ(t.gpus(), 4608);
  EXPECT_EQ(t.domains(), 64);
  EXPECT_EQ(t.domain_size(), 72);
  EXPECT_EQ(t.path_count(0, 71), 1);   // same rack: NVLink
  EXPECT_EQ(t.path_count(0, 72), 72);  // next rack: any of the leaf's 72 uplinks
  EXPECT_EQ(t.path_count(5, 5), 0);
  std::vector<LinkId> path;
  t.path(0, 71, 0, path);
  ASSERT_EQ(path.size(), 2u);
  EXPECT_EQ(t.link(path[0]).kind, LinkKind::kNvlink);
  path.clear();
  t.path(0, 72, 3, path);
  ASSERT_EQ(path.size(), 6u);
  EXPECT_EQ(t.link(path[2]).kind, LinkKind::kFabricUp);
  EXPECT_EQ(t.link(path[3]).kind, LinkKind::kFabricDown);
  EXPECT_DOUBLE_EQ(t.bottleneck(path).base(), 100e9);
}

// Property: for random GPU pairs in several topologies, every ECMP path climbs then descends
// symmetrically, starts at the source and ends at the destination, and distinct indices give
// distinct paths.
TEST(Topology, EcmpPathsAreWellFormedAndDistinct) {
  for (const char* c : {"azure-ndv6-gb300", "hgx-h100*64", "gb300-nvl72*200", "hgx-h100*600"}) {
    Topology t = build(c);
    std::mt19937_64 rng(42);
    for (int trial = 0; trial < 50; ++trial) {
      const int a = static_cast<int>(rng() % static_cast<uint64_t>(t.gpus()));
      const int b = static_cast<int>(rng() % static_cast<uint64_t>(t.gpus()));
      const int64_t n = t.path_count(a, b);
      if (a == b) {
        EXPECT_EQ(n, 0);
        continue;
      }
      std::set<std::vector<LinkId>> seen;
      for (int64_t i = 0; i < std::min<int64_t>(n, 40); ++i) {
        std::vector<LinkId> p;
        t.path(a, b, i, p);
        ASSERT_GE(p.size(), 2u);
        int ups = 0, downs = 0;
        for (LinkId l : p) {
          ASSERT_GE(l, 0);
          ASSERT_LT(static_cast<size_t>(l), t.links().size());
          const auto k = t.link(l).kind;
          ups += (k == LinkKind::kFabricUp || k == LinkKind::kNicUp) ? 1 : 0;
          downs += (k == LinkKind::kFabricDown || k == LinkKind::kNicDown) ? 1 : 0;
        }
        EXPECT_EQ(ups, downs) << c << " " << a << "->" << b;
        if (t.domain_of(a) == t.domain_of(b)) {
          EXPECT_EQ(p.front(), t.nvlink_up(a));
          EXPECT_EQ(p.back(), t.nvlink_down(b));
        } else {
          EXPECT_EQ(p.front(), t.pcie_up(a));
          EXPECT_EQ(p.back(), t.pcie_down(b));
        }
        EXPECT_TRUE(seen.insert(p).second) << "duplicate path " << i;
      }
      EXPECT_LT(t.ecmp_index(a, b, 7), n);
    }
  }
}

TEST(Topology, TooManyEndpointsForTheRequestedTiersIsAnError) {
  auto spec = *hardware::resolve_cluster(catalog(), "gb300-nvl72*200");
  spec.scale_out.tiers = 2;
  auto t = Topology::build(catalog(), spec);
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("use tiers: 3"), std::string::npos) << t.error().message;
}

}  // namespace
}  // namespace clustertwin::topology
