// Validation of the collective model (docs/models/collectives.md, "Validation").
//
// Two kinds of checks, kept apart on purpose:
//  - FIT quality: the measured nccl-tests tables of AIConfigurator
//  (tests/validation/data/collective/,
//    copied from shared/reference/measured/<system>/nccl.csv, ai-dynamo/aiconfigurator commit
//    095f58a5, Apache-2.0, converted) are the data `calibrate --builtin collectives` fitted the
//    lines to. Comparing with them says how well the line model can follow NCCL, not how well it
//    predicts.
//  - BLIND cases: shared/reference/calibration-cases.csv, category `collective`, measured by others
//    (Azure, stas00, NCCL maintainers) with other NCCL versions and never used by the fitter,
//    except where a test says "calibration" (VC0496 sets the NIC efficiency).
// Tolerances: large messages (>= 64 MiB, bandwidth bound) +-10%; smaller ones +-25% (latency and
// NCCL's protocol switch points dominate there). Each test names its case id and reason.

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "clustertwin/collective/collective_model.h"

namespace clustertwin::collective {
namespace {

const hardware::Catalog& catalog() {
  static const hardware::Catalog c = *hardware::Catalog::load_embedded();
  return c;
}
const Calibration& calibration() {
  static const Calibration c = *Calibration::load(catalog());
  return c;
}

struct Setup {
  topology::Topology topo;
  Group group;
};

Setup setup(const std::string& cluster, int gpus, int per_domain = 0) {
  auto spec = hardware::resolve_cluster(catalog(), cluster);
  auto topo = topology::Topology::build(catalog(), *spec);
  auto g = place_first(*topo, gpus, per_domain);
  return {*topo, *g};
}

/// busbw (GB/s) of one nccl-tests point predicted by the flow model.
double busbw(const std::string& cluster, int gpus, Op op, int64_t bytes, Algorithm a,
             const std::string& dtype = "float", int per_domain = 0, Protocol p = Protocol::kAuto) {
  auto s = setup(cluster, gpus, per_domain);
  CollectiveModel m(catalog(), s.topo, calibration(), {.network = NetworkModelKind::kFlow});
  auto e = m.estimate(
      s.group,
      {.op = op, .bytes = bytes, .dtype = *parse_dtype(dtype), .algorithm = a, .protocol = p});
  EXPECT_TRUE(e) << (e ? "" : e.error().message);
  return e ? e->busbw.base() / 1e9 : 0.0;
}

struct Case {
  const char* id;
  int64_t bytes;
  double measured_GBps;
};

constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

double tolerance(int64_t bytes) { return bytes >= 64 * kMiB ? 0.10 : 0.25; }

void check_cases(const char* what, const std::vector<Case>& cases, const std::string& cluster,
                 int gpus, Op op, Algorithm a) {
  for (const auto& c : cases) {
    const double got = busbw(cluster, gpus, op, c.bytes, a);
    const double err = got / c.measured_GBps - 1;
    EXPECT_LE(std::fabs(err), tolerance(c.bytes))
        << c.id << " " << what << " at " << c.bytes << " B: predicted " << got << " GB/s, measured "
        << c.measured_GBps << " (" << 100 * err << "%, tolerance " << 100 * tolerance(c.bytes)
        << "%)";
  }
}

// VC0453-VC0457: Azure ND H100 v5, 8x H100, all_reduce with NVLS (NCCL 2.18.5), busbw by size.
// Blind: our NVLS line is fitted to AIC's H100 table (NCCL 2.29.2); sizes are powers of two
// (nccl-tests -f 2: "134M" is 128 MiB).
TEST(CollectiveValidation, VC0454_VC0457_Azure8xH100Nvls) {
  check_cases("8xH100 NVLS all_reduce",
              {{"VC0454", 16 * kMiB, 234.45},
               {"VC0455", 128 * kMiB, 400.61},
               {"VC0456", 1 * kGiB, 466.35},
               {"VC0457", 8 * kGiB, 478.87}},
              "hgx-h100*1", 8, Op::kAllReduce, Algorithm::kNvls);
}

// VC0453 (1 MB, 43.7 GB/s) is checked at +-35%, not +-25%: NCCL 2.18.5 was the first release
// with NVLS, and its small-message NVLS latency was higher than the 2.29.2 we calibrate on (our
// NVLS latency is NCCL's own tuner constant, 25 us); the H200 case with 2.20.5 (VC0458) is
// within +-25%.
TEST(CollectiveValidation, VC0453_Azure8xH100Nvls1MB) {
  const double got = busbw("hgx-h100*1", 8, Op::kAllReduce, 1 * kMiB, Algorithm::kNvls);
  EXPECT_NEAR(got / 43.7 - 1, 0, 0.35) << "VC0453: predicted " << got << " GB/s vs 43.7";
}

// VC0458-VC0462: Azure ND H200 v5, 8x H200, NVLS all_reduce (NCCL 2.20.5). Blind.
TEST(CollectiveValidation, VC0458_VC0462_Azure8xH200Nvls) {
  check_cases("8xH200 NVLS all_reduce",
              {{"VC0458", 1 * kMiB, 52.96},
               {"VC0459", 16 * kMiB, 240.41},
               {"VC0460", 128 * kMiB, 412.45},
               {"VC0461", 1 * kGiB, 467.58},
               {"VC0462", 8 * kGiB, 479.98}},
              "hgx-h200*1", 8, Op::kAllReduce, Algorithm::kNvls);
}

// VC0463-VC0467: Azure ND GB200 v6, 4x GB200 of one tray, ring all_reduce (NCCL 2.25.1). Blind:
// the ring line is fitted to AIC's GB200 tray (int8 all_reduce rows are ring-only, since NVLink
// SHARP cannot reduce int8).
TEST(CollectiveValidation, VC0463_VC0467_Azure4xGB200Ring) {
  check_cases("4xGB200 ring all_reduce",
              {{"VC0463", 1 * kMiB, 80.48},
               {"VC0464", 16 * kMiB, 331.09},
               {"VC0465", 128 * kMiB, 574.19},
               {"VC0466", 1 * kGiB, 646.87},
               {"VC0467", 8 * kGiB, 679.61}},
              "gb200-nvl72*1", 4, Op::kAllReduce, Algorithm::kRing);
}

// VC0473-VC0478: stas00/ml-engineering, 8x H200, nccl-tests all_reduce with NCCL's own choice
// (NCCL 2.30.7): our auto selection against theirs. Blind.
TEST(CollectiveValidation, VC0473_VC0478_8xH200Auto) {
  check_cases("8xH200 auto all_reduce",
              {{"VC0473", 1 * kMiB, 72.45},
               {"VC0474", 16 * kMiB, 242.45},
               {"VC0475", 64 * kMiB, 369.82},
               {"VC0476", 256 * kMiB, 442.27},
               {"VC0477", 1 * kGiB, 464.0},
               {"VC0478", 16 * kGiB, 480.7}},
              "hgx-h200*1", 8, Op::kAllReduce, Algorithm::kAuto);
}

// VC0494: NCCL maintainer: ~480 GB/s NVLS all_reduce busbw on 8x H100 for large messages. Blind.
TEST(CollectiveValidation, VC0494_H100NvlsPeak) {
  const double got = busbw("hgx-h100*1", 8, Op::kAllReduce, 8 * kGiB, Algorithm::kNvls);
  EXPECT_NEAR(got / 480 - 1, 0, 0.10)
      << "VC0494: predicted " << got << " GB/s vs ~480 (+-10%, large message)";
}

// VC0495: NCCL maintainer: ~370 GB/s busbw on 8x H100 without NVLS (ring; also the non-allreduce
// collectives): 450 GB/s line rate minus ~20% protocol overhead. Blind for all_reduce (our ring
// line is fitted on AIC's int8 rows); all_gather is checked too.
TEST(CollectiveValidation, VC0495_H100RingPeak) {
  const double ar = busbw("hgx-h100*1", 8, Op::kAllReduce, 8 * kGiB, Algorithm::kRing);
  EXPECT_NEAR(ar / 370 - 1, 0, 0.10)
      << "VC0495 all_reduce ring: predicted " << ar << " GB/s vs ~370";
  const double ag = busbw("hgx-h100*1", 8, Op::kAllGather, 8 * kGiB, Algorithm::kRing);
  EXPECT_NEAR(ag / 370 - 1, 0, 0.10)
      << "VC0495 all_gather ring: predicted " << ag << " GB/s vs ~370";
}

// VC0496: NCCL maintainer: 46-48 GB/s busbw per 400G NIC (ring, 2 nodes). CALIBRATION, not blind:
// it sets the NIC efficiency 0.94 in catalog/collectives/defaults.yaml. One GPU per node, so the
// NIC is the ring's bottleneck.
TEST(CollectiveValidation, VC0496_PerNicBusBandwidth_Calibration) {
  const double got = busbw("hgx-h100*2", 2, Op::kAllReduce, 4 * kGiB, Algorithm::kRing, "float", 1);
  EXPECT_GE(got, 46 * 0.9) << "VC0496: predicted " << got;
  EXPECT_LE(got, 48 * 1.1) << "VC0496: predicted " << got;
}

// VC0497/VC0498: DeepSeek-V3 report: NVLink ~160 GB/s and IB ~50 GB/s effective per H800 GPU,
// quoted for kernel design. Send/recv between two GPUs. H800 has no measured table: its lines
// are H100's (same Hopper and NVSwitch 3), so this is an extrapolation; +-25% (a quoted round
// figure, not a benchmark).
TEST(CollectiveValidation, VC0497_VC0498_H800PointToPoint) {
  const double nv = busbw("hgx-h800*1", 2, Op::kSendRecv, 1 * kGiB, Algorithm::kAuto);
  EXPECT_NEAR(nv / 160 - 1, 0, 0.25) << "VC0497 NVLink: predicted " << nv << " GB/s vs ~160";
  const double ib = busbw("hgx-h800*2", 2, Op::kSendRecv, 1 * kGiB, Algorithm::kAuto, "float", 1);
  EXPECT_NEAR(ib / 50 - 1, 0, 0.25) << "VC0498 IB: predicted " << ib << " GB/s vs ~50";
}

// Multi-tray NVLink all-to-all on GB200 NVL72 (shared/reference/measured/gb200/trtllm_alltoall.csv,
// AIC 095f58a5, TensorRT-LLM 1.2.0rc6 NVLinkTwoSided dispatch, bf16, DeepSeek-V3 shape: hidden
// 7168, top-8 of 256 experts, balanced routing, 65536 tokens per rank). Blind: our all-to-all
// lines are fitted to NCCL on 2-4 GPUs of one tray; this checks that the per-GPU NVLink rate
// holds across 4-16 trays of the rack. Bytes each rank sends to other ranks: tokens x 7168 x 2 B
// x the expected number of distinct other ranks among a token's 8 experts (dedup, as the kernel
// sends a token once per rank). +-25%: a different kernel (TRT-LLM's, not NCCL's) and expected
// rather than actual routing.
TEST(CollectiveValidation, GB200Nvl72AllToAllAcrossTrays) {
  struct Point {
    int ep;
    double latency_us;
  };
  const double tokens = 65536, hidden = 7168;
  auto spec = hardware::resolve_cluster(catalog(), "gb200-nvl72*1");
  auto topo = topology::Topology::build(catalog(), *spec);
  CollectiveModel m(catalog(), *topo, calibration(), {.network = NetworkModelKind::kFlow});
  for (const auto& pt : {Point{16, 11805.0}, Point{32, 12733.0}, Point{64, 14927.0}}) {
    const double per = 256.0 / pt.ep;
    // P(a given rank holds none of the 8 experts) = C(256 - per, 8) / C(256, 8).
    double none = 1;
    for (int i = 0; i < 8; ++i) none *= (256.0 - per - i) / (256.0 - i);
    const double distinct_other = pt.ep * (1 - none) * (pt.ep - 1) / pt.ep;
    const double remote_bytes = tokens * hidden * 2 * distinct_other;
    const double measured_rate = remote_bytes / (pt.latency_us * 1e-6);
    auto g = place_first(*topo, pt.ep);
    // nccl-tests all_to_all size: the whole send buffer, (n-1)/n of it leaving the rank.
    const auto size = static_cast<int64_t>(remote_bytes * pt.ep / (pt.ep - 1));
    auto e =
        m.estimate(*g, {.op = Op::kAllToAll, .bytes = size, .dtype = *parse_dtype("bfloat16")});
    ASSERT_TRUE(e) << e.error().message;
    const double rate = remote_bytes / e->time.base();
    EXPECT_NEAR(rate / measured_rate - 1, 0, 0.25)
        << "GB200 NVL72 all-to-all, EP " << pt.ep << ": predicted " << rate / 1e9
        << " GB/s out of each GPU, measured " << measured_rate / 1e9;
  }
}

// FIT quality against the AIC tables the lines were fitted to (not blind): rms log error < 12%,
// at most 1 in 12 small-message rows outside +-25% (NCCL tuner switch points, measurement spikes),
// at least 90% of the large-message rows within +-15% and none beyond 40% (the worst are 2-GPU
// all-to-all rows, a single peer, up to 37% slower than the line that serves 4 to 64 GPUs).
struct Row {
  std::string op, dtype;
  int gpus;
  int64_t bytes;
  double us;
};

std::vector<Row> read_rows(const std::string& system) {
  std::ifstream f(std::string(CT_VALIDATION_DATA) + "/collective/" + system + "_nccl.csv");
  EXPECT_TRUE(f.good()) << system;
  std::vector<Row> rows;
  std::string line;
  std::getline(f, line);
  while (std::getline(f, line)) {
    std::stringstream ss(line);
    Row r;
    std::string gpus, bytes, us;
    std::getline(ss, r.op, ',');
    std::getline(ss, r.dtype, ',');
    std::getline(ss, gpus, ',');
    std::getline(ss, bytes, ',');
    std::getline(ss, us, ',');
    r.gpus = std::stoi(gpus);
    r.bytes = std::stoll(bytes);
    r.us = std::stod(us);
    rows.push_back(r);
  }
  return rows;
}

TEST(CollectiveFit, AicTablesAreFollowed) {
  const std::map<std::string, std::string> cluster = {
      {"h100", "hgx-h100*1"}, {"h200", "hgx-h200*1"},     {"b200", "hgx-b200*1"},
      {"b300", "hgx-b300*1"}, {"gb200", "gb200-nvl72*1"}, {"gb300", "gb300-nvl72*1"}};
  for (const auto& [system, name] : cluster) {
    auto spec = hardware::resolve_cluster(catalog(), name);
    auto topo = topology::Topology::build(catalog(), *spec);
    CollectiveModel m(catalog(), *topo, calibration());
    int n_small = 0, n_small_out = 0, n_large = 0, n_large_out = 0, n_pair = 0;
    double worst_pair = 0;
    double sum2 = 0;
    for (const auto& r : read_rows(system)) {
      auto g = place_first(*topo, r.gpus);
      auto e =
          m.estimate(*g, {.op = *parse_op(r.op), .bytes = r.bytes, .dtype = *parse_dtype(r.dtype)});
      ASSERT_TRUE(e) << e.error().message;
      const double err = e->time.base() * 1e6 / r.us - 1;
      sum2 += std::log1p(err) * std::log1p(err);
      if (r.bytes >= 64 * kMiB && r.op == "all_to_all" && r.gpus == 2) {
        // A 2-GPU all-to-all has a single peer and runs 25-37% below the line the 4-64 GPU data
        // support (trtllm_alltoall: flat per-GPU rate from 4 to 64 GPUs); reported, not asserted.
        ++n_pair;
        worst_pair = std::max(worst_pair, std::fabs(err));
        continue;
      }
      if (r.bytes >= 64 * kMiB) {
        ++n_large;
        if (std::fabs(err) > 0.15) ++n_large_out;
        EXPECT_LE(std::fabs(err), 0.40)
            << system << " " << r.op << " " << r.dtype << " n=" << r.gpus << " " << r.bytes
            << " B: " << 100 * err << "% (no large row beyond 40%)";
      } else {
        ++n_small;
        if (std::fabs(err) > 0.25) ++n_small_out;
      }
    }
    const size_t rows = static_cast<size_t>(n_small + n_large + n_pair);
    const double rms = std::sqrt(sum2 / static_cast<double>(rows));
    // Outliers: NCCL tuner switch points (B200/B300 16-32 MiB), and run-to-run spikes the
    // measured README warns of (up to 2-4x at small sizes).
    EXPECT_LE(n_small_out, n_small / 12) << system << ": " << n_small_out << " of " << n_small
                                         << " small-message rows outside +-25%";
    // Large rows: the one line per protocol cannot follow every 2-GPU ring and every 64 MiB
    // protocol switch; at least 90% within +-15%.
    EXPECT_LE(n_large_out, n_large / 10) << system << ": " << n_large_out << " of " << n_large
                                         << " large-message rows outside +-15%";
    EXPECT_LT(rms, 0.12) << system << ": rms log error " << rms;
    std::printf(
        "[fit] %-6s rows %3zu  rms %.1f%%  small outside 25%%: %d/%d  large outside 15%%: %d/%d  "
        "2-GPU all_to_all >= 64 MiB: worst %.0f%% of %d\n",
        system.c_str(), rows, 100 * rms, n_small_out, n_small, n_large_out, n_large,
        100 * worst_pair, n_pair);
  }
}

}  // namespace
}  // namespace clustertwin::collective
