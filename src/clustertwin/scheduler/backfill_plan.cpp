// The backfill plan: free capacity per cell now and the changes to come; a job's earliest start
// on it (backfill_plan.h).

#include "clustertwin/scheduler/backfill_plan.h"

#include <algorithm>

namespace clustertwin::scheduler::detail {

using engine::Tick;

void BackfillPlan::reset(std::span<const int> n, std::span<const int> g,
                         std::vector<PlanDelta>& deltas) {
  n_.assign(n.begin(), n.end());
  g_.assign(g.begin(), g.end());
  deltas_.swap(deltas);
  total_n_ = total_g_ = 0;
  for (size_t c = 0; c < n_.size(); ++c) {
    total_n_ += n_[c];
    total_g_ += g_[c];
  }
  index();
}

void BackfillPlan::add(std::vector<PlanDelta>& batch) {
  if (batch.empty()) return;
  const auto by_t = [](const PlanDelta& a, const PlanDelta& b) { return a.t < b.t; };
  for (const auto& d : batch) {
    auto& cl = cell_deltas_[static_cast<size_t>(d.cell)];
    cl.insert(std::upper_bound(cl.begin(), cl.end(), d.t,
                               [](Tick t, const PlanDelta& x) { return t < x.t; }),
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
      deltas_.insert(std::upper_bound(deltas_.begin(), deltas_.end(), d.t,
                                      [](Tick t, const PlanDelta& x) { return t < x.t; }),
                     d);
    }
  } else {
    const auto old = static_cast<std::ptrdiff_t>(deltas_.size());
    deltas_.insert(deltas_.end(), batch.begin(), batch.end());
    std::inplace_merge(deltas_.begin(), deltas_.begin() + old, deltas_.end(), by_t);
  }
  if (neg_sorted_ < static_cast<std::ptrdiff_t>(neg_t_.size())) {
    std::sort(neg_t_.begin() + neg_sorted_, neg_t_.end());
    std::inplace_merge(neg_t_.begin(), neg_t_.begin() + neg_sorted_, neg_t_.end());
    neg_sorted_ = static_cast<std::ptrdiff_t>(neg_t_.size());
  }
  batch.clear();
}

void BackfillPlan::index() {
  const size_t C = n_.size();
  cell_deltas_.resize(C);
  for (auto& v : cell_deltas_) v.clear();
  neg_flag_.assign(C, 0);
  neg_cells_.clear();
  neg_t_.clear();
  for (const auto& d : deltas_) {
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
  base_cap_.clear();
  relevant_ok_ = false;
}

int64_t BackfillPlan::segment_capacity(std::span<const int> n, int seg) const {
  int64_t cap = 0;
  for (int b = 0; b < index_->blocks(); ++b) {
    const NodeRange r = index_->block_cells(b);
    int f = 0;
    for (int c = r.first; c < r.end(); ++c) f += std::max(0, n[static_cast<size_t>(c)]);
    cap += f / seg;
  }
  return cap;
}

void BackfillPlan::window_min(std::vector<int>& n, std::vector<int>& g, Tick t, Tick limit, int seg,
                              std::vector<Touch>& undo, int64_t* dtotal_n, int64_t* dtotal_g,
                              int64_t* dcap) {
  undo.clear();
  *dtotal_n = *dtotal_g = *dcap = 0;
  if (!loss_within(t, limit)) return;
  for (int cell : neg_cells_) {
    const auto& cl = cell_deltas_[static_cast<size_t>(cell)];
    auto it = std::upper_bound(cl.begin(), cl.end(), t,
                               [](Tick x, const PlanDelta& d) { return x < d.t; });
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

auto BackfillPlan::now_drops(Tick now, Tick limit, size_t* key) -> const std::vector<Touch>* {
  if (!loss_within(now, limit)) return nullptr;
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
  const Tick end = now + limit;
  *key = static_cast<size_t>(std::lower_bound(relevant_t_.begin(), relevant_t_.end(), end) -
                             relevant_t_.begin());
  auto it = now_cache_.find(*key);
  if (it == now_cache_.end()) {
    std::vector<Touch> drops;
    for (int cell : neg_cells_) {
      const auto& cl = cell_deltas_[static_cast<size_t>(cell)];
      auto d = std::upper_bound(cl.begin(), cl.end(), now,
                                [](Tick x, const PlanDelta& e) { return x < e.t; });
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

void BackfillPlan::lower_now(const std::vector<Touch>& drops, int seg, int64_t* dn, int64_t* dg,
                             int64_t* dcap) {
  undo_.clear();
  *dn = *dg = *dcap = 0;
  for (const auto& t : drops) {
    const auto c = static_cast<size_t>(t.cell);
    const int nn = std::max(0, n_[c] + t.n), ng = std::max(0, g_[c] + t.g);
    if (nn == n_[c] && ng == g_[c]) continue;
    undo_.push_back({t.cell, nn, ng});  // new values for now; swapped below
  }
  apply_lowered(n_, g_, seg, dn, dg, dcap);
}

auto BackfillPlan::now_totals(const std::vector<Touch>& drops, size_t key, int seg) -> Totals {
  auto [it, fresh] = now_totals_.try_emplace({key, seg});
  if (fresh) {
    lower_now(drops, seg, &it->second.dn, &it->second.dg, &it->second.dcap);
    restore(n_, g_, undo_);
    undo_.clear();
  }
  return it->second;
}

void BackfillPlan::apply_lowered(std::vector<int>& n, std::vector<int>& g, int seg, int64_t* dn,
                                 int64_t* dg, int64_t* dcap) {
  touched_blocks_.clear();
  if (seg > 0) {
    for (const auto& u : undo_) touched_blocks_.push_back(index_->block_of_cell(u.cell));
    std::sort(touched_blocks_.begin(), touched_blocks_.end());
    touched_blocks_.erase(std::unique(touched_blocks_.begin(), touched_blocks_.end()),
                          touched_blocks_.end());
  }
  auto block_cap = [&]() {
    int64_t cap = 0;
    for (int b : touched_blocks_) {
      const NodeRange r = index_->block_cells(b);
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

void BackfillPlan::restore(std::vector<int>& n, std::vector<int>& g,
                           const std::vector<Touch>& undo) {
  for (const auto& u : undo) {
    n[static_cast<size_t>(u.cell)] = u.n;
    g[static_cast<size_t>(u.cell)] = u.g;
  }
}

void BackfillPlan::apply_delta(const PlanDelta& d, int seg, int64_t* total_n, int64_t* total_g,
                               int64_t* cap) {
  const auto c = static_cast<size_t>(d.cell);
  cur_n_[c] += d.dn;
  cur_g_[c] += d.dg;
  *total_n += d.dn;
  *total_g += d.dg;
  if (seg > 0 && d.dn != 0) {
    const auto b = static_cast<size_t>(index_->block_of_cell(d.cell));
    *cap -= std::max(0, cur_bn_[b]) / seg;
    cur_bn_[b] += d.dn;
    *cap += std::max(0, cur_bn_[b]) / seg;
  }
}

void BackfillPlan::take_now(int cell, int dn, int dg) {
  n_[static_cast<size_t>(cell)] -= dn;
  g_[static_cast<size_t>(cell)] -= dg;
  total_n_ -= dn;
  total_g_ -= dg;
  base_cap_.clear();
  now_totals_.clear();
}

bool BackfillPlan::loss_within(Tick t, Tick limit) const {
  auto it = std::upper_bound(neg_t_.begin(), neg_t_.end(), t);
  return it != neg_t_.end() && *it < t + limit;
}

}  // namespace clustertwin::scheduler::detail
