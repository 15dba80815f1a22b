#include "clustertwin/scheduler/placement.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace clustertwin::scheduler {
namespace {

struct Free {
  std::vector<int> n, g;
  FreeView view() const { return {n, g, {}}; }
};

Free all_free(const ClusterModel& c) {
  Free f;
  for (const auto& cell : c.cells()) {
    f.n.push_back(cell.count);
    f.g.push_back(cell.count * c.gpus_per_node());
  }
  return f;
}

std::map<int, int> per_domain(const ClusterModel& c, const Placement& p) {
  std::map<int, int> m;
  for (const auto& t : p.takes) m[c.cell_domain(t.cell)] += t.nodes;
  return m;
}

TEST(BestFitSplit, KepExample) {
  const std::vector<int> room = {3, 3, 2, 1};
  auto s = best_fit_split(room, 7);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], (std::pair<int, int>{0, 3}));
  EXPECT_EQ(s[1], (std::pair<int, int>{1, 3}));
  EXPECT_EQ(s[2], (std::pair<int, int>{3, 1}));
  EXPECT_EQ(best_fit_split(room, 2), (std::vector<std::pair<int, int>>{{2, 2}}));
  EXPECT_TRUE(best_fit_split(room, 10).empty());
}

// orchestration.md §6 case 6: 64 racks, -N 256 --segment=16: every segment in one rack, and an
// aggregated placement on consecutive racks.
TEST(BlockPlacement, SegmentsInOneRackOnConsecutiveRacks) {
  const auto c = ClusterModel::uniform(64, 18, 4);
  PlacementIndex idx(c);
  PlacementConfig cfg{.policy = PlacementPolicy::kBlock, .segment_nodes = 16};
  auto f = all_free(c);
  Placement p;
  ASSERT_TRUE(place(idx, cfg, f.view(), {.nodes = 256}, &p));
  const auto m = per_domain(c, p);
  ASSERT_EQ(m.size(), 16u);
  int prev = -1;
  for (auto [d, n] : m) {
    EXPECT_EQ(n, 16);
    if (prev >= 0) {
      EXPECT_EQ(d, prev + 1);
    }
    prev = d;
  }
  EXPECT_EQ(m.begin()->first % 16, 0);  // aligned to a 16-rack block
}

TEST(BlockPlacement, BestFitRackAndSpareTrays) {
  const auto c = ClusterModel::uniform(4, 18, 4);
  PlacementIndex idx(c);
  PlacementConfig cfg{.policy = PlacementPolicy::kBlock, .segment_nodes = 16};
  auto f = all_free(c);
  f.n = {18, 17, 12, 18};
  f.g = {72, 68, 48, 72};
  Placement p;
  // 8 nodes: the rack with the fewest free nodes that fits (rack 2, 12 free).
  ASSERT_TRUE(place(idx, cfg, f.view(), {.nodes = 8}, &p));
  EXPECT_EQ(per_domain(c, p), (std::map<int, int>{{2, 8}}));
  // 32 nodes = 2 segments of 16: racks 0 and 1 (the aligned pair with room), 16 each; rack 1
  // keeps 1 tray, rack 0 keeps 2 as spares.
  ASSERT_TRUE(place(idx, cfg, f.view(), {.nodes = 32}, &p));
  EXPECT_EQ(per_domain(c, p), (std::map<int, int>{{0, 16}, {1, 16}}));
  // 48 nodes: 3 segments; the 4-rack block holds 3 (rack 2 has only 12 free).
  ASSERT_TRUE(place(idx, cfg, f.view(), {.nodes = 48}, &p));
  EXPECT_EQ(per_domain(c, p), (std::map<int, int>{{0, 16}, {1, 16}, {3, 16}}));
  EXPECT_FALSE(place(idx, cfg, f.view(), {.nodes = 64}, &p));
  // A job that is not a multiple of the segment: full segments and a short last one.
  EXPECT_EQ(idx.segment_for(cfg, 24), 16);
  ASSERT_TRUE(place(idx, cfg, f.view(), {.nodes = 24}, &p));
  EXPECT_EQ(per_domain(c, p), (std::map<int, int>{{0, 16}, {1, 8}}));
  EXPECT_EQ(idx.segment_for(cfg, 10), 10);
}

TEST(TreePlacement, LowestSwitchBestFit) {
  // 8 racks, 2 racks per leaf, 2 leaves per pod.
  const auto c = ClusterModel::uniform(8, 18, 4, 2, 2);
  PlacementIndex idx(c);
  PlacementConfig cfg{.policy = PlacementPolicy::kTree};
  auto f = all_free(c);
  f.n[2] = 10;  // leaf 1 has 28 free
  Placement p;
  ASSERT_TRUE(place(idx, cfg, f.view(), {.nodes = 20}, &p));
  std::set<int> leaves;
  for (const auto& t : p.takes) leaves.insert(c.cell_leaf(t.cell));
  EXPECT_EQ(leaves, (std::set<int>{1}));
  // 50 nodes fit no leaf (36 max): one pod (72 nodes), not across pods.
  ASSERT_TRUE(place(idx, cfg, f.view(), {.nodes = 50}, &p));
  std::set<int> pods;
  for (const auto& t : p.takes) pods.insert(c.pod_of_leaf(c.cell_leaf(t.cell)));
  EXPECT_EQ(pods.size(), 1u);
}

