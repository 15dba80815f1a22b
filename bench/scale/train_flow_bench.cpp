// Scale benchmark for a training step with flow-level communication (issue 13, Speed): the
// collectives of every concurrent group (tensor, data, pipeline parallel) solved on the flow-level
// network, as `clustertwin train --comm flow`. Target: the 131,072-GPU step (Llama 3.1 405B, TP8
// PP16 DP1024 on 1,821 GB300 NVL72 racks) in < 10 s and < 4 GiB. Prints, per cluster size, the
// step time, the wall time of the whole run (topology, model, step), the flow solves and the peak
// resident memory of the process so far.
//
//   build/release/bench/train_flow_bench            # 1, 8, 64, 512 and 1,821 racks
//   build/release/bench/train_flow_bench 64         # up to 64 racks
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "clustertwin/execution/collective_comm.h"
#include "clustertwin/execution/training_rig.h"
#include "peak_rss.h"

using namespace clustertwin;
using bench::peak_rss_mib;

namespace {

struct Case {
  int racks;
  const char* model;
  workload::TrainingLayout layout;
  int64_t gpus;
};

}  // namespace

int main(int argc, char** argv) {
  const int max_racks = argc > 1 ? std::atoi(argv[1]) : 1821;
  auto cat = *hardware::Catalog::load_embedded();
  using models::Recompute;
  const workload::TrainingLayout l70{
      .tp = 8, .pp = 4, .seq_len = 8192, .recompute = Recompute::kSelective};
  auto with_dp = [](workload::TrainingLayout l, int dp) {
    l.dp = dp;
    l.global_batch = 16L * dp;
    return l;
  };
  const Case cases[] = {
      {1, "llama3.1-70b", with_dp(l70, 2), 64},
      {8, "llama3.1-70b", with_dp(l70, 18), 576},
      {64, "llama3.1-70b", with_dp(l70, 144), 4608},
      {512, "llama3.1-70b", with_dp(l70, 1152), 36864},
      {1821, "llama3.1-405b",
       with_dp({.tp = 8, .pp = 16, .vpp = 4, .seq_len = 8192, .recompute = Recompute::kFull}, 1024),
       131072},
  };
  std::printf("%-36s %8s %10s %12s %12s %10s\n", "case", "GPUs", "step_s", "wall_s", "flow_solves",
              "peak_MiB");
  for (const auto& c : cases) {
    if (c.racks > max_racks) continue;
    const auto t0 = std::chrono::steady_clock::now();
    const std::string cluster = "gb300-nvl72*" + std::to_string(c.racks);
    auto rig = execution::make_training_rig(cat, cluster, c.model);
    if (!rig) {
      std::printf("%s: %s\n", cluster.c_str(), rig.error().to_string().c_str());
      return 1;
    }
    auto calib = collective::Calibration::load(cat);
    if (!calib) {
      std::printf("calibration: %s\n", calib.error().to_string().c_str());
      return 1;
    }
    collective::ModelOptions mo;
    mo.network = collective::NetworkModelKind::kFlow;
    execution::CollectiveComm comm(cat, (*rig)->topo, std::move(*calib), mo);
    execution::TrainingSetup s = (*rig)->setup(c.layout, &comm);
    s.gpus = c.gpus;
    auto r = execution::simulate_training_step(s);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string name = std::string(c.model) + " " + std::to_string(c.racks) + " GB300 racks";
    if (!r) {
      std::printf("%-36s error: %s\n", name.c_str(), r.error().to_string().c_str());
      continue;
    }
    std::printf("%-36s %8lld %10.3f %12.3f %12lld %10.1f\n", name.c_str(),
                static_cast<long long>(c.gpus), r->step_time_s, wall,
                static_cast<long long>(comm.flow_solves()), peak_rss_mib());
    std::fflush(stdout);
  }
  return 0;
}
