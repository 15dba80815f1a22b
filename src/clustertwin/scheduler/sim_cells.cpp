// Cells and free capacity: nodes up, down and spare, free GPUs per cell and block, a job's
// allocation, release and speed (sim.h).

#include "clustertwin/scheduler/sim.h"

namespace clustertwin::scheduler::detail {

void Sim::contrib(int n, int sign) {
  if (node_down_[static_cast<size_t>(n)] > 0 || spare_[static_cast<size_t>(n)]) return;
  const int cell = c_.cell_of(n);
  const int f = node_free_[static_cast<size_t>(n)];
  cell_gpus_[static_cast<size_t>(cell)] += sign * f;
  free_gpus_total_ += sign * f;
  if (f == gpn_) {
    cell_nodes_[static_cast<size_t>(cell)] += sign;
    free_nodes_total_ += sign;
    if (!seg_cap_.empty()) {
      int& bf = block_free_[static_cast<size_t>(index_.block_of_cell(cell))];
      for (auto& [seg, cap] : seg_cap_) cap += (bf + sign) / seg - bf / seg;
      bf += sign;
    }
  }
  cell_hist_[static_cast<size_t>(cell) * static_cast<size_t>(gpn_ + 1) + static_cast<size_t>(f)] +=
      sign;
}

void Sim::set_free(int n, int f) {
  const int was = node_free_[static_cast<size_t>(n)];
  if (f > was) ++free_epoch_;
  busy_nodes_ += (f < gpn_ ? 1 : 0) - (was < gpn_ ? 1 : 0);
  contrib(n, -1);
  node_free_[static_cast<size_t>(n)] = f;
  contrib(n, +1);
}

void Sim::down_inc(int n) {
  integrate();
  if (node_down_[static_cast<size_t>(n)] == 0) {
    contrib(n, -1);
    down_gpus_ += gpn_;
    block_down_change(n, +1);
  }
  ++node_down_[static_cast<size_t>(n)];
  dirty_ = true;
}

void Sim::down_dec(int n) {
  integrate();
  CT_CHECK(node_down_[static_cast<size_t>(n)] > 0, "repair of a node that is up");
  --node_down_[static_cast<size_t>(n)];
  if (node_down_[static_cast<size_t>(n)] == 0) {
    ++free_epoch_;
    contrib(n, +1);
    down_gpus_ -= gpn_;
    block_down_change(n, -1);
    refill_spare(n);
    dirty_ = true;
    request_pass();
  }
}

void Sim::block_down_change(int n, int sign) {
  int& d = block_down_[static_cast<size_t>(index_.block_of_cell(c_.cell_of(n)))];
  const int was = d;
  d += sign;
  blocks_any_down_ += (d > 0 ? 1 : 0) - (was > 0 ? 1 : 0);
  blocks_short_ += (d > cfg_.spares ? 1 : 0) - (was > cfg_.spares ? 1 : 0);
}

void Sim::set_spare(int n, bool on) {
  contrib(n, -1);
  spare_[static_cast<size_t>(n)] = on ? 1 : 0;
  block_spares_[static_cast<size_t>(index_.block_of_cell(c_.cell_of(n)))] += on ? 1 : -1;
  contrib(n, +1);
}

void Sim::refill_spare(int n) {
  if (!cfg_.reserve_spares || cfg_.spares <= 0 || spare_[static_cast<size_t>(n)] || !up(n) ||
      node_free_[static_cast<size_t>(n)] != gpn_) {
    return;
  }
  if (block_spares_[static_cast<size_t>(index_.block_of_cell(c_.cell_of(n)))] < cfg_.spares)
    set_spare(n, true);
}

void Sim::integrate() {
  const Tick now = sim_.now();
  const double dt = static_cast<double>(now - last_integral_);
  alloc_integral_ += dt * static_cast<double>(alloc_gpus_);
  busy_integral_ += dt * static_cast<double>(busy_nodes_);
  any_down_integral_ += dt * static_cast<double>(blocks_any_down_);
  short_integral_ += dt * static_cast<double>(blocks_short_);
  down_integral_ += dt * static_cast<double>(down_gpus_);
  last_integral_ = now;
}

int Sim::alloc_gpus_of(const Job& j) const {
  return j.nodes_needed > 0 ? j.nodes_needed * gpn_ : j.sub_gpus;
}

void Sim::advance_job(Job& j) {
  const Tick now = sim_.now();
  const Tick dt = now - j.seg_start;
  if (dt > 0) {
    advance(j.rs, j.ck, j.speed, dt, j.work);
    j.speed_ticks += j.speed * static_cast<double>(dt);
    j.run_ticks += dt;
  }
  j.seg_start = now;
}

void Sim::schedule_end(int id) {
  Job& j = jobs_[static_cast<size_t>(id)];
  ++j.gen;
  const Tick left = time_to_finish(j.rs, j.ck, j.speed, j.work);
  if (left >= kNever) return;
  const Tick at = sim_.now() + left;
  if (at > cfg_.horizon) return;
  const uint32_t gen = j.gen;
  sim_.schedule_at(at, [this, id, gen](engine::Simulator&) { on_end(id, gen); });
}

void Sim::update_speed(int id) {
  Job& j = jobs_[static_cast<size_t>(id)];
  double place = 1;
  if (j.speed_id >= 0 && speed_ && !j.nodes.empty()) {
    // Per-domain GPU shares of the job, in node order (Megatron rank order).
    int g = 0, mn = INT32_MAX, run = 0, dom = -1;
    for (int n : j.nodes) {
      const int d = c_.domain_of(n);
      if (d != dom) {
        if (run > 0) {
          g = std::gcd(g, run);
          mn = std::min(mn, run);
        }
        dom = d;
        run = 0;
      }
      run += gpn_;
    }
    if (run > 0) {
      g = std::gcd(g, run);
      mn = std::min(mn, run);
    }
    const double step = speed_->step_s(j.speed_id, g, mn);
    place = step > 0 ? j.best_step / step : 1.0;
  }
  double degrade = 1;
  int last = -1;
  for (int n : j.nodes) {
    const int d = c_.domain_of(n);
    if (d == last) continue;
    last = d;
    degrade = std::min(degrade, domain_speed_[static_cast<size_t>(d)]);
  }
  j.place_speed = place;
  j.speed = place * degrade;
}

void Sim::allocate(int id, const std::vector<int>& nodes, int gpus_each) {
  Job& j = jobs_[static_cast<size_t>(id)];
  integrate();
  for (int n : nodes) {
    set_free(n, node_free_[static_cast<size_t>(n)] - gpus_each);
    node_jobs_[static_cast<size_t>(n)].push_back({id, gpus_each});
    j.nodes.push_back(n);
    alloc_gpus_ += gpus_each;
  }
  std::sort(j.nodes.begin(), j.nodes.end());
  rebuild_cells(j);
}

void Sim::rebuild_cells(Job& j) {
  j.cells.clear();
  if (j.nodes_needed == 0) return;
  for (int n : j.nodes) {
    const int cell = c_.cell_of(n);
    if (!j.cells.empty() && j.cells.back().cell == cell) {
      ++j.cells.back().nodes;
    } else {
      j.cells.push_back({cell, 1});
    }
  }
}

void Sim::release_node(int id, int n) {
  auto& v = node_jobs_[static_cast<size_t>(n)];
  for (size_t k = 0; k < v.size(); ++k) {
    if (v[k].first == id) {
      const int g = v[k].second;
      v.erase(v.begin() + static_cast<long>(k));
      set_free(n, node_free_[static_cast<size_t>(n)] + g);
      alloc_gpus_ -= g;
      refill_spare(n);
      return;
    }
  }
  CT_CHECK(false, "released a node the job does not hold");
}

void Sim::release_all(int id) {
  Job& j = jobs_[static_cast<size_t>(id)];
  integrate();
  for (int n : j.nodes) release_node(id, n);
  j.nodes.clear();
  j.cells.clear();
  account_used_[static_cast<size_t>(j.spec->account)] -= job_gpus(j);
  --user_running_[static_cast<size_t>(j.spec->user)];
  remove_running(id);
  dirty_ = true;
}

void Sim::remove_running(int id) {
  const size_t p = running_pos_[static_cast<size_t>(id)];
  const int last = running_.back();
  running_[p] = last;
  running_pos_[static_cast<size_t>(last)] = p;
  running_.pop_back();
}

bool Sim::start(int id, const Placement& pl) {
  Job& j = jobs_[static_cast<size_t>(id)];
  std::vector<int> nodes;
  int each = gpn_;
  if (j.nodes_needed == 0) {
    each = j.sub_gpus;
    int node = -1;
    if (pl.sub_cell >= 0) node = sub_node_in(pl.sub_cell, j.sub_gpus);
    if (node < 0) {
      Placement exact;
      if (place(index_, pcfg_, view(), {.gpus = j.sub_gpus}, &exact))
        node = sub_node_in(exact.sub_cell, j.sub_gpus);
    }
    if (node < 0) return false;
    nodes.push_back(node);
  } else {
    for (const auto& t : pl.takes) {
      const NodeRange r = c_.cells()[static_cast<size_t>(t.cell)];
      int want = t.nodes;
      for (int n = r.first; n < r.end() && want > 0; ++n) {
        if (up(n) && node_free_[static_cast<size_t>(n)] == gpn_ &&
            !spare_[static_cast<size_t>(n)]) {
          nodes.push_back(n);
          --want;
        }
      }
      CT_CHECK(want == 0, "placement took more free nodes than a cell has");
    }
  }
  allocate(id, nodes, each);
  const Tick now = sim_.now();
  if (j.first_start < 0) {
    j.first_start = now;
  } else {
    j.requeue_wait += now - j.pending_since;
  }
  if (j.state == State::kPending) ++stale_;
  j.state = State::kRunning;
  j.attempt_start = now;
  j.seg_start = now;
  account_used_[static_cast<size_t>(j.spec->account)] += job_gpus(j);
  ++user_running_[static_cast<size_t>(j.spec->user)];
  running_pos_[static_cast<size_t>(id)] = running_.size();
  running_.push_back(id);
  update_speed(id);
  schedule_end(id);
  ++started_;
  dirty_ = true;
  return true;
}

int Sim::sub_node_in(int cell, int g) const {
  const NodeRange r = c_.cells()[static_cast<size_t>(cell)];
  const bool spread = pcfg_.sub_node == SubNodeFit::kSpread;
  int best = -1;
  for (int n = r.first; n < r.end(); ++n) {
    const int f = node_free_[static_cast<size_t>(n)];
    if (!up(n) || f < g || spare_[static_cast<size_t>(n)]) continue;
    if (spread) {
      if (best < 0 || f > node_free_[static_cast<size_t>(best)]) best = n;
      if (f == gpn_) break;
    } else {
      if (best < 0 || f < node_free_[static_cast<size_t>(best)]) best = n;
      if (f == g) break;
    }
  }
  return best;
}

PlacementRequest Sim::request(const Job& j) const {
  return {.nodes = j.nodes_needed, .gpus = j.sub_gpus, .segment = j.segment};
}

bool Sim::limited(const Job& j) const {
  if (!any_limits_) return false;
  const auto a = static_cast<size_t>(j.spec->account);
  if (cfg_.limits.enforce_account_quotas && a < w_.account_gpu_limit.size() &&
      w_.account_gpu_limit[a] > 0 && account_used_[a] + job_gpus(j) > w_.account_gpu_limit[a]) {
    return true;
  }
  return cfg_.limits.max_running_jobs_per_user > 0 &&
         user_running_[static_cast<size_t>(j.spec->user)] >= cfg_.limits.max_running_jobs_per_user;
}

}  // namespace clustertwin::scheduler::detail
