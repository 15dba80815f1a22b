#pragma once
/// What a job asks for and what it is (docs/models/orchestration.md §1): a black box with a run
/// time (trace replay), or a training job whose run time comes from the training model for its
/// model, layout and the placement it gets.

#include <cstdint>
#include <string>
#include <vector>

#include "clustertwin/scheduler/checkpoint.h"
#include "clustertwin/workload/layout.h"

namespace clustertwin::scheduler {

enum class JobKind : uint8_t { kBatch, kPretrain, kFinetune, kInference, kDev };
const char* job_kind_name(JobKind k);

/// Quality of service: high may preempt low (PreemptType=preempt/qos, PreemptMode=REQUEUE).
enum class Qos : uint8_t { kLow, kNormal, kHigh };
const char* qos_name(Qos q);

/// A training job's model and layout (dp follows from the job's GPUs).
struct TrainingWork {
  std::string model;  ///< catalog model name
  workload::TrainingLayout layout;
};

struct JobSpec {
  int64_t id = 0;
  Tick submit = 0;
  int gpus = 0;
  /// Run time at full speed on the best placement, in seconds (infinite: runs to the horizon).
  double work_s = 0;
  Tick time_limit = 0;  ///< the user's requested limit (backfill plans with it)
  int account = 0;      ///< index into Workload::accounts
  int user = 0;         ///< index into Workload::users
  int partition = 0;    ///< index into Workload::partitions (Slurm partition, Kueue queue)
  Qos qos = Qos::kNormal;
  JobKind kind = JobKind::kBatch;
  int training = -1;  ///< index into Workload::training; -1 = black box (fixed run time)
  CheckpointPolicy checkpoint;
  bool auto_checkpoint = false;  ///< interval from Young/Daly at the job's MTBI
  /// Save stall and restore time from the storage model (checkpoint bytes over bandwidth);
  /// false keeps checkpoint.save and checkpoint.restore as given.
  bool checkpoint_from_storage = true;
  /// A serving replica: an interruption loses no work, only the restart (requests are
  /// retried elsewhere); its run time is how long it serves.
  bool stateless = false;
  int source_row = 0;  ///< line of the trace file (0 = generated)
};

/// A job stream plus the tables its jobs index into.
struct Workload {
  std::vector<JobSpec> jobs;  ///< sorted by submit time (stable)
  std::vector<std::string> accounts;
  std::vector<std::string> users;
  /// Partitions share the nodes; a job that cannot start blocks only later jobs of its own
  /// partition in the main scheduling loop (Slurm). Empty: one partition "default".
  std::vector<std::string> partitions;
  std::vector<TrainingWork> training;
  /// Per-account GPU quotas (GrpTRES=gres/gpu); 0 = none. Indexed like accounts.
  std::vector<int64_t> account_gpu_limit;
  std::vector<double> account_shares;  ///< fair-share shares (default 1 each)
  std::string description;
  int64_t skipped_rows = 0;
  std::vector<std::string> warnings;

  int account_id(const std::string& name);
  int user_id(const std::string& name);
  int partition_id(const std::string& name);
  void sort_by_submit();
};

}  // namespace clustertwin::scheduler
