#include "clustertwin/power/racks.h"

#include <gtest/gtest.h>

#include <map>

#include "clustertwin/power/test_fixture.h"

namespace clustertwin::power {
namespace {

using testing::model_of;

// The classes pack_stages finds against a count GPU by GPU (workload::coord_of's rank order).
void expect_packing_matches_the_rank_order(const workload::TrainingLayout& l, int64_t first_gpu,
                                           int64_t cluster_gpus, int per_system, int systems) {
  const auto p = pack_stages(l, first_gpu, cluster_gpus, per_system, systems);
  const int64_t per_rack = static_cast<int64_t>(per_system) * systems;
  const int64_t racks = (cluster_gpus + per_rack - 1) / per_rack;
  EXPECT_EQ(p.racks, racks);
  using Key = std::pair<std::vector<int>, std::pair<int, int>>;  // stages, (idle, systems)
  std::map<Key, int> expect, got;
  for (int64_t r = 0; r < racks; ++r) {
    std::vector<int> stages(static_cast<size_t>(l.pp), 0);
    const int64_t g0 = r * per_rack, g1 = std::min(cluster_gpus, g0 + per_rack);
    int idle = 0;
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t rank = g - first_gpu;
      if (rank >= 0 && rank < l.gpus()) {
        ++stages[static_cast<size_t>(workload::coord_of(l, rank).pp)];
      } else {
        ++idle;
      }
    }
    ++expect[{stages, {idle, static_cast<int>((g1 - g0 + per_system - 1) / per_system)}}];
  }
  int seen = 0;
  bool job_first = true, idle_seen = false;
  for (const auto& c : p.classes) {
    got[{c.stage_gpus, {c.idle_gpus, c.systems}}] += c.count;
    seen += c.count;
    int present = 0;
    for (const auto& [st, n] : c.present) {
      EXPECT_EQ(c.stage_gpus[static_cast<size_t>(st)], n);
      present += n;
    }
    EXPECT_EQ(c.job_gpus(), present);
    EXPECT_LE(c.job_gpus() + c.idle_gpus, c.systems * per_system);
    if (c.job_gpus() == 0) idle_seen = true;
    if (idle_seen && c.job_gpus() > 0) job_first = false;
  }
  EXPECT_EQ(seen, racks);
  EXPECT_EQ(got, expect);
  EXPECT_TRUE(job_first) << "racks with job GPUs come first";
}

TEST(RackClasses, StagesArePackedInTheRankOrder) {
  // NVL72 racks of one system; 216 GPUs from GPU 36: racks straddle stages and the job's ends.
  expect_packing_matches_the_rank_order(
      {.tp = 2, .pp = 4, .dp = 27, .micro_batch = 1, .global_batch = 108, .seq_len = 2048}, 36, 288,
      72, 1);
  // HGX racks of four 8-GPU systems, the last rack partial (100 GPUs = 3 racks + 1 system and a
  // half): classes differ by their systems too.
  expect_packing_matches_the_rank_order(
      {.tp = 4, .pp = 3, .dp = 8, .micro_batch = 1, .global_batch = 8, .seq_len = 2048}, 0, 100, 8,
      4);
  // A whole cluster of identical racks is one class per stage.
  const auto p =
      pack_stages({.tp = 8, .pp = 2, .dp = 8, .micro_batch = 1, .global_batch = 8, .seq_len = 2048},
                  0, 128, 8, 4);
  ASSERT_EQ(p.classes.size(), 2u);
  for (const auto& c : p.classes) {
    EXPECT_EQ(c.count, 2);
    ASSERT_EQ(c.present.size(), 1u);
    EXPECT_EQ(c.present[0].second, 32);
    EXPECT_EQ(c.idle_gpus, 0);
  }
  EXPECT_NE(p.classes[0].present[0].first, p.classes[1].present[0].first);
}

TEST(RackClasses, AClassIsItsSystemsAtTheMeanGpuPower) {
  const auto sm = model_of("hgx-h100");
  RackClass c{.stage_gpus = {16, 8}, .present = {{0, 16}, {1, 8}}, .idle_gpus = 8, .systems = 4};
  const std::vector<double> stage_W = {600, 400};
  const double sum = class_gpu_sum(c, stage_W, 70);
  EXPECT_DOUBLE_EQ(sum, 16 * 600 + 8 * 400 + 8 * 70.0);
  const auto b = class_power(c, sm, sum, true);
  const auto one = sm.at(sum / 4, true);
  EXPECT_NEAR(b.ac_W, 4 * one.ac_W, 1e-9);
  EXPECT_NEAR(b.dc_W, 4 * one.dc_W, 1e-9);
  EXPECT_NEAR(b.gpus_W, sum, 1e-9);
  // Hosts idle when the job is not running, and in a rack without job GPUs.
  EXPECT_NEAR(class_power(c, sm, sum, false).ac_W, 4 * sm.at(sum / 4, false).ac_W, 1e-9);
  RackClass empty{.stage_gpus = {0, 0}, .idle_gpus = 32, .systems = 4};
  EXPECT_NEAR(class_power(empty, sm, 32 * 70.0, true).ac_W, 4 * sm.at(8 * 70.0, false).ac_W, 1e-9);
  EXPECT_LT(class_power(empty, sm, 32 * 70.0, true).ac_W, class_power(c, sm, sum, true).ac_W);
}

TEST(RackClasses, APoolFillsWholeSystemsAndTheRestOfTheRackIdles) {
  const auto sm = model_of("hgx-h200");  // 4 systems of 8 GPUs per rack
  const double w = 500, idle = 75;
  // 12 GPUs: one full system, one with 4 busy and 4 idle GPUs, two idle systems.
  const auto r = pool_rack_power(sm, 4, w, idle, 12);
  const auto full = sm.at(8 * w, true), half = sm.at(4 * w + 4 * idle, true),
             off = sm.at(8 * idle, false);
  EXPECT_NEAR(r.ac_W, full.ac_W + half.ac_W + 2 * off.ac_W, 1e-9);
  EXPECT_NEAR(r.dc_total_W, full.dc_W + half.dc_W + 2 * off.dc_W, 1e-9);
  EXPECT_DOUBLE_EQ(r.dc_W, full.dc_W);  // the busiest system: the PSU limit is per system
  // A pool larger than a rack fills it.
  const auto big = pool_rack_power(sm, 4, w, idle, 1000);
  EXPECT_NEAR(big.ac_W, 4 * full.ac_W, 1e-9);
  // The IT share: a full rack's power per GPU x the pool's GPUs.
  EXPECT_NEAR(pool_it_share_W(sm, 4, w, 32), 4 * full.ac_W, 1e-9);
  EXPECT_NEAR(pool_it_share_W(sm, 4, w, 12), 12.0 / 32 * 4 * full.ac_W, 1e-9);
}

TEST(RackClasses, TheRackLimitIsTheUsablePsuCapacity) {
  const auto sm = model_of("gb300-nvl72");
  const auto lim = rack_limit(sm);
  EXPECT_DOUBLE_EQ(lim.dc_W, sm.usable_W());
  EXPECT_NEAR(lim.dc_W, 132e3, 1);  // 24 of 48 PSUs x 5.5 kW (docs/models/power.md §2)
  EXPECT_GT(lim.ac_W, lim.dc_W);    // PSU losses at the inputs
  EXPECT_NE(lim.basis.find("redundant"), std::string::npos) << lim.basis;
  EXPECT_FALSE(lim.exceeded_by(lim.dc_W));
  EXPECT_FALSE(lim.exceeded_by(lim.dc_W * (1 + 1e-12)));  // rounding is not over
  EXPECT_TRUE(lim.exceeded_by(lim.dc_W * 1.001));
}

}  // namespace
}  // namespace clustertwin::power
