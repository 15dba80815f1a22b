// Validation on real multi-node data (docs/models/calibration.md, "Validation at scale"): the
// H100 multi-node all_reduce sources of shared/reference/calibration-at-scale.csv (copied into
// tests/validation/data/calibration/at_scale_h100_all_reduce.csv), leave one source out: fit the
// collective model's network terms on the other sources through `fit_collectives`, predict the
// held-out source. The errors are pinned with tolerances; the page states them.

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "clustertwin/calibration/collective_fit.h"
#include "clustertwin/collective/group.h"

namespace clustertwin::calibration {
namespace {

struct Row {
  std::string id, source;
  int nodes = 0;
  int64_t size = 0;
  double busbw = 0;
};

std::vector<Row> rows() {
  std::ifstream in(std::string(CT_CALIBRATION_DATA) + "/at_scale_h100_all_reduce.csv");
  std::vector<Row> out;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    std::istringstream s(line);
    Row r;
    std::string f;
    std::getline(s, r.id, ',');
    std::getline(s, r.source, ',');
    std::getline(s, f, ',');
    r.nodes = std::stoi(f);
    std::getline(s, f, ',');
    r.size = std::stoll(f);
    std::getline(s, f, ',');
    r.busbw = std::stod(f);
    out.push_back(r);
  }
  return out;
}

/// One nccl-tests run per (source, nodes) with its sizes; time from busbw (nccl-tests:
/// busbw = size / time * 2(n-1)/n).
std::vector<CollectiveRun> runs_of(const std::vector<Row>& rs) {
  std::map<std::pair<std::string, int>, CollectiveRun> m;
  for (const auto& r : rs) {
    auto& run = m[{r.source, r.nodes}];
    run.file = r.source;
    run.line = 1;
    run.op = collective::Op::kAllReduce;
    run.dtype = "float";
    run.ranks = 8 * r.nodes;
    run.nodes = r.nodes;
    run.per_node = 8;
    CollectiveRow row;
    row.size_bytes = r.size;
    row.count = r.size / 4;
    const double algbw = r.busbw / collective::busbw_factor(run.op, run.ranks);
    row.time_us = static_cast<double>(r.size) / (algbw * 1e3);
    row.busbw_GBps = r.busbw;
    run.rows.push_back(row);
  }
  std::vector<CollectiveRun> out;
  for (auto& [k, v] : m) out.push_back(std::move(v));
  return out;
}

TEST(CalibrationAtScale, LeaveOneSourceOutH100AllReduce) {
  auto cat = hardware::Catalog::load_embedded();
  ASSERT_TRUE(cat);
  auto spec = hardware::resolve_cluster(*cat, "hgx-h100*8");
  ASSERT_TRUE(spec);
  auto topo = topology::Topology::build(*cat, *spec);
  ASSERT_TRUE(topo);
  auto cal = collective::Calibration::load(*cat);
  ASSERT_TRUE(cal);
  const auto all = rows();
  ASSERT_EQ(all.size(), 9u);
  // Held-out rms log error per source, and the fit error on the rest; tolerance per source
  // (the numbers are in docs/models/calibration.md).
  const std::map<std::string, double> tolerance = {
      // 2 nodes, 8 GiB: 6.1% held out (the catalog alone: 10.5%).
      {"coreweave-2node", 0.15},
      // 8 nodes with SHARP (CollNet forced), 512 MiB-8 GiB: 7.8% held out (catalog 7.8%).
      {"coreweave-sharp-8node", 0.10},
      // 1/2/4 nodes "max busbw": 6.1% held out (catalog 3.5%, whose NIC efficiency was fitted
      // on these rows: catalog/collectives/at-scale.yaml).
      {"dell-nccl-tests-309", 0.30}};
  for (const auto& [held, tol] : tolerance) {
    std::vector<Row> train, test;
    for (const auto& r : all) (r.source == held ? test : train).push_back(r);
    auto tr = runs_of(train);
    CollectiveFitOptions o;
    o.network = collective::NetworkModelKind::kAnalytical;
    o.fit.folds = 0;
    auto fit = fit_collectives(*cat, *spec, *topo, *cal, tr, o);
    ASSERT_TRUE(fit) << held << ": " << fit.error().to_string();
    // Predict the held-out rows with the fitted profile.
    const auto fitted = cal->with_profile(fit->profile);
    double se = 0, se_before = 0;
    int n = 0;
    for (const auto& run : runs_of(test)) {
      const std::array<const collective::Calibration*, 2> both = {&*cal, &fitted};
      for (const auto* c : both) {
        collective::CollectiveModel m(*cat, *topo, *c, {.network = o.network});
        auto g = collective::place_first(*topo, run.ranks, 8);
        ASSERT_TRUE(g);
        for (const auto& row : run.rows) {
          collective::Request req{.op = run.op, .bytes = row.size_bytes};
          auto e = m.estimate(*g, req);
          ASSERT_TRUE(e);
          const double r = std::log(e->time.base() * 1e6 / row.time_us);
          (c == &fitted ? se : se_before) += r * r;
          if (c == &fitted) ++n;
        }
      }
    }
    const double rms = std::sqrt(se / n), rms_before = std::sqrt(se_before / n);
    std::printf(
        "held out %-22s fit rms %.3f (before %.3f) on %zu rows; held-out rms %.3f "
        "(catalog %.3f) on %d rows\n",
        held.c_str(), fit->result.rms_after, fit->result.rms_before, train.size(), rms, rms_before,
        n);
    EXPECT_LT(rms, tol) << held;
  }
}

}  // namespace
}  // namespace clustertwin::calibration
