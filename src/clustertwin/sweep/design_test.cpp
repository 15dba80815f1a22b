#include "clustertwin/sweep/design.h"

#include <gtest/gtest.h>

#include <set>

namespace clustertwin::sweep {
namespace {

constexpr const char* kBase = R"(
scenario:
  cluster: gb300-nvl72*2
  workload:
    training:
      model: llama3.1-8b
      tp: 2
)";

Design parse_ok(const std::string& design) {
  auto d = parse_design(std::string(kBase) + design, "t.yaml");
  EXPECT_TRUE(d) << (d ? "" : d.error().to_string());
  return d ? *d : Design{};
}

std::string error_of(const std::string& text) {
  auto d = parse_design(text, "t.yaml");
  EXPECT_FALSE(d);
  return d ? "" : d.error().to_string();
}

TEST(SweepDesign, ProductIsRowMajorWithTheFirstBlockSlowest) {
  auto d = parse_ok(R"(
design:
  - product:
      workload.training.model: [llama3.1-8b, llama3.1-70b]
      workload.training.tp: [1, 2, 4]
  - zip:
      cluster: [gb300-nvl72*1, gb300-nvl72*2]
      workload.training.pp: [1, 2]
)");
  ASSERT_EQ(d.points.size(), 12u);
  ASSERT_EQ(d.axes.size(), 4u);
  EXPECT_EQ(d.axes[3].path, "workload.training.pp");
  // Point 7 = model 70b (7 / 6 = 1), tp index (7 / 2) % 3 = 0 -> 1, zip row 7 % 2 = 1.
  const auto& p = d.points[7];
  EXPECT_EQ(p.values[0].Scalar(), "llama3.1-70b");
  EXPECT_EQ(p.values[1].Scalar(), "1");
  EXPECT_EQ(p.values[2].Scalar(), "gb300-nvl72*2");
  const YAML::Node s = d.scenario(p);
  EXPECT_EQ(s["cluster"].Scalar(), "gb300-nvl72*2");
  EXPECT_EQ(s["workload"]["training"]["tp"].Scalar(), "1");
  EXPECT_EQ(s["workload"]["training"]["pp"].Scalar(), "2");
  // The base is untouched and points do not share nodes.
  EXPECT_EQ(d.base["workload"]["training"]["tp"].Scalar(), "2");
  EXPECT_FALSE(d.base["workload"]["training"]["pp"]);
  EXPECT_EQ(d.scenario(d.points[0])["workload"]["training"]["pp"].Scalar(), "1");
}

TEST(SweepDesign, SettingAKeyCreatesMappingsOnTheWay) {
  auto d = parse_ok(R"(
design:
  - product:
      workload.training.extra.deep: [1]
)");
  EXPECT_EQ(d.scenario(d.points[0])["workload"]["training"]["extra"]["deep"].Scalar(), "1");
}

TEST(SweepDesign, KeyUnderAScalarIsAnError) {
  const auto e = error_of(std::string(kBase) + R"(
design:
  - product:
      cluster.count: [1, 2]
)");
  EXPECT_NE(e.find("point 0: design key 'cluster.count': 'cluster' in the scenario is a single "
                   "value, not a mapping"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("t.yaml:"), std::string::npos) << e;
}

TEST(SweepDesign, LatinHypercubeFillsEveryStratumOnceAndIsSeeded) {
  const std::string text = R"(
design:
  - latin_hypercube:
      samples: 10
      seed: 42
      axes:
        workload.training.global_batch: {min: 100, max: 199, integer: true}
        workload.training.power_cap: {min: 800, max: 1400, unit: W}
        workload.training.model: {values: [a, b]}
)";
  auto d = parse_ok(text);
  ASSERT_EQ(d.points.size(), 10u);
  std::set<int> strata;
  int a = 0;
  for (const auto& p : d.points) {
    const int v = std::stoi(p.values[0].Scalar());
    EXPECT_GE(v, 100);
    EXPECT_LE(v, 199);
    strata.insert((v - 100) / 10);
    const double w = std::stod(p.values[1].Scalar());
    EXPECT_GE(w, 800);
    EXPECT_LT(w, 1400);
    EXPECT_NE(p.values[1].Scalar().find(" W"), std::string::npos);
    a += p.values[2].Scalar() == "a" ? 1 : 0;
  }
  EXPECT_EQ(strata.size(), 10u);  // one sample per stratum
  EXPECT_EQ(a, 5);                // two values over ten strata: five each
  EXPECT_EQ(parse_ok(text).spec, d.spec);
  auto other = parse_ok(std::string(text).replace(text.find("42"), 2, "43"));
  EXPECT_NE(other.spec, d.spec);
}

TEST(SweepDesign, ErrorsNameTheLineAndAreAllReported) {
  const auto e = error_of(std::string(kBase) + R"(
design:
  - prodcut:
      workload.training.tp: [1]
  - zip:
      workload.training.tp: [1, 2]
      workload.training.pp: [1]
  - latin_hypercube:
      samples: 0
      seed: 1
      axes:
        workload.training.cp: {min: 4, max: 2}
outputs:
  "bad name": training.step_time_s
)");
  EXPECT_NE(e.find("unknown block 'prodcut' (did you mean 'product'?)"), std::string::npos) << e;
  EXPECT_NE(e.find("t.yaml:14: zip: 'workload.training.pp' has 1 values but "
                   "'workload.training.tp' has 2"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("samples: expected an integer in [1, 1000000], got 0"), std::string::npos) << e;
  EXPECT_NE(e.find("'bad name': expected a column name"), std::string::npos) << e;
}

TEST(SweepDesign, MissingPiecesAndWrongShapes) {
  EXPECT_NE(error_of("design: []\n").find("missing required key 'scenario'"), std::string::npos);
  EXPECT_NE(error_of(std::string(kBase)).find("missing required key 'design'"), std::string::npos);
  EXPECT_NE(error_of(std::string(kBase) + "design: {a: 1}\n").find("design: expected a non-empty"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kBase) + "design:\n  - product: {tp: 3}\n")
                .find("expected a non-empty list of values, got a single value"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kBase) + "design:\n  - product: {'a..b': [1]}\n")
                .find("expected a dotted scenario key"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kBase) + "desing: []\n").find("did you mean 'design'"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kBase) + "design:\n  - product: {a: [1]}\n  - zip: {a: [2]}\n")
                .find("design key 'a' is varied by two blocks"),
            std::string::npos);
  EXPECT_NE(error_of("scenario: nope/missing.yaml\ndesign:\n  - product: {a: [1]}\n")
                .find("missing.yaml"),
            std::string::npos);
}

