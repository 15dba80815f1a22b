#pragma once
/// The discrete-event core: integer time, an event queue, nothing about GPUs or networks.
/// Time is an integer tick of one nanosecond (a 292-year horizon in int64), so sums never drift.
/// Events at the same tick run in the order they were scheduled (a sequence number breaks ties),
/// so a run is deterministic. No globals: a Simulator is a value; two can run in one process.

#include <cstdint>
#include <functional>
#include <queue>
#include <string_view>
#include <vector>

#include "clustertwin/base/number.h"
#include "clustertwin/base/result.h"
#include "clustertwin/base/units.h"

namespace clustertwin::engine {

/// Nanoseconds since the start of the simulation.
using Tick = int64_t;

/// Seconds -> ticks, rounded to the nearest nanosecond. The time must be finite, non-negative
/// and at most base::kMaxSimSeconds (an invariant: inputs are checked with checked_ticks first).
Tick to_ticks(base::Seconds s);
/// The same for a time that came from input: an error naming `what` instead of an abort when
/// the time is not finite, negative or beyond base::kMaxSimSeconds (100 years).
base::Result<Tick> checked_ticks(base::Seconds s, std::string_view what);
base::Seconds to_seconds(Tick t);

class Simulator {
 public:
  using Callback = std::function<void(Simulator&)>;

  [[nodiscard]] Tick now() const { return now_; }
  /// Schedules `cb` at absolute time `at` (>= now(); an event in the past is a bug).
  void schedule_at(Tick at, Callback cb);
  /// Schedules `cb` `delay` ticks from now.
  void schedule_in(Tick delay, Callback cb) { schedule_at(now_ + delay, std::move(cb)); }
  /// Runs events until the queue is empty or the next event is after `until`.
  void run_until(Tick until);
  /// Runs every event.
  void run();
  [[nodiscard]] int64_t events_run() const { return events_run_; }
  /// Events the simulator may run in all (default base::kMaxEvents): run() and run_until() stop
  /// once that many have run, and event_limit_reached() says so, so a run that would go on for
  /// hours ends with an error its caller words instead of a hang.
  void set_event_limit(int64_t max_events) { event_limit_ = max_events; }
  [[nodiscard]] bool event_limit_reached() const { return events_run_ >= event_limit_; }
  [[nodiscard]] int64_t event_limit() const { return event_limit_; }
  [[nodiscard]] bool empty() const { return queue_.empty(); }

 private:
  struct Event {
    Tick at;
    uint64_t seq;
    Callback cb;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.at != b.at ? a.at > b.at : a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  Tick now_ = 0;
  uint64_t seq_ = 0;
  int64_t events_run_ = 0;
  int64_t event_limit_ = base::kMaxEvents;
};

}  // namespace clustertwin::engine
