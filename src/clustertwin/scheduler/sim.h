#pragma once
/// The cluster simulation's state machine (simulation.h is its interface; docs/models/
/// orchestration.md the model). `Sim` runs it; the cells and free capacity are a class of their
/// own (free_capacity.h: nodes up, down and spare, free GPUs per cell and block, segment
/// capacity, the time integrals), and Sim's other parts live in files by the seam they cut
/// along:
///   sim_cells.cpp     a job's nodes: allocation and release on the free capacity, its speed on
///                     them; node failures and repairs;
///   sim_queue.cpp     the queue's policy: priorities, the main pass (strict priority per
///                     partition) over the pending queue (a class of its own, pending_queue.h:
///                     PendingQueue), preemption and requeues;
///   sim_backfill.cpp  the backfill pass: the plan (a class of its own, backfill_plan.h:
///                     BackfillPlan, free capacity per cell now and the changes to come, a
///                     job's earliest start on it) built from the running jobs, starts and
///                     reservations;
///   sim_failures.cpp  failures applied and repaired: random failures (drawn by a class of their
///                     own, failure_injector.h: FailureInjector) by class and scope, replayed
///                     outages, a job's interruption, hot swaps and requeue;
///   sim_results.cpp   the timeline samples, and the ScheduleResult through the results seam,
///                     a class and a function of their own (run_results.h: RunTally,
///                     collect_results);
///   simulation.cpp    the run itself (arrivals, the engine loop) and the public functions.
/// Internal to the scheduler layer: nothing outside it includes this header.

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <tuple>

#include "clustertwin/base/check.h"
#include "clustertwin/engine/engine.h"
#include "clustertwin/scheduler/backfill_plan.h"
#include "clustertwin/scheduler/failure_injector.h"
#include "clustertwin/scheduler/free_capacity.h"
#include "clustertwin/scheduler/limits.h"
#include "clustertwin/scheduler/pending_queue.h"
#include "clustertwin/scheduler/random.h"
#include "clustertwin/scheduler/run_results.h"
#include "clustertwin/scheduler/simulation.h"

