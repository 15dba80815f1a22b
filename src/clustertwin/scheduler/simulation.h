#pragma once
/// The cluster simulation (docs/models/orchestration.md): a job stream, a queue policy, a
/// placement policy, failures with repairs and blast radius, hot spares and checkpoint/restart,
/// run on the engine over days to months.
///
/// Life of a job: submitted -> pending (ordered by priority) -> started by the main scheduler
/// (strict priority order; the first job that does not fit blocks the rest of its partition, like
/// Slurm's main loop)
/// or by the backfill pass (every bf_interval when something changed: earliest start of each
/// pending job on a plan of future frees, reservations for the first `reserve` jobs: 1 = EASY,
/// all tested = conservative) -> running at the speed of its placement -> finished, or
/// interrupted by a failure (work since the last checkpoint lost; restarted in place after
/// swapping in free nodes of the same NVLink domain when there are any, requeued otherwise) or
/// preempted by a higher-QOS job (requeued).
///
/// Cost: O(log E) per event; the main pass O(jobs started + partitions) plus jobs skipped for
/// limits (a partition's blocked head is placed again only after capacity was freed); a backfill
/// pass O(running job cells + tested jobs x candidate times x cells that lose capacity in the
/// plan).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/scheduler/checkpoint.h"
#include "clustertwin/scheduler/cluster.h"
#include "clustertwin/scheduler/failures.h"
#include "clustertwin/scheduler/job.h"
#include "clustertwin/scheduler/placement.h"
#include "clustertwin/scheduler/speed.h"
#include "clustertwin/scheduler/trace.h"

