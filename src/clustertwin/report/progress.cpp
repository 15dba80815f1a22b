#include "clustertwin/report/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string_view>

namespace clustertwin::report {
namespace {

constexpr auto kRedrawEvery = std::chrono::milliseconds(100);  // ~10 Hz
constexpr int kBarWidth = 28;
constexpr std::string_view kClearLine = "\r\033[2K";

}  // namespace

bool progress_enabled(bool stream_is_tty, const char* ci_env, bool quiet) {
  if (quiet || !stream_is_tty) return false;
  if (ci_env != nullptr) {
    const std::string_view ci = ci_env;
    if (!ci.empty() && ci != "0" && ci != "false") return false;
  }
  return true;
}

std::string format_eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--";
  if (seconds < 10) return fmt::format("{:.1f}s", seconds);
  const auto s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

Progress Progress::to_stderr(std::string label, int64_t total, bool quiet) {
  const bool on = progress_enabled(isatty(fileno(stderr)) != 0, std::getenv("CI"), quiet);
  return Progress(std::cerr, on, std::move(label), total);
}

Progress::Progress(std::ostream& out, bool enabled, std::string label, int64_t total, Clock clock)
    : out_(&out),
      enabled_(enabled),
      label_(std::move(label)),
      total_(std::max<int64_t>(total, 0)),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })),
      start_(clock_()),
      last_draw_(start_ - kRedrawEvery) {}

Progress::Progress(Progress&& other) noexcept
    : out_(other.out_),
      enabled_(other.enabled_),
      label_(std::move(other.label_)),
      total_(other.total_),
      clock_(std::move(other.clock_)),
      start_(other.start_),
      last_draw_(other.last_draw_),
      done_(other.done_.load()),
      drawn_(other.drawn_),
      finished_(other.finished_) {
  other.enabled_ = false;
  other.finished_ = true;
}

Progress::~Progress() { finish(); }

void Progress::advance(int64_t n) {
  done_.fetch_add(n, std::memory_order_relaxed);
  if (enabled_) maybe_draw();
}

void Progress::set(int64_t done) {
  done_.store(done, std::memory_order_relaxed);
  if (enabled_) maybe_draw();
}

std::string Progress::line() const {
  const int64_t done = std::clamp<int64_t>(this->done(), 0, total_ > 0 ? total_ : INT64_MAX);
  const double frac = total_ > 0 ? static_cast<double>(done) / static_cast<double>(total_) : 0.0;
  const int filled = static_cast<int>(frac * kBarWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kBarWidth - filled), '.');
  const double elapsed = std::chrono::duration<double>(clock_() - start_).count();
  std::string eta = "--";
  if (done > 0 && total_ > 0 && elapsed > 0) {
    eta = format_eta(elapsed / static_cast<double>(done) * static_cast<double>(total_ - done));
  }
  return fmt::format("{} [{}] {:3.0f}%  {}/{}  ETA {}", label_, bar, frac * 100.0, done, total_,
                     eta);
}

void Progress::maybe_draw() {
  const auto now = clock_();
  // One drawer at a time; a thread that finds the lock taken just skips this redraw.
  std::unique_lock lock(draw_, std::try_to_lock);
  if (!lock.owns_lock() || finished_ || now - last_draw_ < kRedrawEvery) return;
  last_draw_ = now;
  *out_ << kClearLine << line() << std::flush;
  drawn_ = true;
}

void Progress::finish() {
  std::lock_guard lock(draw_);
  if (finished_) return;
  finished_ = true;
  if (enabled_ && drawn_) *out_ << kClearLine << std::flush;
}

}  // namespace clustertwin::report