TEST(FirstFitPlacement, LowestNodes) {
  const auto c = ClusterModel::uniform(4, 18, 4);
  PlacementIndex idx(c);
  auto f = all_free(c);
  f.n[0] = 5;
  Placement p;
  ASSERT_TRUE(place(idx, {.policy = PlacementPolicy::kFirstFit}, f.view(), {.nodes = 20}, &p));
  EXPECT_EQ(per_domain(c, p), (std::map<int, int>{{0, 5}, {1, 15}}));
}

TEST(KueuePlacement, SlicesInDomainsMostFreeFirst) {
  const auto c = ClusterModel::uniform(4, 18, 4);
  PlacementIndex idx(c);
  PlacementConfig cfg{.policy = PlacementPolicy::kKueue, .segment_nodes = 8};
  auto f = all_free(c);
  f.n = {9, 18, 16, 18};
  Placement p;
  // 40 nodes = 5 slices of 8; rooms in slices 1, 2, 2, 2: two domains of 2, then the tightest
  // for the last slice (domain 0, room 1).
  ASSERT_TRUE(place(idx, cfg, f.view(), {.nodes = 40}, &p));
  const auto m = per_domain(c, p);
  int total = 0;
  for (auto [d, n] : m) {
    EXPECT_EQ(n % 8, 0);
    total += n;
  }
  EXPECT_EQ(total, 40);
  EXPECT_EQ(m.count(0), 1u);
}

TEST(SubNodePlacement, BestFitNodeFromHistogram) {
  const auto c = ClusterModel::uniform(2, 2, 8);
  PlacementIndex idx(c);
  // cell 0: nodes with 8 and 3 free; cell 1: nodes with 2 and 0 free.
  std::vector<int> n = {1, 0}, g = {11, 2}, hist(2 * 9, 0);
  hist[8] = 1;
  hist[3] = 1;
  hist[9 + 2] = 1;
  hist[9 + 0] = 1;
  Placement p;
  ASSERT_TRUE(place(idx, {}, FreeView{n, g, hist}, {.gpus = 2}, &p));
  EXPECT_EQ(p.sub_cell, 1);
  EXPECT_EQ(p.sub_node_free, 2);
  ASSERT_TRUE(place(idx, {}, FreeView{n, g, hist}, {.gpus = 3}, &p));
  EXPECT_EQ(p.sub_cell, 0);
  EXPECT_EQ(p.sub_node_free, 3);
  EXPECT_FALSE(place(idx, {}, FreeView{n, g, hist}, {.gpus = 9}, &p));
}

TEST(SubNodePlacement, SpreadTakesTheEmptiestNode) {
  const auto c = ClusterModel::uniform(2, 2, 8);
  PlacementIndex idx(c);
  // cell 0: nodes with 5 and 3 free; cell 1: nodes with 8 and 0 free.
  std::vector<int> n = {0, 1}, g = {8, 8}, hist(2 * 9, 0);
  hist[5] = 1;
  hist[3] = 1;
  hist[9 + 8] = 1;
  hist[9 + 0] = 1;
  const PlacementConfig spread{.policy = PlacementPolicy::kTree, .sub_node = SubNodeFit::kSpread};
  Placement p;
  ASSERT_TRUE(place(idx, spread, FreeView{n, g, hist}, {.gpus = 1}, &p));
  EXPECT_EQ(p.sub_cell, 1);
  EXPECT_EQ(p.sub_node_free, 8);
  ASSERT_TRUE(place(idx, {}, FreeView{n, g, hist}, {.gpus = 1}, &p));  // pack
  EXPECT_EQ(p.sub_cell, 0);
  EXPECT_EQ(p.sub_node_free, 3);
  // Planning view (no histogram): the cell with the most free GPUs, the lowest on ties.
  ASSERT_TRUE(place(idx, spread, FreeView{n, g, {}}, {.gpus = 4}, &p));
  EXPECT_EQ(p.sub_cell, 0);
  EXPECT_EQ(*parse_sub_node_fit("spread"), SubNodeFit::kSpread);
  auto bad = parse_sub_node_fit("scatter");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("expected pack or spread"), std::string::npos);
}

TEST(Fragmentation, CountsPartialRacksAndStrandedGpus) {
  const auto c = ClusterModel::uniform(3, 18, 4);
  PlacementIndex idx(c);
  std::vector<int> n = {18, 10, 0}, g = {72, 41, 3};
  const auto f = fragmentation(idx, {.segment_nodes = 16}, FreeView{n, g, {}});
  EXPECT_EQ(f.partial_domains, 1);
  EXPECT_EQ(f.free_blocks, 1);
  EXPECT_EQ(f.stranded_gpus, 44);
  EXPECT_EQ(f.free_gpus, 116);
}

TEST(Placement, ParsePolicyNames) {
  EXPECT_EQ(*parse_placement("first-fit"), PlacementPolicy::kFirstFit);
  auto bad = parse_placement("blocks");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("expected block, tree, first-fit or kueue"),
            std::string::npos);
}

}  // namespace
}  // namespace clustertwin::scheduler
