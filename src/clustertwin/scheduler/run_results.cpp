// The results seam of the cluster simulation (run_results.h): the tally and the ScheduleResult.
// Moved out of Sim (sim_results.cpp) with the arithmetic unchanged.

#include "clustertwin/scheduler/run_results.h"

#include <algorithm>
#include <cmath>

#include "clustertwin/scheduler/sim.h"

namespace clustertwin::scheduler::detail {

void RunTally::failure(double t_s, const std::string& cls, FailureScope scope, int target,
                       int jobs_hit, int64_t gpus, double repair_s) {
  ++failures;
  ++failures_by_class[cls];
  if (failure_log.size() < 10000) {
    failure_log.push_back({t_s, cls, scope, target, jobs_hit, gpus, repair_s});
  }
}

ScheduleResult collect_results(const RunFacts& facts, const std::vector<Job>& jobs,
                               RunTally&& tally) {
  const ClusterModel& c = *facts.cluster;
  const SimConfig& cfg = *facts.config;
  const PlacementConfig& pcfg = *facts.placement;
  ScheduleResult r;
  r.cluster = c.cluster_name();
  r.policy = queue_policy_name(cfg.policy);
  r.placement = placement_name(pcfg.policy);
  r.sub_node = sub_node_fit_name(pcfg.sub_node);
  r.priority = cfg.priority.mode == PriorityMode::kBasic ? "basic" : "multifactor";
  r.spares = cfg.spares;
  r.seed = cfg.seed;
  r.horizon_s = secs(cfg.horizon);
  r.gpus = c.gpus();
  r.nodes = c.nodes();
  r.domains = static_cast<int64_t>(c.domains().size());
  r.segment_nodes = pcfg.segment_nodes > 0 ? pcfg.segment_nodes : facts.block_nodes;
  const double total = static_cast<double>(c.gpus()) * static_cast<double>(cfg.horizon);
  const auto& in = facts.integrals;
  r.utilization = total > 0 ? in.allocated_gpus / total : 0;
  r.utilization_available = total > in.down_gpus ? in.allocated_gpus / (total - in.down_gpus) : 0;
  r.down_fraction = total > 0 ? in.down_gpus / total : 0;
  const double node_time = static_cast<double>(c.nodes()) * static_cast<double>(cfg.horizon);
  r.occupancy = node_time > 0 ? in.busy_nodes / node_time : 0;
  const double block_time = static_cast<double>(facts.blocks) * static_cast<double>(cfg.horizon);
  r.blocks_with_down = block_time > 0 ? in.blocks_any_down / block_time : 0;
  r.blocks_short = block_time > 0 ? in.blocks_short / block_time : 0;
  std::vector<double> waits, jcts, slow;
  const char* bucket_names[] = {"1 GPU", "2-8 GPUs", "9-64 GPUs", "65-512 GPUs", ">512 GPUs"};
  std::vector<std::vector<double>> by_size(5);
  double useful_gpu_s = 0;
  const double horizon_s = secs(cfg.horizon);
  for (const Job& j : jobs) {
    if (j.spec->submit > cfg.horizon) continue;
    ++r.jobs_submitted;
    const double submit = secs(j.spec->submit);
    const int g = j.spec->gpus;
    if (j.first_start >= 0) {
      ++r.jobs_started;
      const double w = secs(j.first_start) - submit;
      waits.push_back(w);
      const int b = g <= 1 ? 0 : g <= 8 ? 1 : g <= 64 ? 2 : g <= 512 ? 3 : 4;
      by_size[static_cast<size_t>(b)].push_back(w);
    }
    if (j.state == State::kDone) {
      ++r.jobs_finished;
      const double jct = secs(j.end) - submit;
      jcts.push_back(jct);
      slow.push_back(j.work > 0 ? jct / j.work : 1.0);
    } else if (j.state == State::kRunning) {
      ++r.jobs_running_at_end;
    } else if (j.state == State::kPending) {
      ++r.jobs_pending_at_end;
    }
    const double done = std::isfinite(j.work) && j.state == State::kDone ? j.work : j.rs.computed;
    useful_gpu_s += done * g;
    r.lost_gpu_h += j.lost_gpu_s / 3600.0;
    if (j.training && j.first_start >= 0) {
      auto& e = r.ettr;
      const Tick end = j.state == State::kDone ? j.end : cfg.horizon;
      const double gh = g / 3600.0;
      const double wait =
          secs(j.requeue_wait + (j.state == State::kPending ? end - j.pending_since : 0));
      const double useful = std::min(done, secs(j.rs.compute_ticks - j.lost_ticks));
      e.useful_gpu_h += useful * gh;
      double excess = secs(j.rs.compute_ticks - j.lost_ticks) - useful;
      if (excess < 1e-6 * std::max(1.0, useful)) excess = 0;  // rounding of ticks vs seconds
      e.slowdown_gpu_h += excess * gh;
      e.checkpoint_gpu_h += secs(j.rs.save_ticks) * gh;
      e.lost_gpu_h += secs(j.lost_ticks) * gh;
      e.restore_gpu_h += secs(j.rs.restore_ticks) * gh;
      e.requeue_wait_gpu_h += wait * gh;
      e.wall_gpu_h += secs(end - j.first_start) * gh;
      ++e.jobs;
    }
    if (cfg.record_jobs) {
      JobRecord jr;
      jr.id = j.spec->id;
      jr.kind = j.spec->kind;
      jr.gpus = g;
      jr.submit_s = submit;
      jr.start_s = j.first_start >= 0 ? secs(j.first_start) : -1;
      jr.end_s = j.state == State::kDone ? secs(j.end) : -1;
      jr.wait_s = j.first_start >= 0 ? secs(j.first_start) - submit : horizon_s - submit;
      jr.work_s = j.work;
      jr.interruptions = j.interruptions;
      jr.hot_swaps = j.hot_swaps;
      jr.requeues = j.requeues;
      jr.preemptions = j.preemptions;
      jr.lost_gpu_h = j.lost_gpu_s / 3600.0;
      jr.speed = j.run_ticks > 0 ? j.speed_ticks / static_cast<double>(j.run_ticks) : 1.0;
      jr.finished = j.state == State::kDone;
      r.jobs.push_back(jr);
    }
  }
  r.goodput = total > 0 ? useful_gpu_s / (total * 1e-9) : 0;
  r.wait_s = percentiles(waits);
  r.jct_s = percentiles(jcts);
  r.slowdown = percentiles(slow);
  for (size_t b = 0; b < 5; ++b) {
    if (!by_size[b].empty()) r.wait_by_size.push_back({bucket_names[b], percentiles(by_size[b])});
  }
  r.failures = tally.failures;
  r.interruptions = tally.interruptions;
  r.hot_swaps = tally.hot_swaps;
  r.requeues = tally.requeues;
  r.preemptions = tally.preemptions;
  for (const auto& [k, v] : tally.failures_by_class) r.failures_by_class.push_back({k, v});
  for (const auto& [k, v] : tally.interrupts_by_class) {
    if (v > 0) r.interruptions_by_class.push_back({k, v});
  }
  r.mtbi_s = tally.interruptions > 0 ? horizon_s / static_cast<double>(tally.interruptions) : 0;
  r.timeline = std::move(tally.timeline);
  r.failure_log = std::move(tally.failure_log);
  r.events = facts.events;
  r.speed_estimates = facts.speed_estimates;
  r.backfill_passes = tally.backfill_passes;
  r.jobs_skipped = facts.skipped_rows;
  return r;
}

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  p.count = static_cast<int64_t>(v.size());
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  double s = 0;
  for (double x : v) s += x;
  p.mean = s / static_cast<double>(v.size());
  auto at = [&](double q) {
    const size_t i =
        std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
    return v[i];
  };
  p.p50 = at(0.5);
  p.p90 = at(0.9);
  p.p99 = at(0.99);
  p.max = v.back();
  return p;
}

}  // namespace clustertwin::scheduler::detail
