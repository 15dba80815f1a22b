// Scale benchmark: build the topology (graph + fat-tree plan) and derive the description for
// clusters from 4,608 to 131,072+ GPUs. Prints wall time and the process's peak RSS after each.
// Targets (issue 2): 4,608 GPUs < 0.5 s, 131,072 GPUs < 5 s and < 4 GiB; describe < 0.2 s.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "clustertwin/report/describe.h"
#include "clustertwin/topology/summary.h"

using namespace clustertwin;

static double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

int main(int argc, char** argv) {
  std::vector<std::string> clusters = {"azure-ndv6-gb300", "eos-h100", "gb300-nvl72*1821",
                                       "hgx-b300*16384", "gb300-nvl72*10000"};
  if (argc > 1) clusters.assign(argv + 1, argv + argc);
  auto t0 = std::chrono::steady_clock::now();
  auto cat = hardware::Catalog::load_embedded();
  if (!cat) {
    std::fprintf(stderr, "%s\n", cat.error().to_string().c_str());
    return 1;
  }
  auto since = [](auto t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  std::printf("catalog load: %.3f s\n", since(t0));
  std::printf("%-22s %9s %6s %10s %12s %12s %12s %10s\n", "cluster", "gpus", "tiers", "links",
              "build_s", "describe_s", "paths_per_s", "peak_MiB");
  for (const auto& name : clusters) {
    auto spec = hardware::resolve_cluster(*cat, name);
    if (!spec) {
      std::fprintf(stderr, "%s\n", spec.error().to_string().c_str());
      return 1;
    }
    auto t1 = std::chrono::steady_clock::now();
    auto topo = topology::Topology::build(*cat, *spec);
    const double build_s = since(t1);
    if (!topo) {
      std::fprintf(stderr, "%s\n", topo.error().to_string().c_str());
      return 1;
    }
    auto t2 = std::chrono::steady_clock::now();
    auto text = report::describe_text(topology::summarize(*cat, *topo));
    const double describe_s = since(t2);
    // Route enumeration rate: ECMP path of 1M pseudo-random GPU pairs.
    auto t3 = std::chrono::steady_clock::now();
    std::vector<topology::LinkId> path;
    uint64_t x = 88172645463325252ULL, sink = 0;
    const int n = 1'000'000;
    for (int i = 0; i < n; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const int a = static_cast<int>(x % static_cast<uint64_t>(topo->gpus()));
      const int b = static_cast<int>((x >> 32) % static_cast<uint64_t>(topo->gpus()));
      if (a == b) continue;
      path.clear();
      topo->path(a, b, topo->ecmp_index(a, b, x), path);
      sink += path.size();
    }
    const double paths_per_s = n / since(t3);
    std::printf("%-22s %9d %6d %10zu %12.4f %12.4f %12.3g %10.1f\n", name.c_str(), topo->gpus(),
                topo->fabric().tiers, topo->links().size(), build_s, describe_s, paths_per_s,
                peak_rss_mib());
    if (sink == 0) std::printf("%s", text.c_str());
  }
  return 0;
}
