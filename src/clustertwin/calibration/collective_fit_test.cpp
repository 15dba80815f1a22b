#include "clustertwin/calibration/collective_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "clustertwin/calibration/parse.h"
#include "clustertwin/collective/group.h"

namespace clustertwin::calibration {
namespace {

using collective::Op;

struct Setup {
  hardware::Catalog catalog;
  hardware::ClusterSpec cluster;
  topology::Topology topo;
  collective::Calibration cal;
};

Setup setup(const std::string& cluster) {
  auto cat = hardware::Catalog::load_embedded();
  EXPECT_TRUE(cat);
  auto spec = hardware::resolve_cluster(*cat, cluster);
  EXPECT_TRUE(spec);
  auto topo = topology::Topology::build(*cat, *spec);
  EXPECT_TRUE(topo);
  auto cal = collective::Calibration::load(*cat);
  EXPECT_TRUE(cal);
  return {std::move(*cat), std::move(*spec), std::move(*topo), std::move(*cal)};
}

double uniform(std::mt19937_64& g) {
  return static_cast<double>(g() >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

/// An nccl-tests run as the model with calibration `cal` predicts it, times perturbed by
/// +-noise.
CollectiveRun synthetic(const Setup& s, const collective::Calibration& cal, Op op, int ranks,
                        int per_node, double noise, std::mt19937_64& g) {
  collective::CollectiveModel m(s.catalog, s.topo, cal,
                                {.network = collective::NetworkModelKind::kAnalytical,
                                 .tuner = collective::TunerKind::kFastest});
  auto group = collective::place_first(s.topo, ranks, per_node);
  EXPECT_TRUE(group);
  CollectiveRun run;
  run.file = "synthetic";
  run.line = 1;
  run.op = op;
  run.dtype = "float";
  run.ranks = ranks;
  run.nodes = ranks / per_node;
  run.per_node = per_node;
  int line = 2;
  for (int64_t size = 1024; size <= (int64_t{4} << 30); size *= 4) {
    collective::Request req{.op = op, .bytes = size};
    auto e = m.estimate(*group, req);
    EXPECT_TRUE(e);
    CollectiveRow r;
    r.size_bytes = size;
    r.count = collective::nccl_count(op, size, 4, ranks);
    r.time_us = e->time.base() * 1e6 * (1 + noise * uniform(g));
    r.line = line++;
    run.rows.push_back(r);
  }
  return run;
}

// Round trip through the real collective model: a "true" cluster whose NICs reach 60% of what
// the catalog assumes and whose NVLS all-reduce lines are 15% slower; its nccl-tests runs (1
// and 2 nodes of 8 H100, +-1% noise) are fitted back within the noise.
TEST(CollectiveFit, RoundTripThroughTheModel) {
  auto s = setup("hgx-h100*2");
  collective::CalibrationFile truth;
  truth.name = "truth";
  truth.gpus = {"h100"};
  for (const auto& [key, patch] : s.cal.defaults().lines) {
    const auto s1 = key.find('/'), s2 = key.rfind('/');
    auto l = s.cal.line("h100", *collective::parse_op(key.substr(0, s1)),
                        *collective::parse_algorithm(key.substr(s1 + 1, s2 - s1 - 1)),
                        *collective::parse_protocol(key.substr(s2 + 1)));
    truth.lines[key].net_efficiency = std::min(1.0, 0.6 * l.net_efficiency);
    if (key == "all_reduce/nvls/simple") truth.lines[key].efficiency = l.efficiency * 0.85;
  }
  const auto true_cal = s.cal.with_profile(truth);
  std::mt19937_64 g(7);
  const double noise = 0.01;
  std::vector<CollectiveRun> runs = {
      synthetic(s, true_cal, Op::kAllReduce, 8, 8, noise, g),
      synthetic(s, true_cal, Op::kAllReduce, 16, 8, noise, g),
      synthetic(s, true_cal, Op::kAllReduce, 2, 1, noise, g),
  };
  CollectiveFitOptions o;
  o.network = collective::NetworkModelKind::kAnalytical;
  auto fit = fit_collectives(s.catalog, s.cluster, s.topo, s.cal, runs, o);
  ASSERT_TRUE(fit) << fit.error().to_string();
  EXPECT_GT(fit->result.rms_before, 0.1);
  EXPECT_LT(fit->result.rms_after, 1.5 * noise);
  EXPECT_LT(fit->result.cv_rms, 3 * noise);
  bool saw_net = false, saw_nvls = false;
  for (const auto& p : fit->result.parameters) {
    if (p.name == "net.efficiency_scale") {
      saw_net = true;
      EXPECT_TRUE(p.constrained);
      EXPECT_NEAR(p.value, 0.6, 0.6 * 3 * noise);
    }
    if (p.name == "all_reduce/nvls/simple.efficiency") {
      saw_nvls = true;
      EXPECT_TRUE(p.constrained);
      EXPECT_NEAR(p.value / (0.85 * p.start), 1, 3 * noise);
    }
  }
  EXPECT_TRUE(saw_net);
  EXPECT_TRUE(saw_nvls);
}

TEST(CollectiveFit, RunsThatDoNotFitTheClusterAreRefused) {
  auto s = setup("hgx-h100*1");
  std::mt19937_64 g(1);
  auto big = setup("hgx-h100*2");
  auto run = synthetic(big, big.cal, Op::kAllReduce, 16, 8, 0, g);
  run.file = "ar.log";
  run.line = 3;
  auto fit = fit_collectives(s.catalog, s.cluster, s.topo, s.cal, {&run, 1});
  ASSERT_FALSE(fit);
  EXPECT_NE(fit.error().to_string().find("ar.log:3: the log has 16 ranks on 2 hosts but cluster "
                                         "hgx-h100*1 has 8 GPUs"),
            std::string::npos)
      << fit.error().to_string();
  run.ranks = 8;
  run.nodes = 1;
  run.device = "NVIDIA B200";
  fit = fit_collectives(s.catalog, s.cluster, s.topo, s.cal, {&run, 1});
  ASSERT_FALSE(fit);
  EXPECT_NE(
      fit.error().to_string().find("the log ran on 'NVIDIA B200' but the cluster's GPU is h100"),
      std::string::npos)
      << fit.error().to_string();
}

TEST(CollectiveFit, ProfileRoundTripsThroughTheCollectiveLayer) {
  auto s = setup("hgx-h100*2");
  std::mt19937_64 g(3);
  collective::CalibrationFile truth;
  truth.name = "truth";
  truth.gpus = {"h100"};
  truth.lines["all_reduce/ring/simple"].net_efficiency = 0.5;
  truth.lines["all_reduce/nvls_tree/simple"].net_efficiency = 0.5;
  std::vector<CollectiveRun> runs = {
      synthetic(s, s.cal.with_profile(truth), Op::kAllReduce, 16, 8, 0.0, g)};
  CollectiveFitOptions o;
  o.network = collective::NetworkModelKind::kAnalytical;
  auto fit = fit_collectives(s.catalog, s.cluster, s.topo, s.cal, runs, o);
  ASSERT_TRUE(fit) << fit.error().to_string();
  std::vector<InputFile> inputs = {{"synthetic", std::string(64, '0'), Format::kNcclTests, 9}};
  const auto yaml =
      profile_yaml(*fit, inputs, runs, o.fit, {"hgx-h100*2", "test-stack", "test", o.network});
  EXPECT_EQ(yaml, profile_yaml(*fit, inputs, runs, o.fit,
                               {"hgx-h100*2", "test-stack", "test", o.network}));
  auto prof = collective::Calibration::read_profile({"p.yaml", yaml});
  ASSERT_TRUE(prof) << prof.error().to_string() << "\n" << yaml;
  // The profile read back predicts what the fit predicted.
  const auto cal = s.cal.with_profile(*prof);
  collective::CollectiveModel m(s.catalog, s.topo, cal,
                                {.network = collective::NetworkModelKind::kAnalytical,
                                 .tuner = collective::TunerKind::kFastest});
  auto group = collective::place_first(s.topo, 16, 8);
  for (size_t i = 0; i < runs[0].rows.size(); ++i) {
    collective::Request req{.op = Op::kAllReduce, .bytes = runs[0].rows[i].size_bytes};
    auto e = m.estimate(*group, req);
    ASSERT_TRUE(e);
    EXPECT_NEAR(e->time.base() * 1e6 / fit->result.after[i], 1, 1e-3) << i;
  }
}

TEST(CollectiveFit, PatternsMatchOneOpOrEvery) {
  EXPECT_TRUE(parameter_matches("all_reduce/nvls/simple.base", "all_reduce/nvls/simple.base"));
  EXPECT_TRUE(parameter_matches("*/ring/ll.small_n", "all_gather/ring/ll.small_n"));
  EXPECT_FALSE(parameter_matches("*/ring/ll.small_n", "all_gather/ring/ll128.small_n"));
  EXPECT_FALSE(parameter_matches("all_reduce/nvls/simple.base", "all_gather/nvls/simple.base"));
  EXPECT_FALSE(parameter_matches("*/ring/ll.small_n", "net.hop_scale"));
}

// Held parameters are not offered (their line keeps the start calibration's value), a shared
// one is one parameter that every op family's line takes, and starts replace the catalog's.
TEST(CollectiveFit, HeldSharedAndStartedParameters) {
  auto s = setup("hgx-h100*1");
  std::mt19937_64 g(5);
  std::vector<CollectiveRun> runs;
  for (Op op : {Op::kAllReduce, Op::kReduceScatter})
    for (int n : {4, 8}) runs.push_back(synthetic(s, s.cal, op, n, n, 0.01, g));
  CollectiveFitOptions o;
  o.network = collective::NetworkModelKind::kAnalytical;
  o.fit.folds = 0;
  o.held = {"all_reduce/nvls/simple.base", "*/ring/ll.small_n"};
  o.shared = {"*/ring/simple.efficiency"};
  o.starts = {{"*/ring/ll128.small_n", 0.1}};
  auto fit = fit_collectives(s.catalog, s.cluster, s.topo, s.cal, runs, o);
  ASSERT_TRUE(fit) << fit.error().to_string();
  int shared = 0;
  for (const auto& p : fit->parameters) {
    EXPECT_NE(p.name, "all_reduce/nvls/simple.base");
    EXPECT_EQ(p.name.find("/ring/ll.small_n"), std::string::npos) << p.name;
    EXPECT_EQ(p.name.find("/ring/simple.efficiency"),
              p.name.rfind("*/", 0) == 0 ? 1 : std::string::npos)
        << p.name;
    if (p.name == "*/ring/simple.efficiency") ++shared;
    if (p.name.find("/ring/ll128.small_n") != std::string::npos) {
      EXPECT_DOUBLE_EQ(p.start, 0.1);
    }
  }
  EXPECT_EQ(shared, 1);
  // The shared value is every op family's line's, and the held field stays the catalog's.
  double eff = 0;
  for (const auto& p : fit->result.parameters)
    if (p.name == "*/ring/simple.efficiency") eff = p.value;
  for (const char* op : {"all_reduce", "reduce_scatter"}) {
    const auto it = fit->profile.lines.find(std::string(op) + "/ring/simple");
    ASSERT_NE(it, fit->profile.lines.end()) << op;
    EXPECT_DOUBLE_EQ(it->second.efficiency.value_or(0), eff) << op;
  }
  const auto nvls = fit->profile.lines.find("all_reduce/nvls/simple");
  ASSERT_NE(nvls, fit->profile.lines.end());
  EXPECT_FALSE(nvls->second.base_us.has_value());
  // The runs are the catalog's own lines with +-1% noise: fitted back within a few times it.
  EXPECT_LT(fit->result.rms_after, 0.03);
}

}  // namespace
}  // namespace clustertwin::calibration
