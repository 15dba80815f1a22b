#include "clustertwin/search/training_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "clustertwin/models/model_catalog.h"

namespace clustertwin::search {
namespace {

struct Fixture {
  hardware::Catalog cat = *hardware::Catalog::load_embedded();
  topology::Topology topo;
  compute::ComputeModel cm;
  models::ModelSpec model;
  execution::AnalyticalComm comm{topo};
  const hardware::GpuSpec& gpu;
  Fixture(const char* cluster, const char* gpu_name, const char* model_name)
      : topo(*topology::Topology::build(cat, *hardware::resolve_cluster(cat, cluster))),
        cm(*compute::ComputeModel::for_gpu(**cat.gpu(gpu_name), cat)),
        model(*models::load_model(cat, model_name)),
        gpu(**cat.gpu(gpu_name)) {}
  execution::TrainingSetup setup(int64_t global_batch, int64_t seq_len) {
    return {.model = &model,
            .layout = {.global_batch = global_batch, .seq_len = seq_len},
            .compute = &cm,
            .comm = &comm,
            .memory_capacity = gpu.hbm_usable,
            .peak = gpu.peak_for(hardware::Precision::kBf16)->dense};
  }
  std::vector<PrecisionChoice> precisions() {
    return {{compute::DType::kBf16, gpu.peak_for(hardware::Precision::kBf16)->dense},
            {compute::DType::kFp8, gpu.peak_for(hardware::Precision::kFp8)->dense}};
  }
};

// Every layout the space holds, scored one by one with estimate_training_step (the slow path:
// ~30 us each, its own memory check): the factored search must find the same fitting layouts,
// the same step times and memory, in the same order.
struct Brute {
  std::vector<TrainingCandidate> fitting;
  int64_t valid = 0;
};

Brute brute_force(const execution::TrainingSetup& base, const TrainingSpace& space) {
  Brute out;
  const auto& m = *base.model;
  const auto recomputes = space.recomputes.empty() ? recompute_choices(m) : space.recomputes;
  for (int tp = 1; tp <= std::min<int64_t>(space.domain_size, m.heads); tp *= 2) {
    for (int cp : space.cps) {
      if (space.gpus % (tp * cp) != 0) continue;
      const int64_t per = space.gpus / (tp * cp);
      for (int pp = 1; pp <= std::min<int64_t>(per, space.max_pp); ++pp) {
        if (per % pp != 0) continue;
        std::vector<int> eps = {1};
        if (m.moe) {
          eps.clear();
          for (int e = 1; e <= m.moe->experts; ++e)
            if (m.moe->experts % e == 0) eps.push_back(e);
        }
        for (int ep : eps) {
          for (int vpp : space.vpps) {
            for (int64_t mb : space.micro_batches) {
              for (const auto& prec : space.precisions) {
                for (const auto& rc : recomputes) {
                  for (int zero : space.zeros) {
                    workload::TrainingLayout l = base.layout;
                    l.tp = tp;
                    l.cp = cp;
                    l.pp = pp;
                    l.dp = static_cast<int>(per / pp);
                    l.ep = ep;
                    l.vpp = vpp;
                    l.micro_batch = mb;
                    l.dtype = prec.dtype;
                    l.recompute = rc.mode;
                    l.recompute_modules = rc.modules;
                    l.zero = zero;
                    if (!workload::validate(l, m, space.gpus)) continue;
                    ++out.valid;
                    auto e = execution::estimate_training_step(setup_for(base, space, l));
                    if (!e) continue;
                    out.fitting.push_back({l, e->step_time_s, e->memory.total().base()});
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  std::stable_sort(out.fitting.begin(), out.fitting.end(),
                   [](const auto& a, const auto& b) { return a.step_time_s < b.step_time_s; });
  return out;
}

void expect_same_as_brute_force(Fixture& f, const execution::TrainingSetup& base,
                                const TrainingSpace& space) {
  const Brute b = brute_force(base, space);
  ASSERT_GT(b.fitting.size(), 10u);
  auto r = search_training(base, space, static_cast<int>(b.fitting.size()) + 10, 2);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->valid, b.valid);
  EXPECT_EQ(r->fitting, static_cast<int64_t>(b.fitting.size()));
  ASSERT_EQ(r->best.size(), b.fitting.size());
  for (size_t i = 0; i < b.fitting.size(); ++i) {
    const auto& x = r->best[i];
    const auto& y = b.fitting[i];
    EXPECT_NEAR(x.step_time_s, y.step_time_s, 1e-9 * y.step_time_s) << i << " " << x.key();
    // Equal step times may rank in either order; the layout then need not match.
    if (std::fabs(x.step_time_s - y.step_time_s) < 1e-9 * y.step_time_s &&
        (i + 1 == b.fitting.size() ||
         std::fabs(b.fitting[i + 1].step_time_s - y.step_time_s) > 1e-9 * y.step_time_s) &&
        (i == 0 ||
         std::fabs(b.fitting[i - 1].step_time_s - y.step_time_s) > 1e-9 * y.step_time_s)) {
      EXPECT_EQ(x.key(), y.key());
      EXPECT_NEAR(x.memory_B, y.memory_B, 1e-9 * y.memory_B) << x.key();
    }
  }
  (void)f;
}

TEST(TrainingSearch, DenseModelEqualsTheEstimateLayoutByLayout) {
  Fixture f("hgx-h100*8", "h100", "llama3.1-70b");
  TrainingSpace space{.gpus = 64,
                      .cps = {1, 2},
                      .vpps = {1, 5},
                      .micro_batches = {1, 2},
                      .precisions = f.precisions()};
  expect_same_as_brute_force(f, f.setup(64, 8192), space);
}

TEST(TrainingSearch, MoeModelEqualsTheEstimateLayoutByLayout) {
  Fixture f("hgx-h100*4", "h100", "mixtral-8x7b");
  TrainingSpace space{
      .gpus = 32, .cps = {1}, .vpps = {1, 2}, .micro_batches = {1}, .precisions = f.precisions()};
  expect_same_as_brute_force(f, f.setup(64, 4096), space);
}

// ZeRO 3's per-part gathers and reduce-scatters (execution/training.cpp zero3_exposed): LoRA
// (frozen weights gathered, only the adapters' gradients reduced) and no DP overlap (all of it
// exposed), against the estimate layout by layout.
TEST(TrainingSearch, Zero3LoraWithoutDpOverlapEqualsTheEstimateLayoutByLayout) {
  Fixture f("hgx-h100*2", "h100", "llama3.1-8b");
  TrainingSpace space{.gpus = 16,
                      .cps = {1, 2},
                      .vpps = {1, 2},
                      .micro_batches = {1, 2},
                      .zeros = {1, 3},
                      .precisions = f.precisions()};
  auto base = f.setup(32, 4096);
  base.layout.lora_rank = 16;
  base.layout.dp_overlap = false;
  expect_same_as_brute_force(f, base, space);
  base.layout.lora_rank = 0;
  base.layout.dp_overlap = true;
  expect_same_as_brute_force(f, base, space);
}

TEST(TrainingSearch, MemoryPrunesBeforeTimingAndNothingFitsIsEmpty) {
  Fixture f("hgx-h100*1", "h100", "llama3.1-405b");
  TrainingSpace space{.gpus = 8, .precisions = f.precisions()};
  auto r = search_training(f.setup(8, 8192), space, 5, 1);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_GT(r->valid, 0);
  EXPECT_EQ(r->fitting, 0);      // 405B on 8 H100s fits no layout
  EXPECT_EQ(r->cost_tables, 0);  // so no part cost was ever computed
  EXPECT_TRUE(r->best.empty());
}

TEST(TrainingSearch, ThreadCountDoesNotChangeTheRanking) {
  Fixture f("hgx-h100*8", "h100", "llama3.1-70b");
  TrainingSpace space{.gpus = 64, .precisions = f.precisions()};
  auto a = search_training(f.setup(128, 4096), space, 20, 1);
  auto b = search_training(f.setup(128, 4096), space, 20, 3);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->fitting, b->fitting);
  ASSERT_EQ(a->best.size(), b->best.size());
  for (size_t i = 0; i < a->best.size(); ++i) {
    EXPECT_EQ(a->best[i].key(), b->best[i].key());
    EXPECT_EQ(a->best[i].step_time_s, b->best[i].step_time_s);
  }
}

TEST(TrainingSearch, EventModelConfirmsAndReranksTheLeaders) {
  Fixture f("hgx-h100*8", "h100", "llama3.1-70b");
  TrainingSpace space{.gpus = 64, .precisions = f.precisions()};
  const auto base = f.setup(128, 4096);
  auto r = search_training(base, space, 5, 2);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->best.size(), 5u);
  auto c = confirm_with_event_model(base, r->best, space);
  ASSERT_EQ(c.size(), 5u);
  for (size_t i = 1; i < c.size(); ++i) {
    EXPECT_LE(c[i - 1].simulated.step_time_s, c[i].simulated.step_time_s);
  }
  for (const auto& x : c) {
    // The event run and the closed form agree within the schedule's fill/drain detail.
    EXPECT_NEAR(x.simulated.step_time_s, x.analytical.step_time_s, 0.1 * x.analytical.step_time_s)
        << x.analytical.key();
  }
}

TEST(TrainingSearch, RecomputeChoicesFollowTheModel) {
  Fixture dense("hgx-h100*1", "h100", "llama3.1-8b");
  Fixture moe("hgx-h100*1", "h100", "deepseek-v3");
  const auto d = recompute_choices(dense.model);
  const auto m = recompute_choices(moe.model);
  // none, core_attn, layernorm, +core_attn, +mlp, full
  EXPECT_EQ(d.size(), 6u);
  EXPECT_EQ(d.back().mode, models::Recompute::kFull);
  // none, core_attn, layernorm, +moe_act, +mla_up_proj, +core_attn, +shared_experts, +mlp, +moe,
  // full
  EXPECT_EQ(m.size(), 10u);
  EXPECT_EQ(m[m.size() - 2].modules, workload::recompute_module::kAll);
}

TEST(TrainingSearch, EmptyAxisIsAnError) {
  Fixture f("hgx-h100*1", "h100", "llama3.1-8b");
  TrainingSpace space{.gpus = 8, .micro_batches = {}};
  auto r = search_training(f.setup(8, 4096), space, 5, 1);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("axis"), std::string::npos);
}

}  // namespace
}  // namespace clustertwin::search
