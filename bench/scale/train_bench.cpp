// Scale benchmark for training steps (issue 4 targets): one step of Llama 3.1 405B on 16,384 H100
// (TP8 PP16 DP128) and of DeepSeek-V3 on 2,048 H800 (DeepSeek's layout: DualPipe PP16 EP64): < 1 s
// each; the same on 131,072 GPUs: < 10 s; the analytical estimate (no event run): < 1 ms. Prints
// wall time per case.
#include <chrono>
#include <cstdio>

#include "clustertwin/execution/training_rig.h"
#include "peak_rss.h"

using namespace clustertwin;
using bench::peak_rss_mib;

namespace {

struct Case {
  const char* name;
  const char* cluster;
  const char* model;
  workload::TrainingLayout layout;
};

}  // namespace

int main() {
  auto cat = *hardware::Catalog::load_embedded();
  using models::Recompute;
  const Case cases[] = {
      {"llama3.1-405b 16384 H100 TP8 PP16 DP128",
       "meta-llama3-h100",
       "llama3.1-405b",
       {.tp = 8,
        .pp = 16,
        .dp = 128,
        .vpp = 4,
        .global_batch = 2048,
        .seq_len = 8192,
        .recompute = Recompute::kFull}},
      {"deepseek-v3 2048 H800 PP16 EP64 (DualPipe)",
       "deepseek-h800",
       "deepseek-v3",
       {.tp = 1,
        .pp = 16,
        .dp = 128,
        .ep = 64,
        .global_batch = 15360,
        .seq_len = 4096,
        .dtype = compute::DType::kFp8Block,
        .recompute = Recompute::kSelective,
        .ep_overlap = true,
        .recompute_modules = workload::recompute_module::kLayernorm |
                             workload::recompute_module::kMlaUpProj |
                             workload::recompute_module::kMoeAct,
        .schedule = workload::PipelineSchedule::kDualPipe,
        .fp8_activation_store = true,
        .moment_bytes = 2}},
      {"llama3.1-405b 131072 GPUs (hgx-b300*16384)",
       "hgx-b300*16384",
       "llama3.1-405b",
       {.tp = 8,
        .pp = 16,
        .dp = 1024,
        .vpp = 4,
        .global_batch = 16384,
        .seq_len = 8192,
        .recompute = Recompute::kFull}},
      {"megatron-gpt-1t 130944 GPUs (gb300-nvl72*1820)",
       "gb300-nvl72*1820",
       "megatron-gpt-1t",
       {.tp = 8,
        .pp = 16,
        .dp = 1023,
        .vpp = 2,
        .global_batch = 16368 * 8,
        .seq_len = 4096,
        .dtype = compute::DType::kFp8,
        .tp_comm_overlap = true}},
  };
  std::printf("%-48s %10s %12s %12s %10s %10s\n", "case", "step_s", "sim_wall_s", "estimate_us",
              "events", "peak_MiB");
  for (const auto& c : cases) {
    auto t0 = std::chrono::steady_clock::now();
    // Topology, compute model, model and the analytical CommModel, as `train` builds them.
    auto rig = execution::make_training_rig(cat, c.cluster, c.model);
    if (!rig) {
      std::printf("%s: %s\n", c.name, rig.error().to_string().c_str());
      continue;
    }
    const execution::TrainingSetup s = (*rig)->setup(c.layout);
    auto r = execution::simulate_training_step(s);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r) {
      std::printf("%-48s error: %s\n", c.name, r.error().to_string().c_str());
      continue;
    }
    const int reps = 20;
    auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) (void)execution::estimate_training_step(s);
    const double est_us =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count() / reps * 1e6;
    std::printf("%-48s %10.3f %12.3f %12.1f %10lld %10.1f\n", c.name, r->step_time_s, wall, est_us,
                static_cast<long long>(r->events), peak_rss_mib());
  }
  return 0;
}
