#include "clustertwin/power/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "clustertwin/base/check.h"

namespace clustertwin::power {

const char* activity_name(Activity a) {
  switch (a) {
    case Activity::kIdle:
      return "idle";
    case Activity::kWait:
      return "wait";
    case Activity::kCompute:
      return "compute";
    case Activity::kComm:
      return "communication";
    case Activity::kOptimizer:
      return "optimizer";
    case Activity::kCheckpoint:
      return "checkpoint";
    case Activity::kInit:
      return "init";
  }
  return "?";
}

PeriodicTimeline::PeriodicTimeline(std::vector<Segment> segments) : segments_(std::move(segments)) {
  if (std::any_of(segments_.begin(), segments_.end(),
                  [](const Segment& s) { return s.t1_s <= s.t0_s; })) {
    std::erase_if(segments_, [](const Segment& s) { return s.t1_s <= s.t0_s; });
  }
  if (segments_.empty()) return;
  const size_t n = segments_.size();
  cum_.resize(n + 1);
  double t = 0, e = 0;
  peak_W_ = segments_.front().power_W;
  min_W_ = peak_W_;
  for (size_t i = 0; i < n; ++i) {
    auto& s = segments_[i];
    CT_CHECK(std::abs(s.t0_s - t) < 1e-9 * std::max(1.0, s.t0_s), "segments are contiguous from 0");
    s.t0_s = t;
    cum_[i] = e;
    e += s.power_W * (s.t1_s - t);
    t = s.t1_s;
    peak_W_ = std::max(peak_W_, s.power_W);
    min_W_ = std::min(min_W_, s.power_W);
  }
  cum_[n] = e;
}

PeriodicTimeline PeriodicTimeline::from_parts(std::vector<Segment> segments,
                                              std::vector<double> cum, double peak_W,
                                              double min_W) {
  CT_CHECK(cum.size() == segments.size() + 1 || (segments.empty() && cum.empty()),
           "one energy per segment boundary");
  PeriodicTimeline t;
  t.segments_ = std::move(segments);
  t.cum_ = std::move(cum);
  t.peak_W_ = peak_W;
  t.min_W_ = min_W;
  return t;
}

double PeriodicTimeline::energy_J(double t) const {
  if (segments_.empty() || t <= 0) return 0;
  const double T = period_s();
  const double k = std::floor(t / T);
  double r = t - k * T;
  if (r >= T) r = T;
  const size_t seg = holding(r);
  return k * cum_.back() + cum_[seg] + segments_[seg].power_W * (r - segments_[seg].t0_s);
}

double PeriodicTimeline::energy_J(double t, size_t& hint) const {
  if (segments_.empty() || t <= 0) return 0;
  const double T = period_s();
  const double k = std::floor(t / T);
  double r = t - k * T;
  if (r >= T) r = T;
  hint = holding(r, hint);
  return k * cum_.back() + cum_[hint] + segments_[hint].power_W * (r - segments_[hint].t0_s);
}

double PeriodicTimeline::average_W() const {
  return segments_.empty() ? 0 : cum_.back() / period_s();
}

double PeriodicTimeline::at(double t) const {
  if (segments_.empty()) return 0;
  const double T = period_s();
  return segments_[holding(t - std::floor(t / T) * T)].power_W;
}

size_t PeriodicTimeline::holding(double r) const {
  // The first segment ending after r (the last one for r at or past the period).
  const auto it = std::upper_bound(segments_.begin(), segments_.end(), r,
                                   [](double x, const Segment& s) { return x < s.t1_s; });
  return std::min(static_cast<size_t>(it - segments_.begin()), segments_.size() - 1);
}

size_t PeriodicTimeline::holding(double r, size_t hint) const {
  // upper_bound's answer is the i with r < t1[i] and t1[i-1] <= r (segments are contiguous, each
  // of positive length), so a hint that passes this test is that answer.
  const size_t n = segments_.size();
  for (size_t i = hint; i < n && i <= hint + 1; ++i) {
    if (r < segments_[i].t1_s && (i == 0 || segments_[i - 1].t1_s <= r)) return i;
  }
  return holding(r);
}

std::vector<WallInterval> job_schedule(JobWindow& w, double step_time_s) {
  if (w.duration_s <= 0) {
    const double stop =
        w.stop_s > 0 ? w.stop_s : w.start_s + w.init_s + std::max(10 * step_time_s, 60.0);
    w.duration_s = stop + 20;
  }
  if (w.stop_s <= 0) w.stop_s = std::max(w.start_s, w.duration_s - 20);
  w.stop_s = std::min(w.stop_s, w.duration_s);
  std::vector<WallInterval> out;
  auto add = [&](double a, double b, Activity k, double tau) {
    a = std::clamp(a, 0.0, w.duration_s);
    b = std::clamp(b, 0.0, w.duration_s);
    if (b > a) out.push_back({a, b, k, tau});
  };
  add(0, w.start_s, Activity::kIdle, 0);
  const double train0 = std::min(w.start_s + w.init_s, w.stop_s);
  add(w.start_s, train0, Activity::kInit, 0);
  double t = train0, tau = 0;
  while (t < w.stop_s) {
    double next = w.stop_s;
    if (w.checkpoint_every_s > 0 && w.checkpoint_s > 0) {
      // A checkpoint ends every `checkpoint_every_s` of wall time after training started.
      const double k = std::floor((t - train0) / w.checkpoint_every_s) + 1;
      const double ckpt_end = train0 + k * w.checkpoint_every_s;
      const double ckpt_start = ckpt_end - std::min(w.checkpoint_s, w.checkpoint_every_s);
      if (ckpt_start < w.stop_s) {
        if (t < ckpt_start) {
          add(t, ckpt_start, Activity::kCompute, tau);
          tau += ckpt_start - t;
        }
        add(std::max(t, ckpt_start), std::min(ckpt_end, w.stop_s), Activity::kCheckpoint, tau);
        t = std::min(ckpt_end, w.stop_s);
        continue;
      }
    }
    add(t, next, Activity::kCompute, tau);
    tau += next - t;
    t = next;
  }
  add(w.stop_s, w.duration_s, Activity::kIdle, 0);
  return out;
}

}  // namespace clustertwin::power
