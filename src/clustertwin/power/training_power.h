#pragma once
/// The power view of a training job (docs/models/power.md): an observer of the execution
/// layer's TrainingResult. Execution never calls power; power reads what execution published
/// (the pipeline tasks with their ticks, the stage tails, the breakdown) and, when a cap or a
/// clock lock binds, asks execution for the step again with the compute time scaled.
///
/// Steps:
///  1. Per-op power of each pipeline chunk's forward and backward ops (compute model times and
///     the ops' FLOPs and bytes -> utilisation -> gpu_power.h), under the cap and clock lock;
///     their slowdown s of the compute time is fed back through its own field,
///     TrainingSetup::cap_slowdown (compute time x (1 + o) -> x (1 + o) s), and the step
///     re-simulated.
///  2. One GPU per pipeline stage as a periodic timeline (symmetry: every DP replica and TP rank
///     of a stage does the same): forward/backward tasks at their compute power mixed with the
///     exposed TP/CP/EP communication share, bubbles at the wait power, the exposed DP reduction
///     at the communication power, the optimizer at the memory-bound power, then waiting for the
///     slowest stage.
///  3. Racks grouped into classes by how many GPUs of each stage they hold (ranks are packed in
///     Megatron order); a class's power over the step is its systems' power (system_power.h) at
///     the sum of its GPUs; the cluster is the sum over classes plus the fabric.
///  4. Rack limits: a rack whose DC power exceeds its usable PSU capacity is capped (the largest
///     GPU cap that fits) and the step re-simulated: the result says that the limit binds and
///     what it costs.
///  5. Cooling and facility at the rack peak and average; energy per step, per token, per run.
///  6. Waveforms over a job window (idle, start, training, checkpoints, stop) at a fixed
///     resolution, with and without smoothing, and their statistics and spectrum.
/// Cost: O(ops of distinct layers + tasks + levels x rack classes) per step (the segment ends
/// bucket-sorted by time); waveforms O(bins x stages + bins x classes).

#include <optional>
#include <string>
#include <vector>

#include "clustertwin/execution/training.h"
#include "clustertwin/power/cooling.h"
#include "clustertwin/power/gpu_power.h"
#include "clustertwin/power/params.h"
#include "clustertwin/power/racks.h"
#include "clustertwin/power/smoothing.h"
#include "clustertwin/power/system_power.h"
#include "clustertwin/power/timeline.h"
#include "clustertwin/power/waveform.h"
#include "clustertwin/topology/summary.h"

namespace clustertwin::power {

/// The named limits on the job window's waveforms (docs/limits.md), counted before anything is
/// allocated. Every sample is computed (the bins fall at a different phase of each step, and the
/// racks' PSU curves and the smoothing controller are not linear, so one step's period does not
/// give the window's figures exactly): a sample costs each pipeline stage's timeline and each
/// rack class's system model, and holds seven doubles and a point of each spectrum's FFT. At
/// these bounds a window runs in about 2 s (release): 10^6 samples of PP16 on 4,608 GB300 (16
/// stages, 16 rack classes) took 1.6 s; the 5e7 samples allowed before were ~40 s at 10^7.
inline constexpr double kMaxWindowSamples = 2e6;
/// Samples x (pipeline stages + rack classes).
inline constexpr double kMaxWindowStageSamples = 3.2e7;

struct TrainingPowerOptions {
  GpuSettings gpu;
  std::string node_policy;  ///< a DPS node policy of the system ("GB300-Med"); "" = none
  std::optional<SmoothingRequest> smoothing;
  CoolingSettings cooling;
  double price_per_kWh = 0;      ///< currency per kWh; 0 = not asked
  double grid_gCO2_per_kWh = 0;  ///< 0 = not asked
  double token_budget = 0;       ///< tokens of the whole run; 0 = not asked
  JobWindow window;
  bool waveforms = true;
  bool feedback = true;  ///< re-run the step when a cap or clock lock slows compute
  bool enforce_rack_limit = true;
  size_t max_points = 2000;  ///< samples per reported waveform
};

struct TrainingPowerInput {
  const hardware::Catalog* catalog = nullptr;
  const PowerCatalog* power = nullptr;
  const hardware::ClusterSpec* cluster = nullptr;
  const topology::Topology* topology = nullptr;
  execution::TrainingSetup setup;
  /// The step at the default settings, if already simulated (else simulated here).
  const execution::TrainingResult* baseline = nullptr;
};

struct TrainingPowerResult {
  execution::TrainingResult training;  ///< the step under the settings (re-simulated if slowed)
  double baseline_step_time_s = 0;     ///< at the default settings
  double compute_slowdown = 1;         ///< compute-time multiplier fed back
  double cap_W = 0;                    ///< effective per-GPU limit
  std::string cap_reason;  ///< "default (TGP)", "--power-cap", "node policy ...", "rack limit"
  double clock_lock_MHz = 0;

