// Scale benchmark of the collective layer (issue 3): flow-level collectives on whole clusters.
// Prints, per case, the topology build time, the time of one estimate (auto: every available
// algorithm and protocol is evaluated), flows solved, flows per second and the process's peak RSS.
// Targets: all_reduce 1 GiB over all 4,608 GPUs of azure-ndv6-gb300 < 1 s; 131,072 GPUs < 30 s;
// all_to_all 1 GiB over one 72-GPU rack < 0.1 s.
// Usage: collective_bench [--growth]   (--growth adds the cost-growth series)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "clustertwin/collective/collective_model.h"

using namespace clustertwin;
using namespace clustertwin::collective;

namespace {

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct Case {
  std::string cluster;
  int gpus;
  Op op;
  Algorithm algo;
  NetworkModelKind model = NetworkModelKind::kFlow;
};

}  // namespace

int main(int argc, char** argv) {
  const bool growth = argc > 1 && std::strcmp(argv[1], "--growth") == 0;
  auto cat = hardware::Catalog::load_embedded();
  auto cal = cat ? Calibration::load(*cat) : base::Result<Calibration>(base::fail("no catalog"));
  if (!cat || !cal) {
    std::fprintf(stderr, "catalog or calibration failed to load\n");
    return 1;
  }
  std::vector<Case> cases = {
      {"azure-ndv6-gb300", 4608, Op::kAllReduce, Algorithm::kAuto},
      {"azure-ndv6-gb300", 4608, Op::kAllReduce, Algorithm::kRing},
      {"azure-ndv6-gb300", 4608, Op::kAllReduce, Algorithm::kTree},
      {"azure-ndv6-gb300", 4608, Op::kAllReduce, Algorithm::kNvlsTree},
      {"azure-ndv6-gb300", 4608, Op::kAllReduce, Algorithm::kAuto, NetworkModelKind::kAnalytical},
      {"gb300-nvl72*1", 72, Op::kAllToAll, Algorithm::kAuto},
      {"gb300-nvl72*1821", 131112, Op::kAllReduce, Algorithm::kAuto},
      {"hgx-b300*16384", 131072, Op::kAllReduce, Algorithm::kAuto},
      {"hgx-b300*16384", 131072, Op::kAllReduce, Algorithm::kRing},
  };
  if (growth) {
    for (int racks : {8, 16, 32, 64, 128, 256, 512, 1024}) {
      cases.push_back(
          {"gb300-nvl72*" + std::to_string(racks), racks * 72, Op::kAllReduce, Algorithm::kRing});
    }
    for (int nodes : {512, 1024, 2048, 4096, 8192, 16384}) {
      cases.push_back(
          {"hgx-b300*" + std::to_string(nodes), nodes * 8, Op::kAllReduce, Algorithm::kTree});
    }
    for (int racks : {1, 2, 4, 8, 16}) {
      cases.push_back(
          {"gb300-nvl72*" + std::to_string(racks), racks * 72, Op::kAllToAll, Algorithm::kAuto});
    }
  }
  std::printf("%-20s %7s %-10s %-9s %-10s %9s %9s %9s %9s %10s %12s %9s %9s\n", "cluster", "gpus",
              "op", "algo", "model", "build_s", "est_s", "time_ms", "busbw", "flows", "flows_per_s",
              "solves", "peak_MiB");
  for (const auto& c : cases) {
    auto spec = hardware::resolve_cluster(*cat, c.cluster);
    if (!spec) {
      std::fprintf(stderr, "%s\n", spec.error().to_string().c_str());
      return 1;
    }
    auto t0 = std::chrono::steady_clock::now();
    auto topo = topology::Topology::build(*cat, *spec);
    const double build_s = since(t0);
    if (!topo) {
      std::fprintf(stderr, "%s\n", topo.error().to_string().c_str());
      return 1;
    }
    auto t1 = std::chrono::steady_clock::now();
    CollectiveModel m(*cat, *topo, *cal, {.network = c.model});
    auto g = place_first(*topo, c.gpus);
    auto e = g ? m.estimate(*g, {.op = c.op, .bytes = int64_t{1} << 30, .algorithm = c.algo})
               : base::Result<Estimate>(base::fail(g.error()));
    const double est_s = since(t1);
    if (!e) {
      std::fprintf(stderr, "%s: %s\n", c.cluster.c_str(), e.error().to_string().c_str());
      return 1;
    }
    const auto& st = m.last_flow_stats();
    std::printf(
        "%-20s %7d %-10s %-9s %-10s %9.3f %9.3f %9.3f %9.1f %10lld %12.3g %9lld %9.1f   -> %s/%s\n",
        c.cluster.c_str(), c.gpus, op_name(c.op), algorithm_name(c.algo),
        c.model == NetworkModelKind::kFlow ? "flow" : "analytical", build_s, est_s,
        e->time.base() * 1e3, e->busbw.base() / 1e9, static_cast<long long>(st.subflows),
        est_s > 0 ? static_cast<double>(st.subflows) / est_s : 0.0,
        static_cast<long long>(m.flow_solves()), peak_rss_mib(), algorithm_name(e->algorithm),
        protocol_name(e->protocol));
  }
  return 0;
}
