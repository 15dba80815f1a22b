#include "clustertwin/scenario/scenario_file.h"

#include <gtest/gtest.h>

#include <set>

#include "clustertwin/scenario/goodput.h"
#include "clustertwin/scenario/schedule.h"

namespace clustertwin::scenario {
namespace {

base::Result<config::Document> doc(const std::string& text) {
  return config::parse_document(text, "study.yaml");
}

template <class R>
void expect_well_formed(const FieldTable<R>& table) {
  std::set<std::string> keys, flags;
  for (const auto& f : table) {
    EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    EXPECT_TRUE(flags.insert(f.flag).second) << f.flag;
    EXPECT_EQ(f.key.find('-'), std::string::npos) << f.key << ": keys are identifiers";
    EXPECT_FALSE(f.help.empty()) << f.key;
  }
}

TEST(ScheduleFields, KeysAndFlagsAreUniqueAndNoneIsATrainingField) {
  expect_well_formed(goodput_fields());
  expect_well_formed(schedule_fields());
  // A goodput block reads the training fields and the study's own from one mapping.
  for (const auto& g : goodput_fields()) {
    for (const auto& t : training_fields()) EXPECT_NE(g.key, t.key);
  }
}

TEST(ScenarioFile, GoodputAndScheduleBlocksAreReadStrictly) {
  auto ok =
      doc("cluster: hgx-h100*2\nworkload:\n  goodput:\n    model: llama3.1-8b\n    tp: 8\n"
          "    days: 2\n    checkpoint: 900 s\n    sweep: false\n  schedule:\n    days: 1\n"
          "    compare: block,first-fit\n    bf_max_job_test: 100\n");
  ASSERT_TRUE(ok);
  EXPECT_TRUE(check_scenario(*ok)) << check_scenario(*ok).error().to_string();

  auto typo =
      doc("cluster: hgx-h100*2\nworkload:\n  goodput:\n    model: llama3.1-8b\n    dayz: 2\n"
          "  schedule:\n    days: -1\n");
  ASSERT_TRUE(typo);
  auto st = check_scenario(*typo);
  ASSERT_FALSE(st);
  const std::string m = st.error().to_string();
  EXPECT_NE(m.find("study.yaml:5"), std::string::npos) << m;
  EXPECT_NE(m.find("dayz"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'days'"), std::string::npos) << m;
  EXPECT_NE(m.find("study.yaml:7"), std::string::npos) << m;  // days: -1, all errors at once

  auto calibrated = doc("cluster: hgx-h100*2\nworkload:\n  schedule:\n    calibration: x.yaml\n");
  ASSERT_TRUE(calibrated);
  EXPECT_FALSE(check_scenario(*calibrated));
}

TEST(ScenarioFile, AGoodputRunsMessageNamesTheKeyAtItsLine) {
  auto d =
      doc("cluster: hgx-h100*2\nworkload:\n  goodput:\n    model: llama3.1-8b\n    tp: 8\n"
          "    checkpoint: soon\n");
  ASSERT_TRUE(d);
  auto r = run_scenario(Environment{}, *d);
  ASSERT_FALSE(r);
  const std::string m = r.error().to_string();
  EXPECT_NE(m.find("study.yaml:6"), std::string::npos) << m;
  EXPECT_NE(m.find("checkpoint: expected auto or an interval"), std::string::npos) << m;
  EXPECT_EQ(m.find("--"), std::string::npos) << m << ": a file's message names keys, not flags";
}

TEST(ScenarioFile, AClusterThatIsNotThereIsNamedAsTheFilesKey) {
  auto d = doc("cluster: hgx-h100*0\nworkload:\n  schedule: {}\n");
  ASSERT_TRUE(d);
  auto r = run_scenario(Environment{}, *d);
  ASSERT_FALSE(r);
  const std::string m = r.error().to_string();
  EXPECT_EQ(m.find("--cluster"), std::string::npos) << m;
  EXPECT_NE(m.find("cluster 'hgx-h100*0'"), std::string::npos) << m;
}

TEST(ScenarioFile, GoodputAndScheduleRunAsTheirVerbsDo) {
  auto d =
      doc("cluster: hgx-h100*4\nworkload:\n  goodput:\n    model: llama3.1-8b\n    tp: 8\n"
          "    days: 1\n    sweep: false\n  schedule:\n    days: 1\n    synthetic: llm:jobs=20\n");
  ASSERT_TRUE(d);
  auto r = run_scenario(Environment{}, *d);
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_TRUE(r->results.contains("goodput"));
  ASSERT_TRUE(r->results.contains("schedule"));
  EXPECT_EQ(r->results["schedule"]["runs"].size(), 1u);
  // The same request through the library functions the verbs call gives the same sections.
  TrainingRequest t;
  t.cluster = "hgx-h100*4";
  t.model = "llama3.1-8b";
  t.tp = 8;
  GoodputSettings g;
  g.days = 1;
  g.no_sweep = true;
  auto direct = run_goodput(Environment{}, t, g);
  ASSERT_TRUE(direct) << direct.error().to_string();
  EXPECT_EQ(r->results["goodput"], direct->json);
  EXPECT_NE(r->summary.find("goodput"), std::string::npos);
  EXPECT_NE(r->summary.find("schedule"), std::string::npos);
}

}  // namespace
}  // namespace clustertwin::scenario
