#include "clustertwin/engine/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace clustertwin::engine {
namespace {

TEST(Engine, RunsInTimeOrderWithTiesInInsertionOrder) {
  Simulator sim;
  std::vector<int> order;
  sim.schedule_at(20, [&](Simulator&) { order.push_back(3); });
  sim.schedule_at(10, [&](Simulator&) { order.push_back(1); });
  sim.schedule_at(10, [&](Simulator&) { order.push_back(2); });
  sim.run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(sim.now(), 20);
}

TEST(Engine, EventsScheduleEventsAndRunUntilStops) {
  Simulator sim;
  int count = 0;
  std::function<void(Simulator&)> tick = [&](Simulator& s) {
    ++count;
    if (count < 100) s.schedule_in(5, tick);
  };
  sim.schedule_at(0, tick);
  sim.run_until(49);
  EXPECT_EQ(count, 10);
  sim.run();
  EXPECT_EQ(count, 100);
  EXPECT_EQ(sim.now(), 495);
}

// Property: with random delays no event ever runs in the past, and two identical runs agree.
TEST(Engine, NoEventInThePastAndDeterministic) {
  auto run = [](uint64_t seed) {
    Simulator sim;
    std::mt19937_64 rng(seed);
    std::vector<Tick> seen;
    std::function<void(Simulator&)> ev = [&](Simulator& s) {
      EXPECT_TRUE(seen.empty() || s.now() >= seen.back()) << "seed " << seed;
      seen.push_back(s.now());
      if (seen.size() < 1000) s.schedule_in(static_cast<Tick>(rng() % 100), ev);
    };
    for (int i = 0; i < 10; ++i) sim.schedule_at(static_cast<Tick>(rng() % 50), ev);
    sim.run();
    return seen;
  };
  EXPECT_EQ(run(7), run(7));
}

TEST(Engine, TickConversionRoundsToNanoseconds) {
  EXPECT_EQ(to_ticks(base::seconds(1.5e-6)), 1500);
  EXPECT_DOUBLE_EQ(to_seconds(2'000'000'000).base(), 2.0);
}

TEST(Engine, CheckedTicksRefusesWhatTheClockCannotHold) {
  EXPECT_EQ(*checked_ticks(base::seconds(2.0), "t"), 2'000'000'000);
  for (double bad : {-1.0, 1e10, std::nan(""), HUGE_VAL}) {
    auto r = checked_ticks(base::seconds(bad), "submit");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("submit: expected a time in [0, 3155760000 s]"),
              std::string::npos)
        << r.error().message;
  }
}

TEST(Engine, EventLimitStopsARunawayRun) {
  Simulator sim;
  sim.set_event_limit(1000);
  std::function<void(Simulator&)> again = [&](Simulator& s) { s.schedule_in(0, again); };
  sim.schedule_at(0, again);
  sim.run();  // would never end without the limit: every event schedules another at the same tick
  EXPECT_TRUE(sim.event_limit_reached());
  EXPECT_EQ(sim.events_run(), 1000);
}

}  // namespace
}  // namespace clustertwin::engine
