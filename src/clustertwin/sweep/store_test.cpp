#include "clustertwin/sweep/store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "clustertwin/sweep/run.h"

namespace clustertwin::sweep {
namespace {

namespace fs = std::filesystem;

Design design(const std::string& tps = "[1, 2, 4, 8, 16]") {
  auto d = parse_design(R"(
name: t
scenario:
  cluster: c
  workload:
    training: {model: m}
design:
  - product:
      workload.training.tp: )" +
                            tps + R"(
      workload.training.model: [a, "b,c"]
outputs:
  step_time_s: training.step_time_s
  label: training.label
)",
                        "t.yaml");
  EXPECT_TRUE(d) << (d ? "" : d.error().to_string());
  return *d;
}

/// A point function with no simulator behind it: a step time from the point's values, an error
/// for tp 16.
PointResult fake(const Point& p, const YAML::Node& /*scenario*/ = {}) {
  PointResult r;
  const int tp = std::stoi(p.values[0].Scalar());
  if (tp == 16) {
    r.error = "tp 16 does not fit";
    return r;
  }
  r.ok = true;
  r.results = {
      {"training", {{"step_time_s", 1.0 / tp + 0.1}, {"label", p.values[1].Scalar()}, {"tp", tp}}}};
  return r;
}

std::string bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class SweepStore : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ct-sweep-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string db(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

std::string run_all(const Design& d, const std::string& path, int threads) {
  auto s = Store::open(path, d);
  EXPECT_TRUE(s) << (s ? "" : s.error().to_string());
  Cluster one;
  auto r = run_sweep(
      d, &*s, [](const Point& p, const YAML::Node& sc) { return fake(p, sc); },
      {.threads = threads}, one);
  EXPECT_TRUE(r);
  EXPECT_EQ(r->ran, 10);
  EXPECT_EQ(r->failed, 2);
  EXPECT_TRUE(s->finalize());
  return bytes(path);
}

TEST_F(SweepStore, SameBytesForAnyThreadCount) {
  const auto d = design();
  const auto one = run_all(d, db("1.db"), 1);
  const auto four = run_all(d, db("4.db"), 4);
  EXPECT_FALSE(one.empty());
  EXPECT_EQ(one, four);
  EXPECT_FALSE(fs::exists(db("1.db-wal")));
}

TEST_F(SweepStore, ResumesWhereItStoppedAndSkipsAFinishedSweep) {
  const auto d = design();
  const auto reference = run_all(d, db("ref.db"), 2);
  {
    // An interrupted run: three points stored, in an odd order, then the process is gone.
    auto s = Store::open(db("r.db"), d);
    ASSERT_TRUE(s);
    for (int64_t id : {7, 2, 0}) {
      auto r = fake(d.points[static_cast<size_t>(id)]);
      r.id = id;
      ASSERT_TRUE(s->put(r));
    }
  }
  auto s = Store::open(db("r.db"), d);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->done_count(), 3);
  EXPECT_FALSE(s->complete());
  int calls = 0;
  Cluster one;
  auto counted = [&calls](const Point& p, const YAML::Node& sc) {
    ++calls;
    return fake(p, sc);
  };
  auto r = run_sweep(d, &*s, counted, {.threads = 1}, one);
  ASSERT_TRUE(r);
  EXPECT_EQ(calls, 7);  // nothing twice
  EXPECT_EQ(r->already_done, 3);
  ASSERT_TRUE(s->finalize());
  EXPECT_EQ(bytes(db("r.db")), reference);
  // Finished: opening again finds it complete, and running it runs nothing.
  auto again = Store::open(db("r.db"), d);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->complete());
  calls = 0;
  auto r2 = run_sweep(d, &*again, counted, {.threads = 2}, one);
  ASSERT_TRUE(r2);
  EXPECT_EQ(calls, 0);
  again = Store::open(db("other.db"), d);  // release r.db
  EXPECT_EQ(bytes(db("r.db")), reference);
}

TEST_F(SweepStore, AnotherDesignsDatabaseIsRefused) {
  run_all(design(), db("a.db"), 1);
  const auto other = design("[1, 2]");
  auto s = Store::open(db("a.db"), other);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().to_string().find("holds the results of another design"), std::string::npos);
  {
    std::ofstream f(db("junk.db"));
    f << "not a database at all, just text that is long enough to be read as a header\n";
  }
  auto j = Store::open(db("junk.db"), other);
  ASSERT_FALSE(j);
  EXPECT_NE(j.error().to_string().find("not a sweep database"), std::string::npos)
      << j.error().to_string();
}

TEST_F(SweepStore, CsvAndTableHoldInputsStatusAndOutputs) {
  const auto d = design();
  run_all(d, db("c.db"), 1);
  auto s = Store::open(db("c.db"), d);
  ASSERT_TRUE(s);
  auto csv = s->csv();
  ASSERT_TRUE(csv);
  std::istringstream in(*csv);
  std::string header, row0, row1;
  std::getline(in, header);
  std::getline(in, row0);
  std::getline(in, row1);
  EXPECT_EQ(header,
            "id,workload.training.tp,workload.training.model,status,error,step_time_s,label");
  EXPECT_EQ(row0, "0,1,a,ok,,1.1,a");
  EXPECT_EQ(row1, "1,1,\"b,c\",ok,,1.1,\"b,c\"");
  EXPECT_NE(csv->find("8,16,a,error,tp 16 does not fit,,"), std::string::npos) << *csv;
  auto t = s->table();
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)["rows"].size(), 10u);
  EXPECT_EQ((*t)["rows"][2][1], 2);  // typed: an integer column stays an integer
}

TEST(SweepValueAt, DottedPaths) {
  const nlohmann::json j = {{"a", {{"b", 2.5}}}};
  EXPECT_EQ(value_at(j, "a.b"), 2.5);
  EXPECT_TRUE(value_at(j, "a.c").is_null());
  EXPECT_TRUE(value_at(j, "a.b.c").is_null());
  EXPECT_EQ(quote_identifier("x\"y"), "\"x\"\"y\"");
  // A list's items by index (a search's winner: search.best.0.layout).
  const nlohmann::json s = {{"best", {{{"layout", "TP2"}}, {{"layout", "TP4"}}}}};
  EXPECT_EQ(value_at(s, "best.0.layout"), "TP2");
  EXPECT_EQ(value_at(s, "best.1.layout"), "TP4");
  EXPECT_TRUE(value_at(s, "best.2.layout").is_null());
  EXPECT_TRUE(value_at(s, "best.-1.layout").is_null());
  EXPECT_TRUE(value_at(s, "best.x.layout").is_null());
  EXPECT_TRUE(value_at(s, "best.layout").is_null());
}

}  // namespace
}  // namespace clustertwin::sweep
