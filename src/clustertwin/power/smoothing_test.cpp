#include "clustertwin/power/smoothing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace clustertwin::power {
namespace {

// Own uniform draw (STYLE.md: libstdc++ distributions are implementation-defined).
double uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// A unit's settings for the controller tests: ramps of 100 / 50 W/s per GPU, no hysteresis,
// lossless storage of `storage_J` per GPU.
SmoothingSettings unit_settings(double storage_J) {
  return {.floor = 0.5,
          .ramp_up_W_per_s = 100,
          .ramp_down_W_per_s = 50,
          .hysteresis_s = 0,
          .storage_per_gpu_J = storage_J,
          .storage_efficiency = 1,
          .average_s = 0};
}

// A synchronous-training-like load: compute plateaus and communication valleys of random
// lengths, with job start and stop.
std::vector<double> random_load(std::mt19937_64& rng, size_t n, double lo, double hi) {
  std::vector<double> w;
  while (w.size() < n) {
    const auto len = static_cast<size_t>(uniform(rng, 1, 200));
    const double level =
        uniform(rng, 0, 1) < 0.5 ? lo * uniform(rng, 0.9, 1.1) : hi * uniform(rng, 0.95, 1.0);
    for (size_t i = 0; i < len && w.size() < n; ++i) w.push_back(level);
  }
  return w;
}

TEST(Smoothing, PropertyRampLimitsHoldAndEnergyBalances) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    const double dt = uniform(rng, 0.001, 0.05);
    const double up = uniform(rng, 1e3, 1e5), down = uniform(rng, 1e3, 1e5);
    const double storage = uniform(rng, 0, 1e4), eff = uniform(rng, 0.8, 1.0);
    Smoother s(up, down, uniform(rng, 0, 3), storage, eff, seed % 2 ? 0.0 : uniform(rng, 0.1, 20));
    const auto load = random_load(rng, 5000, uniform(rng, 1e3, 3e4), uniform(rng, 5e4, 1.4e5));
    const auto g = smooth(load, dt, s);
    ASSERT_EQ(g.size(), load.size());
    for (size_t i = 1; i < g.size(); ++i) {
      ASSERT_LE(g[i] - g[i - 1], up * dt * (1 + 1e-12) + 1e-9) << "seed " << seed << " i " << i;
      ASSERT_LE(g[i - 1] - g[i], down * dt * (1 + 1e-12) + 1e-9) << "seed " << seed << " i " << i;
    }
    const auto& t = s.totals();
    // supply = load + burned - unserved + stored + losses   (stored = charged - discharged / eff)
    const double stored = s.state_of_charge_J() - storage;
    const double rhs = t.load_J + t.burned_J - t.unserved_J + stored + t.losses_J;
    EXPECT_NEAR(t.supply_J, rhs, 1e-9 * t.supply_J) << "seed " << seed;
    EXPECT_GE(s.state_of_charge_J(), -1e-9) << "seed " << seed;
    EXPECT_LE(s.state_of_charge_J(), storage + 1e-9) << "seed " << seed;
    EXPECT_GE(t.burned_J, 0);
    EXPECT_GE(t.unserved_J, 0);
    EXPECT_GE(t.losses_J, 0);
    // Energy equals the integral of power.
    double integral = 0;
    for (double x : g) integral += x * dt;
    EXPECT_NEAR(integral, t.supply_J, 1e-9 * integral) << "seed " << seed;
  }
}

TEST(Smoothing, HysteresisHoldsTheGridBeforeRampingDown) {
  Smoother s(1e9, 100, 1.0, 0, 1.0);
  std::vector<double> load(100, 1000.0);
  load.resize(400, 0.0);
  const auto g = smooth(load, 0.01, s);
  EXPECT_DOUBLE_EQ(g[150], 1000.0);  // 0.5 s after the drop: held
  EXPECT_LT(g[250], 1000.0);         // after 1 s: ramping at 100 W/s
  EXPECT_NEAR(g[399], 1000.0 - 100 * (3.0 - 1.0 - 0.01), 2.0);
  EXPECT_GT(s.totals().burned_J, 0);  // no storage: the surplus is burned
}

TEST(Smoothing, StorageCoversAShortSpike) {
  Smoother s(1e3, 1e3, 0, 500, 1.0);  // 500 J, 1 kW/s ramps
  std::vector<double> load(10, 1000.0);
  load.resize(20, 3000.0);  // +2 kW for 0.1 s = 200 J: within the store
  load.resize(40, 1000.0);
  const auto g = smooth(load, 0.01, s);
  EXPECT_LT(*std::max_element(g.begin(), g.end()), 1200.0);
  EXPECT_NEAR(s.totals().unserved_J, 0.0, 1e-9);
}

