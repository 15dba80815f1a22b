#pragma once
/// Parsing and printing of unit strings ("900 GB/s", "800 Gb/s", "1.5 us", "1400 W",
/// "15 PFLOP/s"), in one place. A string of the wrong dimension is an error that names what was
/// expected and what the unit actually measures ("900 GB" for a bandwidth is a size).

#include <string>
#include <string_view>

#include "clustertwin/base/result.h"
#include "clustertwin/base/units.h"

namespace clustertwin::base {

enum class Dimension {
  kBytes,
  kBytesPerSecond,
  kFlops,
  kFlopsPerSecond,
  kSeconds,
  kWatts,
  kJoules
};

/// "size", "bandwidth", ... : the word users know for a dimension.
std::string_view dimension_name(Dimension d);
/// An example string of the dimension, for messages ("900 GB/s").
std::string_view dimension_example(Dimension d);

/// Parses "<number> <unit>" (the space is optional) into a value in the SI base unit of `want`.
/// Rejects empty strings, missing or unknown units, a unit of another dimension, non-finite
/// numbers. Negative values are rejected unless `allow_negative`.
Result<double> parse_quantity(std::string_view text, Dimension want, bool allow_negative = false);

template <class Q>
struct DimensionOf;
template <>
struct DimensionOf<Bytes> {
  static constexpr Dimension value = Dimension::kBytes;
};
template <>
struct DimensionOf<BytesPerSecond> {
  static constexpr Dimension value = Dimension::kBytesPerSecond;
};
template <>
struct DimensionOf<Flops> {
  static constexpr Dimension value = Dimension::kFlops;
};
template <>
struct DimensionOf<FlopsPerSecond> {
  static constexpr Dimension value = Dimension::kFlopsPerSecond;
};
template <>
struct DimensionOf<Seconds> {
  static constexpr Dimension value = Dimension::kSeconds;
};
template <>
struct DimensionOf<Watts> {
  static constexpr Dimension value = Dimension::kWatts;
};
template <>
struct DimensionOf<Joules> {
  static constexpr Dimension value = Dimension::kJoules;
};

/// Typed front end: `parse<BytesPerSecond>("800 Gb/s")` gives 100e9 B/s.
template <class Q>
Result<Q> parse(std::string_view text, bool allow_negative = false) {
  auto r = parse_quantity(text, DimensionOf<Q>::value, allow_negative);
  if (!r) return fail(r.error());
  return Q::from_base(*r);
}

/// Human formatting with an SI prefix and the dimension's unit, `digits` significant digits:
/// format_quantity(Bytes 37e12) = "37.0 TB"; bandwidths in bytes ("100 GB/s"). Decimal (SI)
/// prefixes only; use format_bits_per_s for network line rates.
std::string format_quantity(double base_value, Dimension d, int digits = 3);
template <class Q>
std::string format(Q q, int digits = 3) {
  return format_quantity(q.base(), DimensionOf<Q>::value, digits);
}
/// A bandwidth as a line rate in bits: "800 Gb/s".
std::string format_bits_per_s(BytesPerSecond r, int digits = 3);
/// A number with `digits` significant digits, no exponent for ordinary magnitudes.
std::string format_sig(double v, int digits);

}  // namespace clustertwin::base
