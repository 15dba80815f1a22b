#pragma once
/// The power view of a serving run (docs/models/power.md §6): an observer of the execution
/// layer's ServingResult. Execution never calls power; power reads the iterations the serving
/// simulator published (IterationRecord: instance, pipeline slot, start, duration, decoding
/// sequences and prompt tokens) and, when a power cap or clock lock slows the kernels, asks
/// execution for the run again with the kernel time scaled (ServingSetup::cap_slowdown, on top of
/// the framework calibration's gpu_factor, which it leaves alone).
///
/// Steps:
///  1. Kernel power tables per instance kind (the aggregated or decode instance, the prefill
///     instance): the models layer's ops of one rank, all layers, as a decode batch of b tokens at
///     the run's mean context (memory-bound: weights and the KV cache stream from HBM) and as a
///     prompt chunk of p tokens (compute-bound GEMMs), and the fused MoE of the group's tokens;
///     each op's power from its utilisation (gpu_power.h), under the cap and clock lock; time and
///     energy at a geometric grid of token counts, interpolated.
///  2. Each iteration: kernel energy and GPU-time from the tables at its per-rank decode and prompt
///     tokens; the rest of the iteration's GPU-time (communication, host, waiting for the slowest
///     attention-DP rank) at the communication power; an instance without an iteration running
///     draws idle power. Bin averages give the per-GPU waveform of each pool (the simulated
///     instances stand for their identical replicas).
///  3. Cap feedback: the run's kernel-time slowdown (prompt chunks are slowed by a cap near TGP,
///     decode batches are not until the cap falls below their demand) is fed back through the
///     kernel-time factor and the run simulated again at the same arrival rate; the result says
///     what the cap cost (tokens/s, TPOT, TTFT).
///  4. Racks of each pool (systems at the pool's GPU power, hosts active), the deployment's IT
///     share (its racks' fraction + its share of the fabric), cooling and facility (PUE). A rack
///     over its usable PSU capacity caps the GPUs at the largest limit that fits and runs again:
///     the result says that the limit binds and what it costs.
///  5. Energy per output token (MLPerf counts output tokens): the deployment's IT energy over the
///     run / the output tokens it generated; x PUE for the facility.
/// Cost: O(grid x ops) to build the tables + O(iterations + bins x pools).

#include <optional>
#include <string>
#include <vector>

#include "clustertwin/execution/serving_sim.h"
#include "clustertwin/power/cooling.h"
#include "clustertwin/power/gpu_power.h"
#include "clustertwin/power/params.h"
#include "clustertwin/power/smoothing.h"
#include "clustertwin/power/system_power.h"
#include "clustertwin/power/waveform.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::power {

struct ServingPowerInput {
  const hardware::Catalog* catalog = nullptr;
  const PowerCatalog* power = nullptr;
  const hardware::ClusterSpec* cluster = nullptr;
  const topology::Topology* topology = nullptr;
  /// The setup the run used (layout, scenario, dataset, seed); its rate is taken from `result`.
  const execution::ServingSetup* setup = nullptr;
  const execution::ServingResult* result = nullptr;
};

struct ServingPowerOptions {
  GpuSettings gpu;
  CoolingSettings cooling;
  /// Power smoothing of the racks (systems that support it; fields not given take the catalog
  /// profile): the smoothed rack waveform and what it costs. Not given = no smoothing.
  std::optional<SmoothingRequest> smoothing;
  bool feedback = true;  ///< re-run when a cap or clock lock slows the kernels
  /// A rack over its usable PSU capacity: cap the GPUs to fit and run again (else only say so).
  bool enforce_rack_limit = true;
  double resolution_s = 0.01;  ///< waveform bins
  size_t max_points = 2000;    ///< samples per reported waveform
};

