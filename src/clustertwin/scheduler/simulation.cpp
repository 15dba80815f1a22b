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

namespace {

double secs(Tick t) { return static_cast<double>(t) * 1e-9; }
// A duration drawn or derived inside a run (a repair, a checkpoint interval), held at 40
// years (kMaxDurationS, scheduler/limits.h) so that adding it to any time of a run (at most 250
// years) still fits in a Tick; longer durations do not occur in runs that mean anything.
Tick ticks(double s) { return engine::to_ticks(base::seconds(std::clamp(s, 0.0, kMaxDurationS))); }

enum class State : uint8_t { kFuture, kPending, kRunning, kDone };

struct Job {
  const JobSpec* spec = nullptr;
  int nodes_needed = 0;  // whole nodes; 0 for a sub-node job
  int sub_gpus = 0;      // GPUs of a sub-node job
  int segment = 0;
  State state = State::kFuture;
  std::vector<int> nodes;       // allocated nodes, sorted
  std::vector<CellTake> cells;  // whole nodes per cell (for plans)
  RunState rs;
  CheckpointPolicy ck;
  double work = 0;
  double speed = 1, place_speed = 1;
  Tick seg_start = 0, attempt_start = 0, first_start = -1, end = -1, pending_since = 0;
  Tick time_limit = 0;  // spec->time_limit, kept here: the backfill plan reads it every pass
  uint32_t gen = 0;
  int interruptions = 0, hot_swaps = 0, requeues = 0, preemptions = 0;
  Tick lost_ticks = 0, requeue_wait = 0;
  double lost_gpu_s = 0;
  int speed_id = -1;
  double best_step = 0;
  double prio = 0;
  double speed_ticks = 0;  // sum of speed x running ticks (for the mean speed)
  Tick run_ticks = 0;
  bool training = false;
};

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

double lognormal_sigma(double median, double mean) {
  return mean > median && median > 0 ? std::sqrt(2.0 * std::log(mean / median)) : 0.0;
}

class Sim {
 public:
  Sim(const ClusterModel& c, Workload w, const SimConfig& cfg, SpeedModel* speed)
      : c_(c),
        index_(c),
        w_(std::move(w)),
        cfg_(cfg),
        speed_(speed),
        rng_(cfg.seed),
        fail_rng_(rng_.stream(1)),
        repair_rng_(rng_.stream(2)) {
    gpn_ = c_.gpus_per_node();
    pcfg_ = cfg_.placement;
    if (cfg_.spares > 0 &&
        (pcfg_.policy == PlacementPolicy::kBlock || pcfg_.policy == PlacementPolicy::kKueue)) {
      pcfg_.segment_nodes = index_.block_nodes() - cfg_.spares;
    }
  }

  ScheduleResult run();
  /// run() stopped at the engine's event limit: its result is partial and not to be shown.
  [[nodiscard]] bool stopped_at_event_limit() const { return stopped_at_event_limit_; }
  [[nodiscard]] Tick stopped_at() const { return stopped_at_; }

