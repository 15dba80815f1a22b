#pragma once
/// A progress bar with ETA for long runs (searches, large simulations), on stderr. It draws only
/// when stderr is a terminal and CI is not set, and never with --quiet, so logs and pipes stay
/// clean (DESIGN.md §4: progress goes to stderr). Redraws are throttled to ~10 Hz, so calling
/// advance() a million times costs a million atomic increments and a few dozen writes.
///
///   report::Progress bar = report::Progress::to_stderr("search", points.size(), ctx.quiet);
///   for (...) { ...; bar.advance(); }
///   bar.finish();  // or let the destructor clear the line
///
/// advance() may be called from several threads at once.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <ostream>
#include <string>

namespace clustertwin::report {

/// Whether a bar should draw: a terminal, not CI (CI unset, empty, "0" or "false"), not quiet.
bool progress_enabled(bool stream_is_tty, const char* ci_env, bool quiet);

/// "1h02m", "3m05s", "42s", "0.8s": a short duration for the ETA.
std::string format_eta(double seconds);

class Progress {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  /// A bar on std::cerr, enabled by progress_enabled(isatty(stderr), getenv("CI"), quiet).
  static Progress to_stderr(std::string label, int64_t total, bool quiet);

  /// A bar on `out` (kept by reference); `clock` is injectable for tests (default: steady_clock).
  Progress(std::ostream& out, bool enabled, std::string label, int64_t total, Clock clock = {});
  Progress(Progress&& other) noexcept;
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  Progress& operator=(Progress&&) = delete;
  ~Progress();

  /// Adds `n` finished items; redraws when 100 ms have passed since the last draw.
  void advance(int64_t n = 1);
  /// Sets the finished count; redraws as advance() does.
  void set(int64_t done);
  /// Clears the bar's line (once). Later calls do nothing.
  void finish();

  [[nodiscard]] bool enabled() const { return enabled_; }
  [[nodiscard]] int64_t done() const { return done_.load(std::memory_order_relaxed); }
  /// The line the bar would draw now (no escape codes): "label [####....]  42%  420/1000  ETA
  /// 1m05s".
  [[nodiscard]] std::string line() const;

 private:
  void maybe_draw();

  std::ostream* out_;
  bool enabled_;
  std::string label_;
  int64_t total_;
  Clock clock_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::atomic<int64_t> done_{0};
  std::mutex draw_;
  bool drawn_ = false;
  bool finished_ = false;
};

}  // namespace clustertwin::report
