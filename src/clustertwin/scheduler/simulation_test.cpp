#include "clustertwin/scheduler/simulation.h"

#include <gtest/gtest.h>

#include "clustertwin/scheduler/synthetic.h"

namespace clustertwin::scheduler {
namespace {

constexpr Tick kS = 1'000'000'000;

struct Builder {
  Workload w;
  Builder() {
    w.account_id("a");
    w.user_id("u");
  }
  JobSpec& add(double submit_s, int gpus, double run_s, double limit_s, Qos qos = Qos::kNormal) {
    JobSpec j;
    j.id = static_cast<int64_t>(w.jobs.size());
    j.submit = static_cast<Tick>(submit_s * 1e9);
    j.gpus = gpus;
    j.work_s = run_s;
    j.time_limit = static_cast<Tick>(limit_s * 1e9);
    j.qos = qos;
    w.jobs.push_back(j);
    return w.jobs.back();
  }
};

SimConfig config(QueuePolicy p) {
  SimConfig c;
  c.horizon = 10000 * kS;
  c.policy = p;
  c.placement.policy = PlacementPolicy::kFirstFit;
  c.record_jobs = true;
  return c;
}

double start_of(const ScheduleResult& r, int64_t id) {
  for (const auto& j : r.jobs) {
    if (j.id == id) return j.start_s;
  }
  return -2;
}

// A: 6 nodes 960 s; B: 6 nodes 120 s; C: all 8 nodes 120 s; D: 2 nodes 1200 s. EASY protects
// only B, so D backfills at the first pass (30 s) and delays C; conservative reserves for C too,
// so D waits until C is done, as FIFO does.
Workload easy_vs_conservative() {
  Builder b;
  b.add(0, 24, 960, 960);
  b.add(1, 24, 120, 120);
  b.add(2, 32, 120, 120);
  b.add(3, 8, 1200, 1200);
  return b.w;
}

TEST(Simulation, EasyConservativeAndFifoDiffer) {
  const auto c = ClusterModel::uniform(2, 4, 4);
  auto easy = simulate(c, easy_vs_conservative(), config(QueuePolicy::kEasy), nullptr);
  ASSERT_TRUE(easy) << easy.error().to_string();
  EXPECT_DOUBLE_EQ(start_of(*easy, 3), 30);
  EXPECT_DOUBLE_EQ(start_of(*easy, 1), 960);
  EXPECT_DOUBLE_EQ(start_of(*easy, 2), 1230);
  auto cons = simulate(c, easy_vs_conservative(), config(QueuePolicy::kConservative), nullptr);
  ASSERT_TRUE(cons);
  EXPECT_DOUBLE_EQ(start_of(*cons, 2), 1080);
  EXPECT_DOUBLE_EQ(start_of(*cons, 3), 1200);
  auto fifo = simulate(c, easy_vs_conservative(), config(QueuePolicy::kFifo), nullptr);
  ASSERT_TRUE(fifo);
  EXPECT_DOUBLE_EQ(start_of(*fifo, 2), 1080);
  EXPECT_DOUBLE_EQ(start_of(*fifo, 3), 1200);
  EXPECT_EQ(fifo->jobs_finished, 4);
  EXPECT_GT(easy->backfill_passes, 0);
}

// Four 1-GPU jobs on two 4-GPU nodes for 1,000 s of a 2,000 s horizon: packed they hold one
// node (occupancy 1/2 x 1/2), spread both (1/2); GPU utilisation is 1/4 either way.
TEST(Simulation, OccupancyCountsNodesWithAnyGpuBusy) {
  const auto c = ClusterModel::uniform(2, 1, 4);
  Builder b;
  for (int k = 0; k < 4; ++k) b.add(0, 1, 1000, 1000);
  auto cfg = config(QueuePolicy::kFifo);
  cfg.horizon = 2000 * kS;
  cfg.sample_interval = 500 * kS;
  auto pack = simulate(c, b.w, cfg, nullptr);
  ASSERT_TRUE(pack) << pack.error().to_string();
  EXPECT_DOUBLE_EQ(pack->utilization, 0.25);
  EXPECT_DOUBLE_EQ(pack->occupancy, 0.25);
  ASSERT_EQ(pack->timeline.size(), 5u);
  EXPECT_EQ(pack->timeline[1].busy_nodes, 1);  // t = 500 s
  EXPECT_EQ(pack->timeline[2].busy_nodes, 0);  // t = 1,000 s: the jobs ended
  EXPECT_EQ(pack->sub_node, "pack");
  cfg.placement.sub_node = SubNodeFit::kSpread;
  auto spread = simulate(c, b.w, cfg, nullptr);
  ASSERT_TRUE(spread);
  EXPECT_DOUBLE_EQ(spread->utilization, 0.25);
  EXPECT_DOUBLE_EQ(spread->occupancy, 0.5);
  EXPECT_EQ(spread->timeline[1].busy_nodes, 2);
}

// Job 0 (user u) holds 6 of 8 nodes until 960 s; job 1 (u) needs all 8 and blocks the
// partition; jobs 2, 3 (u) and 4 (v) need one node for 100 s. The first backfill pass (30 s)
// reserves for job 1 and has room for two small jobs: in priority order 2 and 3. With
// bf_max_job_user=2, user u gets two tests (jobs 1 and 2), so job 4 of user v starts instead of
// job 3, which waits for the pass after jobs 2 and 4 end (150 s).
TEST(Simulation, BackfillTestsAtMostMaxJobUserJobsPerUser) {
  const auto c = ClusterModel::uniform(2, 4, 4);
  Builder b;
  b.add(0, 24, 960, 960);
  b.add(1, 32, 120, 120);
  b.add(2, 4, 100, 100);
  b.add(3, 4, 100, 100);
  b.add(4, 4, 100, 100).user = b.w.user_id("v");
  auto cfg = config(QueuePolicy::kEasy);
  auto open = simulate(c, b.w, cfg, nullptr);
  ASSERT_TRUE(open) << open.error().to_string();
  EXPECT_DOUBLE_EQ(start_of(*open, 2), 30);
  EXPECT_DOUBLE_EQ(start_of(*open, 3), 30);
  EXPECT_DOUBLE_EQ(start_of(*open, 4), 150);
  cfg.backfill.max_job_user = 2;
  auto limited = simulate(c, b.w, cfg, nullptr);
  ASSERT_TRUE(limited);
  EXPECT_DOUBLE_EQ(start_of(*limited, 2), 30);
  EXPECT_DOUBLE_EQ(start_of(*limited, 4), 30);
  EXPECT_DOUBLE_EQ(start_of(*limited, 3), 150);
  EXPECT_DOUBLE_EQ(start_of(*limited, 1), 960);
  cfg.backfill.max_job_user = 0;
  // One partition, two tests a pass (job 1 and one small job): the small jobs start one per
  // pass, each after the previous one ended (30, 150, 270 s).
  cfg.backfill.max_job_part = 2;
  auto part = simulate(c, b.w, cfg, nullptr);
  ASSERT_TRUE(part);
  EXPECT_DOUBLE_EQ(start_of(*part, 2), 30);
  EXPECT_DOUBLE_EQ(start_of(*part, 3), 150);
  EXPECT_DOUBLE_EQ(start_of(*part, 4), 270);
}

// StepFun's bursts: node failures come several at an instant, at the same rate of node failures
// (the event rate divided by the mean burst, 584 / 529). 1,152 nodes for 10 years, no jobs:
// about 8,000 failures either way (Poisson: 1.1% standard error); with bursts some share their
// instant, without none do.
TEST(Simulation, FaultBurstsKeepTheNodeFailureRate) {
  const auto c = ClusterModel::uniform(64, 18, 4);
  auto run = [&](bool bursts) {
    SimConfig cfg;
    cfg.horizon = static_cast<Tick>(3650) * 86400 * kS;
    cfg.policy = QueuePolicy::kFifo;
    cfg.priority.calc_period = cfg.horizon / 10;
    cfg.failures.enabled = true;
    cfg.failures.model.lemon_fraction = 0;
    cfg.failures.model.classes = {{.name = "tray",
                                   .scope = FailureScope::kNode,
                                   .rate_per_hour = 1 / 50677.0,
                                   .repair_median_h = 20.4,
                                   .repair_mean_h = 20.4}};
    if (bursts) cfg.failures.model.burst_weights = FailureModel::stepfun_bursts();
    auto r = simulate(c, Workload{}, cfg, nullptr);
    EXPECT_TRUE(r) << r.error().to_string();
    return r ? *r : ScheduleResult{};
  };
  EXPECT_NEAR(FailureModel{.burst_weights = FailureModel::stepfun_bursts()}.mean_burst(),
              584.0 / 529, 1e-12);
  const auto single = run(false), burst = run(true);
  auto shared_instants = [](const ScheduleResult& r) {
    int shared = 0;
    for (size_t i = 1; i < r.failure_log.size(); ++i)
      shared += r.failure_log[i].t_s == r.failure_log[i - 1].t_s ? 1 : 0;
    return shared;
  };
  const double expected = 64 * 18 * 4 * 3650 * 24 / 50677.0;  // thinning lowers it by ~0.2%
  EXPECT_NEAR(static_cast<double>(single.failures), expected, 0.05 * expected);
  EXPECT_NEAR(static_cast<double>(burst.failures), expected, 0.05 * expected);
  EXPECT_NEAR(burst.down_fraction, single.down_fraction, 0.05 * single.down_fraction);
  EXPECT_EQ(shared_instants(single), 0);
  // 55 of 584 StepFun faults share an instant with an earlier one: about 9%.
  EXPECT_NEAR(shared_instants(burst), 0.094 * static_cast<double>(burst.failures),
              0.02 * static_cast<double>(burst.failures));
}

TEST(Simulation, HighQosPreemptsLowAndTheVictimRequeues) {
  const auto c = ClusterModel::uniform(2, 4, 4);
  Builder b;
  auto& low = b.add(0, 32, 1000, 2000, Qos::kLow);
  low.checkpoint = {.interval = 100 * kS, .save = 0, .restore = 10 * kS};
  low.checkpoint_from_storage = false;
  b.add(250, 16, 100, 100, Qos::kHigh);
  auto r = simulate(c, b.w, config(QueuePolicy::kEasy), nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->preemptions, 1);
  EXPECT_DOUBLE_EQ(start_of(*r, 1), 250);
  const auto& v = r->jobs[0];
  EXPECT_EQ(v.preemptions, 1);
  EXPECT_TRUE(v.finished);
  // Preempted at 250 with 200 s checkpointed: 50 s lost; back at 350, 10 s restore, 800 s left.
  EXPECT_NEAR(v.end_s, 350 + 10 + 800, 1e-6);
  EXPECT_NEAR(v.lost_gpu_h, 50.0 * 32 / 3600, 1e-9);
}

TEST(Simulation, AccountQuotaHoldsJobsBack) {
  const auto c = ClusterModel::uniform(2, 4, 4);
  Builder b;
  b.w.account_gpu_limit[0] = 8;
  b.add(0, 8, 100, 100);
  b.add(0, 8, 100, 100);
  auto r = simulate(c, b.w, config(QueuePolicy::kEasy), nullptr);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(start_of(*r, 1), 100);
}

SimConfig replay_config(std::vector<FaultInterval> faults, int spares) {
  SimConfig cfg = config(QueuePolicy::kEasy);
  cfg.placement.policy = PlacementPolicy::kBlock;
  cfg.spares = spares;
  cfg.failures.enabled = true;
  cfg.failures.replay = std::move(faults);
  return cfg;
}

TEST(Simulation, SpareTrayHotSwapsAFailedNode) {
  const auto c = ClusterModel::uniform(1, 18, 4);
  Builder b;
  auto& j = b.add(0, 64, 1000, 5000);  // 16 trays, 2 spare
  j.checkpoint = {.interval = 100 * kS, .save = 0, .restore = 30 * kS};
  j.checkpoint_from_storage = false;
  // Tray 3 fails at 150 s for an hour.
  auto r = simulate(c, b.w, replay_config({{3, 150 * kS, 3750 * kS, "GPU"}}, 2), nullptr);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->interruptions, 1);
  EXPECT_EQ(r->hot_swaps, 1);
  EXPECT_EQ(r->requeues, 0);
  // 50 s lost, 30 s restore: done at 1000 + 50 + 30.
  EXPECT_NEAR(r->jobs[0].end_s, 1080, 1e-6);
  // The full rack leaves no spare: the job waits for the repair.
  Builder full;
  auto& f = full.add(0, 72, 1000, 5000);
  f.checkpoint = {.interval = 100 * kS, .save = 0, .restore = 30 * kS};
  f.checkpoint_from_storage = false;
  auto r2 = simulate(c, full.w, replay_config({{3, 150 * kS, 3750 * kS, "GPU"}}, 0), nullptr);
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->requeues, 1);
  EXPECT_NEAR(r2->jobs[0].end_s, 3750 + 30 + 900, 1e-6);
  EXPECT_NEAR(r2->ettr.wall_gpu_h, 0, 1e-12);  // black boxes are not in the ETTR breakdown
}

