#include "clustertwin/compute/efficiency_grid.h"

#include <gtest/gtest.h>

#include <cmath>

namespace clustertwin::compute {
namespace {

TEST(EfficiencyGrid, ExactAtGridPointsAndCappedAtOne) {
  EfficiencyGrid g({{1, 4}, {10, 100}}, {0.1, 0.2, 0.4, 1.5});
  EXPECT_DOUBLE_EQ(g.at({1, 10, 0}), 0.1);
  EXPECT_DOUBLE_EQ(g.at({1, 100, 0}), 0.2);
  EXPECT_DOUBLE_EQ(g.at({4, 10, 0}), 0.4);
  EXPECT_DOUBLE_EQ(g.at({4, 100, 0}), 1.0);  // 1.5 is capped: never faster than the roofline
}

TEST(EfficiencyGrid, InterpolatesLogEfficiencyInLogCoordinates) {
  EfficiencyGrid g({{1, 100}}, {0.1, 0.4});
  // Halfway in log(x) is x = 10; halfway in log(r) is the geometric mean 0.2.
  EXPECT_NEAR(g.at({10, 0, 0}), 0.2, 1e-12);
}

TEST(EfficiencyGrid, HoldsTheEdgeValueBeyondTheGrid) {
  EfficiencyGrid g({{2, 8}, {1, 2, 4}}, {0.1, 0.2, 0.3, 0.4, 0.5, 0.6});
  EXPECT_DOUBLE_EQ(g.at({0.5, 1, 0}), 0.1);
  EXPECT_DOUBLE_EQ(g.at({1000, 1000, 0}), 0.6);
  EXPECT_DOUBLE_EQ(g.at({-3, 0, 0}), 0.1);  // non-positive coordinates clamp low
}

TEST(EfficiencyGrid, ThreeAxesMatchesNestedInterpolation) {
  // r = exp(a + b + c) in log space is linear, so interpolation is exact.
  std::vector<double> v;
  const std::vector<double> x = {1, 10}, y = {1, 10}, z = {1, 10};
  for (double a : x)
    for (double b : y)
      for (double c : z) v.push_back(std::exp(-(std::log(a) + std::log(b) + std::log(c)) / 10));
  EfficiencyGrid g({x, y, z}, v);
  const double p = std::sqrt(10.0);
  EXPECT_NEAR(g.at({p, p, p}), std::exp(-3 * std::log(p) / 10), 1e-12);
}

}  // namespace
}  // namespace clustertwin::compute
