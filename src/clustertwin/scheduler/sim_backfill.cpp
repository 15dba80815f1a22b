// The backfill plan: future frees as per-cell deltas, each tested job's earliest start on it,
// reservations (Slurm bf_*; sim.h).

#include "clustertwin/scheduler/sim.h"

namespace clustertwin::scheduler::detail {

Tick Sim::round_up(Tick t) const {
  const Tick r = cfg_.backfill.resolution;
  return r > 0 ? (t + r - 1) / r * r : t;
}

void Sim::build_plan() {
  const Tick now = sim_.now();
  plan_n_ = cap_.cell_nodes();
  plan_g_ = cap_.cell_gpus();
  plan_.clear();
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
      for (const auto& ct : j.cells) plan_.push_back({t, ct.cell, ct.nodes, ct.nodes * gpn_});
    } else {
      for (int n : j.nodes) subs.push_back({t, n, j.sub_gpus});
    }
  }
  const auto whole = static_cast<std::ptrdiff_t>(plan_.size());
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
    plan_.push_back({s.t, c_.cell_of(s.node), sub_free_[n] == gpn_ ? 1 : 0, s.g});
  }
  // Whole-node changes in running-job order, then sub-node ones (already in time order): a
  // stable sort of the first part and a stable merge give the stable sort of the whole.
  const auto by_t = [](const Delta& a, const Delta& b) { return a.t < b.t; };
  std::stable_sort(plan_.begin(), plan_.begin() + whole, by_t);
  std::inplace_merge(plan_.begin(), plan_.begin() + whole, plan_.end(), by_t);
  base_total_n_ = base_total_g_ = 0;
  for (size_t c = 0; c < plan_n_.size(); ++c) {
    base_total_n_ += plan_n_[c];
    base_total_g_ += plan_g_[c];
  }
  index_plan();
}

void Sim::plan_add(std::vector<Delta>& batch) {
  if (batch.empty()) return;
  const auto by_t = [](const Delta& a, const Delta& b) { return a.t < b.t; };
  for (const auto& d : batch) {
    auto& cl = cell_deltas_[static_cast<size_t>(d.cell)];
    cl.insert(
        std::upper_bound(cl.begin(), cl.end(), d.t, [](Tick t, const Delta& x) { return t < x.t; }),
        d);
    const bool negative = d.dn < 0 || d.dg < 0;
    if (negative || neg_flag_[static_cast<size_t>(d.cell)]) relevant_ok_ = false;
    if (negative) neg_t_.push_back(d.t);
    if (negative && !neg_flag_[static_cast<size_t>(d.cell)]) {
      neg_flag_[static_cast<size_t>(d.cell)] = 1;
      neg_cells_.push_back(d.cell);
    }
  }
  std::stable_sort(batch.begin(), batch.end(), by_t);
  if (batch.size() <= 8) {
    for (const auto& d : batch) {
      plan_.insert(std::upper_bound(plan_.begin(), plan_.end(), d.t,
                                    [](Tick t, const Delta& x) { return t < x.t; }),
                   d);
    }
  } else {
    const auto old = static_cast<std::ptrdiff_t>(plan_.size());
    plan_.insert(plan_.end(), batch.begin(), batch.end());
    std::inplace_merge(plan_.begin(), plan_.begin() + old, plan_.end(), by_t);
  }
  if (neg_sorted_ < static_cast<std::ptrdiff_t>(neg_t_.size())) {
    std::sort(neg_t_.begin() + neg_sorted_, neg_t_.end());
    std::inplace_merge(neg_t_.begin(), neg_t_.begin() + neg_sorted_, neg_t_.end());
    neg_sorted_ = static_cast<std::ptrdiff_t>(neg_t_.size());
  }
  batch.clear();
}

void Sim::index_plan() {
  const size_t C = plan_n_.size();
  cell_deltas_.resize(C);
  for (auto& v : cell_deltas_) v.clear();
  neg_flag_.assign(C, 0);
  neg_cells_.clear();
  neg_t_.clear();
  for (const auto& d : plan_) {
    cell_deltas_[static_cast<size_t>(d.cell)].push_back(d);
    if (d.dn < 0 || d.dg < 0) {
      neg_t_.push_back(d.t);
      if (!neg_flag_[static_cast<size_t>(d.cell)]) {
        neg_flag_[static_cast<size_t>(d.cell)] = 1;
        neg_cells_.push_back(d.cell);
      }
    }
  }
  neg_sorted_ = static_cast<std::ptrdiff_t>(neg_t_.size());
  if (stamp_.size() != C) stamp_.assign(C, 0);
  base_cap_.clear();
  relevant_ok_ = false;
}