TEST(Smoothing, AveragingWithEnoughStorageShavesThePeak) {
  // Square wave 100 kW / 20 kW at 0.5 Hz; a store of 100 kJ carries +-40 kW for over 2 s.
  std::vector<double> load;
  for (int i = 0; i < 6000; ++i) load.push_back((i / 100) % 2 ? 20e3 : 100e3);
  Smoother follow(1e5, 1e5, 0, 1e5, 1.0);
  Smoother avg(1e5, 1e5, 0, 1e5, 1.0, 5.0);
  const auto g1 = smooth(load, 0.01, follow);
  const auto g2 = smooth(load, 0.01, avg);
  const double p1 = *std::max_element(g1.begin() + 3000, g1.end());
  const double p2 = *std::max_element(g2.begin() + 3000, g2.end());
  EXPECT_NEAR(p1, 100e3, 1.0);
  EXPECT_LT(p2, 80e3);  // near the 60 kW mean
  EXPECT_NEAR(avg.totals().unserved_J, 0.0, 1e-6);
}

TEST(Smoothing, BadSettingsAreErrors) {
  SmoothingSettings s;
  EXPECT_TRUE(check(s));
  s.ramp_up_W_per_s = 0;
  auto r = check(s);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("ramp-up"), std::string::npos);
  s = {};
  s.ramp_down_W_per_s = -1;
  EXPECT_FALSE(check(s));
  s = {};
  s.floor = 0.95;
  EXPECT_FALSE(check(s));
  s.floor = 0;
  EXPECT_TRUE(check(s));
  s.storage_efficiency = 0.2;
  EXPECT_FALSE(check(s));
  s = {};
  s.average_s = -1;
  EXPECT_FALSE(check(s));
}

TEST(Smoothing, ControllersScaleWithTheirGpusAndTotalsAdd) {
  const SmoothingSettings s = unit_settings(0);
  Smoother one = smoother_for(s, 1), four = smoother_for(s, 4);
  // The same per-GPU load on 4 GPUs is 4x the unit's: the grid side follows 4x as fast.
  for (int i = 0; i < 10; ++i) {
    const double g1 = one.step(1000, 0.1), g4 = four.step(4000, 0.1);
    EXPECT_NEAR(g4, 4 * g1, 1e-9);
  }
  SmoothingSummary sum;
  add_totals(sum, 3, one.totals());
  EXPECT_NEAR(sum.unserved_J, 3 * one.totals().unserved_J, 1e-12);
  EXPECT_NEAR(sum.ramp_burn_J, 3 * one.totals().burned_J, 1e-12);
}

TEST(Smoothing, RackSmoothingHoldsTheFloorAndSumsItsRacks) {
  const SmoothingSettings s = unit_settings(10);
  RackSmoothing rs(s, 1000);
  EXPECT_DOUBLE_EQ(rs.floor_W(), 500);
  EXPECT_DOUBLE_EQ(rs.floored_W(200), 500);
  EXPECT_DOUBLE_EQ(rs.floored_W(800), 800);
  // Three racks of 4 GPUs and one of 2: each kind through its own controller, scaled by its GPUs.
  const size_t a = rs.add(3, 4), b = rs.add(1, 2);
  Smoother ref_a = smoother_for(s, 4), ref_b = smoother_for(s, 2);
  std::vector<double> load_a = {4000, 4000, 400, 400, 4000}, load_b = {100, 2000, 2000, 100, 100};
  for (size_t i = 0; i < load_a.size(); ++i) {
    EXPECT_DOUBLE_EQ(rs.step(a, load_a[i], 0.5), ref_a.step(load_a[i], 0.5));
    EXPECT_DOUBLE_EQ(rs.step(b, load_b[i], 0.5), ref_b.step(load_b[i], 0.5));
  }
  rs.add_floor_burn(7);
  const auto sum = rs.summary(1e4);
  EXPECT_TRUE(sum.enabled);
  EXPECT_EQ(sum.settings.floor, 0.5);
  EXPECT_DOUBLE_EQ(sum.storage_J, 3 * 10 * 4 + 1 * 10 * 2.0);
  EXPECT_DOUBLE_EQ(sum.floor_burn_J, 7);
  const double unserved = 3 * ref_a.totals().unserved_J + ref_b.totals().unserved_J;
  EXPECT_GT(unserved, 0);  // the ramp-up limit could not follow the steps
  EXPECT_DOUBLE_EQ(sum.unserved_J, unserved);
  EXPECT_DOUBLE_EQ(sum.ramp_burn_J, 3 * ref_a.totals().burned_J + ref_b.totals().burned_J);
  EXPECT_DOUBLE_EQ(sum.throttle_slowdown, unserved / 1e4);
  EXPECT_EQ(rs.summary(0).throttle_slowdown, 0);
}

TEST(Smoothing, PeakAndSwingReductionsCompareTwoWaveforms) {
  const std::vector<double> raw = {10, 100, 20, 100, 10}, smoothed = {60, 80, 60, 80, 70};
  EXPECT_DOUBLE_EQ(peak_reduction(raw, smoothed), 1 - 80.0 / 100);
  EXPECT_DOUBLE_EQ(swing_reduction(raw, smoothed), 1 - 20.0 / 90);
  const std::vector<double> flat = {5, 5, 5};
  EXPECT_EQ(swing_reduction(flat, smoothed), 0);  // nothing to reduce
  EXPECT_EQ(peak_reduction(std::vector<double>{0, 0}, smoothed), 0);
  EXPECT_EQ(peak_reduction({}, smoothed), 0);
  // Smoothing that raises the peak reduces it by a negative amount.
  EXPECT_LT(peak_reduction(smoothed, raw), 0);
}

}  // namespace
}  // namespace clustertwin::power
