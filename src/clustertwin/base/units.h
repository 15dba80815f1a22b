#pragma once
/// Strong unit types (STYLE.md "Units live in types"). Each quantity stores one double in its SI
/// base unit: bytes, bytes per second, floating-point operations, FLOP/s, seconds, watts, joules.
/// Only meaningful cross-unit operators exist (Bytes / BytesPerSecond -> Seconds, ...), so a
/// bandwidth can never be added to a size. Bits vs bytes and GB vs GiB are separate literals
/// (_Gbps vs _GBps, _GB vs _GiB): that is where the 8x and 7% errors hide.

#include <compare>

namespace clustertwin::base {

template <class Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  /// From a value in the SI base unit of this dimension.
  static constexpr Quantity from_base(double v) { return Quantity(v); }
  /// The value in the SI base unit (bytes, B/s, FLOP, FLOP/s, s, W, J).
  [[nodiscard]] constexpr double base() const { return v_; }

  constexpr Quantity operator+(Quantity o) const { return Quantity(v_ + o.v_); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(v_ - o.v_); }
  constexpr Quantity operator-() const { return Quantity(-v_); }
  constexpr Quantity& operator+=(Quantity o) {
    v_ += o.v_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) {
    v_ -= o.v_;
    return *this;
  }
  constexpr Quantity operator*(double k) const { return Quantity(v_ * k); }
  constexpr Quantity operator/(double k) const { return Quantity(v_ / k); }
  constexpr Quantity& operator*=(double k) {
    v_ *= k;
    return *this;
  }
  /// Ratio of two quantities of the same dimension (dimensionless).
  constexpr double operator/(Quantity o) const { return v_ / o.v_; }
  constexpr auto operator<=>(const Quantity&) const = default;

 private:
  constexpr explicit Quantity(double v) : v_(v) {}
  double v_ = 0.0;
};

template <class Tag>
constexpr Quantity<Tag> operator*(double k, Quantity<Tag> q) {
  return q * k;
}

struct BytesTag {};
struct BytesPerSecondTag {};
struct FlopsTag {};
struct FlopsPerSecondTag {};
struct SecondsTag {};
struct WattsTag {};
struct JoulesTag {};

using Bytes = Quantity<BytesTag>;
using BytesPerSecond = Quantity<BytesPerSecondTag>;
using Flops = Quantity<FlopsTag>;
using FlopsPerSecond = Quantity<FlopsPerSecondTag>;
using Seconds = Quantity<SecondsTag>;
using Watts = Quantity<WattsTag>;
using Joules = Quantity<JoulesTag>;

// Cross-unit operators: only those with a physical meaning.
constexpr Seconds operator/(Bytes b, BytesPerSecond r) {
  return Seconds::from_base(b.base() / r.base());
}
constexpr BytesPerSecond operator/(Bytes b, Seconds t) {
  return BytesPerSecond::from_base(b.base() / t.base());
}
constexpr Bytes operator*(BytesPerSecond r, Seconds t) {
  return Bytes::from_base(r.base() * t.base());
}
constexpr Bytes operator*(Seconds t, BytesPerSecond r) { return r * t; }
constexpr Seconds operator/(Flops f, FlopsPerSecond r) {
  return Seconds::from_base(f.base() / r.base());
}
constexpr FlopsPerSecond operator/(Flops f, Seconds t) {
  return FlopsPerSecond::from_base(f.base() / t.base());
}
constexpr Flops operator*(FlopsPerSecond r, Seconds t) {
  return Flops::from_base(r.base() * t.base());
}
constexpr Joules operator*(Watts p, Seconds t) { return Joules::from_base(p.base() * t.base()); }
constexpr Joules operator*(Seconds t, Watts p) { return p * t; }
constexpr Watts operator/(Joules e, Seconds t) { return Watts::from_base(e.base() / t.base()); }
constexpr Seconds operator/(Joules e, Watts p) { return Seconds::from_base(e.base() / p.base()); }

