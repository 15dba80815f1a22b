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
  std::erase_if(segments_, [](const Segment& s) { return s.t1_s <= s.t0_s; });
  if (segments_.empty()) return;
  t_.reserve(segments_.size() + 1);
  cum_.reserve(segments_.size() + 1);
  t_.push_back(0);
  cum_.push_back(0);
  for (auto& s : segments_) {
    CT_CHECK(std::abs(s.t0_s - t_.back()) < 1e-9 * std::max(1.0, s.t0_s),
             "segments are contiguous from 0");
    s.t0_s = t_.back();
    t_.push_back(s.t1_s);
    cum_.push_back(cum_.back() + s.power_W * (s.t1_s - s.t0_s));
  }
}

double PeriodicTimeline::energy_J(double t) const {
  if (segments_.empty() || t <= 0) return 0;
  const double T = t_.back();
  const double k = std::floor(t / T);
  double r = t - k * T;
  if (r >= T) r = T;
  // The segment holding r.
  const auto it = std::upper_bound(t_.begin(), t_.end(), r);
  const size_t i = static_cast<size_t>(std::max<std::ptrdiff_t>(1, it - t_.begin())) - 1;
  const size_t seg = std::min(i, segments_.size() - 1);
  return k * cum_.back() + cum_[seg] + segments_[seg].power_W * (r - t_[seg]);
}

double PeriodicTimeline::average_W() const {
  return segments_.empty() ? 0 : cum_.back() / t_.back();
}

double PeriodicTimeline::peak_W() const {
  double p = 0;
  for (const auto& s : segments_) p = std::max(p, s.power_W);
  return p;
}

double PeriodicTimeline::min_W() const {
  if (segments_.empty()) return 0;
  double p = segments_.front().power_W;
  for (const auto& s : segments_) p = std::min(p, s.power_W);
  return p;
}

double PeriodicTimeline::at(double t) const {
  if (segments_.empty()) return 0;
  const double T = t_.back();
  const double r = t - std::floor(t / T) * T;
  const auto it = std::upper_bound(t_.begin(), t_.end(), r);
  const size_t i = static_cast<size_t>(std::max<std::ptrdiff_t>(1, it - t_.begin())) - 1;
  return segments_[std::min(i, segments_.size() - 1)].power_W;
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
