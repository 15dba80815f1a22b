// Micro-benchmarks (Google Benchmark): ECMP path enumeration and a max-min solve of a ring's
// flows over the flagship cluster.
#include <benchmark/benchmark.h>

#include "clustertwin/network/max_min.h"
#include "clustertwin/topology/topology.h"

using namespace clustertwin;

static const topology::Topology& flagship() {
  static const hardware::Catalog cat = *hardware::Catalog::load_embedded();
  static const topology::Topology t =
      *topology::Topology::build(cat, *hardware::resolve_cluster(cat, "azure-ndv6-gb300"));
  return t;
}

static void BM_EcmpPath(benchmark::State& state) {
  const auto& t = flagship();
  std::vector<topology::LinkId> p;
  int a = 0;
  for (auto _ : state) {
    p.clear();
    const int b = (a * 7919 + 72) % t.gpus();
    if (a != b) t.path(a, b, t.ecmp_index(a, b, 1), p);
    benchmark::DoNotOptimize(p.data());
    a = (a + 1) % t.gpus();
  }
}
BENCHMARK(BM_EcmpPath);

// One flow per ring edge over all 4,608 GPUs (a ring all-reduce's steady state), solved once.
static void BM_MaxMinRing(benchmark::State& state) {
  const auto& t = flagship();
  network::FlowPaths f;
  std::vector<topology::LinkId> p;
  const int channels = static_cast<int>(state.range(0));
  for (int c = 0; c < channels; ++c) {
    for (int g = 0; g < t.gpus(); ++g) {
      p.clear();
      const int next = (g + 1) % t.gpus();
      t.path(g, next, t.ecmp_index(g, next, static_cast<uint64_t>(c)), p);
      f.add(p);
    }
  }
  std::vector<double> cap(t.links().size());
  for (size_t i = 0; i < cap.size(); ++i) cap[i] = t.links()[i].capacity.base();
  for (auto _ : state) {
    auto r = network::max_min_rates(f, cap);
    benchmark::DoNotOptimize(r.data());
  }
  state.counters["flows"] = static_cast<double>(f.size());
}
BENCHMARK(BM_MaxMinRing)->Arg(1)->Arg(16)->Unit(benchmark::kMillisecond);
