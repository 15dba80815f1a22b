// Failures applied and repaired: random failures (drawn by FailureInjector, failure_injector.h)
// by class and scope, replayed outages, a job's interruption, hot swaps and requeue (sim.h).

#include "clustertwin/scheduler/sim.h"

namespace clustertwin::scheduler::detail {

void Sim::on_end(int id, uint32_t gen) {
  Job& j = jobs_[static_cast<size_t>(id)];
  if (j.gen != gen || j.state != State::kRunning) return;
  advance_job(j);
  j.rs.computed = j.work;
  j.state = State::kDone;
  j.end = sim_.now();
  release_all(id);
  ++tally_.finished;
  request_pass();
}

void Sim::interrupt_job(int id) {
  Job& j = jobs_[static_cast<size_t>(id)];
  if (j.state != State::kRunning) return;
  advance_job(j);
  keep_if_stateless(j);
  Tick lost = 0;
  interrupt(j.rs, j.ck, &lost);
  j.lost_ticks += lost;
  j.lost_gpu_s += secs(lost) * job_gpus(j);
  ++j.interruptions;
  ++tally_.interruptions;
  std::vector<int> failed;
  for (int n : j.nodes) {
    if (!up(n)) failed.push_back(n);
  }
  if (failed.empty()) {  // software: restart in place
    j.attempt_start = sim_.now();
    schedule_end(id);
    return;
  }
  if (cfg_.failures.hot_swap) {
    std::vector<int> repl;
    const int need_free = j.nodes_needed > 0 ? gpn_ : j.sub_gpus;
    for (int n : failed) {
      const int r = replacement(j, n, need_free, repl);
      if (r < 0) break;
      repl.push_back(r);
    }
    if (repl.size() == failed.size()) {
      integrate();
      for (int n : repl) {
        if (cap_.spare(n)) cap_.set_spare(n, false);
      }
      for (int n : failed) {
        release_node(id, n);
        j.nodes.erase(std::find(j.nodes.begin(), j.nodes.end(), n));
      }
      allocate(id, repl, j.nodes_needed > 0 ? gpn_ : j.sub_gpus);
      ++j.hot_swaps;
      ++tally_.hot_swaps;
      j.attempt_start = sim_.now();
      update_speed(id);
      schedule_end(id);
      dirty_ = true;
      return;
    }
  }
  ++j.gen;
  release_all(id);
  ++j.requeues;
  ++tally_.requeues;
  enqueue(id);
}

int Sim::replacement(const Job& j, int failed, int need_free, const std::vector<int>& taken) const {
  auto ok = [&](int n) {
    return up(n) && cap_.free(n) >= need_free && (need_free < gpn_ || cap_.free(n) == gpn_) &&
           std::find(taken.begin(), taken.end(), n) == taken.end() &&
           !std::binary_search(j.nodes.begin(), j.nodes.end(), n);
  };
  const NodeRange d = c_.domains()[static_cast<size_t>(c_.domain_of(failed))];
  for (int pass = 0; pass < 2; ++pass) {  // reserved spares first, then any free node
    for (int n = d.first; n < d.end(); ++n) {
      if ((pass == 1 || cap_.spare(n)) && ok(n)) return n;
    }
  }
  const bool domain_bound = c_.max_domain_nodes() > 1 && (pcfg_.policy == PlacementPolicy::kBlock ||
                                                          pcfg_.policy == PlacementPolicy::kKueue);
  if (domain_bound) return -1;
  const NodeRange l = c_.leaves()[static_cast<size_t>(c_.leaf_of(failed))];
  for (int pass = 0; pass < 2; ++pass) {
    for (int n = l.first; n < l.end(); ++n) {
      if ((pass == 1 || cap_.spare(n)) && ok(n)) return n;
    }
  }
  for (size_t cell = 0; cell < c_.cells().size(); ++cell) {
    if (cap_.cell_gpus()[cell] < need_free) continue;
    const NodeRange r = c_.cells()[cell];
    for (int n = r.first; n < r.end(); ++n) {
      if (ok(n)) return n;
    }
  }
  return -1;
}

std::vector<int> Sim::jobs_on(const std::vector<int>& nodes) const {
  std::vector<int> ids;
  for (int n : nodes) {
    for (const auto& [id, g] : node_jobs_[static_cast<size_t>(n)]) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

void Sim::record(const std::string& cls, FailureScope scope, int target, int jobs_hit, int64_t gpus,
                 double repair_s) {
  tally_.failure(secs(sim_.now()), cls, scope, target, jobs_hit, gpus, repair_s);
}

void Sim::take_down(const std::vector<int>& nodes, double repair_s, const std::string& cls,
                    FailureScope scope, int target) {
  for (int n : nodes) down_inc(n);
  const auto hit = jobs_on(nodes);
  for (int id : hit) interrupt_job(id);
  tally_.interrupts_by_class[cls] += static_cast<int64_t>(hit.size());
  record(cls, scope, target, static_cast<int>(hit.size()),
         static_cast<int64_t>(nodes.size()) * gpn_, repair_s);
  sim_.schedule_in(ticks(repair_s), [this, nodes](engine::Simulator&) {
    for (int n : nodes) down_dec(n);
  });
  request_pass();
}

void Sim::take_down_burst(const std::vector<int>& nodes, const FailureClass& fc) {
  for (int n : nodes) down_inc(n);
  const auto hit = jobs_on(nodes);
  for (int id : hit) interrupt_job(id);
  tally_.interrupts_by_class[fc.name] += static_cast<int64_t>(hit.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int n = nodes[i];
    const double repair_s = inject_.repair_s(fc);
    record(fc.name, fc.scope, n, i == 0 ? static_cast<int>(hit.size()) : 0, gpn_, repair_s);
    sim_.schedule_in(ticks(repair_s), [this, n](engine::Simulator&) { down_dec(n); });
  }
  request_pass();
}

void Sim::schedule_failure() {
  const auto dt_s = inject_.next_in_s();
  if (!dt_s || !(*dt_s < secs(cfg_.horizon - sim_.now()))) return;  // never, or beyond the horizon
  const Tick at = sim_.now() + ticks(*dt_s);
  if (at > cfg_.horizon) return;
  sim_.schedule_at(at, [this](engine::Simulator&) {
    on_random_failure();
    schedule_failure();
  });
}

void Sim::on_random_failure() {
  const FailureDraw draw = inject_.draw();
  const FailureClass& fc = cfg_.failures.model.classes[draw.cls];
  switch (fc.scope) {
    case FailureScope::kJob: {
      const int n = draw.target;
      int acc = 0;
      for (const auto& [id, g] : node_jobs_[static_cast<size_t>(n)]) {
        acc += g;
        if (draw.gpu < acc) {
          record(fc.name, fc.scope, n, 1, 0, 0);
          ++tally_.interrupts_by_class[fc.name];
          interrupt_job(id);
          request_pass();
          return;
        }
      }
      return;  // an idle GPU: nothing to interrupt
    }
    case FailureScope::kNode: {
      if (!draw.nodes.empty()) {  // a burst
        std::vector<int> nodes;
        for (int n : draw.nodes) {
          if (up(n) && std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
        }
        if (!nodes.empty()) take_down_burst(nodes, fc);
        return;
      }
      const int n = draw.target;
      if (!up(n)) return;  // thinning: a down node does not fail again
      take_down({n}, inject_.repair_s(fc), fc.name, fc.scope, n);
      return;
    }
    case FailureScope::kDomainStop: {
      const int d = draw.target;
      const NodeRange r = c_.domains()[static_cast<size_t>(d)];
      std::vector<int> nodes(static_cast<size_t>(r.count));
      std::iota(nodes.begin(), nodes.end(), r.first);
      take_down(nodes, inject_.repair_s(fc), fc.name, fc.scope, d);
      return;
    }
    case FailureScope::kDomainDegrade: {
      const int d = draw.target;
      if (domain_speed_[static_cast<size_t>(d)] < 1.0) return;
      const double repair_s = inject_.repair_s(fc);
      set_domain_speed(d, cfg_.failures.model.degrade_speed);
      const NodeRange r = c_.domains()[static_cast<size_t>(d)];
      std::vector<int> nodes(static_cast<size_t>(r.count));
      std::iota(nodes.begin(), nodes.end(), r.first);
      record(fc.name, fc.scope, d, static_cast<int>(jobs_on(nodes).size()), 0, repair_s);
      sim_.schedule_in(ticks(repair_s),
                       [this, d](engine::Simulator&) { set_domain_speed(d, 1.0); });
      return;
    }
    case FailureScope::kLeaf: {
      const int l = draw.target;
      const NodeRange r = c_.leaves()[static_cast<size_t>(l)];
      std::vector<int> nodes(static_cast<size_t>(r.count));
      std::iota(nodes.begin(), nodes.end(), r.first);
      take_down(nodes, inject_.repair_s(fc), fc.name, fc.scope, l);
      return;
    }
  }
}

void Sim::set_domain_speed(int d, double s) {
  domain_speed_[static_cast<size_t>(d)] = s;
  const NodeRange r = c_.domains()[static_cast<size_t>(d)];
  std::vector<int> nodes(static_cast<size_t>(r.count));
  std::iota(nodes.begin(), nodes.end(), r.first);
  for (int id : jobs_on(nodes)) {
    Job& j = jobs_[static_cast<size_t>(id)];
    advance_job(j);
    update_speed(id);
    schedule_end(id);
  }
}

void Sim::schedule_replay() {
  for (const auto& f : cfg_.failures.replay) {
    if (f.start > cfg_.horizon) continue;
    const int n = f.node;
    const std::string cls = f.cls;
    const Tick dur = f.end - f.start;
    sim_.schedule_at(f.start, [this, n, cls, dur](engine::Simulator&) {
      down_inc(n);
      const auto hit = jobs_on({n});
      for (int id : hit) interrupt_job(id);
      tally_.interrupts_by_class[cls.empty() ? "replay" : cls] += static_cast<int64_t>(hit.size());
      record(cls.empty() ? "replay" : cls, FailureScope::kNode, n, static_cast<int>(hit.size()),
             gpn_, secs(dur));
      request_pass();
    });
    sim_.schedule_at(f.end, [this, n](engine::Simulator&) { down_dec(n); });
  }
}

}  // namespace clustertwin::scheduler::detail
