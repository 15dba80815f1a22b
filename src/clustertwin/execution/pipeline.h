#pragma once
/// Pipeline-parallel schedules run as discrete events (docs/models/training.md §pipeline).
///
/// Stage s executes its own ordered list of forward (F) and backward (B) tasks, one at a time.
/// F(c, m) of global chunk c needs F(c-1, m) plus the activation send from the previous chunk;
/// B(c, m) needs B(c+1, m) plus the gradient send back, and the last chunk's B needs its own F.
/// Orders follow Megatron-LM's schedules (megatron/core/pipeline_parallel/schedules.py):
///  - 1F1B (PipeDream-Flush): stage s runs min(pp-s-1, M) warm-up forwards, then alternates one
///    forward and one backward, then drains the remaining backwards.
///  - Interleaved 1F1B with v chunks per stage: warm-up (pp-s-1)*2 + (v-1)*pp virtual
///    micro-batches; virtual micro-batch k runs chunk (k mod pp*v) div pp (reversed for
///    backward) of micro-batch (k div pp*v)*pp + k mod pp.
/// The idle time of a stage inside the step is its pipeline bubble; for equal stages it matches
/// the closed form (pp-1)/(v*M) of the ideal time, which a test pins.

#include <cstdint>
#include <vector>

#include "clustertwin/base/units.h"
#include "clustertwin/engine/engine.h"

namespace clustertwin::execution {

using base::Seconds;

struct PipelineInput {
  int pp = 1;
  int vpp = 1;
  int64_t micro_batches = 1;
  std::vector<Seconds> forward;   ///< per global chunk (pp*vpp, chunk c on stage c mod pp)
  std::vector<Seconds> backward;  ///< per global chunk (recomputation included)
  std::vector<Seconds> p2p;       ///< send time from chunk c to c+1 (pp*vpp - 1 entries)
};

struct TaskRecord {
  int stage = 0;
  int chunk = 0;  ///< global chunk index
  int64_t micro = 0;
  bool forward = true;
  engine::Tick start = 0, end = 0;
};

struct PipelineResult {
  engine::Tick makespan = 0;                ///< first start to last end over all stages
  std::vector<engine::Tick> busy;           ///< per stage: sum of task durations
  std::vector<engine::Tick> last_end;       ///< per stage: end of its last task
  std::vector<engine::Tick> last_backward;  ///< per stage: duration of its last backward
  std::vector<TaskRecord> tasks;            ///< in completion order
  int64_t events = 0;
};

/// The task order of one stage: (global chunk, micro-batch, forward?) in execution order.
struct TaskId {
  int chunk;
  int64_t micro;
  bool forward;
};
std::vector<TaskId> stage_order(int pp, int vpp, int64_t micro_batches, int stage);

/// Runs the schedule. Preconditions (checked): vectors sized as documented, vpp == 1 or
/// micro_batches a multiple of pp.
PipelineResult run_pipeline(const PipelineInput& in);

}  // namespace clustertwin::execution
