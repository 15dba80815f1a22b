#include "clustertwin/base/number.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <string>

namespace clustertwin::base {
namespace {

constexpr int64_t kIntLow = std::numeric_limits<int64_t>::min();
constexpr int64_t kIntHigh = std::numeric_limits<int64_t>::max();
constexpr double kRealHigh = std::numeric_limits<double>::max();

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// The text as it appears in a message: quoted, and cut when it is very long.
std::string quoted(std::string_view text) {
  constexpr size_t kShow = 40;
  if (text.size() <= kShow) return "'" + std::string(text) + "'";
  return "'" + std::string(text.substr(0, kShow)) + "...' (" + std::to_string(text.size()) +
         " characters)";
}

/// A real as users write it: 0, 0.5, 1e+308, -3.
std::string show(double v) { return fmt::format("{}", v); }

}  // namespace

std::string describe_range(const IntRange& r) {
  const bool lo = r.min != kIntLow, hi = r.max != kIntHigh;
  if (lo && hi) {
    if (r.min == r.max) return fmt::format("the integer {}", r.min);
    return fmt::format("an integer in [{}, {}]", r.min, r.max);
  }
  if (lo) return fmt::format("an integer >= {}", r.min);
  if (hi) return fmt::format("an integer <= {}", r.max);
  return "an integer";
}

std::string describe_range(const RealRange& r) {
  const bool lo = r.min > -kRealHigh, hi = r.max < kRealHigh;
  if (lo && hi) {
    return fmt::format("a number in {}{}, {}]", r.min_exclusive ? "(" : "[", show(r.min),
                       show(r.max));
  }
  if (lo) return fmt::format("a number {} {}", r.min_exclusive ? ">" : ">=", show(r.min));
  if (hi) return fmt::format("a number <= {}", show(r.max));
  return "a number";
}

Status check_integer(int64_t v, IntRange r) {
  if (v < r.min || v > r.max) return fail(fmt::format("expected {}, got {}", describe_range(r), v));
  return {};
}

Status check_real(double v, RealRange r) {
  if (!std::isfinite(v)) {
    return fail(fmt::format("expected {}, got {}", describe_range(r), show(v)));
  }
  const bool below = r.min_exclusive ? !(v > r.min) : !(v >= r.min);
  if (below || v > r.max) {
    return fail(fmt::format("expected {}, got {}", describe_range(r), show(v)));
  }
  return {};
}

Result<int64_t> parse_integer(std::string_view text, IntRange r) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return fail(fmt::format("expected {}, got {}", describe_range(r), quoted(text)));
  for (char c : s) {
    if (!is_digit(c)) {
      // "1e3" and "2.5" are numbers, just not integers: say so.
      return fail(
          fmt::format("expected {}, got {} (not a whole number)", describe_range(r), quoted(text)));
    }
  }
  // Accumulate toward the sign so that INT64_MIN parses and nothing wraps.
  int64_t v = 0;
  for (char c : s) {
    const int64_t d = c - '0';
    const bool over = negative ? (v < (kIntLow + d) / 10) : (v > (kIntHigh - d) / 10);
    if (over) {
      return fail(fmt::format("expected {}, got {} (beyond the 64-bit range)", describe_range(r),
                              quoted(text)));
    }
    v = negative ? v * 10 - d : v * 10 + d;
  }
  if (auto st = check_integer(v, r); !st) return fail(st.error());
  return v;
}

Result<double> parse_real(std::string_view text, RealRange r) {
  // The grammar first (from_chars also takes "nan", "inf" and hex floats: refuse them here).
  size_t i = 0;
  const size_t n = text.size();
  if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
  size_t digits = 0;
  while (i < n && is_digit(text[i])) ++i, ++digits;
  if (i < n && text[i] == '.') {
    ++i;
    while (i < n && is_digit(text[i])) ++i, ++digits;
  }
  bool ok = digits > 0;
  if (ok && i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < n && is_digit(text[i])) ++i, ++exp_digits;
    ok = exp_digits > 0;
  }
  if (!ok || i != n) {
    return fail(fmt::format("expected {}, got {}", describe_range(r), quoted(text)));
  }
  // from_chars does not take a leading '+'.
  const size_t from = text[0] == '+' ? 1 : 0;
  double v = 0;
  auto [p, ec] = std::from_chars(text.data() + from, text.data() + n, v);
  if (ec == std::errc::result_out_of_range) {
    // Underflow to a denormal or zero is harmless; overflow is not a finite number.
    size_t e = text.find_first_of("eE");
    const bool huge = e != std::string_view::npos && text.substr(e + 1).find('-') != 0;
    if (huge) {
      return fail(fmt::format("expected {}, got {} (beyond the range of a double)",
                              describe_range(r), quoted(text)));
    }
    v = 0;
  } else if (ec != std::errc() || p != text.data() + n) {
    return fail(fmt::format("expected {}, got {}", describe_range(r), quoted(text)));
  }
  if (auto st = check_real(v, r); !st) return fail(st.error());
  return v;
}

Result<double> parse_scaled_count(std::string_view text, RealRange r) {
  double mult = 1;
  std::string_view num = text;
  if (!num.empty()) {
    switch (num.back()) {
      case 'K':
        mult = 1e3;
        break;
      case 'M':
        mult = 1e6;
        break;
      case 'B':
      case 'G':
        mult = 1e9;
        break;
      case 'T':
        mult = 1e12;
        break;
      default:
        break;
    }
    if (mult != 1) num.remove_suffix(1);
  }
  auto v = parse_real(num, {});
  if (!v) {
    return fail(fmt::format("expected {} (a count such as 15T or 2e12), got {}", describe_range(r),
                            quoted(text)));
  }
  const double scaled = *v * mult;
  if (auto st = check_real(scaled, r); !st) return fail(st.error());
  return scaled;
}

std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

namespace {

template <class T>
std::string spell(std::initializer_list<std::pair<std::string_view, T>> factors) {
  std::string names, values;
  for (const auto& [name, v] : factors) {
    if (!names.empty()) {
      names += "*";
      values += " x ";
    }
    names += name;
    values += fmt::format("{}", v);
  }
  return names + " = " + values;
}

}  // namespace

Result<int64_t> checked_product(std::initializer_list<std::pair<std::string_view, int64_t>> factors,
                                int64_t limit, std::string_view what) {
  int64_t p = 1;
  bool over = false;
  for (const auto& [name, v] : factors) {
    if (v < 0) {
      return fail(fmt::format("{}: expected factors >= 0, got {} = {}", spell(factors), name, v));
    }
    if (over) continue;
    auto next = checked_mul(p, v);
    if (!next || *next > limit) {
      over = true;
      continue;
    }
    p = *next;
  }
  // A zero factor makes the product 0 whatever came before: that is not an overflow.
  for (const auto& f : factors) {
    if (f.second == 0) return int64_t{0};
  }
  if (over) {
    return fail(fmt::format("{} is more than the limit of {} {}", spell(factors), limit, what));
  }
  return p;
}

Result<double> checked_product_real(
    std::initializer_list<std::pair<std::string_view, double>> factors, double limit,
    std::string_view what) {
  double p = 1;
  for (const auto& [name, v] : factors) {
    if (!std::isfinite(v) || v < 0) {
      return fail(
          fmt::format("{}: expected finite factors >= 0, got {} = {}", spell(factors), name, v));
    }
    p *= v;
  }
  if (!std::isfinite(p) || p > limit) {
    return fail(fmt::format("{} = {} is more than the limit of {} {}", spell(factors), show(p),
                            show(limit), what));
  }
  return p;
}

}  // namespace clustertwin::base
