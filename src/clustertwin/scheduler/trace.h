#pragma once
/// Job streams: trace files (docs/models/orchestration.md §1.1) and the synthetic LLM-era mix.
///
/// Trace CSV (one header line, RFC 4180 quoting, '#' comment lines). Required columns:
///   submit_s     seconds from the trace start (or `submit`: "YYYY-MM-DD HH:MM:SS")
///   gpus         GPUs of the job
///   duration_s   run time at full speed, seconds
/// Optional: id, time_limit_s, account, user, partition, qos (low|normal|high), kind
/// (batch|pretrain|finetune|inference|dev), model, tp, pp, cp, ep, micro_batch, global_batch,
/// seq_len, checkpoint_s (seconds between checkpoints, or `auto` for Young/Daly). A job with a
/// model is a training job: duration_s is its run time on the best placement and the training model
/// slows it on a worse one. The Philly job list (Pollux's philly.csv: timestamp, duration,
/// num_gpus, gpu_time, cluster) is read as is: timestamp -> submit, duration -> duration_s,
/// num_gpus -> gpus, cluster -> account. A JSON trace is {"jobs": [{...}]} with the same keys.
/// Submit times are taken relative to the earliest job. Rows are not assumed sorted.

#include <optional>
#include <string>
#include <string_view>

#include "clustertwin/base/result.h"
#include "clustertwin/scheduler/job.h"

namespace clustertwin::scheduler {

enum class BadRows { kStop, kSkip };

struct TraceOptions {
  BadRows bad_rows = BadRows::kStop;
  /// Time limit when the trace has none: duration x factor, rounded up to a minute.
  double limit_factor = 2.0;
  /// Checkpoint defaults for training rows without checkpoint_s (none) and their restore time.
  double restore_s = 600;
};

/// Parses a trace (CSV or JSON, by content). Errors name the file, the row and why; with
/// BadRows::kSkip bad rows are counted in skipped_rows (and the first few kept as warnings).
base::Result<Workload> read_trace(std::string_view text, const std::string& file,
                                  const TraceOptions& opt = {});

/// "2017-10-09 07:01:55" -> seconds since 1970-01-01 (no time zone); nullopt if malformed.
std::optional<double> parse_timestamp(std::string_view s);

/// Philly VC quotas (HeliosArtifact philly_vc.csv: `vc,node num`) as per-account GPU limits.
base::Status apply_vc_quotas(Workload& w, std::string_view csv, const std::string& file,
                             int gpus_per_node);

}  // namespace clustertwin::scheduler
