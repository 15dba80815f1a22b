#pragma once
/// Seeded random numbers whose values are fixed by this file, not by the standard library:
/// libstdc++'s distributions are implementation-defined (STYLE.md), so a run's output would
/// change with the toolchain. The generator is SplitMix64 (Steele, Lea and Flood 2014): 64-bit
/// state, full period, and every draw is a fixed sequence of integer operations. Distributions
/// are written out here by inversion (exponential, Weibull), Box-Muller (normal, lognormal) and
/// the cumulative table (discrete choices). Same seed, same numbers, byte for byte.

#include <cmath>
#include <cstdint>
#include <span>

namespace clustertwin::scheduler {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  /// A fresh, independent stream for a named purpose (failures, repairs, workload): the seed
  /// mixed with the stream id, so adding draws to one stream never shifts another.
  [[nodiscard]] Rng stream(uint64_t id) const { return Rng(mix(state_ ^ mix(id + 0x9e37))); }

  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix(state_);
  }
  /// Uniform in (0, 1): 53 random bits, never exactly 0 or 1 (safe for log).
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  /// Uniform integer in [0, n).
  int64_t below(int64_t n) {
    return n <= 1 ? 0 : static_cast<int64_t>(uniform() * static_cast<double>(n));
  }
  /// Exponential with the given mean (inversion).
  double exponential(double mean) { return -mean * std::log(uniform()); }
  /// Standard normal (Box-Muller, the cosine branch only: one normal per two uniforms).
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  /// Lognormal with the given median and log-space sigma.
  double lognormal(double median, double sigma) { return median * std::exp(sigma * normal()); }
  /// Weibull with scale lambda and shape k (inversion).
  double weibull(double lambda, double k) {
    return lambda * std::pow(-std::log(uniform()), 1.0 / k);
  }
  /// Index drawn with probability proportional to weights (all >= 0, sum > 0).
  size_t choose(std::span<const double> weights) {
    double total = 0;
    for (double w : weights) total += w;
    double x = uniform() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (x < weights[i]) return i;
      x -= weights[i];
    }
    return weights.size() - 1;
  }

 private:
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

}  // namespace clustertwin::scheduler