int64_t Sim::segment_capacity(std::span<const int> n, int seg) const {
  int64_t cap = 0;
  for (int b = 0; b < index_.blocks(); ++b) {
    const NodeRange r = index_.block_cells(b);
    int f = 0;
    for (int c = r.first; c < r.end(); ++c) f += std::max(0, n[static_cast<size_t>(c)]);
    cap += f / seg;
  }
  return cap;
}

bool Sim::may_fit(const Job& j, int64_t total_n, int64_t total_g, int64_t cap) const {
  if (j.nodes_needed == 0) return total_g >= j.sub_gpus;
  if (total_n < j.nodes_needed) return false;
  const bool segmented =
      pcfg_.policy == PlacementPolicy::kBlock || pcfg_.policy == PlacementPolicy::kKueue;
  return !segmented || cap >= (j.nodes_needed + j.segment - 1) / j.segment;
}

void Sim::window_min(std::vector<int>& n, std::vector<int>& g, Tick t, Tick limit, int seg,
                     std::vector<Touch>& undo, int64_t* dtotal_n, int64_t* dtotal_g,
                     int64_t* dcap) {
  undo.clear();
  *dtotal_n = *dtotal_g = *dcap = 0;
  if (!loss_within(t, limit)) return;
  for (int cell : neg_cells_) {
    const auto& cl = cell_deltas_[static_cast<size_t>(cell)];
    auto it =
        std::upper_bound(cl.begin(), cl.end(), t, [](Tick x, const Delta& d) { return x < d.t; });
    const auto c = static_cast<size_t>(cell);
    int run_n = n[c], run_g = g[c], mn = n[c], mg = g[c];
    for (; it != cl.end() && it->t < t + limit; ++it) {
      run_n += it->dn;
      run_g += it->dg;
      mn = std::min(mn, run_n);
      mg = std::min(mg, run_g);
    }
    mn = std::max(0, mn);
    mg = std::max(0, mg);
    if (mn != n[c] || mg != g[c]) undo.push_back({cell, mn, mg});
  }
  apply_lowered(n, g, seg, dtotal_n, dtotal_g, dcap);
}

auto Sim::now_drops(Tick limit, size_t* key) -> const std::vector<Touch>* {
  if (!loss_within(sim_.now(), limit)) return nullptr;
  if (!relevant_ok_) {
    relevant_t_.clear();
    for (int c : neg_cells_) {
      for (const auto& d : cell_deltas_[static_cast<size_t>(c)]) relevant_t_.push_back(d.t);
    }
    std::sort(relevant_t_.begin(), relevant_t_.end());
    now_cache_.clear();
    now_totals_.clear();
    relevant_ok_ = true;
  }
  const Tick end = sim_.now() + limit;
  *key = static_cast<size_t>(std::lower_bound(relevant_t_.begin(), relevant_t_.end(), end) -
                             relevant_t_.begin());
  auto it = now_cache_.find(*key);
  if (it == now_cache_.end()) {
    std::vector<Touch> drops;
    for (int cell : neg_cells_) {
      const auto& cl = cell_deltas_[static_cast<size_t>(cell)];
      auto d = std::upper_bound(cl.begin(), cl.end(), sim_.now(),
                                [](Tick x, const Delta& e) { return x < e.t; });
      int run_n = 0, run_g = 0, mn = 0, mg = 0;
      for (; d != cl.end() && d->t < end; ++d) {
        run_n += d->dn;
        run_g += d->dg;
        mn = std::min(mn, run_n);
        mg = std::min(mg, run_g);
      }
      if (mn < 0 || mg < 0) drops.push_back({cell, mn, mg});
    }
    it = now_cache_.emplace(*key, std::move(drops)).first;
  }
  return &it->second;
}