TEST(Simulation, RejectsImpossibleInputs) {
  const auto c = ClusterModel::uniform(2, 18, 4);
  Builder b;
  b.add(0, 1000, 10, 10);
  auto r = simulate(c, b.w, config(QueuePolicy::kFifo), nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("asks for 1000 GPUs; the cluster has 144"), std::string::npos)
      << r.error().message;
  auto skip = config(QueuePolicy::kFifo);
  skip.bad_jobs = BadRows::kSkip;
  auto r2 = simulate(c, b.w, skip, nullptr);
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->jobs_skipped, 1);
  Builder ok;
  ok.add(0, 72, 10, 10);
  auto spares = replay_config({}, 18);
  auto r3 = simulate(c, ok.w, spares, nullptr);
  ASSERT_FALSE(r3);
  EXPECT_NE(r3.error().message.find("{spares} 18 leaves no capacity"), std::string::npos);
  // 34 trays need 3 segments of 16; 2 racks with 2 spares each hold 2.
  Builder big;
  big.add(0, 136, 10, 10);
  auto r4 = simulate(c, big.w, replay_config({}, 2), nullptr);
  ASSERT_FALSE(r4);
  EXPECT_NE(r4.error().message.find("can give at most"), std::string::npos) << r4.error().message;
  auto r5 = simulate(c, ok.w, replay_config({{99, 0, kS, "x"}}, 0), nullptr);
  ASSERT_FALSE(r5);
}

