#include "clustertwin/scheduler/run_results.h"

#include <gtest/gtest.h>

#include "clustertwin/scheduler/sim.h"

namespace clustertwin::scheduler::detail {
namespace {

Tick s(double seconds) { return ticks(seconds); }

TEST(RunResults, PercentilesAreNearestRank) {
  const auto p = percentiles({5, 1, 4, 2, 3});
  EXPECT_EQ(p.count, 5);
  EXPECT_DOUBLE_EQ(p.mean, 3);
  EXPECT_DOUBLE_EQ(p.p50, 3);
  EXPECT_DOUBLE_EQ(p.max, 5);
  EXPECT_EQ(percentiles({}).count, 0);
}

TEST(RunResults, TallyLogsTheFirstFailuresAndCountsEveryOne) {
  RunTally t;
  for (int i = 0; i < 10005; ++i) t.failure(i, "gpu", FailureScope::kNode, i, 0, 4, 3600);
  t.failure(1, "switch", FailureScope::kLeaf, 0, 2, 64, 600);
  EXPECT_EQ(t.failures, 10006);
  EXPECT_EQ(t.failures_by_class["gpu"], 10005);
  EXPECT_EQ(t.failures_by_class["switch"], 1);
  EXPECT_EQ(t.failure_log.size(), 10000U);
}

// Two nodes of 4 GPUs over 100 s: a 4-GPU training job that waited 10 s and ran 50 s with 5 s of
// checkpoint saves, and a job still pending at the horizon.
TEST(RunResults, UtilizationWaitsAndEttrFromTheJobsAndIntegrals) {
  const auto c = ClusterModel::uniform(1, 2, 4);
  SimConfig cfg;
  cfg.horizon = s(100);
  PlacementConfig pc;
  JobSpec done_spec{.id = 1, .submit = 0, .gpus = 4, .work_s = 45};
  JobSpec pending_spec{.id = 2, .submit = s(20), .gpus = 8, .work_s = 10};
  std::vector<Job> jobs(2);
  jobs[0].spec = &done_spec;
  jobs[0].state = State::kDone;
  jobs[0].work = 45;
  jobs[0].first_start = s(10);
  jobs[0].end = s(60);
  jobs[0].training = true;
  jobs[0].rs.computed = 45;
  jobs[0].rs.compute_ticks = s(45);
  jobs[0].rs.save_ticks = s(5);
  jobs[1].spec = &pending_spec;
  jobs[1].state = State::kPending;
  jobs[1].pending_since = s(20);
  RunFacts f{.cluster = &c, .config = &cfg, .placement = &pc, .blocks = 1, .block_nodes = 2};
  f.integrals.allocated_gpus = 4.0 * static_cast<double>(s(50));
  f.integrals.busy_nodes = 1.0 * static_cast<double>(s(50));
  RunTally t;
  t.interruptions = 2;
  const auto r = collect_results(f, jobs, std::move(t));
  EXPECT_EQ(r.jobs_submitted, 2);
  EXPECT_EQ(r.jobs_started, 1);
  EXPECT_EQ(r.jobs_finished, 1);
  EXPECT_EQ(r.jobs_pending_at_end, 1);
  EXPECT_DOUBLE_EQ(r.utilization, 0.25);  // 4 GPUs x 50 s of 8 GPUs x 100 s
  EXPECT_DOUBLE_EQ(r.occupancy, 0.25);    // 1 node x 50 s of 2 nodes x 100 s
  EXPECT_DOUBLE_EQ(r.wait_s.p50, 10);
  EXPECT_DOUBLE_EQ(r.jct_s.max, 60);
  EXPECT_DOUBLE_EQ(r.mtbi_s, 50);  // 100 s over 2 interruptions
  // ETTR: 45 s useful of 50 s on the job's 4 GPUs, 5 s of it checkpoint saves.
  EXPECT_EQ(r.ettr.jobs, 1);
  EXPECT_NEAR(r.ettr.ettr(), 0.9, 1e-12);
  EXPECT_NEAR(r.ettr.checkpoint_gpu_h, 4 * 5 / 3600.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.goodput, 4 * 45 / (8 * 100.0));
}

}  // namespace
}  // namespace clustertwin::scheduler::detail
