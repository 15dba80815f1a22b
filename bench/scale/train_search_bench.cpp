// Training layout search speed (issue 17 item 5: >= 1,000,000 analytical layouts per second per
// core). Each case searches the full space (TP, PP, VPP, CP, EP, DP, micro-batch, ZeRO 0-3,
// recompute settings, bf16 and FP8) on ONE thread and prints the layouts whose memory was
// evaluated (those obeying the layout rules; the ones that fit were also timed), the CPU time of
// the whole search (part-cost tables included) and their ratio. CPU time, not wall time: on a
// shared machine the wall clock measures the neighbours too. Release preset:
//   cmake --preset release && cmake --build build/release --target train_search_bench
//   build/release/bench/train_search_bench
#include <cstdio>

#include "clustertwin/execution/training_calibration.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/search/training_search.h"

using namespace clustertwin;

namespace {

struct Case {
  const char* name;
  const char* cluster;
  const char* model;
  int64_t gpus, global_batch, seq_len;
};

}  // namespace

int main() {
  auto cat = *hardware::Catalog::load_embedded();
  const Case cases[] = {
      {"llama3.1-405b on 8192 H100 (Eos-dfw, MLPerf v5.0 GBS 1536)", "eos-dfw-h100",
       "llama3.1-405b", 8192, 1536, 8192},
      {"gpt3-175b on 11616 H100 (Eos-dfw, MLPerf v4.1 GBS 2904)", "eos-dfw-h100", "gpt3-175b",
       11616, 2904, 2048},
      {"deepseek-v3 on 2048 H800 (GBS 15360)", "deepseek-h800", "deepseek-v3", 2048, 15360, 4096},
  };
  int rc = 0;
  for (const auto& c : cases) {
    auto cl = hardware::resolve_cluster(cat, c.cluster);
    if (!cl) {
      std::fprintf(stderr, "%s: %s\n", c.cluster, cl.error().message.c_str());
      return 2;
    }
    auto topo = topology::Topology::build(cat, *cl);
    const auto& gpu = **cat.gpu((*cat.system(cl->system))->gpu);
    auto cm = compute::ComputeModel::for_gpu(gpu, cat);
    auto model = models::load_model(cat, c.model);
    if (!topo || !cm || !model) {
      std::fprintf(stderr, "%s: setup failed\n", c.name);
      return 2;
    }
    execution::AnalyticalComm comm(*topo);
    execution::TrainingSetup base{
        .model = &*model,
        .layout = {.global_batch = c.global_batch, .seq_len = c.seq_len, .tp_comm_overlap = true},
        .compute = &*cm,
        .comm = &comm,
        .memory_capacity = gpu.hbm_usable,
        .peak = gpu.peak_for(hardware::Precision::kBf16)->dense};
    execution::training_calibration(cat)->apply(base);
    search::TrainingSpace space{
        .gpus = c.gpus,
        .domain_size = topo->domain_size(),
        .precisions = {{compute::DType::kBf16, gpu.peak_for(hardware::Precision::kBf16)->dense},
                       {compute::DType::kFp8, gpu.peak_for(hardware::Precision::kFp8)->dense}}};
    auto r = search::search_training(base, space, 10, 1);
    if (!r) {
      std::fprintf(stderr, "%s: %s\n", c.name, r.error().message.c_str());
      return 2;
    }
    const double rate = static_cast<double>(r->valid) / r->cpu_s;
    std::printf(
        "%-60s %9lld enumerated %9lld valid %8lld fitting %6lld cost tables  cpu %.3f s  wall "
        "%.3f s  %.2fM layouts/s/core  best %s %.3f s\n",
        c.name, static_cast<long long>(r->enumerated), static_cast<long long>(r->valid),
        static_cast<long long>(r->fitting), static_cast<long long>(r->cost_tables), r->cpu_s,
        r->wall_s, rate / 1e6, r->best.empty() ? "-" : r->best.front().key().c_str(),
        r->best.empty() ? 0.0 : r->best.front().step_time_s);
    if (rate < 1e6) rc = 1;
  }
  if (rc) std::printf("below the target of 1,000,000 layouts/s per core\n");
  return rc;
}
