#include "clustertwin/scheduler/goodput.h"

#include <algorithm>
#include <cmath>

#include "clustertwin/scheduler/limits.h"

namespace clustertwin::scheduler {
namespace {

// A duration drawn or derived inside a run (a repair, a checkpoint interval), held at 40
// years (kMaxDurationS, scheduler/limits.h) so that adding it to any time of a run (at most 250
// years) still fits in a Tick; longer durations do not occur in runs that mean anything.
Tick ticks(double s) { return engine::to_ticks(base::seconds(std::clamp(s, 0.0, kMaxDurationS))); }

struct Run {
  EttrBreakdown ettr;
  int64_t interruptions = 0, hot_swaps = 0, requeues = 0;
  std::vector<std::pair<std::string, int64_t>> by_class;
  std::vector<FailureRecord> log;
};

base::Result<Run> run_once(const ClusterModel& cluster, SpeedModel& speed, const GoodputConfig& cfg,
                           double interval_s) {
  Workload w;
  w.account_id("train");
  w.user_id("train");
  w.training.push_back(cfg.work);
  JobSpec j;
  j.gpus = cfg.gpus;
  j.work_s = INFINITY;
  j.time_limit = cfg.horizon;
  j.kind = JobKind::kPretrain;
  j.training = 0;
  j.checkpoint.interval = ticks(interval_s);
  w.jobs.push_back(j);
  SimConfig sc;
  sc.horizon = cfg.horizon;
  sc.seed = cfg.seed;
  sc.policy = QueuePolicy::kFifo;
  sc.placement.policy = cfg.placement;
  sc.spares = cfg.spares;
  sc.storage = cfg.storage;
  sc.failures.enabled = true;
  sc.failures.model = cfg.failures;
  sc.sample_interval = cfg.horizon;  // one sample: the timeline is not needed here
  sc.max_events = cfg.max_events;
  auto r = simulate(cluster, std::move(w), sc, &speed);
  if (!r) return base::fail(r.error());
  Run out;
  out.ettr = r->ettr;
  out.interruptions = r->interruptions;
  out.hot_swaps = r->hot_swaps;
  out.requeues = r->requeues;
  out.by_class = r->interruptions_by_class;
  out.log = std::move(r->failure_log);
  return out;
}

}  // namespace

base::Result<GoodputResult> run_goodput(const ClusterModel& cluster, SpeedModel& speed,
                                        const GoodputConfig& cfg) {
  if (cfg.gpus <= 0 || cfg.gpus > cluster.gpus()) {
    return base::fail("{gpus} " + std::to_string(cfg.gpus) + ": the cluster has " +
                      std::to_string(cluster.gpus()) + " GPUs");
  }
  auto id = speed.add(cfg.work, cfg.gpus);
  if (!id) return base::fail(id.error());
  GoodputResult g;
  g.cluster = cluster.cluster_name();
  g.model = cfg.work.model;
  g.gpus = cfg.gpus;
  g.cluster_gpus = cluster.gpus();
  g.horizon_s = static_cast<double>(cfg.horizon) * 1e-9;
  g.step_time_s = speed.best_step_s(*id);
  g.parameters = speed.parameters(*id);
  const int gpn = cluster.gpus_per_node();
  const int nodes = (cfg.gpus + gpn - 1) / gpn;
  g.checkpoint = checkpoint_costs(cfg.storage, g.parameters, nodes);
  // A checkpoint that takes longer than the run itself leaves nothing to measure (and once gave
  // a negative ETTR, issue 19): say so instead.
  for (auto [what, t] :
       {std::pair{"a checkpoint save", g.checkpoint.save_s},
        std::pair{"a restart (restore and restart overhead)", g.checkpoint.restore_s}}) {
    if (!std::isfinite(t) || t >= g.horizon_s) {
      return base::fail(std::string(what) + " takes " + std::to_string(t) +
                        " s, not less than the " + std::to_string(g.horizon_s) +
                        " s simulated: give a faster {storage_write}/{storage_read}, a shorter "
                        "{restart} or more {days}");
    }
  }
  const int domains = std::max(1, nodes / std::max(1, cluster.max_domain_nodes()));
  const double rate_h = cfg.failures.job_rate_per_hour(cfg.gpus, domains);
  g.mtbi_expected_s = rate_h > 0 ? 3600.0 / rate_h : INFINITY;
  g.young_daly_s = young_daly_interval_s(g.checkpoint.save_s, g.mtbi_expected_s);
  g.auto_interval = cfg.interval_s <= 0;
  g.interval_s = g.auto_interval ? g.young_daly_s : cfg.interval_s;
  if (!(g.interval_s > 0) || !std::isfinite(g.interval_s)) {
    return base::fail(
        "no checkpoint interval: the failure model gives this job no failures; "
        "give {checkpoint} SECONDS");
  }
  g.ettr_expected =
      expected_ettr(g.interval_s, g.checkpoint.save_s, g.checkpoint.restore_s, g.mtbi_expected_s);
  auto main = run_once(cluster, speed, cfg, g.interval_s);
  if (!main) return base::fail(main.error());
  g.breakdown = main->ettr;
  g.interruptions = main->interruptions;
  g.hot_swaps = main->hot_swaps;
  g.requeues = main->requeues;
  g.interruptions_by_class = main->by_class;
  g.failure_log = std::move(main->log);
  g.mtbi_s = g.interruptions > 0 ? g.horizon_s / static_cast<double>(g.interruptions) : INFINITY;
  if (cfg.sweep) {
    for (double k : {0.25, 0.5, 1.0, 2.0, 4.0}) {
      const double tau = g.young_daly_s * k;
      GoodputPoint p;
      p.interval_s = tau;
      p.ettr_expected =
          expected_ettr(tau, g.checkpoint.save_s, g.checkpoint.restore_s, g.mtbi_expected_s);
      if (k == 1.0 && g.auto_interval) {
        p.ettr_simulated = g.breakdown.ettr();
        p.interruptions = g.interruptions;
      } else {
        auto r = run_once(cluster, speed, cfg, tau);
        if (!r) return base::fail(r.error());
        p.ettr_simulated = r->ettr.ettr();
        p.interruptions = r->interruptions;
      }
      g.sweep.push_back(p);
    }
  }
  return g;
}

}  // namespace clustertwin::scheduler
