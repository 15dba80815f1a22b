#pragma once
/// Time limits of a scheduling run (docs/limits.md). The engine's integer-nanosecond clock holds
/// 292 years; a run may last up to kMaxHorizonS (the hot-spare validation simulates 250 years to
/// make its Monte Carlo error small; the CLI's --days takes up to base::kMaxSimSeconds) and one
/// duration inside it (a job's run time or time limit, a checkpoint interval, a repair) is held
/// at kMaxDurationS, so that a time of the run plus a duration always fits the clock.

namespace clustertwin::scheduler {

inline constexpr double kMaxHorizonS = 250.0 * 365.25 * 86400.0;
inline constexpr double kMaxDurationS = 40.0 * 365.25 * 86400.0;

}  // namespace clustertwin::scheduler
