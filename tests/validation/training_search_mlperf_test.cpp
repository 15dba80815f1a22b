// Layout search against the MLPerf Training submissions (issue 17 item 5): for each configuration
// the full-space search (search/training_search.h) must find the submitters' layout or one that
// it predicts faster, with the leaders confirmed by the event model. The configurations are
// copied from shared/reference/mlperf-training-configs.csv (mlcommons/training_results_v4.1 and
// v5.0: system, GPUs, global batch, sequence length, the submitters' TP/PP/VPP/CP/DP, micro-batch,
// FP8, LoRA; the same rows as tests/validation/training_validation_test.cpp) so the test runs
// without shared/. Nothing is fitted here; the table printed is the one in
// docs/models/training.md §search.

#include <gtest/gtest.h>

#include <cstdio>

#include "clustertwin/execution/training_calibration.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/search/training_search.h"

namespace clustertwin {
namespace {

using compute::DType;

struct MlperfCase {
  const char* id;  // round-benchmark-system, as in mlperf-training-configs.csv
  const char* cluster;
  int64_t gpus;
  const char* model;
  workload::TrainingLayout layout;  // the submitters' (dp derived from the GPUs)
};

workload::TrainingLayout submitted(int tp, int pp, int cp, int vpp, int64_t mbs, int64_t gbs,
                                   int64_t seq) {
  return {.tp = tp,
          .pp = pp,
          .cp = cp,
          .vpp = vpp,
          .micro_batch = mbs,
          .global_batch = gbs,
          .seq_len = seq,
          .dtype = DType::kFp8,
          .tp_comm_overlap = true};
}

workload::TrainingLayout lora(int tp, int cp, int64_t gbs, bool fp8_attention) {
  auto l = submitted(tp, 1, cp, 1, 1, gbs, 8192);
  l.lora_rank = 16;
  l.fp8_attention = fp8_attention;
  l.fp8_activation_store = true;  // as in training_validation_test.cpp (assumed)
  return l;
}

std::vector<MlperfCase> cases() {
  return {
      {"v4.1-gpt3-eos_n64", "eos-dfw-h100", 512, "gpt3-175b", submitted(4, 8, 1, 6, 2, 2048, 2048)},
      {"v4.1-gpt3-eos-dfw_n1452", "eos-dfw-h100", 11616, "gpt3-175b",
       submitted(4, 6, 1, 8, 1, 2904, 2048)},
      {"v4.1-gpt3-oracle_1536", "hgx-h100*192", 1536, "gpt3-175b",
       submitted(4, 8, 1, 4, 2, 3072, 2048)},
      {"v5.0-405b-eos-dfw_n1024", "eos-dfw-h100", 8192, "llama3.1-405b",
       submitted(8, 8, 2, 8, 1, 1536, 8192)},
      {"v5.0-405b-nebius-h200_n64", "hgx-h200*64", 512, "llama3.1-405b",
       submitted(4, 8, 2, 8, 1, 1152, 8192)},
      {"v5.0-405b-carina_2496", "carina-gb200", 2496, "llama3.1-405b",
       submitted(4, 8, 2, 8, 1, 1248, 8192)},
      {"v5.0-405b-tyche_256", "tyche-gb200", 256, "llama3.1-405b",
       submitted(4, 8, 2, 8, 1, 448, 8192)},
      {"v4.1-lora-eos_n8", "eos-h100", 64, "llama2-70b", lora(4, 2, 8, false)},
      {"v5.0-lora-tyche_72", "tyche-gb200", 72, "llama2-70b", lora(1, 8, 9, true)},
      {"v5.0-lora-nyx_n1", "hgx-b200*1", 8, "llama2-70b", lora(1, 1, 8, true)},
  };
}

// Leaders run through the event model (the closed form hides the DP reduce-scatter behind the
// last backward, the event run starts it when a chunk's last backward ends: they rank
// layouts without pipelining differently).
constexpr int kConfirm = 20;

std::string layout_text(const workload::TrainingLayout& l) {
  return search::TrainingCandidate{l, 0, 0}.key();
}

TEST(TrainingSearchMlperf, FindsTheSubmittersLayoutOrOneItPredictsFaster) {
  const auto cat = *hardware::Catalog::load_embedded();
  std::printf(
      "| case | submitters' layout | event s | search's best (event model) | event s | "
      "faster by | submitters' analytical rank |\n|---|---|---|---|---|---|---|\n");
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.id);
    auto spec = hardware::resolve_cluster(cat, c.cluster);
    ASSERT_TRUE(spec);
    auto topo = topology::Topology::build(cat, *spec);
    ASSERT_TRUE(topo);
    const auto& gpu = **cat.gpu((*cat.system(spec->system))->gpu);
    auto cm = *compute::ComputeModel::for_gpu(gpu, cat);
    auto model = *models::load_model(cat, c.model);
    execution::AnalyticalComm comm(*topo);
    auto peak = [&](DType d) {
      return gpu.peak_for(compute::peak_precision(cm.effective(d)))->dense;
    };
    execution::TrainingSetup base{.model = &model,
                                  .layout = c.layout,
                                  .compute = &cm,
                                  .comm = &comm,
                                  .memory_capacity = gpu.hbm_usable,
                                  .peak = peak(c.layout.dtype)};
    execution::training_calibration(cat)->apply(base);
    // Every ZeRO stage, 3 with FSDP's per-part gathers and reduce-scatters in each micro-batch.
    search::TrainingSpace space{
        .gpus = c.gpus,
        .domain_size = topo->domain_size(),
        .precisions = {{DType::kBf16, peak(DType::kBf16)}, {DType::kFp8, peak(DType::kFp8)}}};
    auto theirs = c.layout;
    theirs.dp =
        static_cast<int>(c.gpus / (static_cast<int64_t>(theirs.tp) * theirs.pp * theirs.cp));
    // Their layout is in the space and fits: the search scored it.
    auto their_est = execution::estimate_training_step(search::setup_for(base, space, theirs));
    ASSERT_TRUE(their_est) << their_est.error().message;
    auto their_sim = execution::simulate_training_step(search::setup_for(base, space, theirs));
    ASSERT_TRUE(their_sim) << their_sim.error().message;

    space.rank_step_s = their_est->step_time_s * (1 - 1e-12);
    auto r = search::search_training(base, space, kConfirm, 2);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_FALSE(r->best.empty());
    EXPECT_LE(r->best.front().step_time_s, their_est->step_time_s * (1 + 1e-9));
    auto confirmed = search::confirm_with_event_model(base, r->best, space);
    ASSERT_FALSE(confirmed.empty());
    const auto& best = confirmed.front();
    bool found = false;
    for (const auto& x : r->best) found = found || x.key() == layout_text(theirs);
    EXPECT_TRUE(found || best.simulated.step_time_s <= their_sim->step_time_s * (1 + 1e-9))
        << "search's best " << best.analytical.key() << " " << best.simulated.step_time_s
        << " s vs the submitters' " << their_sim->step_time_s << " s";
    std::printf("| %s | %s | %.3f | %s | %.3f | %.1f%% | %lld of %lld |\n", c.id,
                layout_text(theirs).c_str(), their_sim->step_time_s,
                found && best.analytical.key() == layout_text(theirs)
                    ? "theirs"
                    : best.analytical.key().c_str(),
                best.simulated.step_time_s,
                100.0 * (1.0 - best.simulated.step_time_s / their_sim->step_time_s),
                static_cast<long long>(r->ahead_of + 1), static_cast<long long>(r->fitting));
  }
}

}  // namespace
}  // namespace clustertwin
