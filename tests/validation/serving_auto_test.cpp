// `--serving auto` is never worse than the layouts MLPerf submitters chose for the same system
// (issue 15): each submitter layout of ../shared/reference/mlperf-inference-setups.md for a rack
// of GB300 / GB200 NVL72 runs in our model exactly as the validation runs it (offline: one
// LoadGen-length run; server: the highest compliant Poisson rate), and the search on the same
// GPUs must find at least as many tokens/s per GPU (1% for the rate search's 2% bisection step).
// The search does not know these layouts: it finds them, or better ones, in its own space.

#include <gtest/gtest.h>

#include <cstdio>

#include "clustertwin/execution/serving_calibration.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/search/serving_search.h"

namespace clustertwin::search {
namespace {

using workload::ServingScenario;

struct SubmitterLayout {
  const char* what;  ///< submitter, system, scenario and setups section
  const char* cluster;
  const char* model;
  ServingScenario scenario;
  int tp, pp, ep;
  bool adp;
  int64_t max_batch, max_tokens;
  bool chunked;
};

const hardware::Catalog& cat() {
  static const hardware::Catalog c = *hardware::Catalog::load_embedded();
  return c;
}

void check_auto_beats(const SubmitterLayout& c) {
  auto spec = *hardware::resolve_cluster(cat(), c.cluster);
  const auto& sys = **cat().system(spec.system);
  const auto& gpu = **cat().gpu(sys.gpu);
  auto cm = *compute::ComputeModel::for_gpu(gpu, cat());
  auto model = *models::load_model(cat(), c.model);
  execution::ServingSetup s;
  execution::serving_step_calibration(cat())->apply(s);
  s.model = &model;
  s.compute = &cm;
  s.fabric = *execution::serving_fabric(cat(), spec);
  s.memory_capacity = gpu.hbm_usable;
  s.dataset = *workload::dataset_for_model(cat(), c.model);
  s.scenario = c.scenario;
  if (c.scenario != ServingScenario::kOffline) s.limits = s.dataset.limits(c.scenario);
  s.layout.weights = compute::DType::kNvfp4;
  const int64_t gpus = sys.gpus();
  // The submitter's layout.
  execution::ServingSetup given = s;
  given.layout.instance = {.tp = c.tp,
                           .pp = c.pp,
                           .ep = c.ep,
                           .dp_attention = c.adp,
                           .max_batch = c.max_batch,
                           .max_tokens = c.max_tokens,
                           .chunked_prefill = c.chunked};
  given.layout.replicas = static_cast<int>(gpus / (c.tp * c.pp));
  double theirs = 0;
  if (c.scenario == ServingScenario::kOffline) {
    auto r = execution::simulate_serving(given);
    ASSERT_TRUE(r) << c.what << ": " << r.error().to_string();
    theirs = r->tokens_per_s / static_cast<double>(gpus);
  } else {
    auto r = execution::find_max_rate(given, 12);
    ASSERT_TRUE(r) << c.what << ": " << r.error().to_string();
    ASSERT_TRUE(r->found) << c.what;
    theirs = r->result.tokens_per_s / static_cast<double>(gpus);
  }
  auto found = search_serving(s, {.gpus = gpus, .domain_size = s.fabric.domain_size}, 2);
  ASSERT_TRUE(found) << c.what << ": " << found.error().to_string();
  ASSERT_TRUE(found->found) << c.what;
  const auto& best = found->points[static_cast<size_t>(found->best)];
  EXPECT_TRUE(best.verified) << c.what;
  std::printf("%-60s submitter %8.1f  auto %8.1f tokens/s per GPU (%s, %s)\n", c.what, theirs,
              best.tokens_per_s_per_gpu, best.label().c_str(), best.limits().c_str());
  EXPECT_GE(best.tokens_per_s_per_gpu, 0.99 * theirs)
      << c.what << ": auto found " << best.label() << " (" << best.limits() << ")";
}

constexpr auto kOff = ServingScenario::kOffline;
constexpr auto kSrv = ServingScenario::kServer;

// setups §1.3 (DeepSeek-R1, NVIDIA v5.1: 9 x TP8 ADP + EP8 per rack, chunked prefill off) and
// §2.3 (Llama 3.1 405B, NVIDIA v5.1 GB300: 36 x TP2).
TEST(ServingAutoNeverWorse, DeepSeekR1_GB300_Offline) {
  check_auto_beats({"NVIDIA v5.1 GB300 NVL72 DeepSeek-R1 Offline (setups 1.3)", "gb300-nvl72*1",
                    "deepseek-r1", kOff, 8, 1, 8, true, 1536, 6656, false});
}

TEST(ServingAutoNeverWorse, DeepSeekR1_GB300_Server) {
  check_auto_beats({"NVIDIA v5.1 GB300 NVL72 DeepSeek-R1 Server (setups 1.3)", "gb300-nvl72*1",
                    "deepseek-r1", kSrv, 8, 1, 8, true, 512, 3456, false});
}

TEST(ServingAutoNeverWorse, DeepSeekR1_GB200_Offline) {
  check_auto_beats({"NVIDIA v5.1 GB200 NVL72 DeepSeek-R1 Offline (setups 1.3)", "gb200-nvl72*1",
                    "deepseek-r1", kOff, 8, 1, 8, true, 512, 4608, false});
}

TEST(ServingAutoNeverWorse, Llama405B_GB300_Offline) {
  check_auto_beats({"NVIDIA v5.1 GB300 NVL72 Llama 3.1 405B Offline (setups 2.3)", "gb300-nvl72*1",
                    "llama3.1-405b", kOff, 2, 1, 1, false, 2048, 1536, true});
}

}  // namespace
}  // namespace clustertwin::search