// Named constructors, for code that reads like a datasheet.
constexpr Bytes bytes(double v) { return Bytes::from_base(v); }
constexpr Bytes gigabytes(double v) { return Bytes::from_base(v * 1e9); }
constexpr Bytes gibibytes(double v) { return Bytes::from_base(v * 1073741824.0); }
constexpr BytesPerSecond bytes_per_s(double v) { return BytesPerSecond::from_base(v); }
constexpr BytesPerSecond gigabytes_per_s(double v) { return BytesPerSecond::from_base(v * 1e9); }
constexpr BytesPerSecond gigabits_per_s(double v) {
  return BytesPerSecond::from_base(v * 1e9 / 8.0);
}
constexpr Flops flops(double v) { return Flops::from_base(v); }
constexpr FlopsPerSecond flops_per_s(double v) { return FlopsPerSecond::from_base(v); }
constexpr FlopsPerSecond teraflops_per_s(double v) { return FlopsPerSecond::from_base(v * 1e12); }
constexpr Seconds seconds(double v) { return Seconds::from_base(v); }
constexpr Seconds microseconds(double v) { return Seconds::from_base(v * 1e-6); }
constexpr Seconds nanoseconds(double v) { return Seconds::from_base(v * 1e-9); }
constexpr Watts watts(double v) { return Watts::from_base(v); }
constexpr Joules joules(double v) { return Joules::from_base(v); }

namespace literals {
// clang-format off
constexpr Bytes operator""_B(long double v) { return bytes(static_cast<double>(v)); }
constexpr Bytes operator""_B(unsigned long long v) { return bytes(static_cast<double>(v)); }
constexpr Bytes operator""_KB(unsigned long long v) { return bytes(static_cast<double>(v) * 1e3); }
constexpr Bytes operator""_MB(unsigned long long v) { return bytes(static_cast<double>(v) * 1e6); }
constexpr Bytes operator""_GB(unsigned long long v) { return bytes(static_cast<double>(v) * 1e9); }
constexpr Bytes operator""_GB(long double v) { return bytes(static_cast<double>(v) * 1e9); }
constexpr Bytes operator""_TB(unsigned long long v) { return bytes(static_cast<double>(v) * 1e12); }
constexpr Bytes operator""_KiB(unsigned long long v) { return bytes(static_cast<double>(v) * 1024.0); }
constexpr Bytes operator""_MiB(unsigned long long v) { return bytes(static_cast<double>(v) * 1048576.0); }
constexpr Bytes operator""_GiB(unsigned long long v) { return bytes(static_cast<double>(v) * 1073741824.0); }
constexpr BytesPerSecond operator""_GBps(unsigned long long v) { return gigabytes_per_s(static_cast<double>(v)); }
constexpr BytesPerSecond operator""_GBps(long double v) { return gigabytes_per_s(static_cast<double>(v)); }
constexpr BytesPerSecond operator""_TBps(unsigned long long v) { return bytes_per_s(static_cast<double>(v) * 1e12); }
constexpr BytesPerSecond operator""_TBps(long double v) { return bytes_per_s(static_cast<double>(v) * 1e12); }
constexpr BytesPerSecond operator""_Gbps(unsigned long long v) { return gigabits_per_s(static_cast<double>(v)); }
constexpr FlopsPerSecond operator""_TFLOPps(unsigned long long v) { return teraflops_per_s(static_cast<double>(v)); }
constexpr FlopsPerSecond operator""_PFLOPps(unsigned long long v) { return flops_per_s(static_cast<double>(v) * 1e15); }
constexpr FlopsPerSecond operator""_PFLOPps(long double v) { return flops_per_s(static_cast<double>(v) * 1e15); }
constexpr Seconds operator""_s(unsigned long long v) { return seconds(static_cast<double>(v)); }
constexpr Seconds operator""_s(long double v) { return seconds(static_cast<double>(v)); }
constexpr Seconds operator""_ms(unsigned long long v) { return seconds(static_cast<double>(v) * 1e-3); }
constexpr Seconds operator""_us(unsigned long long v) { return microseconds(static_cast<double>(v)); }
constexpr Seconds operator""_us(long double v) { return microseconds(static_cast<double>(v)); }
constexpr Seconds operator""_ns(unsigned long long v) { return nanoseconds(static_cast<double>(v)); }
constexpr Watts operator""_W(unsigned long long v) { return watts(static_cast<double>(v)); }
constexpr Watts operator""_kW(unsigned long long v) { return watts(static_cast<double>(v) * 1e3); }
constexpr Joules operator""_J(unsigned long long v) { return joules(static_cast<double>(v)); }
// clang-format on
}  // namespace literals

}  // namespace clustertwin::base
