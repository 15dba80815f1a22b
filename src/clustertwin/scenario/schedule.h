#pragma once
/// A cluster over days to months as the user asks for it (`ScheduleRequest`): the cluster, the
/// job stream (a trace or a synthetic mix), the queue and placement policies, failures and
/// checkpoints; one field table (`schedule_fields`: `schedule` and a scenario's
/// `workload.schedule` take exactly these) and its run (`run_schedule`: one simulation per
/// compared placement, docs/models/orchestration.md).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clustertwin/base/number.h"
#include "clustertwin/scenario/environment.h"
#include "clustertwin/scenario/fields.h"

namespace clustertwin::scenario {

/// What the user asked, as typed values; "" means "the default rule".
struct ScheduleRequest {
  std::string cluster = "azure-ndv6-gb300";
  std::string tree_file;
  int gpus_per_node = 8;
  std::string trace, synthetic, vc_quotas, fault_replay;
  double days = 30;
  int64_t max_events = base::kMaxEvents;
  std::string policy = "easy", priority = "basic", placement = "block", compare;
  std::string failures = "on", preempt = "on", bad_rows = "stop", fault_bursts = "off";
  int spares = 0;
  int64_t seed = 1;
  std::string spare_policy = "shared", sub_node = "pack";
  double bf_interval_s = 30, bf_window_min = 1440, bf_resolution_s = 60;
  int bf_max_job_test = 500, bf_max_job_start = 0, bf_reserve = -1;
  int bf_max_job_user = 0, bf_max_job_part = 0;
  int max_jobs_per_user = 0;
  double domain_failures = 1.0, failure_scale = 1.0, lemon_fraction = 0.15;
  bool async_checkpoint = false;
  double sample_min = 0;
};

/// The fields of a schedule request, in the order `--help` shows them.
const FieldTable<ScheduleRequest>& schedule_fields();
/// Words of the table, for `render`.
const std::vector<FieldWord>& schedule_words();

/// What a schedule run gives back: its JSON section ("schedule": {"runs": [...]}), the text
/// page (one column per run), the jobs of the first run as CSV when asked, and a summary line.
struct ScheduleRun {
  nlohmann::json json;
  std::string text, jobs_csv, summary;
};

/// Runs the request: one simulation per placement (`compare`, else `placement`), each on its own
/// engine and random streams. `quiet` silences the progress on stderr; `jobs_csv` also renders
/// the first run's jobs. Messages name fields ({policy}, {trace}).
base::Result<ScheduleRun> run_schedule(const Environment& env, const ScheduleRequest& r,
                                       bool quiet = true, bool jobs_csv = false);

}  // namespace clustertwin::scenario
