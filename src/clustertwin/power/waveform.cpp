#include "clustertwin/power/waveform.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "clustertwin/base/check.h"

namespace clustertwin::power {

void fft(std::vector<std::complex<double>>& a) {
  const size_t n = a.size();
  CT_CHECK(n > 0 && (n & (n - 1)) == 0, "fft size is a power of two");
  for (size_t i = 1, j = 0; i < n; ++i) {
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    const double ang = -2 * std::numbers::pi / static_cast<double>(len);
    const std::complex<double> wl(std::cos(ang), std::sin(ang));
    for (size_t i = 0; i < n; i += len) {
      std::complex<double> w(1);
      for (size_t k = 0; k < len / 2; ++k) {
        const auto u = a[i + k];
        const auto v = a[i + k + len / 2] * w;
        a[i + k] = u + v;
        a[i + k + len / 2] = u - v;
        w *= wl;
      }
    }
  }
}

std::vector<double> band_rms(std::span<const double> w, double dt_s,
                             std::span<const std::pair<double, double>> bands) {
  std::vector<double> out(bands.size(), 0.0);
  const size_t n = w.size();
  if (n < 2 || dt_s <= 0) return out;
  double mean = 0;
  for (double x : w) mean += x;
  mean /= static_cast<double>(n);
  size_t m = 1;
  while (m < n) m <<= 1;
  std::vector<std::complex<double>> a(m);
  for (size_t i = 0; i < n; ++i) a[i] = w[i] - mean;
  fft(a);
  const double df = 1.0 / (static_cast<double>(m) * dt_s);
  for (size_t b = 0; b < bands.size(); ++b) {
    const auto [lo, hi] = bands[b];
    const auto k0 = static_cast<size_t>(std::max(1.0, std::ceil(lo / df)));
    const auto k1 = std::min(m / 2, static_cast<size_t>(std::floor(hi / df)));
    double s = 0;
    for (size_t k = k0; k <= k1; ++k) s += std::norm(a[k]) * (k == m / 2 ? 1.0 : 2.0);
    out[b] = std::sqrt(s / (static_cast<double>(n) * static_cast<double>(m)));
  }
  return out;
}

double band_rms(std::span<const double> w, double dt_s, double f_lo, double f_hi) {
  const std::pair<double, double> b[] = {{f_lo, f_hi}};
  return band_rms(w, dt_s, b)[0];
}

WaveformStats waveform_stats(std::span<const double> w, double dt_s, bool spectrum) {
  WaveformStats s;
  if (w.empty()) return s;
  s.peak_W = *std::max_element(w.begin(), w.end());
  s.min_W = *std::min_element(w.begin(), w.end());
  s.swing_W = s.peak_W - s.min_W;
  double e = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    e += w[i] * dt_s;
    if (i > 0) {
      const double r = (w[i] - w[i - 1]) / dt_s;
      s.max_ramp_up_W_per_s = std::max(s.max_ramp_up_W_per_s, r);
      s.max_ramp_down_W_per_s = std::max(s.max_ramp_down_W_per_s, -r);
    }
  }
  s.energy_J = e;
  s.mean_W = e / (dt_s * static_cast<double>(w.size()));
  if (spectrum) {
    const std::pair<double, double> bands[] = {{0.1, 2.0}, {3.0, 30.0}};
    const auto r = band_rms(w, dt_s, bands);
    s.band_0p1_2Hz_rms_W = r[0];
    s.band_3_30Hz_rms_W = r[1];
  }
  return s;
}

std::vector<double> downsample(std::span<const double> w, double dt_s, size_t max_points,
                               double* new_dt_s) {
  const size_t k =
      std::max<size_t>(1, (w.size() + max_points - 1) / std::max<size_t>(1, max_points));
  std::vector<double> out;
  out.reserve(w.size() / k + 1);
  for (size_t i = 0; i < w.size(); i += k) {
    const size_t j = std::min(w.size(), i + k);
    double s = 0;
    for (size_t x = i; x < j; ++x) s += w[x];
    out.push_back(s / static_cast<double>(j - i));
  }
  if (new_dt_s) *new_dt_s = dt_s * static_cast<double>(k);
  return out;
}

}  // namespace clustertwin::power
