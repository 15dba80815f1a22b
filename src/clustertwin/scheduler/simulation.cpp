#include "clustertwin/scheduler/simulation.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <tuple>

#include "clustertwin/base/check.h"
#include "clustertwin/engine/engine.h"
#include "clustertwin/scheduler/limits.h"
#include "clustertwin/scheduler/random.h"
#include "clustertwin/scheduler/sim.h"

namespace clustertwin::scheduler {

const char* queue_policy_name(QueuePolicy p) {
  switch (p) {
    case QueuePolicy::kFifo:
      return "fifo";
    case QueuePolicy::kEasy:
      return "easy";
    case QueuePolicy::kConservative:
      return "conservative";
  }
  return "?";
}

base::Result<QueuePolicy> parse_queue_policy(std::string_view s) {
  if (s == "fifo") return QueuePolicy::kFifo;
  if (s == "easy") return QueuePolicy::kEasy;
  if (s == "conservative") return QueuePolicy::kConservative;
  return base::fail("unknown queue policy '" + std::string(s) +
                    "' (expected fifo, easy or conservative)");
}

namespace detail {

void Sim::arrive(size_t k) {
  const int id = static_cast<int>(k);
  enqueue(id);
  // Stream the next arrival, so the event queue holds one arrival at a time.
  const size_t next = k + 1;
  if (next < jobs_.size() && jobs_[next].spec->submit <= cfg_.horizon) {
    sim_.schedule_at(jobs_[next].spec->submit, [this, next](engine::Simulator&) { arrive(next); });
  }
}

ScheduleResult Sim::run() {
  const int N = c_.nodes();
  node_jobs_.assign(static_cast<size_t>(N), {});
  // Segment sizes for the main loop's quick test (placement.h: a job of segments of s nodes
  // needs ceil(nodes / s) of them, sum over blocks of floor(free nodes / s)).
  std::vector<int> segments;
  if (pcfg_.policy == PlacementPolicy::kBlock || pcfg_.policy == PlacementPolicy::kKueue) {
    for (const auto& s : w_.jobs) {
      if (s.gpus < gpn_) continue;
      const int seg = index_.segment_for(pcfg_, (s.gpus + gpn_ - 1) / gpn_);
      if (std::find(segments.begin(), segments.end(), seg) == segments.end()) {
        segments.push_back(seg);
      }
    }
  }
  cap_ = FreeCapacity(c_, index_, cfg_.spares, cfg_.reserve_spares, segments);
  domain_speed_.assign(c_.domains().size(), 1.0);
  account_used_.assign(w_.accounts.size() + 1, 0);
  user_running_.assign(w_.users.size() + 1, 0);
  usage_.assign(w_.accounts.size() + 1, 0);
  const size_t parts = std::max<size_t>(1, w_.partitions.size());
  queue_.reset(parts);
  head_job_.assign(parts, -1);
  head_epoch_.assign(parts, 0);
  fairshare_.assign(w_.accounts.size() + 1, 1.0);
  while (w_.account_shares.size() < usage_.size()) w_.account_shares.push_back(1.0);
  while (w_.account_gpu_limit.size() < usage_.size()) w_.account_gpu_limit.push_back(0);
  any_limits_ = cfg_.limits.max_running_jobs_per_user > 0 ||
                (cfg_.limits.enforce_account_quotas &&
                 std::any_of(w_.account_gpu_limit.begin(), w_.account_gpu_limit.end(),
                             [](int64_t l) { return l > 0; }));

  // Jobs.
  jobs_.resize(w_.jobs.size());
  running_pos_.assign(w_.jobs.size(), 0);
  const auto& st = cfg_.storage;
  for (size_t k = 0; k < w_.jobs.size(); ++k) {
    Job& j = jobs_[k];
    const JobSpec& s = w_.jobs[k];
    j.spec = &s;
    j.time_limit = s.time_limit;
    if (s.gpus < gpn_) {
      j.sub_gpus = s.gpus;
    } else {
      j.nodes_needed = (s.gpus + gpn_ - 1) / gpn_;
      j.segment = index_.segment_for(pcfg_, j.nodes_needed);
    }
    j.work = s.work_s;
    j.ck = s.checkpoint;
    if (s.training >= 0 && speed_) {
      auto id = speed_->add(w_.training[static_cast<size_t>(s.training)], s.gpus);
      CT_CHECK(id.has_value(), "check_inputs() accepted a job the speed model rejects");
      j.speed_id = *id;
      j.best_step = speed_->best_step_s(j.speed_id);
      j.training = true;
    }
    // Checkpoint stall and restore from storage bandwidth (sync) or the async stall.
    const int nodes = std::max(1, j.nodes_needed);
    if (j.training || s.auto_checkpoint || s.checkpoint.interval < kNever) {
      CheckpointCosts cc{
          0, st.async ? std::min(st.default_save_s, st.async_stall_s) : st.default_save_s,
          st.restart_s};
      if (j.speed_id >= 0) cc = checkpoint_costs(st, speed_->parameters(j.speed_id), nodes);
      double save_s = cc.save_s;
      if (s.checkpoint_from_storage) {
        j.ck.save = ticks(cc.save_s);
        j.ck.restore = ticks(cc.restore_s);
      } else {
        save_s = secs(j.ck.save);
      }
      if (s.auto_checkpoint) {
        const int domains = std::max(1, nodes / std::max(1, c_.max_domain_nodes()));
        const double rate_h = cfg_.failures.model.job_rate_per_hour(s.gpus, domains);
        const double mtbi_s = rate_h > 0 ? 3600.0 / rate_h : 0;
        const double tau = young_daly_interval_s(save_s, mtbi_s);
        j.ck.interval = tau > 0 ? ticks(tau) : kNever;
      }
    }
  }

  if (!jobs_.empty() && jobs_[0].spec->submit <= cfg_.horizon) {
    sim_.schedule_at(jobs_[0].spec->submit, [this](engine::Simulator&) { arrive(0); });
  }
  sample_every_ = cfg_.sample_interval > 0 ? cfg_.sample_interval
                                           : std::max<Tick>(ticks(60), cfg_.horizon / 720);
  sim_.schedule_at(0, [this](engine::Simulator&) { sample(); });
  sim_.schedule_at(0, [this](engine::Simulator&) { recompute_priorities(); });
  if (cfg_.policy != QueuePolicy::kFifo) {
    sim_.schedule_at(cfg_.backfill.interval, [this](engine::Simulator&) { backfill_pass(); });
  }
  if (cfg_.failures.enabled) {
    if (!cfg_.failures.replay.empty()) {
      schedule_replay();
    } else {
      schedule_failure();
    }
  }
  // The horizon in slices, so a long run reports progress; run_until(t) runs every event at or
  // before t, so slicing changes nothing about the order of events or the results.
  sim_.set_event_limit(cfg_.max_events);
  constexpr int kSlices = 200;
  for (int i = 1; i <= kSlices; ++i) {
    const Tick until = i == kSlices ? cfg_.horizon : cfg_.horizon / kSlices * i;
    sim_.run_until(until);
    if (sim_.event_limit_reached()) {
      stopped_at_event_limit_ = true;
      stopped_at_ = sim_.now();
      return results();
    }
    if (cfg_.on_progress) cfg_.on_progress(static_cast<double>(i) / kSlices);
  }
  // Close the books at the horizon.
  sim_.schedule_at(cfg_.horizon, [](engine::Simulator&) {});
  sim_.run_until(cfg_.horizon);
  integrate();
  for (int id : running_) advance_job(jobs_[static_cast<size_t>(id)]);
  return results();
}

}  // namespace detail

using detail::Sim;

CheckpointCosts checkpoint_costs(const StorageConfig& st, double parameters, int nodes) {
  CheckpointCosts c;
  c.bytes = parameters * st.bytes_per_param;
  const double links = st.per_node_Bps * std::max(1, nodes);
  c.save_s = c.bytes / std::min(st.write_Bps, links);
  if (st.async) c.save_s = std::min(c.save_s, st.async_stall_s);
  c.restore_s = st.restart_s + c.bytes / std::min(st.read_Bps, links);
  return c;
}

base::Status check_inputs(const ClusterModel& cluster, Workload& w, const SimConfig& cfg,
                          SpeedModel* speed) {
  PlacementIndex index(cluster);
  const int gpn = cluster.gpus_per_node();
  PlacementConfig pc = cfg.placement;
  const bool segmented =
      pc.policy == PlacementPolicy::kBlock || pc.policy == PlacementPolicy::kKueue;
  if (cfg.spares < 0) return base::fail("{spares} must be >= 0");
  // Times that pace the run: a zero interval would loop at one instant forever, a horizon past
  // the engine's clock would overflow it (issue 19).
  if (cfg.horizon <= 0 || cfg.horizon > engine::to_ticks(base::seconds(kMaxHorizonS))) {
    return base::fail("the horizon must be more than 0 and at most 250 years");
  }
  if (cfg.policy != QueuePolicy::kFifo &&
      (cfg.backfill.interval <= 0 || cfg.backfill.window <= 0 || cfg.backfill.resolution <= 0)) {
    return base::fail("backfill: bf_interval, bf_window and bf_resolution must be > 0");
  }
  if (cfg.sample_interval < 0) return base::fail("the sample interval must be >= 0");
  if (cfg.max_events < 1) {
    return base::fail("max_events must be >= 1, got " + std::to_string(cfg.max_events));
  }
  if (cfg.spares > 0 && cfg.spares >= index.block_nodes()) {
    return base::fail("{spares} " + std::to_string(cfg.spares) +
                      " leaves no capacity: base blocks (" +
                      std::string(cluster.blocks_are_domains() ? "NVLink domains" : "leaf groups") +
                      ") have " + std::to_string(index.block_nodes()) + " nodes");
  }
  if (cfg.spares > 0 && segmented) pc.segment_nodes = index.block_nodes() - cfg.spares;
  for (const auto& f : cfg.failures.replay) {
    if (f.node >= cluster.nodes()) {
      return base::fail("the fault replay names " + std::to_string(f.node + 1) +
                        " or more nodes; the cluster has " + std::to_string(cluster.nodes()));
    }
  }
  base::Errors errors;
  std::vector<JobSpec> kept;
  kept.reserve(w.jobs.size());
  std::map<int, int64_t> room_for;  // segment -> nodes the blocks can give in such segments
  for (auto& j : w.jobs) {
    std::string bad;
    auto who = [&j] {
      return "job " + std::to_string(j.id) +
             (j.source_row > 0 ? " (row " + std::to_string(j.source_row) + ")" : "");
    };
    if (j.gpus > cluster.gpus()) {
      bad = who() + " asks for " + std::to_string(j.gpus) + " GPUs; the cluster has " +
            std::to_string(cluster.gpus());
    } else if (j.gpus >= gpn && segmented) {
      const int nodes = (j.gpus + gpn - 1) / gpn;
      const int seg = index.segment_for(pc, nodes);
      auto [it, fresh] = room_for.emplace(seg, 0);
      if (fresh) {
        for (const auto& b : cluster.blocks()) it->second += b.count / seg * seg;
      }
      const int64_t room = it->second;
      if (nodes > room) {
        bad = who() + " needs " + std::to_string(nodes) + " nodes in segments of " +
              std::to_string(seg) + "; " + placement_name(pc.policy) + " placement with {spares} " +
              std::to_string(cfg.spares) + " can give at most " + std::to_string(room);
      }
    }
    if (bad.empty() && j.training >= 0) {
      if (!speed) {
        bad = who() +
              " is a training job, but this cluster has no performance model (a topology "
              "file gives no GPUs to price it on)";
      } else {
        auto id = speed->add(w.training[static_cast<size_t>(j.training)], j.gpus);
        if (!id) bad = who() + ": " + id.error().message;
      }
    }
    if (!bad.empty()) {
      if (cfg.bad_jobs == BadRows::kSkip) {
        ++w.skipped_rows;
        if (w.warnings.size() < 10) w.warnings.push_back(bad);
        continue;
      }
      errors.add({bad, "", 0});
      if (errors.items.size() >= 20) break;
      continue;
    }
    kept.push_back(j);
  }
  if (!errors.empty()) return base::fail(errors.combined());
  w.jobs = std::move(kept);
  return {};
}

base::Result<ScheduleResult> simulate(const ClusterModel& cluster, Workload workload,
                                      const SimConfig& cfg, SpeedModel* speed) {
  if (auto st = check_inputs(cluster, workload, cfg, speed); !st) return base::fail(st.error());
  auto warnings = workload.warnings;
  Sim sim(cluster, std::move(workload), cfg, speed);
  auto r = sim.run();
  if (sim.stopped_at_event_limit()) {
    char where[96];
    std::snprintf(where, sizeof where, "at day %.2f of %.2f",
                  engine::to_seconds(sim.stopped_at()).base() / 86400.0,
                  engine::to_seconds(cfg.horizon).base() / 86400.0);
    return base::fail("the schedule simulation stopped after " + std::to_string(cfg.max_events) +
                      " events (max_events; the default bound is " +
                      std::to_string(base::kMaxEvents) + ") " + where +
                      ": raise max_events, shorten the horizon or lengthen the backfill interval");
  }
  r.notes = std::move(warnings);
  return r;
}

}  // namespace clustertwin::scheduler