void Sim::lower_now(const std::vector<Touch>& drops, int seg, int64_t* dn, int64_t* dg,
                    int64_t* dcap) {
  undo_.clear();
  *dn = *dg = *dcap = 0;
  for (const auto& t : drops) {
    const auto c = static_cast<size_t>(t.cell);
    const int nn = std::max(0, plan_n_[c] + t.n), ng = std::max(0, plan_g_[c] + t.g);
    if (nn == plan_n_[c] && ng == plan_g_[c]) continue;
    undo_.push_back({t.cell, nn, ng});  // new values for now; swapped below
  }
  apply_lowered(plan_n_, plan_g_, seg, dn, dg, dcap);
}

auto Sim::now_totals(const std::vector<Touch>& drops, size_t key, int seg) -> Totals {
  auto [it, fresh] = now_totals_.try_emplace({key, seg});
  if (fresh) {
    lower_now(drops, seg, &it->second.dn, &it->second.dg, &it->second.dcap);
    restore(plan_n_, plan_g_, undo_);
    undo_.clear();
  }
  return it->second;
}

void Sim::apply_lowered(std::vector<int>& n, std::vector<int>& g, int seg, int64_t* dn, int64_t* dg,
                        int64_t* dcap) {
  touched_blocks_.clear();
  if (seg > 0) {
    for (const auto& u : undo_) touched_blocks_.push_back(index_.block_of_cell(u.cell));
    std::sort(touched_blocks_.begin(), touched_blocks_.end());
    touched_blocks_.erase(std::unique(touched_blocks_.begin(), touched_blocks_.end()),
                          touched_blocks_.end());
  }
  auto block_cap = [&]() {
    int64_t cap = 0;
    for (int b : touched_blocks_) {
      const NodeRange r = index_.block_cells(b);
      int f = 0;
      for (int c = r.first; c < r.end(); ++c) f += std::max(0, n[static_cast<size_t>(c)]);
      cap += f / seg;
    }
    return cap;
  };
  const int64_t before = seg > 0 ? block_cap() : 0;
  for (auto& u : undo_) {
    const auto c = static_cast<size_t>(u.cell);
    *dn += u.n - n[c];
    *dg += u.g - g[c];
    std::swap(n[c], u.n);
    std::swap(g[c], u.g);
  }
  if (seg > 0) *dcap += block_cap() - before;
}

void Sim::restore(std::vector<int>& n, std::vector<int>& g, const std::vector<Touch>& undo) {
  for (const auto& u : undo) {
    n[static_cast<size_t>(u.cell)] = u.n;
    g[static_cast<size_t>(u.cell)] = u.g;
  }
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
  const Tick limit = std::max<Tick>(j.spec->time_limit, 1);
  const Tick window_end = now_only ? now : now + cfg_.backfill.window;
  const int seg = seg_of(j);
  int64_t dn = 0, dg = 0, dcap = 0;
  // The present, on the plan's own arrays (no copy).
  if (from <= now) {
    auto cap_it = base_cap_.find(seg);
    if (cap_it == base_cap_.end()) {
      cap_it = base_cap_.emplace(seg, seg > 0 ? segment_capacity(plan_n_, seg) : 0).first;
    }
    undo_.clear();
    size_t key = 0;
    const auto* drops = now_drops(limit, &key);
    if (drops != nullptr) {
      const Totals tot = now_totals(*drops, key, seg);
      dn = tot.dn;
      dg = tot.dg;
      dcap = tot.dcap;
    }
    bool ok = may_fit(j, base_total_n_ + dn, base_total_g_ + dg, cap_it->second + dcap);
    if (ok) {
      if (drops != nullptr) {
        int64_t unused_n = 0, unused_g = 0, unused_cap = 0;
        lower_now(*drops, 0, &unused_n, &unused_g, &unused_cap);
      }
      FreeView v{plan_n_, plan_g_, {}};
      if (j.nodes_needed == 0 && undo_.empty()) v.node_hist = cap_.cell_hist();  // exact now
      ok = place(index_, pcfg_, v, request(j), pl);
    }
    restore(plan_n_, plan_g_, undo_);
    if (ok) {
      *at = now;
      return true;
    }
    if (now_only) return false;
  }
  // The future: walk the plan's releases.
  cur_n_ = plan_n_;
  cur_g_ = plan_g_;
  int64_t total_n = base_total_n_, total_g = base_total_g_;
  const size_t B = static_cast<size_t>(index_.blocks());
  cur_bn_.assign(B, 0);
  int64_t cap = 0;
  if (seg > 0) {
    for (size_t b = 0; b < B; ++b) {
      const NodeRange r = index_.block_cells(static_cast<int>(b));
      for (int c = r.first; c < r.end(); ++c) cur_bn_[b] += cur_n_[static_cast<size_t>(c)];
      cap += std::max(0, cur_bn_[b]) / seg;
    }
  }
  size_t i = 0;
  while (i < plan_.size() && plan_[i].t <= now) ++i;
  while (true) {
    // Next time something is released, then everything that happens by then.
    while (i < plan_.size() && plan_[i].dn <= 0 && plan_[i].dg <= 0) {
      apply_delta(plan_[i++], seg, &total_n, &total_g, &cap);
    }
    if (i >= plan_.size()) return false;
    const Tick t = plan_[i].t;
    if (t > window_end) return false;
    while (i < plan_.size() && plan_[i].t <= t)
      apply_delta(plan_[i++], seg, &total_n, &total_g, &cap);
    if (t < from || !may_fit(j, total_n, total_g, cap)) continue;
    window_min(cur_n_, cur_g_, t, limit, seg, undo_, &dn, &dg, &dcap);
    bool ok = may_fit(j, total_n + dn, total_g + dg, cap + dcap) &&
              place(index_, pcfg_, FreeView{cur_n_, cur_g_, {}}, request(j), pl);
    restore(cur_n_, cur_g_, undo_);
    if (ok) {
      *at = t;
      return true;
    }
  }
}

