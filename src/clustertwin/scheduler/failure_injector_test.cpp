#include "clustertwin/scheduler/failure_injector.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace clustertwin::scheduler::detail {
namespace {

// 8 NVLink domains of 4 nodes of 4 GPUs (128 GPUs), two domains under each leaf (4 leaves).
const ClusterModel kCluster = ClusterModel::uniform(8, 4, 4, 2);

FailureModel four_scopes() {
  FailureModel m;
  m.classes = {{.name = "software", .scope = FailureScope::kJob, .rate_per_hour = 1e-4},
               {.name = "gpu",
                .scope = FailureScope::kNode,
                .rate_per_hour = 3e-4,
                .repair_median_h = 10,
                .repair_mean_h = 15},
               {.name = "tray",
                .scope = FailureScope::kDomainStop,
                .rate_per_hour = 2e-3,
                .repair_median_h = 4,
                .repair_mean_h = 4},
               {.name = "leaf",
                .scope = FailureScope::kLeaf,
                .rate_per_hour = 1e-3,
                .repair_median_h = 2,
                .repair_mean_h = 3}};
  m.lemon_fraction = 0.25;
  m.lemon_multiplier = 5;
  return m;
}

TEST(FailureInjector, RatesCountEachScopesUnitsAndBurstsKeepNodeFailuresPerHour) {
  FailureModel m = four_scopes();
  const FailureInjector plain(kCluster, m, 7, false);
  ASSERT_EQ(plain.rates_per_hour().size(), 4U);
  EXPECT_DOUBLE_EQ(plain.rates_per_hour()[0], 1e-4 * 128);  // per GPU
  EXPECT_DOUBLE_EQ(plain.rates_per_hour()[1], 3e-4 * 128);
  EXPECT_DOUBLE_EQ(plain.rates_per_hour()[2], 2e-3 * 8);  // per domain
  EXPECT_DOUBLE_EQ(plain.rates_per_hour()[3], 1e-3 * 4);  // per leaf
  // Bursts of 1 or 3 nodes, equally likely: half as many node events, of 2 nodes on average.
  m.burst_weights = {1, 0, 1};
  const FailureInjector bursts(kCluster, m, 7, false);
  EXPECT_DOUBLE_EQ(bursts.rates_per_hour()[1], 3e-4 * 128 / 2);
  EXPECT_DOUBLE_EQ(bursts.rates_per_hour()[0], 1e-4 * 128);
}

TEST(FailureInjector, TheNextFailureIsExponentialAtTheSummedRate) {
  const FailureModel m = four_scopes();
  FailureInjector f(kCluster, m, 11, true);
  double total = 0;
  for (double r : f.rates_per_hour()) total += r;
  const int n = 40000;
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += *f.next_in_s();
  // The mean of 40,000 exponential draws is within 2% of 3600 / total (4 standard errors: 2%).
  EXPECT_NEAR(sum / n, 3600.0 / total, 0.02 * 3600.0 / total);

  FailureModel none;
  FailureInjector quiet(kCluster, none, 11, true);
  EXPECT_FALSE(quiet.next_in_s().has_value());
}

TEST(FailureInjector, ClassesByRateAndTargetsInRange) {
  const FailureModel m = four_scopes();
  FailureInjector f(kCluster, m, 3, false);
  const auto& rates = f.rates_per_hour();
  double total = 0;
  for (double r : rates) total += r;
  std::vector<int> seen(rates.size(), 0);
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    const FailureDraw d = f.draw();
    ASSERT_LT(d.cls, rates.size());
    ++seen[d.cls];
    EXPECT_TRUE(d.nodes.empty());  // no bursts in this model
    switch (m.classes[d.cls].scope) {
      case FailureScope::kJob:
        EXPECT_TRUE(d.target >= 0 && d.target < kCluster.nodes());
        EXPECT_TRUE(d.gpu >= 0 && d.gpu < kCluster.gpus_per_node());
        break;
      case FailureScope::kNode:
        EXPECT_TRUE(d.target >= 0 && d.target < kCluster.nodes());
        break;
      case FailureScope::kDomainStop:
      case FailureScope::kDomainDegrade:
        EXPECT_TRUE(d.target >= 0 && d.target < 8);
        break;
      case FailureScope::kLeaf:
        EXPECT_TRUE(d.target >= 0 && d.target < 4);
        break;
    }
  }
  for (size_t k = 0; k < rates.size(); ++k) {
    EXPECT_NEAR(static_cast<double>(seen[k]) / n, rates[k] / total, 0.01) << m.classes[k].name;
  }
}

