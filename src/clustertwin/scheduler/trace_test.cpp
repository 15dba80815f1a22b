#include "clustertwin/scheduler/trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "clustertwin/scheduler/synthetic.h"

namespace clustertwin::scheduler {
namespace {

constexpr Tick kS = 1'000'000'000;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Trace, OwnCsvFormat) {
  const char* csv =
      "# a comment\n"
      "id,submit_s,gpus,duration_s,time_limit_s,account,user,qos,kind,model,tp,pp,checkpoint_s\n"
      "7,100,8,3600,7200,teamA,ann,high,inference,,,,\n"
      "3,0,1024,86400,,teamB,bob,normal,,llama3.1-70b,8,4,auto\n";
  auto w = read_trace(csv, "t.csv");
  ASSERT_TRUE(w) << w.error().to_string();
  ASSERT_EQ(w->jobs.size(), 2u);
  const auto& a = w->jobs[0];  // sorted by submit
  EXPECT_EQ(a.id, 3);
  EXPECT_EQ(a.submit, 0);
  EXPECT_EQ(a.kind, JobKind::kPretrain);
  ASSERT_GE(a.training, 0);
  EXPECT_EQ(w->training[static_cast<size_t>(a.training)].layout.dp, 32);
  EXPECT_TRUE(a.auto_checkpoint);
  EXPECT_EQ(a.time_limit, 172800 * kS);  // duration x 2 by default
  const auto& b = w->jobs[1];
  EXPECT_EQ(b.submit, 100 * kS);
  EXPECT_EQ(b.qos, Qos::kHigh);
  EXPECT_EQ(b.time_limit, 7200 * kS);
  EXPECT_EQ(w->accounts[static_cast<size_t>(b.account)], "teamA");
}

TEST(Trace, PhillyFormatAndSample) {
  const std::string path = std::string(CT_SCHEDULER_TEST_DATA) + "/philly_week.csv";
  auto w = read_trace(read(path), path);
  ASSERT_TRUE(w) << w.error().to_string();
  EXPECT_EQ(w->jobs.size(), 12751u);
  EXPECT_EQ(w->jobs.front().submit, 0);
  int64_t gpu_jobs_1 = 0;
  for (const auto& j : w->jobs) gpu_jobs_1 += j.gpus == 1;
  EXPECT_GT(gpu_jobs_1, 11000);
  auto q =
      apply_vc_quotas(*w, read(std::string(CT_SCHEDULER_TEST_DATA) + "/philly_vc.csv"), "vc", 8);
  ASSERT_TRUE(q);
  const int a = w->account_id("6214e9");
  EXPECT_EQ(w->account_gpu_limit[static_cast<size_t>(a)], 512);
}

TEST(Trace, BadRowsStopWithEveryRowOrSkipWithACount) {
  const char* csv =
      "submit_s,gpus,duration_s\n"
      "0,1,10\n"
      "5,zero,10\n"
      "6,2\n"
      "7,2,-1\n"
      "8,1.5,3\n";
  auto w = read_trace(csv, "bad.csv");
  ASSERT_FALSE(w);
  const auto m = w.error().to_string();
  EXPECT_NE(m.find("bad.csv:3: gpus: expected a whole number >= 1, got 'zero'"), std::string::npos)
      << m;
  EXPECT_NE(m.find("bad.csv:4: expected 3 fields, got 2"), std::string::npos) << m;
  EXPECT_NE(m.find("bad.csv:5: duration_s: expected seconds >= 0, got '-1'"), std::string::npos)
      << m;
  EXPECT_NE(m.find("bad.csv:6:"), std::string::npos) << m;
  EXPECT_NE(m.find("{bad_rows} skip"), std::string::npos) << m;
  auto s = read_trace(csv, "bad.csv", {.bad_rows = BadRows::kSkip});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->jobs.size(), 1u);
  EXPECT_EQ(s->skipped_rows, 4);
  EXPECT_EQ(s->warnings.size(), 4u);
}

TEST(Trace, UnknownColumnSuggests) {
  auto w = read_trace("submit_s,gpu,duration_s\n0,1,1\n", "x.csv");
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().to_string().find("x.csv:1: unknown column 'gpu' (did you mean"),
            std::string::npos)
      << w.error().to_string();
  EXPECT_NE(w.error().to_string().find("'gpus'"), std::string::npos);
}