void Sim::apply_delta(const Delta& d, int seg, int64_t* total_n, int64_t* total_g, int64_t* cap) {
  const auto c = static_cast<size_t>(d.cell);
  cur_n_[c] += d.dn;
  cur_g_[c] += d.dg;
  *total_n += d.dn;
  *total_g += d.dg;
  if (seg > 0 && d.dn != 0) {
    const auto b = static_cast<size_t>(index_.block_of_cell(d.cell));
    *cap -= std::max(0, cur_bn_[b]) / seg;
    cur_bn_[b] += d.dn;
    *cap += std::max(0, cur_bn_[b]) / seg;
  }
}

void Sim::reserve_in_plan(const Job& j, const Placement& pl, Tick t) {
  const Tick end = t + std::max<Tick>(j.spec->time_limit, 1);
  const Tick now = sim_.now();
  auto apply = [&](int cell, int dn, int dg) {
    if (t == now) {
      take_now(cell, dn, dg);
    } else {
      batch_.push_back({t, cell, -dn, -dg});
    }
    batch_.push_back({round_up(end), cell, dn, dg});
  };
  if (j.nodes_needed > 0) {
    for (const auto& tk : pl.takes) apply(tk.cell, tk.nodes, tk.nodes * gpn_);
  } else if (pl.sub_cell >= 0) {
    const auto c = static_cast<size_t>(pl.sub_cell);
    const bool breaks = plan_g_[c] - j.sub_gpus < plan_n_[c] * gpn_;
    apply(pl.sub_cell, breaks ? 1 : 0, j.sub_gpus);
  }
  plan_add(batch_);
}

void Sim::take_now(int cell, int dn, int dg) {
  plan_n_[static_cast<size_t>(cell)] -= dn;
  plan_g_[static_cast<size_t>(cell)] -= dg;
  base_total_n_ -= dn;
  base_total_g_ -= dg;
  base_cap_.clear();
  now_totals_.clear();
}

bool Sim::loss_within(Tick t, Tick limit) const {
  auto it = std::upper_bound(neg_t_.begin(), neg_t_.end(), t);
  return it != neg_t_.end() && *it < t + limit;
}

void Sim::reserve_started(const Job& j) {
  const Tick end = round_up(sim_.now() + std::max<Tick>(j.spec->time_limit, 1));
  auto take = [&](int cell, int dn, int dg) {
    take_now(cell, dn, dg);
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
  plan_add(batch_);
}

void Sim::backfill_pass() {
  sim_.schedule_in(cfg_.backfill.interval, [this](engine::Simulator&) { backfill_pass(); });
  if (!dirty_ || pending_.empty()) return;
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
  if (per_part > 0) part_tested_.assign(part_pending_.size(), 0);
  stale_ -= drop_started_front(pending_);
  for (size_t k = 0; k < pending_.size(); ++k) {  // nothing enqueues during the pass
    const int id = pending_[k];
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
  if (started > 0) erase_started();
  dirty_ = false;  // the plan accounted for what it started
}

}  // namespace clustertwin::scheduler::detail