TEST(FailureInjector, LemonNodesFailLemonMultiplierTimesAsOften) {
  FailureModel m = four_scopes();
  m.classes = {m.classes[1]};  // node failures only
  FailureInjector f(kCluster, m, 5, true);
  // round(0.25 x 32) = 8 lemons, distinct and sorted.
  const auto& lemons = f.lemons();
  ASSERT_EQ(lemons.size(), 8U);
  EXPECT_TRUE(std::is_sorted(lemons.begin(), lemons.end()));
  EXPECT_EQ(std::adjacent_find(lemons.begin(), lemons.end()), lemons.end());
  int on_lemons = 0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    const int node = f.draw().target;
    on_lemons += std::binary_search(lemons.begin(), lemons.end(), node) ? 1 : 0;
  }
  // 8 lemons weigh 5 each against 24 others at 1: 40 / 64 of the failures.
  EXPECT_NEAR(static_cast<double>(on_lemons) / n, 40.0 / 64.0, 0.01);

  // Without lemons (a replayed trace) every node is equally likely: 8 of 32 nodes get a quarter.
  FailureInjector plain(kCluster, m, 5, false);
  EXPECT_TRUE(plain.lemons().empty());
  int on_those = 0;
  for (int i = 0; i < n; ++i) {
    on_those += std::binary_search(lemons.begin(), lemons.end(), plain.draw().target) ? 1 : 0;
  }
  EXPECT_NEAR(static_cast<double>(on_those) / n, 0.25, 0.01);
}

TEST(FailureInjector, BurstsDrawTheirSizeByWeight) {
  FailureModel m = four_scopes();
  m.classes = {m.classes[1]};
  m.burst_weights = {3, 0, 1};  // 1 node three times as often as 3 nodes
  FailureInjector f(kCluster, m, 9, true);
  int ones = 0, threes = 0;
  for (int i = 0; i < 20000; ++i) {
    const FailureDraw d = f.draw();
    EXPECT_EQ(d.target, -1);
    ASSERT_TRUE(d.nodes.size() == 1 || d.nodes.size() == 3) << d.nodes.size();
    (d.nodes.size() == 1 ? ones : threes)++;
    for (int n : d.nodes) EXPECT_TRUE(n >= 0 && n < kCluster.nodes());
  }
  EXPECT_NEAR(static_cast<double>(ones) / (ones + threes), 0.75, 0.015);
}

TEST(FailureInjector, RepairsMatchTheClassMedianAndMean) {
  const FailureModel m = four_scopes();
  FailureInjector f(kCluster, m, 13, true);
  std::vector<double> r(40000);
  for (auto& x : r) x = f.repair_s(m.classes[1]) / 3600.0;  // median 10 h, mean 15 h
  double mean = 0;
  for (double x : r) mean += x;
  mean /= static_cast<double>(r.size());
  std::nth_element(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(r.size() / 2), r.end());
  EXPECT_NEAR(r[r.size() / 2], 10.0, 0.3);
  EXPECT_NEAR(mean, 15.0, 0.5);
  // A class whose mean is its median repairs in exactly that time.
  EXPECT_DOUBLE_EQ(f.repair_s(m.classes[2]), 4 * 3600.0);
}

TEST(FailureInjector, SameSeedSameFailuresWhateverTheRepairsDrawn) {
  const FailureModel m = four_scopes();
  FailureInjector a(kCluster, m, 21, true), b(kCluster, m, 21, true);
  EXPECT_EQ(a.lemons(), b.lemons());
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(*a.next_in_s(), *b.next_in_s());
    const FailureDraw x = a.draw(), y = b.draw();
    ASSERT_EQ(x.cls, y.cls);
    ASSERT_EQ(x.target, y.target);
    ASSERT_EQ(x.gpu, y.gpu);
    if (i % 3 == 0) (void)a.repair_s(m.classes[1]);  // repairs are a stream of their own
  }
  FailureInjector other(kCluster, m, 22, true);
  int same = 0;
  for (int i = 0; i < 100; ++i) same += a.draw().target == other.draw().target ? 1 : 0;
  EXPECT_LT(same, 50);
}

}  // namespace
}  // namespace clustertwin::scheduler::detail
