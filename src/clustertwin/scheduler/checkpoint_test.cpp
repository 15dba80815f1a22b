#include "clustertwin/scheduler/checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>

#include "clustertwin/scheduler/random.h"

namespace clustertwin::scheduler {
namespace {

constexpr Tick kS = 1'000'000'000;

TEST(YoungDaly, OrchestrationTableRows) {
  // orchestration.md §3.5 at M = 11 h: delta 10 s -> tau* 14.8 min; ETTR 96.2% (R 10 min),
  // 94.7% (R 20 min); delta 60 s -> 36 min, 93.0%; delta 5 min, R 20 min -> 81 min, 84.7%.
  const double M = 11 * 3600.0;
  EXPECT_NEAR(young_daly_interval_s(10, M) / 60, 14.8, 0.05);
  EXPECT_NEAR(expected_ettr(young_daly_interval_s(10, M), 10, 600, M), 0.962, 0.001);
  EXPECT_NEAR(expected_ettr(young_daly_interval_s(10, M), 10, 1200, M), 0.947, 0.001);
  EXPECT_NEAR(young_daly_interval_s(60, M) / 60, 36.3, 0.1);
  EXPECT_NEAR(expected_ettr(young_daly_interval_s(60, M), 60, 600, M), 0.930, 0.001);
  EXPECT_NEAR(young_daly_interval_s(300, M) / 60, 81.2, 0.1);
  EXPECT_NEAR(expected_ettr(young_daly_interval_s(300, M), 300, 1200, M), 0.847, 0.001);
  EXPECT_NEAR(young_daly_interval_s(60, M, true), young_daly_interval_s(60, M) - 60, 1e-9);
}

TEST(RunState, CyclesOfComputeAndSave) {
  const CheckpointPolicy p{.interval = 100 * kS, .save = 10 * kS, .restore = 30 * kS};
  RunState s;
  advance(s, p, 1.0, 250 * kS, 1e9);
  // 2 full cycles (110 s each) then 30 s of compute.
  EXPECT_NEAR(s.computed, 230, 1e-9);
  EXPECT_NEAR(s.saved, 200, 1e-9);
  EXPECT_EQ(s.compute_since_save, 30 * kS);
  EXPECT_EQ(s.save_ticks, 20 * kS);
  Tick lost = 0;
  EXPECT_NEAR(interrupt(s, p, &lost), 30, 1e-9);
  EXPECT_EQ(lost, 30 * kS);
  EXPECT_EQ(s.restore_left, 30 * kS);
  // Restore first, then compute again.
  advance(s, p, 0.5, 50 * kS, 1e9);
  EXPECT_EQ(s.restore_ticks, 30 * kS);
  EXPECT_NEAR(s.computed, 210, 1e-9);
}

TEST(RunState, TimeToFinishMatchesAdvance) {
  Rng r(7);
  for (int trial = 0; trial < 200; ++trial) {
    const CheckpointPolicy p{.interval = (1 + r.below(500)) * kS,
                             .save = r.below(50) * kS,
                             .restore = r.below(100) * kS};
    RunState s;
    const double work = 1 + static_cast<double>(r.below(5000));
    const double speed = 0.25 + r.uniform();
    advance(s, p, speed, r.below(300) * kS, work);
    const Tick t = time_to_finish(s, p, speed, work);
    RunState a = s, b = s;
    advance(a, p, speed, t, work);
    EXPECT_NEAR(a.computed, work, 1e-6) << "trial " << trial;
    if (t > 1) {
      advance(b, p, speed, t - 2, work);
      EXPECT_LT(b.computed, work) << "trial " << trial;
    }
  }
}

TEST(RunState, NoCheckpointsLosesEverything) {
  const CheckpointPolicy p{.restore = 5 * kS};
  RunState s;
  advance(s, p, 1.0, 1000 * kS, 1e9);
  Tick lost = 0;
  EXPECT_NEAR(interrupt(s, p, &lost), 1000, 1e-9);
  EXPECT_EQ(lost, 1000 * kS);
  EXPECT_EQ(time_to_finish(s, p, 1.0, 10), 15 * kS);
  EXPECT_EQ(time_to_finish(s, p, 1.0, INFINITY), kNever);
}

TEST(Rng, SameSeedSameNumbersAndSaneMoments) {
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
  Rng r(1);
  double s = 0, s2 = 0;
  constexpr int kN = 200000;
  for (int i = 0; i < kN; ++i) {
    const double x = r.normal();
    s += x;
    s2 += x * x;
  }
  EXPECT_NEAR(s / kN, 0, 0.01);
  EXPECT_NEAR(s2 / kN, 1, 0.01);
  double e = 0;
  for (int i = 0; i < kN; ++i) e += r.exponential(3.0);
  EXPECT_NEAR(e / kN, 3.0, 0.03);
  // Fixed values: a change here changes every simulation's output.
  Rng f(123);
  EXPECT_EQ(f.next(), 0xb4dc9bd462de412bULL);
}

}  // namespace
}  // namespace clustertwin::scheduler
