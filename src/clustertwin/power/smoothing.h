#pragma once
/// Power smoothing of a synchronous job (GB300 NVL72; GB200 and Blackwell HGX without PSU
/// storage): docs/models/power.md §3; shared/reference/power-and-cooling.md §2.2, §6 (4).
///
/// Three mechanisms, per GPU as NVML configures them, applied to a system's aggregate:
///  1. Power floor: while a job runs, every GPU draws at least floor x TGP (the GPU burns
///     power in communication phases instead of dropping to its wait power).
///  2. Ramp limits: the power drawn from the grid, G, rises at most r_up and falls at most
///     r_down (W/s); a fall starts only after the load has stayed below G for the hysteresis
///     time. G never falls below the load.
///  3. PSU energy storage E in [0, E_max], full at the start: when the load L exceeds G the store
///     discharges (L - G) / eta; when G exceeds L the surplus charges it (x eta) and what does not
///     fit is burned (the "GPU burn" that holds the grid side up).
///  4. Averaging (optional, `average_s` > 0): G steers towards an exponential moving average of
///     the load instead of the load itself while the store can cover the difference, so the grid
///     sees the mean of compute and communication phases (peak shaving); with an empty store G
///     follows the load again.
/// What neither the grid (ramp-limited) nor the store can supply is `unserved`: the GPUs run
/// slower for it (the ramp-up limit throttles them), reported as a time cost.
///
/// Energy balance per step (a property test): G dt = L dt + burned - unserved + dE + losses.

#include <algorithm>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/base/units.h"
#include "clustertwin/power/params.h"

namespace clustertwin::power {

/// A smoothing profile, per GPU (NVML semantics). Ramp rates in W/s.
struct SmoothingSettings {
  double floor = 0.6;  ///< fraction of TGP while a job runs; 0 = no floor
  double ramp_up_W_per_s = 2000;
  double ramp_down_W_per_s = 500;
  double hysteresis_s = 2;
  double storage_per_gpu_J = 65;
  double storage_efficiency = 0.95;  ///< one way (charge and discharge each)
  double average_s = 0;              ///< time constant of the averaging target; 0 = follow the load
};

/// Floors outside 0.2-0.9 of TDP (other than 0), ramp limits <= 0, negative hysteresis or
/// storage, efficiency outside (0.5, 1]: bad input with the range in the message.
base::Status check(const SmoothingSettings& s);

/// Running totals of a controller (joules).
struct SmootherTotals {
  double load_J = 0, supply_J = 0, burned_J = 0, unserved_J = 0;
  double charged_J = 0;     ///< into the store (after losses)
  double discharged_J = 0;  ///< out of the store (before losses)
  double losses_J = 0;
  double max_step_up_W = 0, max_step_down_W = 0;  ///< largest change of G in one step
};

/// The ramp-limited grid-side controller with storage, one sample at a time.
class Smoother {
 public:
  /// Rates and storage for the whole unit (per-GPU figures x GPUs).
  Smoother(double ramp_up_W_per_s, double ramp_down_W_per_s, double hysteresis_s, double storage_J,
           double efficiency, double average_s = 0);
  /// Next grid-side power for a load of `load_W` held for `dt_s`.
  double step(double load_W, double dt_s);
  [[nodiscard]] double state_of_charge_J() const { return soc_; }
  [[nodiscard]] double capacity_J() const { return cap_; }
  [[nodiscard]] const SmootherTotals& totals() const { return totals_; }

