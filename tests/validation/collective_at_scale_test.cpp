// Validation of the collective model at scale (docs/models/collectives.md, "At scale" and "MoE
// all-to-all"): every row of tests/validation/data/collective/at_scale.csv and moe_a2a.csv
// (copied from shared/reference/calibration-at-scale.csv, each source attributed there).
//
// Rows with role `fit` set a figure of catalog/collectives/at-scale.yaml or moe-a2a.yaml
// (`clustertwin calibrate --builtin at-scale`, recipe catalog/calibration/at-scale.yaml; its
// leave-one-source-out errors are in docs/models/collectives.md); `check`
// rows are held out; `degraded` rows are systems their reporters call underperforming, so the
// prediction must lie above them. Tolerance: 20% per row, 10% on the median, as issue 13 asks;
// the rows the model is known to miss are listed with their reason and pinned to their error
// band so that a change in either direction shows.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "clustertwin/collective/collective_model.h"
#include "clustertwin/collective/moe_a2a.h"
#include "clustertwin/collective/sweep.h"

namespace clustertwin::collective {
namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = *hardware::Catalog::load_embedded();
  return c;
}

using Row = std::map<std::string, std::string>;

std::vector<Row> read_csv(const std::string& name) {
  std::ifstream in(std::string(CT_VALIDATION_DATA) + "/collective/" + name);
  EXPECT_TRUE(in) << name;
  std::vector<Row> rows;
  std::vector<std::string> header;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    if (header.empty()) {
      header = cells;
      continue;
    }
    Row r;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) r[header[i]] = cells[i];
    rows.push_back(r);
  }
  return rows;
}

int64_t size_bytes(const std::string& s) {
  const char unit = s.back();
  const int64_t v = std::stoll(s);
  return unit == 'G' ? v << 30 : unit == 'M' ? v << 20 : unit == 'K' ? v << 10 : v;
}

std::string cluster_arg(const std::string& c) {
  return c.size() > 5 && c.substr(c.size() - 5) == ".yaml"
             ? std::string(CT_VALIDATION_DATA) + "/collective/" + c
             : c;
}

double predict_collective(const Row& r) {
  SweepSpec s;
  s.cluster = cluster_arg(r.at("cluster"));
  s.gpus = std::stoi(r.at("gpus"));
  s.gpus_per_domain = std::stoi(r.at("per_domain"));
  s.op = *parse_op(r.at("op"));
  s.max_bytes = size_bytes(r.at("size"));
  s.min_bytes = r.at("metric") == "max_busbw" ? 8 : s.max_bytes;
  s.algorithm = *parse_algorithm(r.at("algo"));
  s.model = NetworkModelKind::kFlow;
  s.channels = std::stoi(r.at("channels"));
  s.sharp = r.at("sharp") == "on";
  auto res = run_sweep(catalog(), s);
  EXPECT_TRUE(res) << r.at("id") << ": " << (res ? "" : res.error().message);
  if (!res) return 0;
  double best = 0;
  for (const auto& row : res->rows) best = std::max(best, row.estimate.busbw.base() / 1e9);
  return r.at("metric") == "max_busbw" ? best : res->rows.back().estimate.busbw.base() / 1e9;
}

double predict_a2a(const Row& r) {
  MoeSweepSpec s;
  s.cluster = r.at("cluster");
  s.gpus = std::stoi(r.at("gpus"));
  s.request.impl = *parse_a2a_impl(r.at("impl"));
  s.request.combine = r.at("phase") == "combine";
  s.request.token_bytes = std::stoll(r.at("token_bytes"));
  // DeepSeek-V3's routing (catalog/models/deepseek-v3.yaml: 256 experts, top-8, 4 of 8 groups).
  s.request.routing = {.experts = 256,
                       .topk = 8,
                       .groups = 8,
                       .topk_groups = 4,
                       .balanced = r.at("balanced") == "yes"};
  s.tokens = {std::stoll(r.at("tokens"))};
  auto res = run_moe_sweep(catalog(), s);
  EXPECT_TRUE(res) << r.at("id") << ": " << (res ? "" : res.error().message);
  if (!res) return 0;
  const auto& e = res->rows.front().second;
  const auto& m = r.at("metric");
  if (m == "time_us") return e.time.base() * 1e6;
  if (m == "logical_bw") return e.logical_bw.base() / 1e9;
  if (m == "rdma_bw") return e.rdma_bw.base() / 1e9;
  return e.nvl_bw.base() / 1e9;
}

