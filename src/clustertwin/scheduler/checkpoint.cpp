#include "clustertwin/scheduler/checkpoint.h"

#include <algorithm>
#include <cmath>

namespace clustertwin::scheduler {

double young_daly_interval_s(double save_s, double mtbi_s, bool daly) {
  if (save_s <= 0 || mtbi_s <= 0 || !std::isfinite(mtbi_s)) return 0;
  const double t = std::sqrt(2.0 * save_s * mtbi_s);
  return daly && save_s < mtbi_s / 2 ? t - save_s : t;
}

double expected_ettr(double interval_s, double save_s, double restore_s, double mtbi_s) {
  if (interval_s <= 0) return 0;
  const double waste = save_s / interval_s + (interval_s / 2 + restore_s) / mtbi_s;
  return std::max(0.0, 1.0 - waste);
}

namespace {
// Compute ticks needed for `w` nominal seconds at `speed`, rounded up.
Tick ticks_for(double w, double speed) {
  if (w <= 0) return 0;
  const double t = std::ceil(w / speed * 1e9 - 1e-6);
  return t >= static_cast<double>(kNever) ? kNever : static_cast<Tick>(t);
}
}  // namespace

void advance(RunState& s, const CheckpointPolicy& p, double speed, Tick dt, double work) {
  if (dt <= 0) return;
  const Tick r = std::min(dt, s.restore_left);
  s.restore_left -= r;
  s.restore_ticks += r;
  dt -= r;
  if (dt <= 0) return;
  auto compute = [&](Tick t) {
    // Work done in t ticks, capped at `work`; wall ticks past completion are idle time that the
    // caller never asks for (the job ends at time_to_finish).
    const double w = std::min(work - s.computed, speed * static_cast<double>(t) * 1e-9);
    s.computed += std::max(0.0, w);
    s.compute_ticks += t;
    s.compute_since_save += t;
  };
  if (p.interval >= kNever) {
    compute(dt);
    s.phase += dt;
    return;
  }
  const Tick cycle = p.interval + p.save;
  auto step_in_cycle = [&](Tick t) {  // t <= cycle - phase
    if (s.phase < p.interval) {
      const Tick c = std::min(t, p.interval - s.phase);
      compute(c);
      s.phase += c;
      t -= c;
    }
    if (t > 0) {
      s.save_ticks += t;
      s.phase += t;
    }
    if (s.phase >= cycle) {
      s.saved = s.computed;
      s.compute_since_save = 0;
      s.phase = 0;
    }
  };
  // Finish the current cycle, then whole cycles in closed form, then the last part.
  const Tick first = std::min(dt, cycle - s.phase);
  step_in_cycle(first);
  dt -= first;
  if (dt <= 0) return;
  const Tick whole = dt / cycle;
  if (whole > 0) {
    const double w = std::min(work - s.computed, speed * static_cast<double>(p.interval) * 1e-9 *
                                                     static_cast<double>(whole));
    s.computed += std::max(0.0, w);
    s.compute_ticks += whole * p.interval;
    s.save_ticks += whole * p.save;
    s.saved = s.computed;
    s.compute_since_save = 0;
    dt -= whole * cycle;
  }
  if (dt > 0) step_in_cycle(dt);
}

Tick time_to_finish(const RunState& s, const CheckpointPolicy& p, double speed, double work) {
  if (speed <= 0 || !std::isfinite(work)) return kNever;
  const double left = work - s.computed;
  Tick t = s.restore_left;
  if (left <= 0) return t;
  const Tick need = ticks_for(left, speed);  // compute ticks still needed
  if (p.interval >= kNever) return t + need;
  const Tick cycle = p.interval + p.save;
  Tick phase = s.phase;
  Tick rem = need;
  // Rest of the current cycle.
  if (phase < p.interval) {
    const Tick c = std::min(rem, p.interval - phase);
    t += c;
    rem -= c;
    if (rem == 0) return t;
    phase = p.interval;
  }
  t += cycle - phase;  // the stall of the current cycle
  // Whole cycles, then the last partial compute (no checkpoint after the final step).
  const Tick whole = (rem - 1) / p.interval;
  t += whole * cycle;
  rem -= whole * p.interval;
  return t + rem;
}

double interrupt(RunState& s, const CheckpointPolicy& p, Tick* lost_ticks) {
  const double lost = s.computed - s.saved;
  if (lost_ticks) *lost_ticks = s.compute_since_save;
  s.computed = s.saved;
  s.compute_since_save = 0;
  s.phase = 0;
  s.restore_left = p.restore;
  return lost;
}

}  // namespace clustertwin::scheduler