TEST(Simulation, SameSeedSameResultWithRandomFailures) {
  const auto c = ClusterModel::uniform(16, 18, 4, 1, 4);
  auto spec = *parse_synthetic("llm:jobs=2000,inference=0");
  // Black boxes only: drop the training types (no speed model in this test).
  auto run = [&](uint64_t seed) {
    auto w = *generate(spec, c, 5 * 86400 * kS, seed);
    for (auto& j : w.jobs) j.training = -1;
    SimConfig cfg;
    cfg.horizon = 5 * 86400 * kS;
    cfg.seed = seed;
    cfg.placement.policy = PlacementPolicy::kBlock;
    cfg.spares = 2;
    cfg.failures.enabled = true;
    cfg.failures.model = FailureModel::llama3(true, 5.0);
    cfg.failures.model.scale(50);  // enough failures to matter in 5 days
    return *simulate(c, w, cfg, nullptr);
  };
  const auto a = run(11), b = run(11), d = run(12);
  EXPECT_EQ(a.failures, b.failures);
  EXPECT_EQ(a.interruptions, b.interruptions);
  EXPECT_EQ(a.jobs_finished, b.jobs_finished);
  EXPECT_DOUBLE_EQ(a.utilization, b.utilization);
  EXPECT_DOUBLE_EQ(a.wait_s.mean, b.wait_s.mean);
  EXPECT_EQ(a.timeline.size(), b.timeline.size());
  EXPECT_GT(a.failures, 10);
  EXPECT_NE(a.failures, d.failures);
  EXPECT_GT(a.utilization, 0.3);
  EXPECT_LT(a.utilization, 1.0);
  EXPECT_GE(a.utilization_available, a.utilization);
}

}  // namespace
}  // namespace clustertwin::scheduler
