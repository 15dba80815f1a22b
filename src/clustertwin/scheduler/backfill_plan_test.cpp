#include "clustertwin/scheduler/backfill_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace clustertwin::scheduler::detail {
namespace {

// Four NVLink domains (base blocks, cells) of 4 nodes of 4 GPUs.
struct Fixture {
  ClusterModel c = ClusterModel::uniform(4, 4, 4);
  PlacementIndex index{c};
  BackfillPlan plan{index};
  std::vector<PlanDelta> deltas;
  std::vector<FreeView> seen;  // the views the placement was tried on

  void reset(std::vector<int> n, std::vector<PlanDelta> d) {
    std::vector<int> g(n.size());
    std::transform(n.begin(), n.end(), g.begin(), [](int x) { return 4 * x; });
    deltas = std::move(d);
    plan.reset(n, g, deltas);
  }
  // A gang of `nodes` whole nodes inside one cell (an NVLink domain) from `from`, limit `limit`.
  std::optional<engine::Tick> gang(int nodes, engine::Tick limit, engine::Tick from = 0,
                                   engine::Tick window_end = 1000, bool now_only = false) {
    return plan.earliest(
        0, from, window_end, now_only, {.seg = 0, .limit = limit, .now_hist = {}},
        [nodes](int64_t n, int64_t, int64_t) { return n >= nodes; },
        [this, nodes](const FreeView& v) {
          seen.push_back(v);
          return std::any_of(v.nodes.begin(), v.nodes.end(), [nodes](int n) { return n >= nodes; });
        });
  }
  // `nodes` whole nodes anywhere.
  std::optional<engine::Tick> spread(int nodes, engine::Tick limit, engine::Tick from = 0,
                                     engine::Tick window_end = 1000, bool now_only = false) {
    return plan.earliest(
        0, from, window_end, now_only, {.seg = 0, .limit = limit, .now_hist = {}},
        [nodes](int64_t n, int64_t, int64_t) { return n >= nodes; },
        [nodes](const FreeView& v) {
          return std::accumulate(v.nodes.begin(), v.nodes.end(), 0) >= nodes;
        });
  }
};

TEST(BackfillPlan, AJobStartsWhenEnoughIsFreedWithinTheWindow) {
  Fixture f;
  f.reset({0, 0, 0, 0}, {{100, 0, 4, 16}, {200, 1, 4, 16}});
  EXPECT_EQ(f.spread(3, 50), 100);
  EXPECT_EQ(f.spread(6, 50), 200);
  EXPECT_EQ(f.spread(9, 50), std::nullopt);                 // never
  EXPECT_EQ(f.spread(6, 50, 0, 150, false), std::nullopt);  // past the window
  EXPECT_EQ(f.spread(3, 50, 0, 0, true), std::nullopt);     // now only
  EXPECT_EQ(f.spread(3, 50, 150, 1000, false), 200);        // not before `from`
  // Now, when the present already holds it; the plan is left as it was.
  f.reset({2, 2, 0, 0}, {{100, 0, 2, 8}});
  EXPECT_EQ(f.spread(4, 50), 0);
  EXPECT_EQ(f.gang(4, 50), 100);
  EXPECT_EQ(f.plan.nodes_now(), (std::vector<int>{2, 2, 0, 0}));
}

TEST(BackfillPlan, AReservationInsideTheJobsWindowCountsAtItsLowest) {
  Fixture f;
  // Cell 0 is free now but reserved from 50 to 150; cell 1 frees at 100.
  f.reset({4, 0, 0, 0}, {{50, 0, -4, -16}, {100, 1, 4, 16}, {150, 0, 4, 16}});
  EXPECT_TRUE(f.plan.loss_within(0, 60));
  EXPECT_FALSE(f.plan.loss_within(0, 50));    // [0, 50) ends as the reservation begins
  EXPECT_FALSE(f.plan.loss_within(50, 100));  // the loss at 50 is not after 50
  // A short job fits before the reservation; a longer one runs into it and waits for cell 1.
  EXPECT_EQ(f.gang(4, 40), 0);
  f.seen.clear();
  EXPECT_EQ(f.gang(4, 60), 100);
  ASSERT_FALSE(f.seen.empty());
  EXPECT_EQ(f.seen.back().nodes[0], 0);  // cell 0 at its lowest over [100, 160)
  EXPECT_EQ(f.seen.back().nodes[1], 4);
  // The present is back as it was after every test.
  EXPECT_EQ(f.plan.nodes_now(), (std::vector<int>{4, 0, 0, 0}));
  EXPECT_EQ(f.plan.gpus_now(), (std::vector<int>{16, 0, 0, 0}));
}

TEST(BackfillPlan, AddedChangesGoAfterThoseOfTheSameTime) {
  Fixture f;
  f.reset({0, 0, 0, 0}, {{100, 0, 1, 4}});
  std::vector<PlanDelta> batch = {{100, 1, 1, 4}, {50, 2, 1, 4}, {100, 3, 1, 4}};
  f.plan.add(batch);
  EXPECT_TRUE(batch.empty());
  auto cells = [&] {
    std::vector<int> out;
    for (const auto& d : f.plan.deltas()) out.push_back(d.cell);
    return out;
  };
  EXPECT_EQ(cells(), (std::vector<int>{2, 0, 1, 3}));
  // A large batch (merged in one pass) keeps the same order.
  for (int k = 0; k < 10; ++k) batch.push_back({k % 2 == 0 ? 100 : 75, k % 4, 0, 1});
  f.plan.add(batch);
  const auto& d = f.plan.deltas();
  ASSERT_EQ(d.size(), 14U);
  EXPECT_TRUE(std::is_sorted(d.begin(), d.end(),
                             [](const PlanDelta& a, const PlanDelta& b) { return a.t < b.t; }));
  EXPECT_EQ(cells(), (std::vector<int>{2, 1, 3, 1, 3, 1, 0, 1, 3, 0, 2, 0, 2, 0}));
}

TEST(BackfillPlan, AReservationAddedLaterAndCapacityTakenNowAreSeen) {
  Fixture f;
  f.reset({4, 4, 0, 0}, {});
  EXPECT_EQ(f.gang(4, 100), 0);
  // A job started now takes cell 0 until 500; another is reserved on cell 1 from 20.
  f.plan.take_now(0, 4, 16);
  std::vector<PlanDelta> batch = {{500, 0, 4, 16}, {20, 1, -4, -16}, {300, 1, 4, 16}};
  f.plan.add(batch);
  EXPECT_EQ(f.plan.nodes_now(), (std::vector<int>{0, 4, 0, 0}));
  EXPECT_EQ(f.gang(4, 10), 0);     // before the reservation
  EXPECT_EQ(f.gang(4, 100), 300);  // after it
}

TEST(BackfillPlan, SegmentsAreCountedPerBlock) {
  Fixture f;
  f.reset({3, 1, 0, 0}, {{100, 1, 1, 4}});
  std::vector<int64_t> segs;
  // Now: floor(3/2) + floor(1/2) = 1 segment of 2 nodes; at 100: 1 + 1.
  EXPECT_EQ(f.plan.earliest(
                0, 0, 1000, false, {.seg = 2, .limit = 10, .now_hist = {}},
                [&](int64_t, int64_t, int64_t s) {
                  segs.push_back(s);
                  return s >= 2;
                },
                [](const FreeView&) { return true; }),
            100);
  ASSERT_GE(segs.size(), 2U);
  EXPECT_EQ(segs.front(), 1);
  EXPECT_EQ(segs.back(), 2);
}

}  // namespace
}  // namespace clustertwin::scheduler::detail
