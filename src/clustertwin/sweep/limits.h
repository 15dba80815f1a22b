#pragma once
/// The named limits of a sweep (docs/limits.md).

#include <cstdint>

namespace clustertwin::sweep {

/// Points of one sweep: a million scenario runs is years of one core for the heavy scenarios and
/// still hours for the light ones; a design beyond that is almost surely a mistake (a product
/// of long lists), refused before anything runs.
inline constexpr int64_t kMaxSweepPoints = 1'000'000;

}  // namespace clustertwin::sweep
