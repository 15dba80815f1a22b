#include "clustertwin/scheduler/pending_queue.h"

#include <gtest/gtest.h>

namespace clustertwin::scheduler::detail {
namespace {

// Jobs 0..7: priority by the table (higher first), then id; a job leaves when it starts.
struct Fixture {
  std::vector<double> prio = {1, 5, 3, 5, 2, 4, 0, 3};
  std::vector<char> started = std::vector<char>(8, 0);
  PendingQueue q;
  auto before() const {
    return [this](int a, int b) {
      return prio[static_cast<size_t>(a)] != prio[static_cast<size_t>(b)]
                 ? prio[static_cast<size_t>(a)] > prio[static_cast<size_t>(b)]
                 : a < b;
    };
  }
  auto gone() const {
    return [this](int id) { return started[static_cast<size_t>(id)] != 0; };
  }
  void start(int id) {
    started[static_cast<size_t>(id)] = 1;
    q.left();
  }
  // The main loop's walk; `fits(id)` says whether a head starts, else it blocks its partition.
  template <class Fits>
  std::vector<int> pass(Fits fits) {
    std::vector<int> tried;
    q.begin_pass(gone());
    while (const auto head = q.next(gone(), before())) {
      tried.push_back(head->first);
      if (fits(head->first)) {
        start(head->first);
      } else {
        q.block(head->second);
      }
    }
    return tried;
  }
};

TEST(PendingQueue, KeepsPriorityOrderOverAllAndPerPartition) {
  Fixture f;
  f.q.reset(2);
  for (int id = 0; id < 8; ++id) f.q.insert(id, static_cast<size_t>(id % 2), f.before());
  EXPECT_EQ(f.q.all(), (std::vector<int>{1, 3, 5, 2, 7, 4, 0, 6}));
  // Priorities change: one stable sort puts every queue in the new order.
  f.prio = {9, 0, 0, 0, 0, 0, 0, 8};
  f.q.resort(f.before());
  EXPECT_EQ(f.q.all(), (std::vector<int>{0, 7, 1, 2, 3, 4, 5, 6}));
}

TEST(PendingQueue, TheMainLoopMergesPartitionsAndABlockedPartitionStops) {
  Fixture f;
  f.q.reset(2);
  for (int id = 0; id < 8; ++id) f.q.insert(id, static_cast<size_t>(id % 2), f.before());
  // Partition 1 holds 1, 3, 5, 7 (by priority), partition 0 holds 2, 4, 0, 6. Job 5 does not
  // fit: partition 1 stops there, while partition 0 goes on to its end.
  EXPECT_EQ(f.pass([](int id) { return id != 5; }), (std::vector<int>{1, 3, 5, 2, 4, 0, 6}));
  // The next pass starts after the started heads, from job 5 again.
  EXPECT_EQ(f.pass([](int) { return false; }), (std::vector<int>{5}));
  EXPECT_EQ(f.pass([](int) { return true; }), (std::vector<int>{5, 7}));
  EXPECT_EQ(f.pass([](int) { return true; }), (std::vector<int>{}));
}

TEST(PendingQueue, StartedJobsLeaveLazilyAndAreCompactedAtHalf) {
  Fixture f;
  f.q.reset(1);
  for (int id = 0; id < 8; ++id) f.q.insert(id, 0, f.before());
  f.start(2);
  f.start(4);
  f.start(6);
  f.start(7);
  f.q.compact_if_half_stale(f.gone());  // 4 of 8: not more than half
  EXPECT_EQ(f.q.all().size(), 8U);
  EXPECT_EQ(f.q.stale(), 4U);
  f.start(0);
  f.q.compact_if_half_stale(f.gone());  // 5 of 8
  EXPECT_EQ(f.q.all(), (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(f.q.stale(), 0U);
  // A started head is dropped from the front, and counts no more as stale.
  f.start(1);
  f.q.drop_gone_front(f.gone());
  EXPECT_EQ(f.q.all(), (std::vector<int>{3, 5}));
  EXPECT_EQ(f.q.stale(), 0U);
  // A job queued again (a requeue) goes by its priority among those still there.
  f.started[4] = 0;
  f.q.insert(4, 0, f.before());
  EXPECT_EQ(f.q.all(), (std::vector<int>{3, 5, 4}));
}

}  // namespace
}  // namespace clustertwin::scheduler::detail