namespace clustertwin::scheduler {

enum class QueuePolicy { kFifo, kEasy, kConservative };
const char* queue_policy_name(QueuePolicy p);
base::Result<QueuePolicy> parse_queue_policy(std::string_view s);

/// Slurm SchedulerParameters bf_* (slurm.conf.5; defaults in parentheses).
struct BackfillConfig {
  Tick interval = engine::to_ticks(base::seconds(30));    ///< bf_interval (30 s)
  Tick window = engine::to_ticks(base::seconds(86400));   ///< bf_window (1440 min)
  Tick resolution = engine::to_ticks(base::seconds(60));  ///< bf_resolution (60 s)
  int max_job_test = 500;                                 ///< bf_max_job_test (500)
  int max_job_start = 0;                                  ///< bf_max_job_start (0 = no limit)
  int max_job_user = 0;  ///< bf_max_job_user: jobs tested per user and pass (0 = no limit)
  int max_job_part = 0;  ///< bf_max_job_part: jobs tested per partition and pass (0 = no limit)
  /// bf_job_part_count_reserve: jobs that get a reservation; -1 = by policy (EASY 1,
  /// conservative every tested job).
  int reserve = -1;
};

enum class PriorityMode { kBasic, kMultifactor };

/// PriorityType=priority/basic (submit order) or priority/multifactor.
struct PriorityConfig {
  PriorityMode mode = PriorityMode::kBasic;
  double weight_age = 1000, weight_fairshare = 1000, weight_size = 0, weight_qos = 10000;
  Tick max_age = engine::to_ticks(base::seconds(7 * 86400.0));    ///< PriorityMaxAge
  Tick half_life = engine::to_ticks(base::seconds(7 * 86400.0));  ///< PriorityDecayHalfLife
  Tick calc_period = engine::to_ticks(base::seconds(300));        ///< PriorityCalcPeriod
};

struct PreemptConfig {
  bool enabled = true;  ///< PreemptType=preempt/qos, PreemptMode=REQUEUE
  Tick exempt = 0;      ///< PreemptExemptTime
  int max_victims = 64;
};

struct JobLimits {
  int max_running_jobs_per_user = 0;   ///< MaxJobs (0 = none)
  bool enforce_account_quotas = true;  ///< GrpTRES=gres/gpu from Workload::account_gpu_limit
};

/// Storage for checkpoints (orchestration.md §3.5: Llama 3's Tectonic sustained 2 TB/s, 7 TB/s
/// peak; per-node front-end links cap a small job).
struct StorageConfig {
  double write_Bps = 2e12;
  double read_Bps = 7e12;
  double per_node_Bps = 50e9;   ///< assumption: 400 Gb/s front-end per node
  double bytes_per_param = 16;  ///< bf16 weights, fp32 master copy, two Adam moments
  double restart_s = 600;       ///< scheduling, process and NCCL start, warm-up (10 min)
  bool async = false;           ///< asynchronous save: the stall is async_stall_s
  double async_stall_s = 10;    ///< NeMo async distributed checkpoint: under 10 s
  double default_save_s = 60;   ///< jobs without a model that checkpoint
};

struct FailureConfig {
  bool enabled = false;
  FailureModel model;
  /// When non-empty, these down intervals are replayed instead of random failures.
  std::vector<FaultInterval> replay;
  bool hot_swap = true;  ///< replace failed nodes with free ones in the same NVLink domain
};

struct SimConfig {
  Tick horizon = engine::to_ticks(base::seconds(30 * 86400.0));
  uint64_t seed = 1;
  QueuePolicy policy = QueuePolicy::kEasy;
  PlacementConfig placement;
  int spares = 0;  ///< nodes per base block kept out of gang segments (block, kueue)
  /// false (Slurm BlockSizes semantics): the spare nodes of a block serve small jobs too, and
  /// are hot spares only while free. true: each block keeps `spares` free nodes that no job
  /// is placed on, only swapped in for a failed node (a freed or repaired node refills them).
  bool reserve_spares = false;
  BackfillConfig backfill;
  PriorityConfig priority;
  PreemptConfig preempt;
  JobLimits limits;
  FailureConfig failures;
  StorageConfig storage;
  Tick sample_interval = 0;           ///< 0: horizon / 720, at least 1 min
  bool record_jobs = false;           ///< keep one record per job (for --jobs-csv)
  BadRows bad_jobs = BadRows::kStop;  ///< jobs that can never run: stop, or skip and count
  /// Events the run may process (--max-events); beyond it the run stops with an error that
  /// says how far it got, instead of running on for hours.
  int64_t max_events = base::kMaxEvents;
  /// Called with the simulated fraction of the horizon (0..1], about 200 times per run, for a
  /// progress bar; it must not touch the simulation. Empty: no calls. Results do not depend on it.
  std::function<void(double)> on_progress;
};

struct Percentiles {
  int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

struct TimelineSample {
  double t_s = 0;
  int64_t allocated_gpus = 0, down_gpus = 0, pending_jobs = 0, pending_gpus = 0;
  int64_t busy_nodes = 0;  ///< nodes with at least one GPU allocated
  int64_t running_jobs = 0;
  int partial_domains = 0, free_blocks = 0, degraded_domains = 0;
  int64_t stranded_gpus = 0;
};

struct FailureRecord {
  double t_s = 0;
  std::string cls;
  FailureScope scope = FailureScope::kNode;
  int target = 0;  ///< node, domain or leaf index
  int jobs_hit = 0;
  int64_t gpus_down = 0;
  double repair_s = 0;
};

struct JobRecord {
  int64_t id = 0;
  JobKind kind = JobKind::kBatch;
  int gpus = 0;
  double submit_s = 0, start_s = -1, end_s = -1, wait_s = 0, work_s = 0;
  int interruptions = 0, hot_swaps = 0, requeues = 0, preemptions = 0;
  double lost_gpu_h = 0, speed = 1;
  bool finished = false;
};

/// Wall time of training (checkpointing) jobs from first start to end (or the horizon), in
/// GPU-hours: useful + slowdown + checkpoint + lost + restore + requeue_wait = wall.
struct EttrBreakdown {
  double useful_gpu_h = 0;        ///< work at full speed on the best placement
  double slowdown_gpu_h = 0;      ///< extra time from a slower placement or a degraded rack
  double checkpoint_gpu_h = 0;    ///< save stalls
  double lost_gpu_h = 0;          ///< compute redone after interruptions
  double restore_gpu_h = 0;       ///< restart overhead
  double requeue_wait_gpu_h = 0;  ///< waiting for nodes after an interruption or preemption
  double wall_gpu_h = 0;
  int64_t jobs = 0;
  [[nodiscard]] double ettr() const { return wall_gpu_h > 0 ? useful_gpu_h / wall_gpu_h : 0; }
};

struct ScheduleResult {
  std::string cluster, policy, placement, priority;
  std::string sub_node;  ///< sub-node fit: pack or spread
  int spares = 0;
  uint64_t seed = 0;
  double horizon_s = 0;
  int64_t gpus = 0, nodes = 0, domains = 0;
  int segment_nodes = 0;
  int64_t jobs_submitted = 0, jobs_started = 0, jobs_finished = 0, jobs_running_at_end = 0;
  int64_t jobs_pending_at_end = 0, jobs_skipped = 0;
  double utilization = 0;            ///< allocated GPU-time / total GPU-time
  double utilization_available = 0;  ///< allocated / (total - down)
  double down_fraction = 0;          ///< down GPU-time / total
  double goodput = 0;                ///< useful work GPU-time / total GPU-time
  /// Node occupancy: time-weighted share of nodes with at least one GPU allocated (Philly's
  /// active / total servers, HeliosArtifact philly_node_sequence.csv).
  double occupancy = 0;
  /// Time shares of base blocks (NVL72 racks; leaf groups on HGX) with at least one node down,
  /// and with more nodes down than the spares per block (too few up for a full segment; ref
  /// §3.4's hot-spare table).
  double blocks_with_down = 0, blocks_short = 0;
  Percentiles wait_s, jct_s, slowdown;
  std::vector<std::pair<std::string, Percentiles>> wait_by_size;
  int64_t failures = 0, interruptions = 0, hot_swaps = 0, requeues = 0, preemptions = 0;
  std::vector<std::pair<std::string, int64_t>> failures_by_class;
  std::vector<std::pair<std::string, int64_t>> interruptions_by_class;  ///< job interruptions
  double lost_gpu_h = 0;
  double mtbi_s = 0;  ///< horizon / job interruptions
  EttrBreakdown ettr;
  std::vector<TimelineSample> timeline;
  std::vector<FailureRecord> failure_log;  ///< first 10,000
  std::vector<JobRecord> jobs;             ///< when record_jobs
  int64_t events = 0, speed_estimates = 0, backfill_passes = 0;
  std::vector<std::string> notes;
};

/// Checkpoint costs of a training job from the storage model: save stall (synchronous: bytes
/// over min(storage write, per-node links); asynchronous: the async stall) and restore (restart
/// overhead + bytes over min(storage read, per-node links)).
struct CheckpointCosts {
  double bytes = 0, save_s = 0, restore_s = 0;
};
CheckpointCosts checkpoint_costs(const StorageConfig& st, double parameters, int nodes);

/// Checks a workload against the cluster and configuration: jobs larger than the cluster or
/// than what the placement can ever give them, training jobs the speed model cannot price,
/// spares that leave no capacity. Errors name the job and its trace row.
base::Status check_inputs(const ClusterModel& cluster, Workload& workload, const SimConfig& cfg,
                          SpeedModel* speed);

/// Runs the simulation. `speed` prices training jobs (nullptr: every job is a black box).
base::Result<ScheduleResult> simulate(const ClusterModel& cluster, Workload workload,
                                      const SimConfig& cfg, SpeedModel* speed);

}  // namespace clustertwin::scheduler
