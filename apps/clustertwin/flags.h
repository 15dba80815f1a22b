#pragma once
/// Numeric flags through the library's one checked way in (base/number.h): a CLI11 validator
/// that parses the text strictly, checks the range for the flag's own type and rewrites the text
/// to plain decimal, so that CLI11's conversion afterwards (which would read "010" as octal,
/// saturate "99999999999999999999" and take "nan") sees exactly the value that was checked.
/// Messages read "--gpus: expected an integer >= 1, got 0".
///
///   cmd->add_option("--gpus", o->gpus, "...")->check(flags::positive(o->gpus, base::kMaxGpus));

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>

#include "clustertwin/base/number.h"

namespace clustertwin::app::flags {

namespace detail {

/// "an integer in [1, 64]" -> "in [1, 64]", "a number > 0" -> "> 0": what --help shows after
/// the type ("--channels INT:in [1, 64]").
inline std::string help_of(std::string range) {
  for (std::string_view lead : {"an integer ", "a number ", "the integer "}) {
    if (range.rfind(lead, 0) == 0) return range.substr(lead.size());
  }
  return {};
}

template <class T>
CLI::Validator integer(base::IntRange r) {
  static_assert(std::is_integral_v<T>);
  // The flag's own type bounds the range: an int flag never takes 2^31.
  using L = std::numeric_limits<T>;
  r.min = std::max<int64_t>(r.min, static_cast<int64_t>(L::min()));
  if constexpr (sizeof(T) < sizeof(int64_t) || std::is_signed_v<T>) {
    r.max = std::min<int64_t>(r.max, static_cast<int64_t>(L::max()));
  }
  return CLI::Validator(
      [r](std::string& text) -> std::string {
        auto v = base::parse_integer(text, r);
        if (!v) return v.error().message;
        text = std::to_string(*v);
        return {};
      },
      help_of(base::describe_range(r)));
}

inline CLI::Validator real(base::RealRange r) {
  return CLI::Validator(
      [r](std::string& text) -> std::string {
        auto v = base::parse_real(text, r);
        if (!v) return v.error().message;
        text = fmt::format("{}", *v);
        return {};
      },
      help_of(base::describe_range(r)));
}

template <class T>
CLI::Validator make(base::IntRange ir, base::RealRange rr) {
  if constexpr (std::is_floating_point_v<T>) {
    return real(rr);
  } else {
    return integer<T>(ir);
  }
}

}  // namespace detail

/// An integer >= 1 (at most `max`), or a real > 0 (at most `max`).
template <class T>
CLI::Validator positive(const T& /*target*/, double max = std::numeric_limits<double>::max()) {
  const int64_t imax =
      max >= 9.2e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(max);
  return detail::make<T>({.min = 1, .max = imax}, {.min = 0, .max = max, .min_exclusive = true});
}

/// An integer or real >= 0 (at most `max`).
template <class T>
CLI::Validator non_negative(const T& /*target*/, double max = std::numeric_limits<double>::max()) {
  const int64_t imax =
      max >= 9.2e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(max);
  return detail::make<T>({.min = 0, .max = imax}, {.min = 0, .max = max});
}

/// An integer or real in [lo, hi].
template <class T>
CLI::Validator range(const T& /*target*/, double lo, double hi) {
  return detail::make<T>({.min = static_cast<int64_t>(lo), .max = static_cast<int64_t>(hi)},
                         {.min = lo, .max = hi});
}

/// Any finite real (a temperature, an offset), or any integer of the flag's type.
template <class T>
CLI::Validator finite(const T& /*target*/) {
  return detail::make<T>({}, {});
}

}  // namespace clustertwin::app::flags
