#pragma once
/// Piecewise-constant power over time, integrated exactly (docs/models/power.md §5): one GPU's
/// power over one training step (periodic), and the wall-clock schedule of a job (idle before it
/// starts, initialisation, training with checkpoint pauses, idle after it stops).

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace clustertwin::power {

/// What a GPU is doing in an interval (for traces and breakdowns).
enum class Activity : uint8_t { kIdle, kWait, kCompute, kComm, kOptimizer, kCheckpoint, kInit };
const char* activity_name(Activity a);

struct Segment {
  double t0_s = 0, t1_s = 0;
  double power_W = 0;
  Activity activity = Activity::kIdle;
};

/// Power over [0, period), repeated. Segments must be contiguous from 0 to the period.
class PeriodicTimeline {
 public:
  PeriodicTimeline() = default;
  /// Takes contiguous segments; a zero-length segment is dropped.
  explicit PeriodicTimeline(std::vector<Segment> segments);
  /// For builders that already hold what the constructor computes: segments contiguous from 0,
  /// each of positive length; cum[i] the energy before segment i (size segments + 1); the
  /// highest and lowest power.
  static PeriodicTimeline from_parts(std::vector<Segment> segments, std::vector<double> cum,
                                     double peak_W, double min_W);

  [[nodiscard]] double period_s() const { return segments_.empty() ? 0 : segments_.back().t1_s; }
  /// Energy over [0, t) for any t >= 0 (periodic extension).
  [[nodiscard]] double energy_J(double t) const;
  /// energy_J(t), the same value, with `hint` the segment the previous call on it ended in: a
  /// time that moves forward by less than a segment is found in O(1) instead of by bisection
  /// (the window sampler's bins).
  [[nodiscard]] double energy_J(double t, size_t& hint) const;
  /// Energy over [a, b).
  [[nodiscard]] double energy_J(double a, double b) const { return energy_J(b) - energy_J(a); }
  [[nodiscard]] double energy_per_period_J() const { return cum_.empty() ? 0 : cum_.back(); }
  [[nodiscard]] double average_W() const;
  /// The highest and lowest power of the period (0 when empty).
  [[nodiscard]] double peak_W() const { return std::max(peak_W_, 0.0); }
  [[nodiscard]] double min_W() const { return min_W_; }
  [[nodiscard]] const std::vector<Segment>& segments() const { return segments_; }
  /// Power at time t (periodic).
  [[nodiscard]] double at(double t) const;

 private:
  /// Index of the segment holding time r in [0, period].
  [[nodiscard]] size_t holding(double r) const;
  /// holding(r), tried first at `hint` and the segment after it.
  [[nodiscard]] size_t holding(double r, size_t hint) const;
  std::vector<Segment> segments_;
  std::vector<double> cum_;  // energy at each boundary, size n+1
  double peak_W_ = 0, min_W_ = 0;
};

/// The wall-clock phases of a job in a waveform window.
struct JobWindow {
  double duration_s = 0;  ///< 0: start + init + max(10 steps, 60 s) + 20 s
  double resolution_s = 0.01;
  double start_s = 5;             ///< the job starts (idle before)
  double init_s = 10;             ///< loading and initialisation: GPUs at their active floor
  double stop_s = 0;              ///< the job stops (0: 20 s before the end of the window)
  double checkpoint_every_s = 0;  ///< 0: no checkpoints
  double checkpoint_s = 0;        ///< synchronous checkpoint pause (GPUs wait)
};

/// One wall-clock interval of the job: idle, init, training (periodic, from offset `tau0_s` of
/// training time) or checkpoint.
struct WallInterval {
  double t0_s = 0, t1_s = 0;
  Activity activity = Activity::kIdle;  ///< kIdle, kInit, kCompute (= training), kCheckpoint
  double tau0_s = 0;                    ///< training time at t0 (training intervals)
};

/// Splits the window into intervals; the window is resolved (defaults filled) in place.
/// Errors are invariant violations of a resolved window (checked by the caller's validation).
std::vector<WallInterval> job_schedule(JobWindow& w, double step_time_s);

}  // namespace clustertwin::power