  // GPU (per GPU, one step)
  double gpu_tgp_W = 0, gpu_idle_W = 0, gpu_floor_W = 0;
  double gpu_avg_W = 0, gpu_peak_W = 0, gpu_min_W = 0;
  double gpu_compute_W = 0;       ///< average over forward/backward compute (no comm share)
  double gpu_memory_bound_W = 0;  ///< a streaming kernel (optimizer)
  double gpu_comm_W = 0;          ///< waiting on busy links
  std::vector<double> stage_avg_W;
  std::vector<PeriodicTimeline> stage_timelines;

  // Systems and racks (one step, steady state)
  std::string system;
  int systems_per_rack = 1, racks = 0, job_racks = 0;
  std::vector<RackClass> rack_classes;
  size_t worst_class = 0;     ///< index of the class with the highest peak
  SystemBreakdown rack_peak;  ///< the worst class at its peak (per rack)
  /// A full rack with every GPU at its power-limited draw (compute-bound at the cap) and hosts
  /// at the training load: the "full load" provisioning figure public rack numbers quote.
  SystemBreakdown rack_full_load;
  double rack_avg_W = 0, rack_peak_W = 0, rack_min_W = 0;  ///< the worst class, AC
  double rack_limit_W = 0;                                 ///< usable PSU capacity per rack (DC)
  double rack_limit_ac_W = 0;    ///< rack_limit_W at the PSU inputs (the AC waveforms' limit)
  std::string rack_limit_basis;  ///< how rack_limit_W is made up (PSUs, redundancy, source)
  bool rack_limit_binds = false;
  std::string rack_limit_message;
  FabricPower fabric;
  double cluster_avg_W = 0, cluster_peak_W = 0, cluster_min_W = 0;  ///< IT at the PSU inputs
  double cluster_nameplate_W = 0;

  // Cooling and facility
  CoolingPlan cooling_plan;
  RackCooling rack_cooling;  ///< the worst class
  double cluster_flow_L_per_min = 0;
  FacilityPower facility;  ///< at the cluster's average IT power
  double facility_peak_W = 0;

  // Energy
  double step_time_s = 0;
  double tokens_per_step = 0;
  double gpu_energy_per_step_J = 0;        ///< the job's GPUs
  double energy_per_step_J = 0;            ///< the job's IT share (its racks + fabric share)
  double facility_energy_per_step_J = 0;   ///< x PUE
  double energy_per_token_J = 0;           ///< the job's IT share, like energy_per_step_J
  double facility_energy_per_token_J = 0;  ///< x PUE
  double run_steps = 0, run_time_s = 0, run_energy_J = 0, run_cost = 0, run_carbon_kg = 0;
  double run_tdp_energy_J = 0;  ///< GPU-hours x TGP (how Meta and BLOOM report)
  double price_per_kWh = 0, grid_gCO2_per_kWh = 0, token_budget = 0;

  // Waveforms (full resolution) and smoothing
  JobWindow window;
  std::vector<Waveform> waveforms;
  SmoothingSummary smoothing;

  std::vector<std::string> notes, warnings;
};

/// The power view of a training job. Errors: bad settings (cap, clock, smoothing, cooling), a
/// system or GPU without power parameters, or a training error of the re-run.
base::Result<TrainingPowerResult> analyze_training_power(const TrainingPowerInput& in,
                                                         const TrainingPowerOptions& o);

/// Per-chunk forward/backward power profiles of a training layout under `s`: the compute-time
/// slowdown the train verb feeds back (compute time x slowdown), without running anything else.
base::Result<double> training_compute_slowdown(const hardware::Catalog& catalog,
                                               const PowerCatalog& power,
                                               const execution::TrainingSetup& setup,
                                               const hardware::GpuSpec& gpu, const GpuSettings& s);

}  // namespace clustertwin::power
