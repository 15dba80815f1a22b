#pragma once
/// Rendering of `clustertwin schedule` and `clustertwin goodput`: JSON with units in the keys
/// (utilisation over time, queue length, failures on a timeline, the ETTR breakdown) and text
/// pages, one column per run when placement policies are compared side by side.

#include <string>
#include <vector>

#include "clustertwin/report/json_out.h"
#include "clustertwin/scheduler/goodput.h"
#include "clustertwin/scheduler/simulation.h"

namespace clustertwin::report {

/// One run of the cluster simulation. Timeline arrays are columnar (t_h, allocated_gpus, ...);
/// the failure log keeps its first `max_failures` entries.
Json schedule_json(const scheduler::ScheduleResult& r, size_t max_failures = 2000);
/// A page comparing runs (one column each) of the same workload.
std::string schedule_text(const std::vector<scheduler::ScheduleResult>& runs);
/// One line per job (id, kind, gpus, submit_s, start_s, end_s, wait_s, ...) as CSV.
std::string schedule_jobs_csv(const scheduler::ScheduleResult& r);

Json goodput_json(const scheduler::GoodputResult& g);
std::string goodput_text(const scheduler::GoodputResult& g);

}  // namespace clustertwin::report