 private:
  double up_, down_, hyst_, cap_, eff_, tau_;
  double g_ = 0, soc_ = 0, below_for_ = 0, ema_ = 0;
  bool started_ = false;
  SmootherTotals totals_;
};

/// Applies a smoother to a whole waveform (samples of `dt_s`).
std::vector<double> smooth(std::span<const double> load_W, double dt_s, Smoother& s);

/// A smoothing request: fields not given take the system's catalog profile.
struct SmoothingRequest {
  std::optional<double> floor, ramp_up_W_per_s, ramp_down_W_per_s, hysteresis_s, storage_per_gpu_J,
      storage_efficiency, average_s;
};
/// Parses "floor=0.8,ramp-up=2000W/s,ramp-down=500,hysteresis=2s,storage=65J,efficiency=0.95,
/// average=10s"
/// (also "on" or "default" for the catalog profile).
base::Result<SmoothingRequest> parse_smoothing(std::string_view text);

/// The request's fields over the system's catalog profile, checked (`check`). A system without
/// smoothing (`d.supported` false) is bad input naming `system` and `gpu`.
base::Result<SmoothingSettings> resolve_smoothing(const SmoothingRequest& r,
                                                  const SmoothingDefaults& d,
                                                  std::string_view system, std::string_view gpu);

/// What smoothing did over a waveform window (training or serving).
struct SmoothingSummary {
  bool enabled = false;
  SmoothingSettings settings;  ///< per GPU, as applied
  double floor_burn_J = 0;     ///< GPU energy spent holding the floor (DC, whole window)
  double ramp_burn_J = 0;      ///< surplus burned while the grid side ramps down
  double unserved_J = 0;       ///< demand neither grid nor store supplied (GPUs throttled)
  double storage_losses_J = 0;
  double storage_J = 0;          ///< installed, whole cluster
  double throttle_slowdown = 0;  ///< unserved / GPU training energy in the window
  double peak_reduction = 0;     ///< 1 - smoothed grid peak / raw grid peak
  double swing_reduction = 0;    ///< 1 - smoothed / raw swing during training
  double extra_energy_J = 0;     ///< grid energy with smoothing - without
};

/// The controller of a unit of `gpus` GPUs (a rack, a class's rack) under per-GPU settings `s`:
/// ramp rates and storage scale with the GPUs. Training's rack classes and serving's pools both
/// smooth through it.
Smoother smoother_for(const SmoothingSettings& s, double gpus);

/// Adds `units` identical controllers' totals (burned on ramps, unserved, storage losses) to
/// `summary`.
void add_totals(SmoothingSummary& summary, double units, const SmootherTotals& totals);

/// The smoothing of a workload's racks, the stage training and serving share: one controller per
/// kind of rack (a training rack class, a serving pool's rack) standing for `count` identical
/// racks of `gpus` GPUs; the per-GPU floor the GPUs are held at while the job runs; and the
/// summary of what it cost over all the racks.
class RackSmoothing {
 public:
  /// `s` per GPU; `tgp_W` the GPU's TGP (the floor's reference).
  RackSmoothing(const SmoothingSettings& s, double tgp_W);
  /// Adds a kind of rack (its installed storage counts); returns its index for `step`.
  size_t add(double count, double gpus);
  /// What a GPU drawing `gpu_W` draws held at the floor (`tgp_W` x floor) while the job runs.
  [[nodiscard]] double floored_W(double gpu_W) const { return std::max(gpu_W, floor_W_); }
  [[nodiscard]] double floor_W() const { return floor_W_; }
  /// Grid-side power of one rack of kind `unit` for a load of `load_W` held for `dt_s`.
  double step(size_t unit, double load_W, double dt_s) {
    return units_[unit].ctl.step(load_W, dt_s);
  }
  /// Energy the GPUs burned to hold the floor (all racks).
  void add_floor_burn(double J) { summary_.floor_burn_J += J; }
  /// The summary: settings, storage, floor burn and every controller's totals x its racks;
  /// throttle_slowdown = unserved / `gpu_energy_J` (the GPUs' energy in the job).
  [[nodiscard]] SmoothingSummary summary(double gpu_energy_J) const;

 private:
  struct Unit {
    double count;
    Smoother ctl;
  };
  SmoothingSettings s_;
  double floor_W_ = 0;
  std::vector<Unit> units_;
  SmoothingSummary summary_;
};

/// 1 - smoothed peak / raw peak of two waveforms (0 when the raw one has no peak).
double peak_reduction(std::span<const double> raw, std::span<const double> smoothed);
/// 1 - smoothed swing / raw swing (max - min) of two waveforms (0 when the raw one is flat).
double swing_reduction(std::span<const double> raw, std::span<const double> smoothed);

}  // namespace clustertwin::power
