#include "clustertwin/sweep/analysis.h"

#include <gtest/gtest.h>

namespace clustertwin::sweep {
namespace {

TEST(SweepPareto, KeepsOnlyUndominatedPointsInIncreasingX) {
  // (x, y) both minimized: 0 (1, 5), 1 (2, 3), 2 (3, 4) dominated by 1, 3 (4, 1), 4 (2, 3) a
  // twin of 1, 5 NaN (an error row).
  const std::vector<int64_t> ids = {0, 1, 2, 3, 4, 5};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> x = {1, 2, 3, 4, 2, nan};
  const std::vector<double> y = {5, 3, 4, 1, 3, 0};
  EXPECT_EQ(pareto_front(ids, x, y, Goal::kMinimize, Goal::kMinimize),
            (std::vector<int64_t>{0, 1, 4, 3}));
  // Maximize y: 2 (3, 4) now beats 1 and 4; 0 (1, 5) beats everything on y.
  EXPECT_EQ(pareto_front(ids, x, y, Goal::kMinimize, Goal::kMaximize), (std::vector<int64_t>{0}));
  // Maximize x, minimize y: 3 (4, 1) dominates all.
  EXPECT_EQ(pareto_front(ids, x, y, Goal::kMaximize, Goal::kMinimize), (std::vector<int64_t>{3}));
  // Maximize both: 3 (4, 1), 2 (3, 4), 0 (1, 5).
  EXPECT_EQ(pareto_front(ids, x, y, Goal::kMaximize, Goal::kMaximize),
            (std::vector<int64_t>{0, 2, 3}));
}

TEST(SweepTornado, MainEffectsSortedByTheirSpan) {
  auto d = parse_design(R"(
scenario: {cluster: c, workload: {training: {model: m}}}
design:
  - product: {a: [1, 2], b: [x, y]}
outputs: {t: training.t, e: training.e}
report: {pareto: [t, e], tornado: t, maximize: [e]}
)",
                        "t.yaml");
  ASSERT_TRUE(d) << d.error().to_string();
  EXPECT_EQ(d->report.maximize, std::vector<std::string>{"e"});
  // t = 10 a + (b == y ? 1 : 0): a's effect spans 10, b's 1. Point 3 failed.
  nlohmann::json table = {{"columns", {"id", "a", "b", "status", "error", "t", "e"}},
                          {"rows",
                           {{0, 1, "x", "ok", nullptr, 10.0, 1.0},
                            {1, 1, "y", "ok", nullptr, 11.0, 3.0},
                            {2, 2, "x", "ok", nullptr, 20.0, 2.0},
                            {3, 2, "y", "error", "no", nullptr, nullptr}}}};
  const auto j = analyze(*d, d->report, table);
  ASSERT_TRUE(j.contains("tornado")) << j.dump();
  const auto& bars = j["tornado"]["bars"];
  ASSERT_EQ(bars.size(), 2u);
  EXPECT_EQ(bars[0]["key"], "a");
  EXPECT_DOUBLE_EQ(bars[0]["low"].get<double>(), 10.5);
  EXPECT_DOUBLE_EQ(bars[0]["high"].get<double>(), 20.0);
  EXPECT_EQ(bars[1]["key"], "b");
  EXPECT_DOUBLE_EQ(bars[1]["high"].get<double>() - bars[1]["low"].get<double>(), 4.0);
  // Pareto of t (min) and e (max): 0 (10, 1), 1 (11, 3); 2 (20, 2) is dominated by 1.
  EXPECT_EQ(j["pareto"]["ids"], nlohmann::json({0, 1}));
  EXPECT_EQ(j["pareto"]["y_goal"], "max");
}

TEST(SweepReport, UnknownOutputsAreErrors) {
  auto d = parse_design(R"(
scenario: {cluster: c, workload: {training: {model: m}}}
design:
  - product: {a: [1, 2]}
outputs: {t: training.t}
report: {pareto: [t, tt], tornado: x}
)",
                        "t.yaml");
  ASSERT_FALSE(d);
  const auto e = d.error().to_string();
  EXPECT_NE(e.find("report: pareto: expected an output (t), got 'tt'"), std::string::npos) << e;
  EXPECT_NE(e.find("report: tornado: expected an output (t), got 'x'"), std::string::npos) << e;
}

}  // namespace
}  // namespace clustertwin::sweep
