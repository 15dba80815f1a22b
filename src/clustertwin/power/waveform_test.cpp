#include "clustertwin/power/waveform.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "clustertwin/power/timeline.h"

namespace clustertwin::power {
namespace {

double uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

TEST(Waveform, FftOfASineHasItsPowerInOneBand) {
  const double dt = 0.01, A = 1000;
  std::vector<double> w;
  for (int i = 0; i < 6000; ++i)
    w.push_back(5e4 + A * std::sin(2 * std::numbers::pi * 1.0 * i * dt));
  EXPECT_NEAR(band_rms(w, dt, 0.1, 2.0), A / std::sqrt(2.0), 0.03 * A);
  EXPECT_LT(band_rms(w, dt, 3.0, 30.0), 0.02 * A);
  std::vector<double> w2;
  for (int i = 0; i < 6000; ++i) w2.push_back(A * std::sin(2 * std::numbers::pi * 10.0 * i * dt));
  EXPECT_NEAR(band_rms(w2, dt, 3.0, 30.0), A / std::sqrt(2.0), 0.03 * A);
  EXPECT_LT(band_rms(w2, dt, 0.1, 2.0), 0.02 * A);
}

TEST(Waveform, FftMatchesANaiveDft) {
  std::mt19937_64 rng(7);
  std::vector<std::complex<double>> a(64);
  for (auto& x : a) x = {uniform(rng, -1, 1), uniform(rng, -1, 1)};
  auto f = a;
  fft(f);
  for (size_t k = 0; k < a.size(); ++k) {
    std::complex<double> s = 0;
    for (size_t n = 0; n < a.size(); ++n) {
      s += a[n] * std::polar(1.0, -2 * std::numbers::pi * static_cast<double>(k * n) / 64.0);
    }
    EXPECT_NEAR(std::abs(s - f[k]), 0.0, 1e-9) << k;
  }
}

TEST(Waveform, StatsAndDownsamplingKeepEnergy) {
  std::vector<double> w = {1, 3, 3, 1, 5, 5, 1};
  const auto s = waveform_stats(w, 0.5, false);
  EXPECT_DOUBLE_EQ(s.peak_W, 5);
  EXPECT_DOUBLE_EQ(s.min_W, 1);
  EXPECT_DOUBLE_EQ(s.swing_W, 4);
  EXPECT_DOUBLE_EQ(s.energy_J, 9.5);
  EXPECT_DOUBLE_EQ(s.max_ramp_up_W_per_s, 8);
  EXPECT_DOUBLE_EQ(s.max_ramp_down_W_per_s, 8);
  double dt2 = 0;
  const auto d = downsample(w, 0.5, 3, &dt2);
  EXPECT_DOUBLE_EQ(dt2, 1.5);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_DOUBLE_EQ(d[0], 7.0 / 3);
}

TEST(Timeline, PropertyEnergyIsTheIntegralOfPower) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<Segment> segs;
    double t = 0;
    const int n = 1 + static_cast<int>(uniform(rng, 0, 50));
    for (int i = 0; i < n; ++i) {
      const double d = uniform(rng, 0.001, 0.5);
      segs.push_back({t, t + d, uniform(rng, 50, 1400), Activity::kCompute});
      t += d;
    }
    PeriodicTimeline tl(segs);
    // Riemann sum at a fine step over three periods vs the exact energy.
    const double T = tl.period_s(), h = T / 20000;
    double sum = 0;
    for (double x = 0.5 * h; x < 3 * T; x += h) sum += tl.at(x) * h;
    EXPECT_NEAR(sum, tl.energy_J(3 * T), 2e-3 * sum) << "seed " << seed;
    EXPECT_NEAR(tl.energy_J(3 * T), 3 * tl.energy_per_period_J(), 1e-9 * sum);
    const double a = uniform(rng, 0, 2 * T), b = a + uniform(rng, 0, T);
    double part = 0;
    for (double x = a + 0.5 * h; x < b; x += h) part += tl.at(x) * h;
    EXPECT_NEAR(part, tl.energy_J(a, b), 2e-3 * std::max(part, 1.0) + 1400 * h) << "seed " << seed;
  }
}

// The window sampler's hinted lookup gives the bisection's value bit for bit, whatever the hint
// (a stale one, one past the end) and however far the time moves (property, seeded).
TEST(Timeline, HintedEnergyIsTheBisectionsExactly) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<Segment> segs;
    double t = 0;
    for (int i = 0; i < 40; ++i) {
      const double d = uniform(rng, 1e-4, 0.05);
      segs.push_back({t, t + d, uniform(rng, 50, 1400), Activity::kCompute});
      t += d;
    }
    PeriodicTimeline tl(segs);
    size_t hint = 0, wild = 1000;
    for (double x = 0; x < 5 * tl.period_s(); x += uniform(rng, 0, 0.02)) {
      EXPECT_EQ(tl.energy_J(x, hint), tl.energy_J(x)) << "seed " << seed << " t " << x;
      EXPECT_EQ(tl.energy_J(x, wild), tl.energy_J(x)) << "seed " << seed << " t " << x;
      wild = static_cast<size_t>(uniform(rng, 0, 60));
    }
    EXPECT_EQ(tl.energy_J(tl.period_s(), hint), tl.energy_J(tl.period_s()));
  }
}

TEST(Timeline, JobScheduleCoversTheWindowWithCheckpoints) {
  JobWindow w{.duration_s = 100,
              .resolution_s = 0.01,
              .start_s = 5,
              .init_s = 5,
              .stop_s = 90,
              .checkpoint_every_s = 30,
              .checkpoint_s = 4};
  const auto s = job_schedule(w, 2.0);
  double t = 0, train = 0, ckpt = 0;
  for (const auto& iv : s) {
    EXPECT_NEAR(iv.t0_s, t, 1e-9);
    t = iv.t1_s;
    if (iv.activity == Activity::kCompute) train += iv.t1_s - iv.t0_s;
    if (iv.activity == Activity::kCheckpoint) ckpt += iv.t1_s - iv.t0_s;
  }
  EXPECT_NEAR(t, 100, 1e-9);
  EXPECT_NEAR(ckpt, 8, 1e-9);  // at 36-40 and 66-70; the third would end at 100 > stop
  EXPECT_NEAR(train, 80 - 8, 1e-9);
}

}  // namespace
}  // namespace clustertwin::power
