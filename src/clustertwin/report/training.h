#pragma once
/// Rendering of `clustertwin train`: JSON (keys with units), a text page, and the Chrome trace
/// of one step (a process per pipeline stage, a compute track per stage).

#include <string>

#include "clustertwin/execution/training.h"
#include "clustertwin/report/json_out.h"
#include "clustertwin/report/trace.h"

namespace clustertwin::report {

struct TrainingContext {
  std::string cluster, model, gpu;
  int64_t gpus = 0;
  double token_budget = 0;  ///< tokens to train (0 = not asked)
};

Json training_json(const execution::TrainingResult& r, const workload::TrainingLayout& l,
                   const TrainingContext& c);
std::string training_text(const execution::TrainingResult& r, const workload::TrainingLayout& l,
                          const TrainingContext& c);
TraceWriter training_trace(const execution::TrainingResult& r, const workload::TrainingLayout& l);

}  // namespace clustertwin::report
