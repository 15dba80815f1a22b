// The queue's policy: priorities (basic, multifactor), the main pass over the pending queue
// (pending_queue.h: PendingQueue), preemption and requeues (sim.h).

#include "clustertwin/scheduler/sim.h"

namespace clustertwin::scheduler::detail {

double Sim::priority(const Job& j) const {
  if (cfg_.priority.mode == PriorityMode::kBasic) return -secs(j.spec->submit);
  const auto& p = cfg_.priority;
  const double age = std::min(1.0, secs(sim_.now() - j.spec->submit) / secs(p.max_age));
  const double size = static_cast<double>(job_gpus(j)) / static_cast<double>(c_.gpus());
  const double qos = j.spec->qos == Qos::kHigh ? 1.0 : j.spec->qos == Qos::kNormal ? 0.5 : 0.0;
  return p.weight_age * age +
         p.weight_fairshare * fairshare_[static_cast<size_t>(j.spec->account)] +
         p.weight_size * size + p.weight_qos * qos;
}

bool Sim::before(int a, int b) const {
  const Job& x = jobs_[static_cast<size_t>(a)];
  const Job& y = jobs_[static_cast<size_t>(b)];
  if (x.prio != y.prio) return x.prio > y.prio;
  if (x.spec->submit != y.spec->submit) return x.spec->submit < y.spec->submit;
  return a < b;
}

void Sim::enqueue(int id) {
  Job& j = jobs_[static_cast<size_t>(id)];
  if (j.first_start >= 0 && queue_.stale() > 0) queue_.compact(gone());  // a requeue
  j.state = State::kPending;
  j.pending_since = sim_.now();
  j.prio = priority(j);
  queue_.insert(id, static_cast<size_t>(j.spec->partition), by_priority());
  dirty_ = true;
  request_pass();
}

void Sim::recompute_priorities() {
  if (cfg_.priority.mode == PriorityMode::kMultifactor) {
    // Fair share (classic): F = 2^(-U/S), U the account's decayed usage share.
    const Tick now = sim_.now();
    const double decay = std::exp2(-secs(now - last_usage_) / secs(cfg_.priority.half_life));
    for (auto& u : usage_) u *= decay;
    for (int id : running_) {
      const Job& j = jobs_[static_cast<size_t>(id)];
      const Tick from = std::max(j.attempt_start, last_usage_);
      usage_[static_cast<size_t>(j.spec->account)] += job_gpus(j) * secs(now - from);
    }
    last_usage_ = now;
    double total_u = 0, total_s = 0;
    for (double u : usage_) total_u += u;
    for (double s : w_.account_shares) total_s += s;
    for (size_t a = 0; a < fairshare_.size(); ++a) {
      const double U = total_u > 0 ? usage_[a] / total_u : 0;
      const double S = total_s > 0 ? w_.account_shares[a] / total_s : 1;
      fairshare_[a] = std::exp2(-U / std::max(S, 1e-9));
    }
    for (int id : queue_.all())
      jobs_[static_cast<size_t>(id)].prio = priority(jobs_[static_cast<size_t>(id)]);
    queue_.resort(by_priority());
  }
  sim_.schedule_in(cfg_.priority.calc_period,
                   [this](engine::Simulator&) { recompute_priorities(); });
}

void Sim::request_pass() {
  if (pass_pending_) return;
  pass_pending_ = true;
  sim_.schedule_at(sim_.now(), [this](engine::Simulator&) { main_pass(); });
}

void Sim::main_pass() {
  pass_pending_ = false;
  bool any = false;
  Placement pl;
  queue_.begin_pass(gone());
  while (const auto head = queue_.next(gone(), by_priority())) {
    const auto [id, best_p] = *head;
    Job& j = jobs_[static_cast<size_t>(id)];
    if (limited(j)) continue;
    // Nothing was freed since this job last failed to fit: it still does not. (A job that may
    // preempt is tried every time: a victim may have started since.)
    const bool may_preempt = cfg_.preempt.enabled && j.spec->qos == Qos::kHigh;
    const bool known =
        !may_preempt && head_job_[best_p] == id && head_epoch_[best_p] == cap_.epoch();
    if (!known) {
      // Fewer free nodes (GPUs, segments) in the whole cluster than the job needs: no placement
      // can exist (a cheap test for a large gang at the head of the queue).
      const bool room = may_fit(j, cap_.free_nodes(), cap_.free_gpus(), segment_capacity(j));
      if (room && place(index_, pcfg_, view(), request(j), &pl) && start(id, pl)) {
        any = true;
        continue;
      }
      if (cfg_.preempt.enabled && j.spec->qos == Qos::kHigh && try_preempt(id)) {
        any = true;
        continue;
      }
      head_job_[best_p] = id;
      head_epoch_[best_p] = cap_.epoch();
    }
    queue_.block(best_p);
  }
  if (any) queue_.compact_if_half_stale(gone());
  flush_requeues();
}

bool Sim::try_preempt(int id) {
  Job& j = jobs_[static_cast<size_t>(id)];
  std::vector<int> cand;
  for (int r : running_) {
    const Job& v = jobs_[static_cast<size_t>(r)];
    if (v.spec->qos >= j.spec->qos) continue;
    if (sim_.now() - v.attempt_start < cfg_.preempt.exempt) continue;
    cand.push_back(r);
  }
  if (cand.empty()) return false;
  std::sort(cand.begin(), cand.end(), [this](int a, int b) {
    const Job& x = jobs_[static_cast<size_t>(a)];
    const Job& y = jobs_[static_cast<size_t>(b)];
    if (x.spec->qos != y.spec->qos) return x.spec->qos < y.spec->qos;
    if (x.attempt_start != y.attempt_start) return x.attempt_start > y.attempt_start;
    return a < b;
  });
  std::vector<int> n(cap_.cell_nodes()), g(cap_.cell_gpus());
  Placement pl;
  std::vector<int> victims;
  for (size_t k = 0; k < cand.size() && static_cast<int>(k) < cfg_.preempt.max_victims; ++k) {
    const Job& v = jobs_[static_cast<size_t>(cand[k])];
    for (int node : v.nodes) {
      if (!up(node)) continue;
      const int cell = c_.cell_of(node);
      const int held = v.nodes_needed > 0 ? gpn_ : v.sub_gpus;
      g[static_cast<size_t>(cell)] += held;
      if (cap_.free(node) + held == gpn_) ++n[static_cast<size_t>(cell)];
    }
    victims.push_back(cand[k]);
    if (place(index_, pcfg_, FreeView{n, g, {}}, request(j), &pl)) {
      for (int v2 : victims) preempt(v2);
      Placement real;
      if (place(index_, pcfg_, view(), request(j), &real) && start(id, real)) return true;
      return false;
    }
  }
  return false;
}

void Sim::keep_if_stateless(Job& j) {
  if (!j.spec->stateless) return;
  j.rs.saved = j.rs.computed;
  j.rs.compute_since_save = 0;
}

void Sim::preempt(int id) {
  Job& j = jobs_[static_cast<size_t>(id)];
  advance_job(j);
  keep_if_stateless(j);
  Tick lost = 0;
  const double lw = interrupt(j.rs, j.ck, &lost);
  (void)lw;
  j.lost_ticks += lost;
  j.lost_gpu_s += secs(lost) * job_gpus(j);
  ++j.preemptions;
  ++tally_.preemptions;
  ++j.gen;
  release_all(id);
  j.state = State::kFuture;  // requeued after the pass (flush_requeues), not seen before
  j.pending_since = sim_.now();
  requeue_.push_back(id);
}

void Sim::flush_requeues() {
  if (requeue_.empty()) return;
  auto q = std::move(requeue_);
  requeue_.clear();
  for (int id : q) {
    Job& j = jobs_[static_cast<size_t>(id)];
    const Tick since = j.pending_since;
    enqueue(id);
    j.pending_since = since;
  }
}

}  // namespace clustertwin::scheduler::detail
