#include "clustertwin/network/max_min.h"

#include <gtest/gtest.h>

#include <random>

namespace clustertwin::network {
namespace {

TEST(MaxMin, EqualSharesOnOneLink) {
  FlowPaths f;
  f.add(std::vector<int32_t>{0});
  f.add(std::vector<int32_t>{0});
  auto r = max_min_rates(f, std::vector<double>{10.0});
  EXPECT_DOUBLE_EQ(r[0], 5.0);
  EXPECT_DOUBLE_EQ(r[1], 5.0);
}

// The textbook line network (Bertsekas & Gallager §6.5.2): the flow crossing both links is held
// to the first link's share; the other flow on the second link takes the rest.
TEST(MaxMin, LineNetwork) {
  FlowPaths f;
  f.add(std::vector<int32_t>{0});
  f.add(std::vector<int32_t>{0, 1});
  f.add(std::vector<int32_t>{1});
  auto r = max_min_rates(f, std::vector<double>{1.0, 2.0});
  EXPECT_DOUBLE_EQ(r[0], 0.5);
  EXPECT_DOUBLE_EQ(r[1], 0.5);
  EXPECT_DOUBLE_EQ(r[2], 1.5);
}

TEST(MaxMin, WeightsCountAsIdenticalFlows) {
  FlowPaths f;
  f.add(std::vector<int32_t>{0}, 3.0);
  f.add(std::vector<int32_t>{0}, 1.0);
  auto r = max_min_rates(f, std::vector<double>{8.0});
  EXPECT_DOUBLE_EQ(r[0], 2.0);
  EXPECT_DOUBLE_EQ(r[1], 2.0);
}

TEST(MaxMin, CapsFreeCapacityForOthers) {
  FlowPaths f;
  f.add(std::vector<int32_t>{0}, 1.0, 1.0);
  f.add(std::vector<int32_t>{0});
  auto r = max_min_rates(f, std::vector<double>{10.0});
  EXPECT_DOUBLE_EQ(r[0], 1.0);
  EXPECT_DOUBLE_EQ(r[1], 9.0);
}

// Property (seeded, the seed is in the failure message): on random instances the rates are
// feasible and every flow has a bottleneck: a saturated link on which no flow is faster.
TEST(MaxMin, RandomInstancesAreFeasibleAndMaxMinFair) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    const int nl = 1 + static_cast<int>(rng() % 12);
    const int nf = 1 + static_cast<int>(rng() % 20);
    std::vector<double> cap(static_cast<size_t>(nl));
    for (auto& c : cap) c = 1.0 + static_cast<double>(rng() % 100);
    FlowPaths f;
    for (int i = 0; i < nf; ++i) {
      std::vector<int32_t> p;
      for (int l = 0; l < nl; ++l) {
        if (rng() % 3 == 0) p.push_back(l);
      }
      if (p.empty()) p.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(nl)));
      f.add(p, 1.0 + static_cast<double>(rng() % 3));
    }
    auto r = max_min_rates(f, cap);
    std::vector<double> used(static_cast<size_t>(nl), 0.0);
    for (size_t i = 0; i < f.size(); ++i) {
      for (int32_t k = f.offsets[i]; k < f.offsets[i + 1]; ++k) {
        used[static_cast<size_t>(f.links[static_cast<size_t>(k)])] += r[i] * f.weights[i];
      }
    }
    for (int l = 0; l < nl; ++l) {
      EXPECT_LE(used[static_cast<size_t>(l)], cap[static_cast<size_t>(l)] * (1 + 1e-9))
          << "seed " << seed;
    }
    for (size_t i = 0; i < f.size(); ++i) {
      bool has_bottleneck = false;
      for (int32_t k = f.offsets[i]; k < f.offsets[i + 1]; ++k) {
        const auto l = static_cast<size_t>(f.links[static_cast<size_t>(k)]);
        if (used[l] < cap[l] * (1 - 1e-9)) continue;
        bool fastest = true;
        for (size_t j = 0; j < f.size(); ++j) {
          for (int32_t q = f.offsets[j]; q < f.offsets[j + 1]; ++q) {
            if (static_cast<size_t>(f.links[static_cast<size_t>(q)]) == l &&
                r[j] > r[i] * (1 + 1e-9))
              fastest = false;
          }
        }
        has_bottleneck = has_bottleneck || fastest;
      }
      EXPECT_TRUE(has_bottleneck) << "seed " << seed << " flow " << i;
    }
  }
}

}  // namespace
}  // namespace clustertwin::network
