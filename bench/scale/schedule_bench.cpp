// Scale benchmark of the cluster simulation (issue 8): wall time, events per second and peak
// memory of a month of a cluster with failures on.
// Targets: 30 days of the 4,608-GPU flagship with a Philly-sized stream (~80,000 jobs): < 60 s;
// a month of a 131,072-GPU cluster (1,820 GB300 NVL72 racks, 131,040 GPUs): < 5 min.
// Usage: schedule_bench [CLUSTER JOBS DAYS ...]  (JOBS 0: the synthetic mix's own rate)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "clustertwin/scheduler/simulation.h"
#include "clustertwin/scheduler/synthetic.h"

using namespace clustertwin;

static double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

struct Case {
  std::string cluster;
  long jobs;
  double days;
  double target_s;
};

int main(int argc, char** argv) {
  std::vector<Case> cases = {{"azure-ndv6-gb300", 80000, 30, 60}, {"gb300-nvl72*1820", 0, 30, 300}};
  if (argc > 1) {
    cases.clear();
    for (int i = 1; i + 2 < argc; i += 3) {
      cases.push_back({argv[i], std::atol(argv[i + 1]), std::atof(argv[i + 2]), 0});
    }
  }
  auto cat = hardware::Catalog::load_embedded();
  if (!cat) {
    std::fprintf(stderr, "%s\n", cat.error().to_string().c_str());
    return 1;
  }
  auto since = [](auto t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  std::printf("%-20s %8s %5s %8s %9s %9s %10s %11s %7s %7s %9s %8s\n", "cluster", "gpus", "days",
              "jobs", "failures", "wall_s", "events", "events_per_s", "util", "ettr", "estimates",
              "peak_MiB");
  int rc = 0;
  for (const auto& c : cases) {
    auto spec = hardware::resolve_cluster(*cat, c.cluster);
    if (!spec) {
      std::fprintf(stderr, "%s\n", spec.error().to_string().c_str());
      return 1;
    }
    auto topo = topology::Topology::build(*cat, *spec);
    if (!topo) {
      std::fprintf(stderr, "%s\n", topo.error().to_string().c_str());
      return 1;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto cluster =
        scheduler::ClusterModel::from_topology(*topo, (**cat->system(spec->system)).gpus_per_node);
    scheduler::SimConfig cfg;
    cfg.horizon = engine::to_ticks(base::seconds(c.days * 86400));
    cfg.seed = 1;
    cfg.policy = scheduler::QueuePolicy::kEasy;
    cfg.placement.policy = scheduler::PlacementPolicy::kBlock;
    cfg.spares = 2;
    cfg.failures.enabled = true;
    cfg.failures.model = scheduler::FailureModel::llama3(cluster.max_domain_nodes() > 1);
    auto synth =
        *scheduler::parse_synthetic(c.jobs > 0 ? "llm:jobs=" + std::to_string(c.jobs) : "llm");
    auto w = scheduler::generate(synth, cluster, cfg.horizon, cfg.seed);
    if (!w) {
      std::fprintf(stderr, "%s\n", w.error().to_string().c_str());
      return 1;
    }
    scheduler::SpeedModel speed(*cat, *topo);
    auto r = scheduler::simulate(cluster, std::move(*w), cfg, &speed);
    if (!r) {
      std::fprintf(stderr, "%s\n", r.error().to_string().c_str());
      return 1;
    }
    const double wall = since(t0);
    std::printf("%-20s %8lld %5.0f %8lld %9lld %9.2f %10lld %11.3g %6.1f%% %6.1f%% %9lld %8.0f\n",
                c.cluster.c_str(), static_cast<long long>(r->gpus), c.days,
                static_cast<long long>(r->jobs_submitted), static_cast<long long>(r->failures),
                wall, static_cast<long long>(r->events), static_cast<double>(r->events) / wall,
                100 * r->utilization, 100 * r->ettr.ettr(),
                static_cast<long long>(r->speed_estimates), peak_rss_mib());
    if (c.target_s > 0 && wall > c.target_s) {
      std::printf("  over the %.0f s target\n", c.target_s);
      rc = 1;
    }
  }
  return rc;
}
