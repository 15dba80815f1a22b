#include "clustertwin/engine/engine.h"

#include <fmt/format.h>

#include <cmath>

#include "clustertwin/base/check.h"

namespace clustertwin::engine {

Tick to_ticks(base::Seconds s) {
  // The invariant is the clock's own range (292 years); inputs are held to kMaxSimSeconds by
  // checked_ticks, internal durations (a time to the next failure) may go beyond it.
  CT_CHECK(std::isfinite(s.base()) && s.base() >= 0 && s.base() < 9.2e9,
           "time must be finite, non-negative and within the clock's 292 years");
  return static_cast<Tick>(std::llround(s.base() * 1e9));
}

base::Result<Tick> checked_ticks(base::Seconds s, std::string_view what) {
  const double v = s.base();
  if (!std::isfinite(v) || v < 0 || v > base::kMaxSimSeconds) {
    return base::fail(fmt::format("{}: expected a time in [0, {:.0f} s] (100 years), got {} s",
                                  what, base::kMaxSimSeconds, v));
  }
  return to_ticks(s);
}

base::Seconds to_seconds(Tick t) { return base::Seconds::from_base(static_cast<double>(t) * 1e-9); }

void Simulator::schedule_at(Tick at, Callback cb) {
  CT_CHECK(at >= now_, "an event was scheduled in the past");
  queue_.push(Event{at, seq_++, std::move(cb)});
}

void Simulator::run_until(Tick until) {
  while (!queue_.empty() && queue_.top().at <= until && events_run_ < event_limit_) {
    Event e = queue_.top();
    queue_.pop();
    now_ = e.at;
    ++events_run_;
    e.cb(*this);
  }
}

void Simulator::run() { run_until(INT64_MAX); }

}  // namespace clustertwin::engine