 private:
  bool stopped_at_event_limit_ = false;
  Tick stopped_at_ = 0;
  // --- cluster state -------------------------------------------------------------------
  void contrib(int n, int sign) {
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
    cell_hist_[static_cast<size_t>(cell) * static_cast<size_t>(gpn_ + 1) +
               static_cast<size_t>(f)] += sign;
  }
  void set_free(int n, int f) {
    const int was = node_free_[static_cast<size_t>(n)];
    if (f > was) ++free_epoch_;
    busy_nodes_ += (f < gpn_ ? 1 : 0) - (was < gpn_ ? 1 : 0);
    contrib(n, -1);
    node_free_[static_cast<size_t>(n)] = f;
    contrib(n, +1);
  }
  void down_inc(int n) {
    integrate();
    if (node_down_[static_cast<size_t>(n)] == 0) {
      contrib(n, -1);
      down_gpus_ += gpn_;
      block_down_change(n, +1);
    }
    ++node_down_[static_cast<size_t>(n)];
    dirty_ = true;
  }
  void down_dec(int n) {
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
  [[nodiscard]] bool up(int n) const { return node_down_[static_cast<size_t>(n)] == 0; }

  // Down nodes per base block (an NVL72 rack; a leaf group on HGX), the blocks with any down
  // (ref §3.4's racks with a tray down) and those with more down than the spares per block
  // (short of a full segment). The caller integrates first.
  void block_down_change(int n, int sign) {
    int& d = block_down_[static_cast<size_t>(index_.block_of_cell(c_.cell_of(n)))];
    const int was = d;
    d += sign;
    blocks_any_down_ += (d > 0 ? 1 : 0) - (was > 0 ? 1 : 0);
    blocks_short_ += (d > cfg_.spares ? 1 : 0) - (was > cfg_.spares ? 1 : 0);
  }

  // Reserved hot spares: free nodes withheld from placement, `spares` per base block.
  void set_spare(int n, bool on) {
    contrib(n, -1);
    spare_[static_cast<size_t>(n)] = on ? 1 : 0;
    block_spares_[static_cast<size_t>(index_.block_of_cell(c_.cell_of(n)))] += on ? 1 : -1;
    contrib(n, +1);
  }
  void refill_spare(int n) {
    if (!cfg_.reserve_spares || cfg_.spares <= 0 || spare_[static_cast<size_t>(n)] || !up(n) ||
        node_free_[static_cast<size_t>(n)] != gpn_) {
      return;
    }
    if (block_spares_[static_cast<size_t>(index_.block_of_cell(c_.cell_of(n)))] < cfg_.spares)
      set_spare(n, true);
  }
  FreeView view() const { return {cell_nodes_, cell_gpus_, cell_hist_}; }

  void integrate() {
    const Tick now = sim_.now();
    const double dt = static_cast<double>(now - last_integral_);
    alloc_integral_ += dt * static_cast<double>(alloc_gpus_);
    busy_integral_ += dt * static_cast<double>(busy_nodes_);
    any_down_integral_ += dt * static_cast<double>(blocks_any_down_);
    short_integral_ += dt * static_cast<double>(blocks_short_);
    down_integral_ += dt * static_cast<double>(down_gpus_);
    last_integral_ = now;
  }

  // --- jobs ------------------------------------------------------------------------------
  int job_gpus(const Job& j) const { return j.spec->gpus; }
  int alloc_gpus_of(const Job& j) const {
    return j.nodes_needed > 0 ? j.nodes_needed * gpn_ : j.sub_gpus;
  }

  void advance_job(Job& j) {
    const Tick now = sim_.now();
    const Tick dt = now - j.seg_start;
    if (dt > 0) {
      advance(j.rs, j.ck, j.speed, dt, j.work);
      j.speed_ticks += j.speed * static_cast<double>(dt);
      j.run_ticks += dt;
    }
    j.seg_start = now;
  }

  void schedule_end(int id) {
    Job& j = jobs_[static_cast<size_t>(id)];
    ++j.gen;
    const Tick left = time_to_finish(j.rs, j.ck, j.speed, j.work);
    if (left >= kNever) return;
    const Tick at = sim_.now() + left;
    if (at > cfg_.horizon) return;
    const uint32_t gen = j.gen;
    sim_.schedule_at(at, [this, id, gen](engine::Simulator&) { on_end(id, gen); });
  }

  void update_speed(int id) {
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

  void allocate(int id, const std::vector<int>& nodes, int gpus_each) {
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

  void rebuild_cells(Job& j) {
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

  void release_node(int id, int n) {
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

  void release_all(int id) {
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

  void remove_running(int id) {
    const size_t p = running_pos_[static_cast<size_t>(id)];
    const int last = running_.back();
    running_[p] = last;
    running_pos_[static_cast<size_t>(last)] = p;
    running_.pop_back();
  }

  // Picks concrete nodes for a placement and starts the job.
  bool start(int id, const Placement& pl) {
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

  // The node of `cell` for a sub-node job of g GPUs: the fullest that fits (pack) or the
  // emptiest (spread), lowest index on ties.
  int sub_node_in(int cell, int g) const {
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

  PlacementRequest request(const Job& j) const {
    return {.nodes = j.nodes_needed, .gpus = j.sub_gpus, .segment = j.segment};
  }

  bool limited(const Job& j) const {
    if (!any_limits_) return false;
    const auto a = static_cast<size_t>(j.spec->account);
    if (cfg_.limits.enforce_account_quotas && a < w_.account_gpu_limit.size() &&
        w_.account_gpu_limit[a] > 0 && account_used_[a] + job_gpus(j) > w_.account_gpu_limit[a]) {
      return true;
    }
    return cfg_.limits.max_running_jobs_per_user > 0 &&
           user_running_[static_cast<size_t>(j.spec->user)] >=
               cfg_.limits.max_running_jobs_per_user;
  }

  // --- priority --------------------------------------------------------------------------
  double priority(const Job& j) const {
    if (cfg_.priority.mode == PriorityMode::kBasic) return -secs(j.spec->submit);
    const auto& p = cfg_.priority;
    const double age = std::min(1.0, secs(sim_.now() - j.spec->submit) / secs(p.max_age));
    const double size = static_cast<double>(job_gpus(j)) / static_cast<double>(c_.gpus());
    const double qos = j.spec->qos == Qos::kHigh ? 1.0 : j.spec->qos == Qos::kNormal ? 0.5 : 0.0;
    return p.weight_age * age +
           p.weight_fairshare * fairshare_[static_cast<size_t>(j.spec->account)] +
           p.weight_size * size + p.weight_qos * qos;
  }
  bool before(int a, int b) const {
    const Job& x = jobs_[static_cast<size_t>(a)];
    const Job& y = jobs_[static_cast<size_t>(b)];
    if (x.prio != y.prio) return x.prio > y.prio;
    if (x.spec->submit != y.spec->submit) return x.spec->submit < y.spec->submit;
    return a < b;
  }
  void enqueue(int id) {
    Job& j = jobs_[static_cast<size_t>(id)];
    if (j.first_start >= 0 && stale_ > 0) compact_queues();  // a requeue: drop its old entry
    j.state = State::kPending;
    j.pending_since = sim_.now();
    j.prio = priority(j);
    auto it = std::upper_bound(pending_.begin(), pending_.end(), id,
                               [this](int a, int b) { return before(a, b); });
    pending_.insert(it, id);
    auto& pp = part_pending_[static_cast<size_t>(j.spec->partition)];
    pp.insert(
        std::upper_bound(pp.begin(), pp.end(), id, [this](int a, int b) { return before(a, b); }),
        id);
    dirty_ = true;
    request_pass();
  }
  void recompute_priorities() {
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
      for (int id : pending_)
        jobs_[static_cast<size_t>(id)].prio = priority(jobs_[static_cast<size_t>(id)]);
      std::stable_sort(pending_.begin(), pending_.end(),
                       [this](int a, int b) { return before(a, b); });
      for (auto& pp : part_pending_) {
        std::stable_sort(pp.begin(), pp.end(), [this](int a, int b) { return before(a, b); });
      }
    }
    sim_.schedule_in(cfg_.priority.calc_period,
                     [this](engine::Simulator&) { recompute_priorities(); });
  }

  // --- scheduling passes -----------------------------------------------------------------
  void request_pass() {
    if (pass_pending_) return;
    pass_pending_ = true;
    sim_.schedule_at(sim_.now(), [this](engine::Simulator&) { main_pass(); });
  }

  // Started jobs leave the queues lazily: every reader skips entries that are no longer
  // pending, and the vectors are compacted once half of them are stale (amortised O(1)).
  void erase_started() {
    if (2 * stale_ > pending_.size()) compact_queues();
  }
  void compact_queues() {
    auto gone = [this](int id) { return jobs_[static_cast<size_t>(id)].state != State::kPending; };
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(), gone), pending_.end());
    for (auto& pp : part_pending_) pp.erase(std::remove_if(pp.begin(), pp.end(), gone), pp.end());
    stale_ = 0;
  }

  // Drops the started jobs at the front of a queue: a pass starts jobs from the front, and
  // every later pass would walk over them again until the next compaction. Returns how many.
  size_t drop_started_front(std::vector<int>& q) {
    size_t k = 0;
    while (k < q.size() && jobs_[static_cast<size_t>(q[k])].state != State::kPending) ++k;
    if (k > 0) q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(k));
    return k;
  }

  // Slurm's main loop: pending jobs in priority order, each started if it fits; the first one
  // that does not blocks the rest of its partition. The partitions' queues are merged by
  // priority, so a blocked partition costs nothing more.
  void main_pass() {
    pass_pending_ = false;
    bool any = false;
    Placement pl;
    const size_t P = part_pending_.size();
    for (auto& pp : part_pending_) drop_started_front(pp);
    pos_.assign(P, 0);
    std::fill(blocked_.begin(), blocked_.end(), 0);
    while (true) {
      int best = -1;
      size_t best_p = 0;
      for (size_t p = 0; p < P; ++p) {
        auto& pp = part_pending_[p];
        while (!blocked_[p] && pos_[p] < pp.size() &&
               jobs_[static_cast<size_t>(pp[pos_[p]])].state != State::kPending) {
          ++pos_[p];
        }
        if (blocked_[p] || pos_[p] >= pp.size()) continue;
        const int id = pp[pos_[p]];
        if (best < 0 || before(id, best)) {
          best = id;
          best_p = p;
        }
      }
      if (best < 0) break;
      ++pos_[best_p];
      const int id = best;
      Job& j = jobs_[static_cast<size_t>(id)];
      if (limited(j)) continue;
      // Nothing was freed since this job last failed to fit: it still does not. (A job that may
      // preempt is tried every time: a victim may have started since.)
      const bool may_preempt = cfg_.preempt.enabled && j.spec->qos == Qos::kHigh;
      const bool known =
          !may_preempt && head_job_[best_p] == id && head_epoch_[best_p] == free_epoch_;
      if (!known) {
        // Fewer free nodes (GPUs, segments) in the whole cluster than the job needs: no placement
        // can exist (a cheap test for a large gang at the head of the queue).
        const bool room = may_fit(j, free_nodes_total_, free_gpus_total_, segment_capacity(j));
        if (room && place(index_, pcfg_, view(), request(j), &pl) && start(id, pl)) {
          any = true;
          continue;
        }
        if (cfg_.preempt.enabled && j.spec->qos == Qos::kHigh && try_preempt(id)) {
          any = true;
          continue;
        }
        head_job_[best_p] = id;
        head_epoch_[best_p] = free_epoch_;
      }
      blocked_[best_p] = 1;
    }
    if (any) erase_started();
    flush_requeues();
  }

  bool try_preempt(int id) {
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
    std::vector<int> n(cell_nodes_), g(cell_gpus_);
    Placement pl;
    std::vector<int> victims;
    for (size_t k = 0; k < cand.size() && static_cast<int>(k) < cfg_.preempt.max_victims; ++k) {
      const Job& v = jobs_[static_cast<size_t>(cand[k])];
      for (int node : v.nodes) {
        if (!up(node)) continue;
        const int cell = c_.cell_of(node);
        const int held = v.nodes_needed > 0 ? gpn_ : v.sub_gpus;
        g[static_cast<size_t>(cell)] += held;
        if (node_free_[static_cast<size_t>(node)] + held == gpn_) ++n[static_cast<size_t>(cell)];
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

  // A stateless job (a serving replica) keeps what it did: nothing to recompute.
  static void keep_if_stateless(Job& j) {
    if (!j.spec->stateless) return;
    j.rs.saved = j.rs.computed;
    j.rs.compute_since_save = 0;
  }

  void preempt(int id) {
    Job& j = jobs_[static_cast<size_t>(id)];
    advance_job(j);
    keep_if_stateless(j);
    Tick lost = 0;
    const double lw = interrupt(j.rs, j.ck, &lost);
    (void)lw;
    j.lost_ticks += lost;
    j.lost_gpu_s += secs(lost) * job_gpus(j);
    ++j.preemptions;
    ++preemptions_;
    ++j.gen;
    release_all(id);
    j.state = State::kFuture;  // requeued after the pass (flush_requeues), not seen before
    j.pending_since = sim_.now();
    requeue_.push_back(id);
  }

  void flush_requeues() {
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

  // The backfill plan: free counts per cell now plus changes at future times.
  struct Delta {
    Tick t;
    int cell, dn, dg;
  };
  std::vector<int> plan_n_, plan_g_;
  std::vector<Delta> plan_;

  Tick round_up(Tick t) const {
    const Tick r = cfg_.backfill.resolution;
    return r > 0 ? (t + r - 1) / r * r : t;
  }

  void build_plan() {
    const Tick now = sim_.now();
    plan_n_ = cell_nodes_;
    plan_g_ = cell_gpus_;
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
    if (sub_free_.size() != node_free_.size()) {
      sub_free_.assign(node_free_.size(), 0);
      sub_stamp_.assign(node_free_.size(), 0);
    }
    ++sub_pass_;
    for (const auto& s : subs) {
      if (!up(s.node)) continue;
      const auto n = static_cast<size_t>(s.node);
      if (sub_stamp_[n] != sub_pass_) {
        sub_stamp_[n] = sub_pass_;
        sub_free_[n] = node_free_[n];
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

  // Adds deltas to the plan as if each were inserted after those of equal time, in order; the
  // sorted plan takes them in one merge (a reservation of a large gang adds one per rack).
  void plan_add(std::vector<Delta>& batch) {
    if (batch.empty()) return;
    const auto by_t = [](const Delta& a, const Delta& b) { return a.t < b.t; };
    for (const auto& d : batch) {
      auto& cl = cell_deltas_[static_cast<size_t>(d.cell)];
      cl.insert(std::upper_bound(cl.begin(), cl.end(), d.t,
                                 [](Tick t, const Delta& x) { return t < x.t; }),
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

  // Per-cell delta lists and the cells that ever lose capacity in the plan (reservations):
  // only those can make the minimum over a window smaller than the value at its start.
  void index_plan() {
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

  // Segment capacity of the free nodes `n` per cell: sum over blocks of floor(free / seg).
  int64_t segment_capacity(std::span<const int> n, int seg) const {
    int64_t cap = 0;
    for (int b = 0; b < index_.blocks(); ++b) {
      const NodeRange r = index_.block_cells(b);
      int f = 0;
      for (int c = r.first; c < r.end(); ++c) f += std::max(0, n[static_cast<size_t>(c)]);
      cap += f / seg;
    }
    return cap;
  }

  // Whether a placement of `j` can exist at all (necessary; exact for block and kueue-preferred
  // with segments, and for tree and first-fit with nodes), from totals and segment capacity.
  bool may_fit(const Job& j, int64_t total_n, int64_t total_g, int64_t cap) const {
    if (j.nodes_needed == 0) return total_g >= j.sub_gpus;
    if (total_n < j.nodes_needed) return false;
    const bool segmented =
        pcfg_.policy == PlacementPolicy::kBlock || pcfg_.policy == PlacementPolicy::kKueue;
    return !segmented || cap >= (j.nodes_needed + j.segment - 1) / j.segment;
  }

  struct Touch {
    int cell, n, g;
  };

  // Lowers the cells of `n`/`g` (the state at `t`) to their minimum over [t, t + limit) and
  // reports the change of totals and segment capacity; `undo` restores them.
  void window_min(std::vector<int>& n, std::vector<int>& g, Tick t, Tick limit, int seg,
                  std::vector<Touch>& undo, int64_t* dtotal_n, int64_t* dtotal_g, int64_t* dcap) {
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

  // window_min at the present, cached: the result only changes where the window's end passes
  // a delta of a cell that loses capacity, so jobs whose limits fall between two such times
  // share it. Returns the lowest running sum of each such cell's changes over the window (they
  // do not depend on where the cell starts), or nullptr when nothing is lost in the window;
  // `key` names the window end (up to the next relevant change).
  const std::vector<Touch>* now_drops(Tick limit, size_t* key) {
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

  // Lowers the plan's present arrays by `drops` (undo_ set; restore() puts them back) and
  // reports the change of totals and, with seg > 0, of segment capacity.
  void lower_now(const std::vector<Touch>& drops, int seg, int64_t* dn, int64_t* dg,
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

  // The changes of totals and segment capacity that lowering the present by the window
  // `key` makes, cached per (window end, segment) until the plan's present changes: most tested
  // jobs fail on these totals alone, without lowering the arrays.
  struct Totals {
    int64_t dn = 0, dg = 0, dcap = 0;
  };
  Totals now_totals(const std::vector<Touch>& drops, size_t key, int seg) {
    auto [it, fresh] = now_totals_.try_emplace({key, seg});
    if (fresh) {
      lower_now(drops, seg, &it->second.dn, &it->second.dg, &it->second.dcap);
      restore(plan_n_, plan_g_, undo_);
      undo_.clear();
    }
    return it->second;
  }

  // undo_ holds (cell, new n, new g): writes them into n/g, sums the changes of totals and of
  // segment capacity (blocks summed before and after), and leaves undo_ holding the old values.
  void apply_lowered(std::vector<int>& n, std::vector<int>& g, int seg, int64_t* dn, int64_t* dg,
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

  static void restore(std::vector<int>& n, std::vector<int>& g, const std::vector<Touch>& undo) {
    for (const auto& u : undo) {
      n[static_cast<size_t>(u.cell)] = u.n;
      g[static_cast<size_t>(u.cell)] = u.g;
    }
  }

  // Segments of the job's size that the free nodes of every block hold now (kept up to date by
  // contrib() for every segment size of the workload).
  int64_t segment_capacity(const Job& j) const {
    const int seg = seg_of(j);
    if (seg <= 0) return 0;
    for (const auto& [s, cap] : seg_cap_) {
      if (s == seg) return cap;
    }
    CT_CHECK(false, "a segment size that run() did not track");
    return 0;
  }

  int seg_of(const Job& j) const {
    const bool segmented =
        pcfg_.policy == PlacementPolicy::kBlock || pcfg_.policy == PlacementPolicy::kKueue;
    return segmented && j.nodes_needed > 0 ? j.segment : 0;
  }

  // Earliest start of `j` on the plan, not before `from`; fills `pl` and `at`. With
  // `now_only`, only the present is tried (a job that would get no reservation anyway).
  bool earliest(const Job& j, Tick from, bool now_only, Tick* at, Placement* pl) {
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
        if (j.nodes_needed == 0 && undo_.empty()) v.node_hist = cell_hist_;  // exact now
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

  void apply_delta(const Delta& d, int seg, int64_t* total_n, int64_t* total_g, int64_t* cap) {
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

  void reserve_in_plan(const Job& j, const Placement& pl, Tick t) {
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

  void take_now(int cell, int dn, int dg) {
    plan_n_[static_cast<size_t>(cell)] -= dn;
    plan_g_[static_cast<size_t>(cell)] -= dg;
    base_total_n_ -= dn;
    base_total_g_ -= dg;
    base_cap_.clear();
    now_totals_.clear();
  }

  // Whether a capacity loss of the plan falls inside (t, t + limit).
  bool loss_within(Tick t, Tick limit) const {
    auto it = std::upper_bound(neg_t_.begin(), neg_t_.end(), t);
    return it != neg_t_.end() && *it < t + limit;
  }

  // A job the pass just started: take what it actually got out of the plan until its limit.
  void reserve_started(const Job& j) {
    const Tick end = round_up(sim_.now() + std::max<Tick>(j.spec->time_limit, 1));
    auto take = [&](int cell, int dn, int dg) {
      take_now(cell, dn, dg);
      batch_.push_back({end, cell, dn, dg});
    };
    if (j.nodes_needed > 0) {
      for (const auto& ct : j.cells) take(ct.cell, ct.nodes, ct.nodes * gpn_);
    } else {
      for (int n : j.nodes) {
        const bool was_whole = node_free_[static_cast<size_t>(n)] + j.sub_gpus == gpn_;
        take(c_.cell_of(n), was_whole ? 1 : 0, j.sub_gpus);
      }
    }
    plan_add(batch_);
  }

  void backfill_pass() {
    sim_.schedule_in(cfg_.backfill.interval, [this](engine::Simulator&) { backfill_pass(); });
    if (!dirty_ || pending_.empty()) return;
    dirty_ = false;
    ++backfill_passes_;
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

  // --- job end and interruptions ---------------------------------------------------------
  void on_end(int id, uint32_t gen) {
    Job& j = jobs_[static_cast<size_t>(id)];
    if (j.gen != gen || j.state != State::kRunning) return;
    advance_job(j);
    j.rs.computed = j.work;
    j.state = State::kDone;
    j.end = sim_.now();
    release_all(id);
    ++finished_;
    request_pass();
  }

  // A failure took nodes down (or, with no nodes, hit the job's software): lose the work since
  // the last checkpoint, then swap spares in or requeue.
  void interrupt_job(int id) {
    Job& j = jobs_[static_cast<size_t>(id)];
    if (j.state != State::kRunning) return;
    advance_job(j);
    keep_if_stateless(j);
    Tick lost = 0;
    interrupt(j.rs, j.ck, &lost);
    j.lost_ticks += lost;
    j.lost_gpu_s += secs(lost) * job_gpus(j);
    ++j.interruptions;
    ++interruptions_;
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
          if (spare_[static_cast<size_t>(n)]) set_spare(n, false);
        }
        for (int n : failed) {
          release_node(id, n);
          j.nodes.erase(std::find(j.nodes.begin(), j.nodes.end(), n));
        }
        allocate(id, repl, j.nodes_needed > 0 ? gpn_ : j.sub_gpus);
        ++j.hot_swaps;
        ++hot_swaps_;
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
    ++requeues_;
    enqueue(id);
  }

  // A free node to replace `failed`: in the same NVLink domain; for single-node domains, or
  // policies that do not keep jobs in domains, then the same leaf, then anywhere.
  int replacement(const Job& j, int failed, int need_free, const std::vector<int>& taken) const {
    auto ok = [&](int n) {
      return up(n) && node_free_[static_cast<size_t>(n)] >= need_free &&
             (need_free < gpn_ || node_free_[static_cast<size_t>(n)] == gpn_) &&
             std::find(taken.begin(), taken.end(), n) == taken.end() &&
             !std::binary_search(j.nodes.begin(), j.nodes.end(), n);
    };
    const NodeRange d = c_.domains()[static_cast<size_t>(c_.domain_of(failed))];
    for (int pass = 0; pass < 2; ++pass) {  // reserved spares first, then any free node
      for (int n = d.first; n < d.end(); ++n) {
        if ((pass == 1 || spare_[static_cast<size_t>(n)]) && ok(n)) return n;
      }
    }
    const bool domain_bound =
        c_.max_domain_nodes() > 1 &&
        (pcfg_.policy == PlacementPolicy::kBlock || pcfg_.policy == PlacementPolicy::kKueue);
    if (domain_bound) return -1;
    const NodeRange l = c_.leaves()[static_cast<size_t>(c_.leaf_of(failed))];
    for (int pass = 0; pass < 2; ++pass) {
      for (int n = l.first; n < l.end(); ++n) {
        if ((pass == 1 || spare_[static_cast<size_t>(n)]) && ok(n)) return n;
      }
    }
    for (size_t cell = 0; cell < c_.cells().size(); ++cell) {
      if (cell_gpus_[cell] < need_free) continue;
      const NodeRange r = c_.cells()[cell];
      for (int n = r.first; n < r.end(); ++n) {
        if (ok(n)) return n;
      }
    }
    return -1;
  }

  std::vector<int> jobs_on(const std::vector<int>& nodes) const {
    std::vector<int> ids;
    for (int n : nodes) {
      for (const auto& [id, g] : node_jobs_[static_cast<size_t>(n)]) ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
  }

  // --- failures --------------------------------------------------------------------------
  void record(const std::string& cls, FailureScope scope, int target, int jobs_hit, int64_t gpus,
              double repair_s) {
    ++failures_;
    ++failures_by_class_[cls];
    if (failure_log_.size() < 10000) {
      failure_log_.push_back({secs(sim_.now()), cls, scope, target, jobs_hit, gpus, repair_s});
    }
  }

  double draw_repair_s(const FailureClass& fc) {
    const double sigma = lognormal_sigma(fc.repair_median_h, fc.repair_mean_h);
    return repair_rng_.lognormal(fc.repair_median_h, sigma) * 3600.0;
  }

  void take_down(const std::vector<int>& nodes, double repair_s, const std::string& cls,
                 FailureScope scope, int target) {
    for (int n : nodes) down_inc(n);
    const auto hit = jobs_on(nodes);
    for (int id : hit) interrupt_job(id);
    interrupts_by_class_[cls] += static_cast<int64_t>(hit.size());
    record(cls, scope, target, static_cast<int>(hit.size()),
           static_cast<int64_t>(nodes.size()) * gpn_, repair_s);
    sim_.schedule_in(ticks(repair_s), [this, nodes](engine::Simulator&) {
      for (int n : nodes) down_dec(n);
    });
    request_pass();
  }

  // A burst of node failures at one instant: every node down, each job on them interrupted
  // once, a repair drawn per node.
  void take_down_burst(const std::vector<int>& nodes, const FailureClass& fc) {
    for (int n : nodes) down_inc(n);
    const auto hit = jobs_on(nodes);
    for (int id : hit) interrupt_job(id);
    interrupts_by_class_[fc.name] += static_cast<int64_t>(hit.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const int n = nodes[i];
      const double repair_s = draw_repair_s(fc);
      record(fc.name, fc.scope, n, i == 0 ? static_cast<int>(hit.size()) : 0, gpn_, repair_s);
      sim_.schedule_in(ticks(repair_s), [this, n](engine::Simulator&) { down_dec(n); });
    }
    request_pass();
  }

  void schedule_failure() {
    double total = 0;
    rates_.clear();
    for (const auto& fc : cfg_.failures.model.classes) {
      double units = 0;
      switch (fc.scope) {
        case FailureScope::kJob:
        case FailureScope::kNode:
          units = static_cast<double>(c_.gpus());
          break;
        case FailureScope::kDomainStop:
        case FailureScope::kDomainDegrade:
          units = static_cast<double>(c_.domains().size());
          break;
        case FailureScope::kLeaf:
          units = static_cast<double>(c_.leaves().size());
          break;
      }
      if (fc.scope == FailureScope::kNode) units /= cfg_.failures.model.mean_burst();
      rates_.push_back(fc.rate_per_hour * units);
      total += rates_.back();
    }
    if (total <= 0) return;
    const double dt_s = fail_rng_.exponential(3600.0 / total);
    if (!(dt_s < secs(cfg_.horizon - sim_.now()))) return;  // beyond the horizon (or never)
    const Tick at = sim_.now() + ticks(dt_s);
    if (at > cfg_.horizon) return;
    sim_.schedule_at(at, [this](engine::Simulator&) {
      on_random_failure();
      schedule_failure();
    });
  }

  int pick_node() {
    // Lemon nodes are picked lemon_multiplier times as often.
    const double m = cfg_.failures.model.lemon_multiplier;
    const double wl = static_cast<double>(lemons_.size()) * m;
    const double wg = static_cast<double>(c_.nodes()) - static_cast<double>(lemons_.size());
    if (!lemons_.empty() && fail_rng_.uniform() * (wl + wg) < wl) {
      return lemons_[static_cast<size_t>(fail_rng_.below(static_cast<int64_t>(lemons_.size())))];
    }
    // A uniform node that is not a lemon (rejection; lemons are a minority).
    while (true) {
      const int n = static_cast<int>(fail_rng_.below(c_.nodes()));
      if (!is_lemon_[static_cast<size_t>(n)]) return n;
    }
  }

  void on_random_failure() {
    const auto k = fail_rng_.choose(rates_);
    const FailureClass& fc = cfg_.failures.model.classes[k];
    switch (fc.scope) {
      case FailureScope::kJob: {
        const int n = static_cast<int>(fail_rng_.below(c_.nodes()));
        const int gpu = static_cast<int>(fail_rng_.below(gpn_));
        int acc = 0;
        for (const auto& [id, g] : node_jobs_[static_cast<size_t>(n)]) {
          acc += g;
          if (gpu < acc) {
            record(fc.name, fc.scope, n, 1, 0, 0);
            ++interrupts_by_class_[fc.name];
            interrupt_job(id);
            request_pass();
            return;
          }
        }
        return;  // an idle GPU: nothing to interrupt
      }
      case FailureScope::kNode: {
        const auto& bursts = cfg_.failures.model.burst_weights;
        if (!bursts.empty()) {
          const size_t size = fail_rng_.choose(bursts) + 1;
          std::vector<int> nodes;
          for (size_t i = 0; i < size; ++i) {
            const int n = pick_node();
            if (up(n) && std::find(nodes.begin(), nodes.end(), n) == nodes.end())
              nodes.push_back(n);
          }
          if (!nodes.empty()) take_down_burst(nodes, fc);
          return;
        }
        const int n = pick_node();
        if (!up(n)) return;  // thinning: a down node does not fail again
        take_down({n}, draw_repair_s(fc), fc.name, fc.scope, n);
        return;
      }
      case FailureScope::kDomainStop: {
        const int d = static_cast<int>(fail_rng_.below(static_cast<int64_t>(c_.domains().size())));
        const NodeRange r = c_.domains()[static_cast<size_t>(d)];
        std::vector<int> nodes(static_cast<size_t>(r.count));
        std::iota(nodes.begin(), nodes.end(), r.first);
        take_down(nodes, draw_repair_s(fc), fc.name, fc.scope, d);
        return;
      }
      case FailureScope::kDomainDegrade: {
        const int d = static_cast<int>(fail_rng_.below(static_cast<int64_t>(c_.domains().size())));
        if (domain_speed_[static_cast<size_t>(d)] < 1.0) return;
        const double repair_s = draw_repair_s(fc);
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
        const int l = static_cast<int>(fail_rng_.below(static_cast<int64_t>(c_.leaves().size())));
        const NodeRange r = c_.leaves()[static_cast<size_t>(l)];
        std::vector<int> nodes(static_cast<size_t>(r.count));
        std::iota(nodes.begin(), nodes.end(), r.first);
        take_down(nodes, draw_repair_s(fc), fc.name, fc.scope, l);
        return;
      }
    }
  }

  void set_domain_speed(int d, double s) {
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

  void schedule_replay() {
    for (const auto& f : cfg_.failures.replay) {
      if (f.start > cfg_.horizon) continue;
      const int n = f.node;
      const std::string cls = f.cls;
      const Tick dur = f.end - f.start;
      sim_.schedule_at(f.start, [this, n, cls, dur](engine::Simulator&) {
        down_inc(n);
        const auto hit = jobs_on({n});
        for (int id : hit) interrupt_job(id);
        interrupts_by_class_[cls.empty() ? "replay" : cls] += static_cast<int64_t>(hit.size());
        record(cls.empty() ? "replay" : cls, FailureScope::kNode, n, static_cast<int>(hit.size()),
               gpn_, secs(dur));
        request_pass();
      });
      sim_.schedule_at(f.end, [this, n](engine::Simulator&) { down_dec(n); });
    }
  }

  void sample() {
    TimelineSample s;
    s.t_s = secs(sim_.now());
    s.allocated_gpus = alloc_gpus_;
    s.busy_nodes = busy_nodes_;
    s.down_gpus = down_gpus_;
    for (int id : pending_) {
      const Job& j = jobs_[static_cast<size_t>(id)];
      if (j.state != State::kPending) continue;
      ++s.pending_jobs;
      s.pending_gpus += job_gpus(j);
    }
    s.running_jobs = static_cast<int64_t>(running_.size());
    const auto f = fragmentation(index_, pcfg_, view());
    s.partial_domains = f.partial_domains;
    s.free_blocks = f.free_blocks;
    s.stranded_gpus = f.stranded_gpus;
    for (double sp : domain_speed_) s.degraded_domains += sp < 1.0 ? 1 : 0;
    timeline_.push_back(s);
    const Tick next = sim_.now() + sample_every_;
    if (next <= cfg_.horizon) sim_.schedule_at(next, [this](engine::Simulator&) { sample(); });
  }

  void arrive(size_t k) {
    const int id = static_cast<int>(k);
    enqueue(id);
    // Stream the next arrival, so the event queue holds one arrival at a time.
    const size_t next = k + 1;
    if (next < jobs_.size() && jobs_[next].spec->submit <= cfg_.horizon) {
      sim_.schedule_at(jobs_[next].spec->submit,
                       [this, next](engine::Simulator&) { arrive(next); });
    }
  }

  ScheduleResult results();

  const ClusterModel& c_;
  PlacementIndex index_;
  Workload w_;
  SimConfig cfg_;
  PlacementConfig pcfg_;
  SpeedModel* speed_;
  Rng rng_, fail_rng_, repair_rng_;
  engine::Simulator sim_;
  int gpn_ = 1;
  std::vector<Job> jobs_;
  std::vector<int> node_free_, node_down_;
  std::vector<std::vector<std::pair<int, int>>> node_jobs_;
  std::vector<int> cell_nodes_, cell_gpus_, cell_hist_;
  std::vector<double> domain_speed_;
  std::vector<char> is_lemon_, spare_;
  std::vector<int> block_spares_;
  std::vector<int> lemons_;
  std::vector<int> pending_, running_, requeue_;
  std::vector<size_t> running_pos_;
  std::vector<int64_t> account_used_;
  std::vector<int> user_running_;
  std::vector<double> usage_, fairshare_;
  Tick last_usage_ = 0;
  bool pass_pending_ = false, dirty_ = false;
  uint64_t free_epoch_ = 0;
  std::vector<char> blocked_;                   // per partition, within a main pass
  std::vector<std::vector<int>> part_pending_;  // pending jobs per partition, by priority
  std::vector<size_t> pos_;
  size_t stale_ = 0;                            // entries of pending_ that are no longer pending
  std::vector<int> user_tested_, part_tested_;  // backfill jobs tested per user, partition
  bool any_limits_ = true;     // false: no account quota or user limit, limited() is always false
  std::vector<int> head_job_;  // per partition: the job that last blocked it
  std::vector<uint64_t> head_epoch_;  // ... and the free epoch it failed at
  std::vector<double> rates_;
  // scratch for earliest()
  std::vector<int> cur_n_, cur_g_, cur_bn_, touched_blocks_;
  std::vector<std::vector<Delta>> cell_deltas_;
  std::vector<char> neg_flag_;
  std::vector<int> neg_cells_;
  std::vector<Touch> undo_;
  std::map<int, int64_t> base_cap_;
  std::map<size_t, std::vector<Touch>> now_cache_;       // window end -> per-cell drops
  std::map<std::pair<size_t, int>, Totals> now_totals_;  // (window end, segment) -> changes
  std::vector<Tick> neg_t_;
  std::ptrdiff_t neg_sorted_ = 0;    // neg_t_ is sorted up to here
  std::vector<Delta> batch_;         // deltas for plan_add
  std::vector<int> sub_free_;        // build_plan's scratch: free GPUs per node ...
  std::vector<uint64_t> sub_stamp_;  // ... valid where stamped with this pass
  uint64_t sub_pass_ = 0;
  std::vector<Tick> relevant_t_;
  bool relevant_ok_ = false;
  int64_t base_total_n_ = 0, base_total_g_ = 0;
  std::vector<uint32_t> stamp_;
  using Shape = std::tuple<int, int, int, Tick>;
  std::map<Shape, Tick> shape_from_;
  uint32_t stamp_id_ = 0;
  // accounting
  int64_t alloc_gpus_ = 0, down_gpus_ = 0;
  int64_t free_nodes_total_ = 0, free_gpus_total_ = 0;  // the sums of cell_nodes_, cell_gpus_
  std::vector<int> block_free_;                         // cell_nodes_ summed per block
  std::vector<std::pair<int, int64_t>> seg_cap_;        // segment size -> segment capacity
  int64_t busy_nodes_ = 0;                              // nodes with at least one GPU allocated
  double alloc_integral_ = 0, down_integral_ = 0, busy_integral_ = 0;
  std::vector<int> block_down_;  // down nodes per base block
  int64_t blocks_any_down_ = 0, blocks_short_ = 0;
  double any_down_integral_ = 0, short_integral_ = 0;
  Tick last_integral_ = 0;
  Tick sample_every_ = 0;
  int64_t started_ = 0, finished_ = 0, interruptions_ = 0, hot_swaps_ = 0, requeues_ = 0;
  int64_t preemptions_ = 0, failures_ = 0, backfill_passes_ = 0;
  std::map<std::string, int64_t> failures_by_class_, interrupts_by_class_;
  std::vector<FailureRecord> failure_log_;
  std::vector<TimelineSample> timeline_;
};

ScheduleResult Sim::run() {
  const int N = c_.nodes();
  node_free_.assign(static_cast<size_t>(N), gpn_);
  node_down_.assign(static_cast<size_t>(N), 0);
  node_jobs_.assign(static_cast<size_t>(N), {});
  spare_.assign(static_cast<size_t>(N), 0);
  block_spares_.assign(static_cast<size_t>(index_.blocks()), 0);
  const size_t C = c_.cells().size();
  cell_nodes_.assign(C, 0);
  cell_gpus_.assign(C, 0);
  cell_hist_.assign(C * static_cast<size_t>(gpn_ + 1), 0);
  // Segment capacities for the main loop's quick test (placement.h: a job of segments of s
  // nodes needs ceil(nodes / s) of them, sum over blocks of floor(free nodes / s)).
  if (pcfg_.policy == PlacementPolicy::kBlock || pcfg_.policy == PlacementPolicy::kKueue) {
    block_free_.assign(static_cast<size_t>(index_.blocks()), 0);
    for (const auto& s : w_.jobs) {
      if (s.gpus < gpn_) continue;
      const int seg = index_.segment_for(pcfg_, (s.gpus + gpn_ - 1) / gpn_);
      if (std::none_of(seg_cap_.begin(), seg_cap_.end(),
                       [seg](const auto& sc) { return sc.first == seg; })) {
        seg_cap_.push_back({seg, 0});
      }
    }
  }
  for (int n = 0; n < N; ++n) contrib(n, +1);
  if (cfg_.reserve_spares && cfg_.spares > 0) {
    for (const auto& b : c_.blocks()) {
      for (int k = 0; k < cfg_.spares && k < b.count; ++k) set_spare(b.end() - 1 - k, true);
    }
  }
  domain_speed_.assign(c_.domains().size(), 1.0);
  block_down_.assign(static_cast<size_t>(index_.blocks()), 0);
  account_used_.assign(w_.accounts.size() + 1, 0);
  user_running_.assign(w_.users.size() + 1, 0);
  usage_.assign(w_.accounts.size() + 1, 0);
  const size_t parts = std::max<size_t>(1, w_.partitions.size());
  blocked_.assign(parts, 0);
  part_pending_.assign(parts, {});
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

  // Lemons.
  if (cfg_.failures.enabled && cfg_.failures.replay.empty()) {
    is_lemon_.assign(static_cast<size_t>(N), 0);
    const int count = static_cast<int>(std::lround(cfg_.failures.model.lemon_fraction * N));
    Rng lr = rng_.stream(3);
    std::vector<int> all(static_cast<size_t>(N));
    std::iota(all.begin(), all.end(), 0);
    for (int i = 0; i < count && i < N; ++i) {
      const auto k = static_cast<size_t>(i + lr.below(N - i));
      std::swap(all[static_cast<size_t>(i)], all[k]);
      lemons_.push_back(all[static_cast<size_t>(i)]);
      is_lemon_[static_cast<size_t>(all[static_cast<size_t>(i)])] = 1;
    }
    std::sort(lemons_.begin(), lemons_.end());
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

ScheduleResult Sim::results() {
  ScheduleResult r;
  r.cluster = c_.cluster_name();
  r.policy = queue_policy_name(cfg_.policy);
  r.placement = placement_name(pcfg_.policy);
  r.sub_node = sub_node_fit_name(pcfg_.sub_node);
  r.priority = cfg_.priority.mode == PriorityMode::kBasic ? "basic" : "multifactor";
  r.spares = cfg_.spares;
  r.seed = cfg_.seed;
  r.horizon_s = secs(cfg_.horizon);
  r.gpus = c_.gpus();
  r.nodes = c_.nodes();
  r.domains = static_cast<int64_t>(c_.domains().size());
  r.segment_nodes = pcfg_.segment_nodes > 0 ? pcfg_.segment_nodes : index_.block_nodes();
  const double total = static_cast<double>(c_.gpus()) * static_cast<double>(cfg_.horizon);
  r.utilization = total > 0 ? alloc_integral_ / total : 0;
  r.utilization_available = total > down_integral_ ? alloc_integral_ / (total - down_integral_) : 0;
  r.down_fraction = total > 0 ? down_integral_ / total : 0;
  const double node_time = static_cast<double>(c_.nodes()) * static_cast<double>(cfg_.horizon);
  r.occupancy = node_time > 0 ? busy_integral_ / node_time : 0;
  const double block_time =
      static_cast<double>(index_.blocks()) * static_cast<double>(cfg_.horizon);
  r.blocks_with_down = block_time > 0 ? any_down_integral_ / block_time : 0;
  r.blocks_short = block_time > 0 ? short_integral_ / block_time : 0;
  std::vector<double> waits, jcts, slow;
  const char* bucket_names[] = {"1 GPU", "2-8 GPUs", "9-64 GPUs", "65-512 GPUs", ">512 GPUs"};
  std::vector<std::vector<double>> by_size(5);
  double useful_gpu_s = 0;
  const double horizon_s = secs(cfg_.horizon);
  for (const Job& j : jobs_) {
    if (j.spec->submit > cfg_.horizon) continue;
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
      const Tick end = j.state == State::kDone ? j.end : cfg_.horizon;
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
    if (cfg_.record_jobs) {
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
  r.failures = failures_;
  r.interruptions = interruptions_;
  r.hot_swaps = hot_swaps_;
  r.requeues = requeues_;
  r.preemptions = preemptions_;
  for (const auto& [k, v] : failures_by_class_) r.failures_by_class.push_back({k, v});
  for (const auto& [k, v] : interrupts_by_class_) {
    if (v > 0) r.interruptions_by_class.push_back({k, v});
  }
  r.mtbi_s = interruptions_ > 0 ? horizon_s / static_cast<double>(interruptions_) : 0;
  r.timeline = std::move(timeline_);
  r.failure_log = std::move(failure_log_);
  r.events = sim_.events_run();
  r.speed_estimates = speed_ ? speed_->estimates() : 0;
  r.backfill_passes = backfill_passes_;
  r.jobs_skipped = w_.skipped_rows;
  return r;
}

}  // namespace

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
  if (cfg.spares < 0) return base::fail("--spares must be >= 0");
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
    return base::fail("--spares " + std::to_string(cfg.spares) +
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
              std::to_string(seg) + "; " + placement_name(pc.policy) + " placement with --spares " +
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
