// The backfill pass (Slurm bf_*; sim.h): the plan built from the running jobs (backfill_plan.h:
// BackfillPlan, free capacity per cell now and the changes to come), each tested job's earliest
// start on it, starts and reservations.

#include "clustertwin/scheduler/sim.h"

namespace clustertwin::scheduler::detail {

Tick Sim::round_up(Tick t) const {
  const Tick r = cfg_.backfill.resolution;
  return r > 0 ? (t + r - 1) / r * r : t;
}

void Sim::build_plan() {
  const Tick now = sim_.now();
  auto& plan = plan_scratch_;
  plan.clear();
  struct Sub {
    Tick t;
    int node, g;
  };
  std::vector<Sub> subs;
  for (int id : running_) {
    const Job& j = jobs_[static_cast<size_t>(id)];
    Tick t = j.attempt_start + j.time_limit;
    if (t <= now) t = now + cfg_.backfill.resolution;
    t = round_up(t);
    if (j.nodes_needed > 0) {
      // Running jobs hold only up nodes: a failure swaps or requeues them at once.
      for (const auto& ct : j.cells) plan.push_back({t, ct.cell, ct.nodes, ct.nodes * gpn_});
    } else {
      for (int n : j.nodes) subs.push_back({t, n, j.sub_gpus});
    }
  }
  const auto whole = static_cast<std::ptrdiff_t>(plan.size());
  std::sort(subs.begin(), subs.end(),
            [](const Sub& a, const Sub& b) { return a.t != b.t ? a.t < b.t : a.node < b.node; });
  // Free GPUs of each node as its sub-node jobs end, in time order (a node is whole again when
  // the last one ends); stamped per pass instead of cleared.
  if (sub_free_.size() != static_cast<size_t>(cap_.nodes())) {
    sub_free_.assign(static_cast<size_t>(cap_.nodes()), 0);
    sub_stamp_.assign(static_cast<size_t>(cap_.nodes()), 0);
  }
  ++sub_pass_;
  for (const auto& s : subs) {
    if (!up(s.node)) continue;
    const auto n = static_cast<size_t>(s.node);
    if (sub_stamp_[n] != sub_pass_) {
      sub_stamp_[n] = sub_pass_;
      sub_free_[n] = cap_.free(s.node);
    }
    sub_free_[n] += s.g;
    plan.push_back({s.t, c_.cell_of(s.node), sub_free_[n] == gpn_ ? 1 : 0, s.g});
  }
  // Whole-node changes in running-job order, then sub-node ones (already in time order): a
  // stable sort of the first part and a stable merge give the stable sort of the whole.
  const auto by_t = [](const PlanDelta& a, const PlanDelta& b) { return a.t < b.t; };
  std::stable_sort(plan.begin(), plan.begin() + whole, by_t);
  std::inplace_merge(plan.begin(), plan.begin() + whole, plan.end(), by_t);
  plan_.reset(cap_.cell_nodes(), cap_.cell_gpus(), plan);
}

bool Sim::may_fit(const Job& j, int64_t total_n, int64_t total_g, int64_t cap) const {
  if (j.nodes_needed == 0) return total_g >= j.sub_gpus;
  if (total_n < j.nodes_needed) return false;
  const bool segmented =
      pcfg_.policy == PlacementPolicy::kBlock || pcfg_.policy == PlacementPolicy::kKueue;
  return !segmented || cap >= (j.nodes_needed + j.segment - 1) / j.segment;
}

int64_t Sim::segment_capacity(const Job& j) const {
  const int seg = seg_of(j);
  if (seg <= 0) return 0;
  for (const auto& [s, cap] : cap_.segment_capacity()) {
    if (s == seg) return cap;
  }
  CT_CHECK(false, "a segment size that run() did not track");
  return 0;
}

int Sim::seg_of(const Job& j) const {
  const bool segmented =
      pcfg_.policy == PlacementPolicy::kBlock || pcfg_.policy == PlacementPolicy::kKueue;
  return segmented && j.nodes_needed > 0 ? j.segment : 0;
}

bool Sim::earliest(const Job& j, Tick from, bool now_only, Tick* at, Placement* pl) {
  const Tick now = sim_.now();
  const PlacementRequest req = request(j);
  const BackfillPlan::Ask ask{.seg = seg_of(j),
                              .limit = std::max<Tick>(j.spec->time_limit, 1),
                              .now_hist = j.nodes_needed == 0
                                              ? std::span<const int>(cap_.cell_hist())
                                              : std::span<const int>()};
  const auto t = plan_.earliest(
      now, from, now_only ? now : now + cfg_.backfill.window, now_only, ask,
      [&](int64_t n, int64_t g, int64_t cap) { return may_fit(j, n, g, cap); },
      [&](const FreeView& v) { return place(index_, pcfg_, v, req, pl); });
  if (t) *at = *t;
  return t.has_value();
}

void Sim::reserve_in_plan(const Job& j, const Placement& pl, Tick t) {
  const Tick end = t + std::max<Tick>(j.spec->time_limit, 1);
  const Tick now = sim_.now();
  auto apply = [&](int cell, int dn, int dg) {
    if (t == now) {
      plan_.take_now(cell, dn, dg);
    } else {
      batch_.push_back({t, cell, -dn, -dg});
    }
    batch_.push_back({round_up(end), cell, dn, dg});
  };
  if (j.nodes_needed > 0) {
    for (const auto& tk : pl.takes) apply(tk.cell, tk.nodes, tk.nodes * gpn_);
  } else if (pl.sub_cell >= 0) {
    const auto c = static_cast<size_t>(pl.sub_cell);
    const bool breaks = plan_.gpus_now()[c] - j.sub_gpus < plan_.nodes_now()[c] * gpn_;
    apply(pl.sub_cell, breaks ? 1 : 0, j.sub_gpus);
  }
  plan_.add(batch_);
}

void Sim::reserve_started(const Job& j) {
  const Tick end = round_up(sim_.now() + std::max<Tick>(j.spec->time_limit, 1));
  auto take = [&](int cell, int dn, int dg) {
    plan_.take_now(cell, dn, dg);
    batch_.push_back({end, cell, dn, dg});
  };
  if (j.nodes_needed > 0) {
    for (const auto& ct : j.cells) take(ct.cell, ct.nodes, ct.nodes * gpn_);
  } else {
    for (int n : j.nodes) {
      const bool was_whole = cap_.free(n) + j.sub_gpus == gpn_;
      take(c_.cell_of(n), was_whole ? 1 : 0, j.sub_gpus);
    }
  }
  plan_.add(batch_);
}

void Sim::backfill_pass() {
  sim_.schedule_in(cfg_.backfill.interval, [this](engine::Simulator&) { backfill_pass(); });
  if (!dirty_ || queue_.all().empty()) return;
  dirty_ = false;
  ++tally_.backfill_passes;
  build_plan();
  const int reserve_limit = cfg_.backfill.reserve >= 0          ? cfg_.backfill.reserve
                            : cfg_.policy == QueuePolicy::kEasy ? 1
                                                                : cfg_.backfill.max_job_test;
  int reserved = 0, tested = 0, started = 0;
  Placement pl;

  // Jobs of one shape (nodes, segment, GPUs, limit) cannot start earlier than the previous one
  // of that shape did on the same plan: the plan only fills up as the pass goes. Slurm skips
  // such jobs the same way; here the search starts from the earlier job's time.
  shape_from_.clear();
  const int per_user = cfg_.backfill.max_job_user, per_part = cfg_.backfill.max_job_part;
  if (per_user > 0) user_tested_.assign(w_.users.size() + 1, 0);
  if (per_part > 0) part_tested_.assign(queue_.partitions(), 0);
  queue_.drop_gone_front(gone());
  const auto& pending = queue_.all();
  for (size_t k = 0; k < pending.size(); ++k) {  // nothing enqueues during the pass
    const int id = pending[k];
    if (tested >= cfg_.backfill.max_job_test) break;
    Job& j = jobs_[static_cast<size_t>(id)];
    if (j.state != State::kPending || limited(j)) continue;
    // bf_max_job_user, bf_max_job_part: a user's (partition's) jobs past the limit are not
    // tested in this pass and do not count towards bf_max_job_test.
    const auto u = static_cast<size_t>(j.spec->user);
    const auto pt = static_cast<size_t>(j.spec->partition);
    if ((per_user > 0 && user_tested_[u] >= per_user) ||
        (per_part > 0 && part_tested_[pt] >= per_part)) {
      continue;
    }
    if (per_user > 0) ++user_tested_[u];
    if (per_part > 0) ++part_tested_[pt];
    ++tested;
    const bool now_only = reserved >= reserve_limit;
    const Shape shape{j.nodes_needed, j.segment, j.sub_gpus, j.spec->time_limit};
    auto known = shape_from_.find(shape);
    if (known != shape_from_.end() &&
        (known->second == kNever || (known->second > sim_.now() && now_only))) {
      continue;
    }
    const Tick from = known == shape_from_.end() ? sim_.now() : known->second;
    Tick at = 0;
    if (!earliest(j, from, now_only, &at, &pl)) {
      shape_from_[shape] = kNever;
      continue;
    }
    if (at == sim_.now()) {
      if (cfg_.backfill.max_job_start > 0 && started >= cfg_.backfill.max_job_start) continue;
      if (start(id, pl)) {
        ++started;
        reserve_started(j);
      }
    } else {
      shape_from_[shape] = at;
      if (reserved < reserve_limit) {
        reserve_in_plan(j, pl, at);
        ++reserved;
      }
    }
  }
  if (started > 0) queue_.compact_if_half_stale(gone());
  dirty_ = false;  // the plan accounted for what it started
}

}  // namespace clustertwin::scheduler::detail
