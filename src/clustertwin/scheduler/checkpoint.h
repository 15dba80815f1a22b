#pragma once
/// Checkpoint/restart arithmetic (docs/models/orchestration.md §4).
///
/// A running job alternates tau of compute and delta of checkpoint stall (synchronous save, or
/// the short stall of an asynchronous one); a (re)start first spends R restoring (scheduling,
/// process and NCCL start, checkpoint read, warm-up). An interruption loses the compute since
/// the last completed checkpoint. RunState advances that cycle in closed form (O(1) per query,
/// whatever the number of cycles), in integer ticks for wall time, so lost work is exact.
///
/// Young (1974) / Daly (2006): tau* = sqrt(2 delta M) (Daly: - delta, for delta < M/2), and the
/// expected waste W ~ delta/tau + (tau/2 + R)/M, ETTR ~ 1 - W (orchestration.md §3.5).

#include <cstdint>
#include <limits>

#include "clustertwin/engine/engine.h"

namespace clustertwin::scheduler {

using engine::Tick;
inline constexpr Tick kNever = std::numeric_limits<Tick>::max() / 4;

struct CheckpointPolicy {
  Tick interval = kNever;  ///< compute between checkpoints (tau); kNever = no checkpoints
  Tick save = 0;           ///< stall per checkpoint (delta)
  Tick restore = 0;        ///< restart overhead after an interruption (R)
};

/// Young's interval sqrt(2 delta M), or Daly's sqrt(2 delta M) - delta when `daly`.
double young_daly_interval_s(double save_s, double mtbi_s, bool daly = false);
/// First-order expected ETTR: 1 - delta/tau - (tau/2 + R)/M (clamped at 0).
double expected_ettr(double interval_s, double save_s, double restore_s, double mtbi_s);

/// Where one attempt of a job stands. Wall time in ticks; work in nominal seconds (the run time
/// at full speed), so a slower placement or a degraded rack shows as speed < 1.
struct RunState {
  Tick restore_left = 0;        ///< restore still to do
  Tick phase = 0;               ///< wall time into the current compute+save cycle
  double computed = 0;          ///< nominal work done (including what is not yet checkpointed)
  double saved = 0;             ///< nominal work in the last completed checkpoint
  Tick compute_since_save = 0;  ///< compute wall time since the last completed checkpoint

  /// Wall-time accounting of this state's history (for the ETTR breakdown).
  Tick compute_ticks = 0, save_ticks = 0, restore_ticks = 0;
};

/// Advances `s` by `dt` of wall time at `speed` under `p`. Compute is capped at `work` (the
/// job stops computing once done).
void advance(RunState& s, const CheckpointPolicy& p, double speed, Tick dt, double work);

/// Wall time from `s` until computed reaches `work` at `speed` (restore and stalls included;
/// no checkpoint after the last step). kNever when speed <= 0 or work is infinite.
Tick time_to_finish(const RunState& s, const CheckpointPolicy& p, double speed, double work);

/// Applies an interruption: compute since the last checkpoint is lost (returned, in nominal
/// seconds, and its wall ticks in `lost_ticks`); the state restarts from the checkpoint with a
/// full restore ahead.
double interrupt(RunState& s, const CheckpointPolicy& p, Tick* lost_ticks);

}  // namespace clustertwin::scheduler
