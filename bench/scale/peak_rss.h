#pragma once
// Peak resident memory of this process so far (MiB), for the scale benchmarks' reports.
#include <sys/resource.h>

namespace clustertwin::bench {

inline double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace clustertwin::bench
