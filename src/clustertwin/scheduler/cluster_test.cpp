#include "clustertwin/scheduler/cluster.h"

#include <gtest/gtest.h>

namespace clustertwin::scheduler {
namespace {

ClusterModel model_of(const char* cluster) {
  auto cat = *hardware::Catalog::load_embedded();
  auto spec = *hardware::resolve_cluster(cat, cluster);
  auto topo = *topology::Topology::build(cat, spec);
  const auto& sys = **cat.system(spec.system);
  return ClusterModel::from_topology(topo, sys.gpus_per_node);
}

TEST(ClusterModel, FlagshipIsSixtyFourRacksOfEighteenTrays) {
  const auto c = model_of("azure-ndv6-gb300");
  EXPECT_EQ(c.nodes(), 1152);
  EXPECT_EQ(c.gpus(), 4608);
  EXPECT_EQ(c.gpus_per_node(), 4);
  ASSERT_EQ(c.domains().size(), 64u);
  EXPECT_EQ(c.max_domain_nodes(), 18);
  EXPECT_TRUE(c.blocks_are_domains());
  // One 144-port leaf per rack (72 NICs down): leaves and racks coincide, so cells do too.
  EXPECT_EQ(c.leaves().size(), 64u);
  EXPECT_EQ(c.cells().size(), 64u);
  EXPECT_EQ(c.node_name(17), "node0017");
  EXPECT_EQ(hostlist(c, c.domains()[1]), "node[0018-0035]");
}

TEST(ClusterModel, HgxServersAreTheirOwnDomainsAndBlocksAreLeaves) {
  const auto c = model_of("hgx-h100*64");
  EXPECT_EQ(c.nodes(), 64);
  EXPECT_EQ(c.max_domain_nodes(), 1);
  EXPECT_FALSE(c.blocks_are_domains());
  EXPECT_GT(c.leaves().size(), 1u);
  for (const auto& l : c.leaves()) EXPECT_GT(l.count, 1);
  // A cell is a leaf group when domains are single servers.
  EXPECT_EQ(c.cells().size(), c.leaves().size());
}

TEST(ClusterModel, RacksSpanningLeavesMakeCells) {
  // GB200 NVL72 with one 400G NIC per GPU on 64-port switches: 32 NICs per leaf, so a rack of
  // 72 NICs spans three leaves and a leaf serves two racks.
  const auto c = model_of("tyche-gb200");
  EXPECT_GT(c.cells().size(), c.domains().size());
  for (size_t i = 0; i < c.cells().size(); ++i) {
    const auto cell = c.cells()[i];
    for (int n = cell.first; n < cell.end(); ++n) {
      EXPECT_EQ(c.domain_of(n), c.cell_domain(static_cast<int>(i)));
      EXPECT_EQ(c.leaf_of(n), c.cell_leaf(static_cast<int>(i)));
    }
  }
}

TEST(ClusterModel, SwitchCsvKeysLabelsByTheirFullPath) {
  const char* csv =
      "ip,DSW,PSW,ASW\n"
      "h1,G1,P1,S1\nh2,G1,P1,S1\nh3,G1,P2,S1\nh4,G1,P2,S2\nh5,G1,P1,S2\n";
  auto c = ClusterModel::from_switch_csv(csv, "t.csv", 8);
  ASSERT_TRUE(c) << c.error().to_string();
  EXPECT_EQ(c->nodes(), 5);
  EXPECT_EQ(c->leaves().size(), 4u);  // (P1,S1) (P1,S2) (P2,S1) (P2,S2): not 2 labels
  EXPECT_EQ(c->pods().size(), 2u);
  EXPECT_EQ(c->tiers(), 3);
  EXPECT_EQ(c->leaf_name(0), "G1/P1/S1");
  EXPECT_EQ(c->node_name(0), "h1");
}

TEST(ClusterModel, SwitchCsvErrorsNameTheLine) {
  auto c = ClusterModel::from_switch_csv("ip,A,B\nh1,x,y\nh2,x\nh3,,y\n", "bad.csv", 8);
  ASSERT_FALSE(c);
  const auto msg = c.error().to_string();
  EXPECT_NE(msg.find("bad.csv:3: expected 3 fields, got 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad.csv:4: empty host or switch label"), std::string::npos) << msg;
  EXPECT_FALSE(ClusterModel::from_switch_csv("ip,a,b,c,d\n", "x", 8));
}

TEST(Hostlist, CompressesAndExpands) {
  const auto c = ClusterModel::uniform(2, 4, 4);
  EXPECT_EQ(hostlist(c, std::vector<int>{0, 1, 2, 5, 7}), "node[0000-0002,0005,0007]");
  EXPECT_EQ(hostlist(c, std::vector<int>{3}), "node0003");
  auto e = expand_hostlist("gb[0000-0002,0007],x1,r[8-9]a");
  ASSERT_TRUE(e);
  const std::vector<std::string> want = {"gb0000", "gb0001", "gb0002", "gb0007",
                                         "x1",     "r8a",    "r9a"};
  EXPECT_EQ(*e, want);
  EXPECT_FALSE(expand_hostlist("a[1-2"));
  EXPECT_FALSE(expand_hostlist("a[3-1]"));
  EXPECT_FALSE(expand_hostlist("a[x-1]"));
}

}  // namespace
}  // namespace clustertwin::scheduler