/// Rows outside 20% with the reason; each pinned to the band it sits in today.
struct KnownMiss {
  const char* id;
  double lo, hi;
  const char* why;
};
const KnownMiss kKnownMisses[] = {
    {"S0208", 0.4, 0.9,
     "nccl#1218: all_gather on 32 RoCE nodes with channels pinned to 16 and one QP per "
     "connection, approximate; the same run's all_reduce (S0209) is within 7%. Under ECMP "
     "hashing the model gives -17% here but -30% on the all_reduce: the fabric's routing is "
     "not known"},
};

const KnownMiss* known(const std::string& id) {
  for (const auto& k : kKnownMisses)
    if (id == k.id) return &k;
  return nullptr;
}

void check_rows(const std::vector<Row>& rows, bool a2a) {
  std::vector<double> errs;
  for (const auto& r : rows) {
    const std::string& id = r.at("id");
    const double measured =
        std::stod(r.count("measured") ? r.at("measured") : r.at("measured_GBps"));
    const double got = a2a ? predict_a2a(r) : predict_collective(r);
    const double err = got / measured - 1;
    std::printf("%-7s %-11s %-8s measured %9.2f predicted %9.2f %+6.1f%%\n", id.c_str(),
                r.at("source").c_str(), r.at("role").c_str(), measured, got, 100 * err);
    if (r.at("role") == "degraded") {
      EXPECT_GT(got, measured) << id << ": a degraded system must measure below the prediction";
      continue;
    }
    errs.push_back(std::fabs(err));
    if (const auto* k = known(id)) {
      EXPECT_GE(err, k->lo) << id << " " << k->why;
      EXPECT_LE(err, k->hi) << id << " " << k->why;
      continue;
    }
    EXPECT_LE(std::fabs(err), 0.20) << id << " (" << r.at("source") << ", " << r.at("role")
                                    << "): predicted " << got << ", measured " << measured;
  }
  ASSERT_FALSE(errs.empty());
  std::sort(errs.begin(), errs.end());
  EXPECT_LE(errs[errs.size() / 2], 0.10) << "median |error|";
}

TEST(CollectivesAtScale, NcclTestsRows) { check_rows(read_csv("at_scale.csv"), false); }

TEST(CollectivesAtScale, MoeAllToAllRows) { check_rows(read_csv("moe_a2a.csv"), true); }

TEST(CollectivesAtScale, AutoNeverPicksWhatCannotRun) {
  // Without SHARP, nothing that needs it; on one GPU per node, PAT may appear; inside one NVL72
  // rack no tree across domains.
  for (const char* cluster : {"hgx-h100*4", "gb200-nvl72*2", "hgx-b200*16"}) {
    SweepSpec s;
    s.cluster = cluster;
    s.min_bytes = 8;
    s.max_bytes = int64_t{16} << 30;
    s.model = NetworkModelKind::kFlow;
    auto res = run_sweep(catalog(), s);
    ASSERT_TRUE(res) << res.error().message;
    for (const auto& row : res->rows) {
      const auto a = row.estimate.algorithm;
      EXPECT_NE(a, Algorithm::kCollNet) << cluster;
      EXPECT_NE(a, Algorithm::kNvls) << cluster << " spans " << res->domains << " domains";
    }
  }
}

}  // namespace
}  // namespace clustertwin::collective