namespace clustertwin::scheduler::detail {

inline double secs(Tick t) { return static_cast<double>(t) * 1e-9; }
// A duration drawn or derived inside a run (a repair, a checkpoint interval), held at 40
// years (kMaxDurationS, scheduler/limits.h) so that adding it to any time of a run (at most 250
// years) still fits in a Tick; longer durations do not occur in runs that mean anything.
inline Tick ticks(double s) {
  return engine::to_ticks(base::seconds(std::clamp(s, 0.0, kMaxDurationS)));
}

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

class Sim {
 public:
  Sim(const ClusterModel& c, Workload w, const SimConfig& cfg, SpeedModel* speed)
      : c_(c),
        index_(c),
        w_(std::move(w)),
        cfg_(cfg),
        speed_(speed),
        inject_(c, cfg_.failures.model, cfg.seed,
                cfg.failures.enabled && cfg.failures.replay.empty()) {
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
  // --- cluster state (free_capacity.h) --------------------------------------------------
  // A failure takes node n down (one more overlapping failure) / a repair brings it back; both
  // integrate first and mark the state changed.
  void down_inc(int n);
  void down_dec(int n);
  [[nodiscard]] bool up(int n) const { return cap_.up(n); }
  FreeView view() const { return cap_.view(); }

  void integrate();

  // --- jobs ------------------------------------------------------------------------------
  int job_gpus(const Job& j) const { return j.spec->gpus; }
  int alloc_gpus_of(const Job& j) const;

  void advance_job(Job& j);

  void schedule_end(int id);

  void update_speed(int id);

  void allocate(int id, const std::vector<int>& nodes, int gpus_each);

  void rebuild_cells(Job& j);

  void release_node(int id, int n);

  void release_all(int id);

  void remove_running(int id);

  // Picks concrete nodes for a placement and starts the job.
  bool start(int id, const Placement& pl);

  // The node of `cell` for a sub-node job of g GPUs: the fullest that fits (pack) or the
  // emptiest (spread), lowest index on ties.
  int sub_node_in(int cell, int g) const;

  PlacementRequest request(const Job& j) const;

  bool limited(const Job& j) const;

  // --- priority --------------------------------------------------------------------------
  double priority(const Job& j) const;
  bool before(int a, int b) const;
  void enqueue(int id);
  void recompute_priorities();

  // --- scheduling passes -----------------------------------------------------------------
  void request_pass();

  // The pending queue's two questions, as it asks them (pending_queue.h): whether a queued job
  // has left (started), and the priority order.
  auto gone() const {
    return [this](int id) { return jobs_[static_cast<size_t>(id)].state != State::kPending; };
  }
  auto by_priority() const {
    return [this](int a, int b) { return before(a, b); };
  }

  // Slurm's main loop: pending jobs in priority order, each started if it fits; the first one
  // that does not blocks the rest of its partition. The partitions' queues are merged by
  // priority, so a blocked partition costs nothing more.
  void main_pass();

  bool try_preempt(int id);

  // A stateless job (a serving replica) keeps what it did: nothing to recompute.
  static void keep_if_stateless(Job& j);

  void preempt(int id);

  void flush_requeues();

  // The backfill pass: the plan (backfill_plan.h) built from the running jobs.
  Tick round_up(Tick t) const;

  void build_plan();

  // Whether a placement of `j` can exist at all (necessary; exact for block and kueue-preferred
  // with segments, and for tree and first-fit with nodes), from totals and segment capacity.
  bool may_fit(const Job& j, int64_t total_n, int64_t total_g, int64_t cap) const;

  // Segments of the job's size that the free nodes of every block hold now (kept up to date by
  // contrib() for every segment size of the workload).
  int64_t segment_capacity(const Job& j) const;

  int seg_of(const Job& j) const;

  // Earliest start of `j` on the plan, not before `from`; fills `pl` and `at`. With
  // `now_only`, only the present is tried (a job that would get no reservation anyway).
  bool earliest(const Job& j, Tick from, bool now_only, Tick* at, Placement* pl);

  // A job that will start at `t`: its placement taken from the plan from `t` (now: from the
  // present) until its limit.
  void reserve_in_plan(const Job& j, const Placement& pl, Tick t);

  // A job the pass just started: take what it actually got out of the plan until its limit.
  void reserve_started(const Job& j);

  void backfill_pass();

  // --- job end and interruptions ---------------------------------------------------------
  void on_end(int id, uint32_t gen);

  // A failure took nodes down (or, with no nodes, hit the job's software): lose the work since
  // the last checkpoint, then swap spares in or requeue.
  void interrupt_job(int id);

  // A free node to replace `failed`: in the same NVLink domain; for single-node domains, or
  // policies that do not keep jobs in domains, then the same leaf, then anywhere.
  int replacement(const Job& j, int failed, int need_free, const std::vector<int>& taken) const;

  std::vector<int> jobs_on(const std::vector<int>& nodes) const;

  // --- failures --------------------------------------------------------------------------
  void record(const std::string& cls, FailureScope scope, int target, int jobs_hit, int64_t gpus,
              double repair_s);

  void take_down(const std::vector<int>& nodes, double repair_s, const std::string& cls,
                 FailureScope scope, int target);

  // A burst of node failures at one instant: every node down, each job on them interrupted
  // once, a repair drawn per node.
  void take_down_burst(const std::vector<int>& nodes, const FailureClass& fc);

  void schedule_failure();

  void on_random_failure();

  void set_domain_speed(int d, double s);

  void schedule_replay();

  void sample();

  void arrive(size_t k);

  ScheduleResult results();

  const ClusterModel& c_;
  PlacementIndex index_;
  Workload w_;
  SimConfig cfg_;
  PlacementConfig pcfg_;
  SpeedModel* speed_;
  FailureInjector inject_;  // failure injection: when, what and the repairs (failure_injector.h)
  engine::Simulator sim_;
  int gpn_ = 1;
  std::vector<Job> jobs_;
  FreeCapacity cap_;  // cells and free capacity: nodes free, down and spare; the integrals
  std::vector<std::vector<std::pair<int, int>>> node_jobs_;
  std::vector<double> domain_speed_;
  PendingQueue queue_;  // pending jobs by priority, all and per partition (pending_queue.h)
  std::vector<int> running_, requeue_;
  std::vector<size_t> running_pos_;
  std::vector<int64_t> account_used_;
  std::vector<int> user_running_;
  std::vector<double> usage_, fairshare_;
  Tick last_usage_ = 0;
  bool pass_pending_ = false, dirty_ = false;
  std::vector<int> user_tested_, part_tested_;  // backfill jobs tested per user, partition
  bool any_limits_ = true;     // false: no account quota or user limit, limited() is always false
  std::vector<int> head_job_;  // per partition: the job that last blocked it
  std::vector<uint64_t> head_epoch_;     // ... and the free epoch it failed at
  BackfillPlan plan_{index_};            // the backfill plan of the current pass (backfill_plan.h)
  std::vector<PlanDelta> plan_scratch_;  // build_plan's deltas (swapped with the plan's)
  std::vector<PlanDelta> batch_;         // deltas for plan_.add
  std::vector<int> sub_free_;            // build_plan's scratch: free GPUs per node ...
  std::vector<uint64_t> sub_stamp_;      // ... valid where stamped with this pass
  uint64_t sub_pass_ = 0;
  using Shape = std::tuple<int, int, int, Tick>;
  std::map<Shape, Tick> shape_from_;
  // accounting
  Tick sample_every_ = 0;
  RunTally tally_;  // results: what the run counts as it goes (run_results.h)
};

}  // namespace clustertwin::scheduler::detail
