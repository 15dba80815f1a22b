#include "clustertwin/base/units_parse.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace clustertwin::base {
namespace {

struct UnitDef {
  std::string_view symbol;
  Dimension dim;
  double factor;  // multiply by this to reach the SI base unit
};

// Case matters: b (bit) vs B (byte), m (milli) vs M (mega). Decimal prefixes are powers of ten,
// binary ones (KiB, GiB) powers of two, as in IEC 80000-13.
constexpr std::array kUnits = {
    UnitDef{"B", Dimension::kBytes, 1.0},
    UnitDef{"kB", Dimension::kBytes, 1e3},
    UnitDef{"KB", Dimension::kBytes, 1e3},
    UnitDef{"MB", Dimension::kBytes, 1e6},
    UnitDef{"GB", Dimension::kBytes, 1e9},
    UnitDef{"TB", Dimension::kBytes, 1e12},
    UnitDef{"PB", Dimension::kBytes, 1e15},
    UnitDef{"EB", Dimension::kBytes, 1e18},
    UnitDef{"KiB", Dimension::kBytes, 1024.0},
    UnitDef{"MiB", Dimension::kBytes, 1048576.0},
    UnitDef{"GiB", Dimension::kBytes, 1073741824.0},
    UnitDef{"TiB", Dimension::kBytes, 1099511627776.0},
    UnitDef{"B/s", Dimension::kBytesPerSecond, 1.0},
    UnitDef{"kB/s", Dimension::kBytesPerSecond, 1e3},
    UnitDef{"KB/s", Dimension::kBytesPerSecond, 1e3},
    UnitDef{"MB/s", Dimension::kBytesPerSecond, 1e6},
    UnitDef{"GB/s", Dimension::kBytesPerSecond, 1e9},
    UnitDef{"EB/s", Dimension::kBytesPerSecond, 1e18},
    UnitDef{"TB/s", Dimension::kBytesPerSecond, 1e12},
    UnitDef{"PB/s", Dimension::kBytesPerSecond, 1e15},
    UnitDef{"KiB/s", Dimension::kBytesPerSecond, 1024.0},
    UnitDef{"MiB/s", Dimension::kBytesPerSecond, 1048576.0},
    UnitDef{"GiB/s", Dimension::kBytesPerSecond, 1073741824.0},
    UnitDef{"b/s", Dimension::kBytesPerSecond, 1.0 / 8},
    UnitDef{"kb/s", Dimension::kBytesPerSecond, 1e3 / 8},
    UnitDef{"Kb/s", Dimension::kBytesPerSecond, 1e3 / 8},
    UnitDef{"Mb/s", Dimension::kBytesPerSecond, 1e6 / 8},
    UnitDef{"Gb/s", Dimension::kBytesPerSecond, 1e9 / 8},
    UnitDef{"Tb/s", Dimension::kBytesPerSecond, 1e12 / 8},
    UnitDef{"bps", Dimension::kBytesPerSecond, 1.0 / 8},
    UnitDef{"kbps", Dimension::kBytesPerSecond, 1e3 / 8},
    UnitDef{"Kbps", Dimension::kBytesPerSecond, 1e3 / 8},
    UnitDef{"Mbps", Dimension::kBytesPerSecond, 1e6 / 8},
    UnitDef{"Gbps", Dimension::kBytesPerSecond, 1e9 / 8},
    UnitDef{"Tbps", Dimension::kBytesPerSecond, 1e12 / 8},
    UnitDef{"FLOP", Dimension::kFlops, 1.0},
    UnitDef{"kFLOP", Dimension::kFlops, 1e3},
    UnitDef{"MFLOP", Dimension::kFlops, 1e6},
    UnitDef{"GFLOP", Dimension::kFlops, 1e9},
    UnitDef{"TFLOP", Dimension::kFlops, 1e12},
    UnitDef{"PFLOP", Dimension::kFlops, 1e15},
    UnitDef{"EFLOP", Dimension::kFlops, 1e18},
    UnitDef{"ZFLOP", Dimension::kFlops, 1e21},
    UnitDef{"FLOP/s", Dimension::kFlopsPerSecond, 1.0},
    UnitDef{"kFLOP/s", Dimension::kFlopsPerSecond, 1e3},
    UnitDef{"MFLOP/s", Dimension::kFlopsPerSecond, 1e6},
    UnitDef{"GFLOP/s", Dimension::kFlopsPerSecond, 1e9},
    UnitDef{"TFLOP/s", Dimension::kFlopsPerSecond, 1e12},
    UnitDef{"PFLOP/s", Dimension::kFlopsPerSecond, 1e15},
    UnitDef{"EFLOP/s", Dimension::kFlopsPerSecond, 1e18},
    UnitDef{"FLOPS", Dimension::kFlopsPerSecond, 1.0},
    UnitDef{"GFLOPS", Dimension::kFlopsPerSecond, 1e9},
    UnitDef{"TFLOPS", Dimension::kFlopsPerSecond, 1e12},
    UnitDef{"PFLOPS", Dimension::kFlopsPerSecond, 1e15},
    UnitDef{"EFLOPS", Dimension::kFlopsPerSecond, 1e18},
    UnitDef{"ns", Dimension::kSeconds, 1e-9},
    UnitDef{"us", Dimension::kSeconds, 1e-6},
    UnitDef{"\xC2\xB5s", Dimension::kSeconds, 1e-6},  // µs
    UnitDef{"ms", Dimension::kSeconds, 1e-3},
    UnitDef{"s", Dimension::kSeconds, 1.0},
    UnitDef{"min", Dimension::kSeconds, 60.0},
    UnitDef{"h", Dimension::kSeconds, 3600.0},
    UnitDef{"d", Dimension::kSeconds, 86400.0},
    UnitDef{"mW", Dimension::kWatts, 1e-3},
    UnitDef{"W", Dimension::kWatts, 1.0},
    UnitDef{"kW", Dimension::kWatts, 1e3},
    UnitDef{"MW", Dimension::kWatts, 1e6},
    UnitDef{"GW", Dimension::kWatts, 1e9},
    UnitDef{"TW", Dimension::kWatts, 1e12},
    UnitDef{"J", Dimension::kJoules, 1.0},
    UnitDef{"kJ", Dimension::kJoules, 1e3},
    UnitDef{"MJ", Dimension::kJoules, 1e6},
    UnitDef{"GJ", Dimension::kJoules, 1e9},
    UnitDef{"TJ", Dimension::kJoules, 1e12},
    UnitDef{"PJ", Dimension::kJoules, 1e15},
    UnitDef{"Wh", Dimension::kJoules, 3600.0},
    UnitDef{"kWh", Dimension::kJoules, 3.6e6},
    UnitDef{"MWh", Dimension::kJoules, 3.6e9},
    UnitDef{"GWh", Dimension::kJoules, 3.6e12},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace

std::string_view dimension_name(Dimension d) {
  switch (d) {
    case Dimension::kBytes:
      return "size";
    case Dimension::kBytesPerSecond:
      return "bandwidth";
    case Dimension::kFlops:
      return "amount of work";
    case Dimension::kFlopsPerSecond:
      return "compute rate";
    case Dimension::kSeconds:
      return "time";
    case Dimension::kWatts:
      return "power";
    case Dimension::kJoules:
      return "energy";
  }
  return "quantity";
}

std::string_view dimension_example(Dimension d) {
  switch (d) {
    case Dimension::kBytes:
      return "80 GB";
    case Dimension::kBytesPerSecond:
      return "900 GB/s";
    case Dimension::kFlops:
      return "1.2 PFLOP";
    case Dimension::kFlopsPerSecond:
      return "15 PFLOP/s";
    case Dimension::kSeconds:
      return "1.5 us";
    case Dimension::kWatts:
      return "1400 W";
    case Dimension::kJoules:
      return "3.6 MJ";
  }
  return "";
}

Result<double> parse_quantity(std::string_view text, Dimension want, bool allow_negative) {
  const std::string expected = std::string("expected a ") + std::string(dimension_name(want)) +
                               " like '" + std::string(dimension_example(want)) + "'";
  std::string_view s = trim(text);
  if (s.empty()) return fail(expected + ", got an empty string");
  double value = 0.0;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (*first == '+') ++first;
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr == first) {
    return fail(expected + ", got " + quoted(text) + " (no number)");
  }
  if (!std::isfinite(value)) return fail(expected + ", got " + quoted(text) + " (not finite)");
  std::string_view unit = trim(std::string_view(ptr, static_cast<size_t>(last - ptr)));
  if (unit.empty()) {
    return fail(expected + ", got " + quoted(text) + " (the unit is missing)");
  }
  for (const auto& u : kUnits) {
    if (u.symbol != unit) continue;
    if (u.dim != want) {
      return fail(expected + ", got " + quoted(text) + " (" + quoted(unit) + " is a unit of " +
                  std::string(dimension_name(u.dim)) + ")");
    }
    if (value < 0 && !allow_negative) {
      return fail(expected + ", got " + quoted(text) + " (negative)");
    }
    const double v = value * u.factor;
    if (!std::isfinite(v) || std::fabs(v) > 1e300) {
      return fail(expected + ", got " + quoted(text) + " (out of range)");
    }
    return v;
  }
  return fail(expected + ", got " + quoted(text) + " (unknown unit " + quoted(unit) + ")");
}

std::string format_sig(double v, int digits) {
  if (v == 0.0) return "0";
  char buf[64];
  const double mag = std::floor(std::log10(std::fabs(v)));
  int decimals = digits - 1 - static_cast<int>(mag);
  if (decimals < 0) decimals = 0;
  if (decimals > 12) decimals = 12;
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string format_quantity(double v, Dimension d, int digits) {
  struct Prefix {
    double f;
    const char* p;
  };
  static constexpr Prefix kPrefixes[] = {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"},
                                         {1e6, "M"},  {1e3, "k"},  {1.0, ""}};
  if (d == Dimension::kSeconds) {
    const double a = std::fabs(v);
    if (a >= 3600.0 * 48) return format_sig(v / 86400.0, digits) + " d";
    if (a >= 3600.0 * 2) return format_sig(v / 3600.0, digits) + " h";
    if (a >= 1.0 || a == 0.0) return format_sig(v, digits) + " s";
    if (a >= 1e-3) return format_sig(v * 1e3, digits) + " ms";
    if (a >= 1e-6) return format_sig(v * 1e6, digits) + " us";
    return format_sig(v * 1e9, digits) + " ns";
  }
  const char* unit = "";
  switch (d) {
    case Dimension::kBytes:
      unit = "B";
      break;
    case Dimension::kBytesPerSecond:
      unit = "B/s";
      break;
    case Dimension::kFlops:
      unit = "FLOP";
      break;
    case Dimension::kFlopsPerSecond:
      unit = "FLOP/s";
      break;
    case Dimension::kWatts:
      unit = "W";
      break;
    case Dimension::kJoules:
      unit = "J";
      break;
    case Dimension::kSeconds:
      break;
  }
  auto parseable = [&](const std::string& symbol) {
    for (const auto& u : kUnits) {
      if (u.symbol == symbol && u.dim == d) return true;
    }
    return false;
  };
  // The largest prefix that fits and that parse_quantity() reads back.
  for (const auto& p : kPrefixes) {
    const std::string symbol = std::string(p.p) + unit;
    if ((std::fabs(v) >= p.f * 0.9995 && parseable(symbol)) || p.f == 1.0) {
      return format_sig(v / p.f, digits) + " " + symbol;
    }
  }
  return format_sig(v, digits) + " " + unit;
}

std::string format_bits_per_s(BytesPerSecond r, int digits) {
  const double bits = r.base() * 8.0;
  if (bits >= 1e12 * 0.9995) return format_sig(bits / 1e12, digits) + " Tb/s";
  if (bits >= 1e9 * 0.9995) return format_sig(bits / 1e9, digits) + " Gb/s";
  if (bits >= 1e6 * 0.9995) return format_sig(bits / 1e6, digits) + " Mb/s";
  return format_sig(bits, digits) + " b/s";
}

}  // namespace clustertwin::base
