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

}  // namespace
}  // namespace clustertwin::power
