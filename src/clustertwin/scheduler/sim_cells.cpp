// A job's nodes: allocation and release on the free capacity (free_capacity.h), its speed on
// them, node failures and repairs as the simulation sees them (sim.h).

#include "clustertwin/scheduler/sim.h"

namespace clustertwin::scheduler::detail {

void Sim::down_inc(int n) {
  integrate();
  cap_.fail(n);
  dirty_ = true;
}

void Sim::down_dec(int n) {
  integrate();
  if (cap_.repair(n)) {
    dirty_ = true;
    request_pass();
  }
}

void Sim::integrate() { cap_.integrate(sim_.now()); }

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
    cap_.take(n, gpus_each);
    node_jobs_[static_cast<size_t>(n)].push_back({id, gpus_each});
    j.nodes.push_back(n);
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
      cap_.give_back(n, g);
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
        if (up(n) && cap_.free(n) == gpn_ && !cap_.spare(n)) {
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
  if (j.state == State::kPending) queue_.left();
  j.state = State::kRunning;
  j.attempt_start = now;
  j.seg_start = now;
  account_used_[static_cast<size_t>(j.spec->account)] += job_gpus(j);
  ++user_running_[static_cast<size_t>(j.spec->user)];
  running_pos_[static_cast<size_t>(id)] = running_.size();
  running_.push_back(id);
  update_speed(id);
  schedule_end(id);
  ++tally_.started;
  dirty_ = true;
  return true;
}

int Sim::sub_node_in(int cell, int g) const {
  const NodeRange r = c_.cells()[static_cast<size_t>(cell)];
  const bool spread = pcfg_.sub_node == SubNodeFit::kSpread;
  int best = -1;
  for (int n = r.first; n < r.end(); ++n) {
    const int f = cap_.free(n);
    if (!up(n) || f < g || cap_.spare(n)) continue;
    if (spread) {
      if (best < 0 || f > cap_.free(best)) best = n;
      if (f == gpn_) break;
    } else {
      if (best < 0 || f < cap_.free(best)) best = n;
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
