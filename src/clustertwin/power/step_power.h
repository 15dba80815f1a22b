#pragma once
/// One training step as the power view observes it (training_power.h, steps 1-3;
/// docs/models/power.md §1-2): the per-op power of each pipeline chunk's forward and backward
/// pass under GPU settings and the compute slowdown they cause; one GPU per pipeline stage as a
/// periodic timeline of a few power levels; the rack classes (racks.h) and the cluster over the
/// step, swept over the stages' segment ends in time order.
/// Cost: O(ops of distinct layers) for the profiles, O(tasks) for the timelines, O(K + levels x
/// rack classes) for the sweep (K segments, bucket-sorted by time).

#include <cstdint>
#include <vector>

#include "clustertwin/execution/training.h"
#include "clustertwin/power/gpu_power.h"
#include "clustertwin/power/racks.h"
#include "clustertwin/power/system_power.h"
#include "clustertwin/power/timeline.h"

namespace clustertwin::power {

/// Per-op power of the distinct parts of a model under one layout (dense layer, MoE layer,
/// embedding, head, MTP), forward and backward (+ recomputation).
struct PartOps {
  std::vector<OpPower> fwd, bwd;
};

/// The distinct parts' ops and how the layers split into pipeline chunks.
struct Profiles {
  PartOps dense, moe, embed, head, mtp;
  bool has_dense = false, has_moe = false;
  std::vector<int> split;  // layers per chunk
  int first_mtp = 0;
};

/// The profiles of a training setup's model under its layout.
Profiles build_profiles(const GpuPowerModel& gm, const execution::TrainingSetup& s);

/// A pipeline chunk's forward and backward power under some GPU settings.
struct ChunkPower {
  PhasePower fwd, bwd;
};
/// Each chunk's power (its layers, the embedding on the first, the head and MTP on the last)
/// under settings `g`.
std::vector<ChunkPower> chunk_powers(const Profiles& p, const execution::TrainingSetup& s,
                                     const GpuPowerModel& gm, const GpuSettings& g);
/// The chunks' compute-time slowdown (capped time / time): what a cap or clock lock feeds back.
double slowdown_of(const std::vector<ChunkPower>& cps);

/// A GPU's power outside compute (waiting, on busy links, the optimizer's streaming kernels,
/// idle) and the exposed TP/CP/EP communication share mixed into forward and backward tasks.
struct PowerLevels {
  double wait_W = 0, comm_W = 0, optimizer_W = 0, idle_W = 0;
  double fwd_comm_share = 0, bwd_comm_share = 0;
};

/// The stages' timelines, and for each segment its power level: levels are the few distinct
/// powers a GPU draws in a step (wait, communication, optimizer, each chunk's forward and
/// backward), so what depends only on a GPU's power (a rack's system model, a class's energy) is
/// evaluated per level rather than per segment.
struct StageTimelines {
  std::vector<PeriodicTimeline> timelines;
  std::vector<double> level_W;               // kWaitLevel, kCommLevel, kOptLevel, chunks
  std::vector<std::vector<uint16_t>> level;  // per stage, per segment
  std::vector<double> level_time_s;          // per stage x level: time spent at it
};
inline constexpr uint16_t kWaitLevel = 0, kCommLevel = 1, kOptLevel = 2, kChunkLevel0 = 3;

/// One GPU per stage over the step `r` ran: forward/backward tasks at their chunk's power mixed
/// with the exposed communication share, bubbles at the wait power, the exposed DP reduction at
/// the communication power, the optimizer at the memory-bound power, then waiting for the slowest
/// stage. One pass over the tasks in the order execution recorded them (completion order, so
/// each stage's tasks arrive in start order: a stage runs one task at a time); tasks recorded in
/// another order are sorted by stage and start first.
StageTimelines stage_timelines(const execution::TrainingResult& r,
                               const workload::TrainingLayout& l,
                               const std::vector<ChunkPower>& cps, const PowerLevels& lv);

/// Rack classes and the cluster over one step. A class holding one stage (the usual case: stages
/// are contiguous rank ranges, racks hold whole shares of them) draws one power per level of its
/// stage: its AC power, energy, peak and minimum come from one system-model evaluation per level
/// the stage visits, and its contribution to the cluster is tabled per (stage, level). The
/// cluster's peak and minimum then need the stages' segment ends in time order, where each end
/// changes the cluster by one table difference: the ends are bucket-sorted by time (K buckets of
/// equal width, then an insertion sort of the nearly sorted array: O(K) for K segments). Classes
/// over several stages (racks that straddle a stage boundary) are evaluated at their stages' ends.
/// Energy is accumulated over constant stretches (closed form), so nothing is sampled.
struct StepSweep {
  double it_avg_W = 0, it_peak_W = 0, it_min_W = 0;
  std::vector<double> peak_sum;  // per class: the GPU sum at its AC peak
};

/// Sets each class's peak, average and minimum AC power and peak DC power over the step.
StepSweep sweep_step(const StageTimelines& stl, double step, std::vector<RackClass>& classes,
                     const SystemPowerModel& sm, double idle_W, double fabric_W);

}  // namespace clustertwin::power