/// One pool of identical instances (aggregated, or the prefill / decode pool when
/// disaggregated).
struct ServingPool {
  std::string name;  ///< "instances", "prefill", "decode"
  std::string layout;
  int64_t gpus = 0;  ///< in the deployment
  double gpu_avg_W = 0, gpu_peak_W = 0, gpu_min_W = 0;
  /// GPU-time shares: kernels of decode batches, of prompt chunks, the rest of the iterations
  /// (communication, host, waiting) and no iteration (idle).
  double decode_share = 0, prefill_share = 0, other_share = 0, idle_share = 0;
  double rack_avg_W = 0, rack_peak_W = 0;  ///< a rack of this pool (AC)
  double it_avg_W = 0, it_peak_W = 0;      ///< the pool's IT share (its racks' fraction)
};

struct ServingPowerResult {
  execution::ServingResult serving;  ///< the run under the settings (re-simulated if slowed)
  double baseline_tokens_per_s = 0, baseline_tpot_p99_s = 0, baseline_ttft_p99_s = 0;
  double cap_W = 0;
  std::string cap_reason;  ///< "default (TGP)" or "power cap (asked)"
  double clock_lock_MHz = 0;
  double kernel_slowdown = 1;  ///< run's kernel-time multiplier fed back

  // GPU (per GPU)
  double gpu_tgp_W = 0, gpu_idle_W = 0, gpu_comm_W = 0;
  double gpu_avg_W = 0, gpu_peak_W = 0, gpu_min_W = 0;  ///< deployment, over the run (bins)
  /// Kernels of a decode iteration at the run's mean batch per rank and mean context, and of a
  /// full prompt chunk (max_tokens per rank), under the settings; and their slowdowns.
  double gpu_decode_W = 0, gpu_prefill_W = 0;
  double decode_slowdown = 1, prefill_slowdown = 1;
  double decode_demand_W = 0;       ///< the decode kernels' mean power at the default limit
  double decode_peak_demand_W = 0;  ///< their most power-hungry kernel at the default limit
  std::vector<ServingPool> pools;

  // Racks, deployment, facility
  std::string system;
  int systems_per_rack = 1;
  double racks = 0;  ///< racks' worth of GPUs the deployment uses (fractional)
  double rack_avg_W = 0, rack_peak_W = 0;  ///< the hottest pool's rack (AC)
  double rack_limit_W = 0;                 ///< usable PSU capacity (DC)
  double rack_limit_ac_W = 0;    ///< rack_limit_W at the PSU inputs (the AC waveforms' limit)
  std::string rack_limit_basis;  ///< how rack_limit_W is made up (PSUs, redundancy, source)
  bool rack_limit_binds = false;
  std::string rack_limit_message;
  FabricPower fabric;
  double fabric_share_W = 0;  ///< the deployment's share of the scale-out fabric (AC)
  double cluster_avg_W = 0, cluster_peak_W = 0;  ///< the deployment's IT share
  CoolingPlan cooling_plan;
  RackCooling rack_cooling;
  double cluster_flow_L_per_min = 0;
  FacilityPower facility;
  double facility_peak_W = 0;

  // Energy over the run
  double duration_s = 0, output_tokens = 0, requests = 0, iterations = 0;
  double energy_J = 0;            ///< IT share over the run
  double gpu_energy_J = 0;        ///< the deployment's GPUs
  double energy_per_token_J = 0;  ///< IT energy / output tokens
  double facility_energy_per_token_J = 0;
  double gpu_energy_per_token_J = 0;
  double energy_per_request_J = 0;
  double energy_per_iteration_J = 0;  ///< IT energy / iterations of one instance's step

  std::vector<Waveform> waveforms;  ///< per-GPU and rack power over the run
  /// With smoothing: every pool's racks through the controller (floor while serving, ramps,
  /// storage); energies over the deployment, reductions of the hottest pool's rack waveform.
  SmoothingSummary smoothing;
  std::vector<std::string> notes, warnings;
};

/// The power view of a serving run. Errors: bad settings (cap, clock, cooling), a system or GPU
/// without power parameters, or a serving error of the re-run.
base::Result<ServingPowerResult> analyze_serving_power(const ServingPowerInput& in,
                                                       const ServingPowerOptions& o);

}  // namespace clustertwin::power
