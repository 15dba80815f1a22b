// libFuzzer target: the unit-string parser must never crash, and whatever it accepts must be a
// finite, non-negative number that survives a format/parse round trip.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "clustertwin/base/units_parse.h"

using namespace clustertwin::base;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (auto d :
       {Dimension::kBytes, Dimension::kBytesPerSecond, Dimension::kFlops,
        Dimension::kFlopsPerSecond, Dimension::kSeconds, Dimension::kWatts, Dimension::kJoules}) {
    auto r = parse_quantity(text, d);
    if (!r) continue;
    if (!std::isfinite(*r) || *r < 0) std::abort();
    auto back = parse_quantity(format_quantity(*r, d, 9), d);
    if (!back) std::abort();
  }
  return 0;
}