TEST(Trace, JsonFormat) {
  auto ok = read_trace(R"({"jobs": [{"submit_s": 10, "gpus": 4, "duration_s": 60, "qos": "low"},
                                    {"submit_s": 5, "gpus": 2, "duration_s": 5}]})",
                       "t.json");
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(ok->jobs.size(), 2u);
  EXPECT_EQ(ok->jobs[1].qos, Qos::kLow);
  EXPECT_EQ(ok->jobs[1].submit, 5 * kS);
  auto bad = read_trace(R"([{"submit_s": 1, "gpus": 1, "duration_s": 1, "colour": 3}])", "b.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().to_string().find("job 1: unknown key 'colour'"), std::string::npos);
}

TEST(Trace, Timestamps) {
  EXPECT_EQ(*parse_timestamp("1970-01-02 00:00:01"), 86401);
  EXPECT_EQ(*parse_timestamp("2017-10-09 07:01:55") - *parse_timestamp("2017-10-08 07:01:55"),
            86400);
  EXPECT_FALSE(parse_timestamp("2017-13-09 07:01:55"));
  EXPECT_FALSE(parse_timestamp("2017-10-09"));
}

TEST(Synthetic, SpecParsingAndErrors) {
  auto s = parse_synthetic("llm:load=0.5,jobs=1000,inference=0.2");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->jobs, 1000);
  EXPECT_DOUBLE_EQ(s->load, 0.5);
  EXPECT_FALSE(parse_synthetic("lmm"));
  auto bad = parse_synthetic("llm:lod=1");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("did you mean 'load'"), std::string::npos);
  EXPECT_FALSE(parse_synthetic("llm:load=-1"));
  EXPECT_FALSE(parse_synthetic("llm:inference=1.5"));
}

TEST(Synthetic, SameSeedSameStream) {
  const auto c = ClusterModel::uniform(64, 18, 4);
  auto spec = *parse_synthetic("llm:jobs=3000");
  auto a = *generate(spec, c, 7 * 86400 * kS, 5);
  auto b = *generate(spec, c, 7 * 86400 * kS, 5);
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    EXPECT_EQ(a.jobs[i].submit, b.jobs[i].submit);
    EXPECT_EQ(a.jobs[i].gpus, b.jobs[i].gpus);
    EXPECT_EQ(a.jobs[i].work_s, b.jobs[i].work_s);
  }
  int inference = 0, pretrain = 0;
  for (const auto& j : a.jobs) {
    inference += j.kind == JobKind::kInference;
    pretrain += j.kind == JobKind::kPretrain;
    EXPECT_LE(j.gpus, c.gpus());
    EXPECT_GE(j.time_limit, static_cast<Tick>(j.work_s * 1e9));
  }
  EXPECT_GT(inference, 0);
  EXPECT_GT(pretrain, 0);
  EXPECT_NEAR(static_cast<double>(a.jobs.size()), 3000 + inference, 300);
}

// The mix's layouts are sized for 288 GB GPUs: on 80 GB H100s an 8B fine-tune at TP1 does not
// fit; fit_to_memory widens such jobs until every training job prices, and leaves the
// flagship's jobs alone.
TEST(Synthetic, LayoutsWidenedToFitGpuMemory) {
  auto cat = *hardware::Catalog::load_embedded();
  auto run = [&](const std::string& name, int64_t* unfit, int64_t* changed) {
    const auto spec = *hardware::resolve_cluster(cat, name);
    auto topo = *topology::Topology::build(cat, spec);
    const auto c = ClusterModel::from_topology(topo, (**cat.system(spec.system)).gpus_per_node);
    auto w = *generate(*parse_synthetic("llm:jobs=400"), c, 3 * 86400 * kS, 3);
    SpeedModel speed(cat, topo);
    *changed = fit_to_memory(w, speed);
    *unfit = 0;
    for (const auto& j : w.jobs) {
      if (j.training < 0) continue;
      const auto& l = w.training[static_cast<size_t>(j.training)].layout;
      EXPECT_EQ(static_cast<int64_t>(l.tp) * l.pp * l.cp * l.dp, j.gpus);
      *unfit += !speed.add(w.training[static_cast<size_t>(j.training)], j.gpus);
    }
  };
  int64_t unfit = 0, changed = 0;
  run("hgx-h100*64", &unfit, &changed);
  EXPECT_EQ(unfit, 0);
  EXPECT_GT(changed, 0);
  run("gb300-nvl72*8", &unfit, &changed);
  EXPECT_EQ(unfit, 0);
  EXPECT_EQ(changed, 0);
}

}  // namespace
}  // namespace clustertwin::scheduler