TEST(SweepDesign, ProductBeyondTheLimitIsRefusedBeforeExpanding) {
  std::string list = "[";
  for (int i = 0; i < 101; ++i) list += (i ? "," : "") + std::to_string(i);
  list += "]";
  const auto e = error_of(std::string(kBase) + "design:\n  - product:\n      a: " + list +
                          "\n      b: " + list + "\n      c: " + list + "\n");
  EXPECT_NE(e.find("more than 1000000 points"), std::string::npos) << e;
}

TEST(SweepDesign, ValuesAsJson) {
  auto d = parse_ok(R"(
design:
  - product:
      a: [1, 2.5, true, "3", x, {k: [1, 2]}]
)");
  ASSERT_EQ(d.points.size(), 6u);
  EXPECT_EQ(to_json(d.points[0].values[0]), nlohmann::json(1));
  EXPECT_EQ(to_json(d.points[1].values[0]), nlohmann::json(2.5));
  EXPECT_EQ(to_json(d.points[2].values[0]), nlohmann::json(true));
  EXPECT_EQ(to_json(d.points[3].values[0]), nlohmann::json("3"));
  EXPECT_EQ(to_json(d.points[4].values[0]), nlohmann::json("x"));
  EXPECT_EQ(value_text(d.points[5].values[0]), R"({"k":[1,2]})");
}

TEST(SweepDesign, DefaultOutputsFollowTheWorkloads) {
  auto d = parse_ok("design:\n  - product: {workload.training.tp: [1]}\n");
  ASSERT_FALSE(d.outputs.empty());
  EXPECT_EQ(d.outputs.front().name, "step_time_s");
  auto e = parse_ok("design:\n  - product: {workload.training.tp: [1]}\noutputs: {t: a.b}\n");
  ASSERT_EQ(e.outputs.size(), 1u);
  EXPECT_EQ(e.outputs[0].path, "a.b");
  // A searched layout: the winner is a column, after the figures (the report's defaults).
  const auto s = default_outputs(
      YAML::Load("workload: {training: {model: llama3.1-8b, search: {confirm: 2}}}"));
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s.front().name, "step_time_s");
  EXPECT_EQ(s.back().name, "best_layout");
  EXPECT_EQ(s.back().path, "search.best.0.layout");
  EXPECT_EQ(d.outputs.back().name, "memory_per_gpu_B");
}

}  // namespace
}  // namespace clustertwin::sweep
