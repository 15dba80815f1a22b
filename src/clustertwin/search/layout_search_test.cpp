#include "clustertwin/search/layout_search.h"

#include <gtest/gtest.h>

#include "clustertwin/models/model_catalog.h"

namespace clustertwin::search {
namespace {

struct Fixture {
  hardware::Catalog cat = *hardware::Catalog::load_embedded();
  topology::Topology topo =
      *topology::Topology::build(cat, *hardware::resolve_cluster(cat, "hgx-h100*32"));
  compute::ComputeModel cm = *compute::ComputeModel::for_gpu(**cat.gpu("h100"), cat);
  models::ModelSpec model = *models::load_model(cat, "llama3.1-70b");
  execution::AnalyticalComm comm{topo};
  execution::TrainingSetup setup() {
    const auto& gpu = **cat.gpu("h100");
    return {.model = &model,
            .layout = {.global_batch = 512, .seq_len = 4096},
            .compute = &cm,
            .comm = &comm,
            .memory_capacity = gpu.hbm_usable,
            .peak = gpu.peak_for(hardware::Precision::kBf16)->dense};
  }
};

TEST(LayoutSearch, BestLayoutFitsAndBeatsTheRest) {
  Fixture f;
  LayoutSpace space{.gpus = 256, .domain_size = 8};
  auto r = search_layouts(f.setup(), space, 5, 2);
  ASSERT_GT(r.feasible, 0);
  ASSERT_FALSE(r.best.empty());
  EXPECT_LE(r.best.size(), 5u);
  for (size_t i = 1; i < r.best.size(); ++i)
    EXPECT_LE(r.best[i - 1].step_time_s, r.best[i].step_time_s);
  const auto& l = r.best.front().layout;
  EXPECT_EQ(l.gpus(), 256);
  EXPECT_LE(l.tp, 8);
  EXPECT_LT(r.best.front().memory_B, 80e9);
  EXPECT_LT(r.feasible, r.candidates);  // some layouts do not fit a 70B model on 80 GB
}

TEST(LayoutSearch, ResultDoesNotDependOnThreads) {
  Fixture f;
  LayoutSpace space{.gpus = 64, .domain_size = 8};
  auto a = search_layouts(f.setup(), space, 10, 1);
  auto b = search_layouts(f.setup(), space, 10, 2);
  ASSERT_EQ(a.best.size(), b.best.size());
  for (size_t i = 0; i < a.best.size(); ++i) EXPECT_EQ(a.best[i].key(), b.best[i].key());
}

// MoE parallel folding: EP may span TP ranks (etp*ep divides tp*cp*dp), so the space holds the
// Megatron-MoE-ModelZoo Qwen3-235B layout TP2 PP8 EP32 (DP16) on 256 H100, which the old rule
// (ep divides dp*cp) left out.
TEST(LayoutSearch, ExpertParallelismFoldsOverTensorParallelRanks) {
  Fixture f;
  f.model = *models::load_model(f.cat, "qwen3-235b-a22b");
  auto base = f.setup();
  base.layout.global_batch = 2048;
  base.layout.recompute_modules =
      workload::recompute_module::kLayernorm | workload::recompute_module::kMoeAct;
  LayoutSpace space{.gpus = 256,
                    .domain_size = 8,
                    .micro_batches = {1},
                    .vpps = {4},
                    .cps = {1},
                    .recomputes = {models::Recompute::kSelective},
                    .max_pp = 8};
  auto r = search_layouts(base, space, 100000, 2);
  bool folded = false, zoo = false;
  for (const auto& s : r.best) {
    const auto& l = s.layout;
    folded = folded || l.ep * l.etp > l.dp * l.cp;
    zoo = zoo || (l.tp == 2 && l.pp == 8 && l.ep == 32 && l.dp == 16);
  }
  EXPECT_TRUE(folded) << "no feasible layout with EP spanning TP ranks";
  EXPECT_TRUE(zoo) << "TP2 PP8 EP32 DP16 not among the feasible layouts";
}

}  // namespace
}  // namespace clustertwin::search
