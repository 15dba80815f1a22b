#include "clustertwin/engine/engine.h"

#include <cmath>

#include "clustertwin/base/check.h"

namespace clustertwin::engine {

Tick to_ticks(base::Seconds s) {
  CT_CHECK(std::isfinite(s.base()) && s.base() >= 0, "time must be finite and non-negative");
  return static_cast<Tick>(std::llround(s.base() * 1e9));
}

base::Seconds to_seconds(Tick t) { return base::Seconds::from_base(static_cast<double>(t) * 1e-9); }

void Simulator::schedule_at(Tick at, Callback cb) {
  CT_CHECK(at >= now_, "an event was scheduled in the past");
  queue_.push(Event{at, seq_++, std::move(cb)});
}

void Simulator::run_until(Tick until) {
  while (!queue_.empty() && queue_.top().at <= until) {
    Event e = queue_.top();
    queue_.pop();
    now_ = e.at;
    ++events_run_;
    e.cb(*this);
  }
}

void Simulator::run() { run_until(INT64_MAX); }

}  // namespace clustertwin::engine
