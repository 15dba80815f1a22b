#pragma once
/// GPU power from activity, and what a power cap or a clock lock does to speed
/// (docs/models/power.md §1; shared/reference/power-and-cooling.md §1, §6).
///
/// Demand of an interval with compute utilisation u_c (achieved FLOP/s / dense peak), memory
/// utilisation u_m (HBM bytes/s / HBM peak) and link utilisation u_l, at the default limit:
///   P_dem = P_floor + (m*TGP - P_floor) * min(1, max(u_c/x_c, u_m/x_m))^gamma + P_link*u_l
/// where m (0.975-0.99) is where power-limited kernels settle below the limit: compute-bound
/// GEMMs are power-limited and sit at 97-99% of it whatever the dtype (AIConfigurator's measured
/// tables). x_m is set so that streaming at 80% of HBM bandwidth draws the measured memory-bound
/// power (50-80% of TDP). No kernel resident: the GPU's idle power.
///
/// Settings (cap C, clock lock f_l), applied to an op of demand P at its default clock:
///  - clock lock: compute-bound ops run at min(f_l, f_0) (f_0: the sustained clock under the
///    limit for power-limited ops, the maximum clock otherwise): time x f_0/f, dynamic power
///    (P - P_idle) x (f/f_0)^alpha; memory-bound ops keep their time (HBM-bound) and half of their
///    dynamic power scales with the SM clock.
///  - cap: P' = min(P, m*C); when P > m*C the clock drops until the dynamic power fits:
///    time x ((P - P_idle) / (m*C - P_idle))^(1/alpha). Memory-bound work is untouched until the
///    cap falls below its (lower) demand: decode at 137-300 W never meets a 700 W cap.

#include <span>

#include "clustertwin/base/result.h"
#include "clustertwin/compute/compute_model.h"
#include "clustertwin/hardware/specs.h"
#include "clustertwin/power/params.h"

namespace clustertwin::power {

/// How the GPUs are run: the power limit and an optional SM clock lock.
struct GpuSettings {
  Watts cap;                  ///< the set power limit; 0 = the GPU's TGP
  double clock_lock_MHz = 0;  ///< 0 = not locked
};

/// The power of one op (or phase) at the default limit and clocks.
struct OpPower {
  double time_s = 0;    ///< duration at the default settings
  double demand_W = 0;  ///< power at the default settings
  bool compute_bound = true;
  double count = 1;  ///< identical ops this entry stands for
};

/// An op or phase under the settings.
struct Effect {
  double slowdown = 1;  ///< time multiplier (>= 1)
  double power_W = 0;
};

class GpuPowerModel {
 public:
  /// `p` must outlive the model (it is the power catalog's).
  GpuPowerModel(const hardware::GpuSpec& gpu, const GpuPowerParams& p);

  /// Caps outside [min_limit, max_limit] and clock locks outside [0.2, 1] x the maximum clock
  /// are bad input (the message names the range).
  [[nodiscard]] base::Status check(const GpuSettings& s) const;

  /// Demand at the default limit and clocks for utilisations in [0, 1+].
  [[nodiscard]] double demand(double u_c, double u_m, double u_l = 0) const;
  /// The op under settings (cap 0 = TGP).
  [[nodiscard]] Effect apply(double demand_W, bool compute_bound, const GpuSettings& s) const;
  /// Power and time of an op on this GPU from the compute model's time and the op's FLOPs and
  /// bytes.
  [[nodiscard]] OpPower op(const compute::ComputeModel& cm, const compute::Op& op) const;
  /// Power of a streaming kernel (optimizer, norms) at the compute model's HBM efficiency.
  [[nodiscard]] double memory_bound_W(const compute::ComputeModel& cm) const;
  /// Waiting for communication with the link busy (u_l) or a pipeline bubble (u_l = 0).
  [[nodiscard]] double comm_W(double u_l) const {
    return p_->floor.base() + p_->link_power.base() * u_l;
  }

  [[nodiscard]] double tgp_W() const { return tgp_; }
  [[nodiscard]] double idle_W() const { return idle_; }
  [[nodiscard]] double floor_W() const { return p_->floor.base(); }
  /// Where a power-limited kernel settles under limit `cap_W`.
  [[nodiscard]] double limited_W(double cap_W) const { return p_->limit_margin * cap_W; }
  [[nodiscard]] double memory_saturation() const { return x_m_; }
  [[nodiscard]] const GpuPowerParams& params() const { return *p_; }

 private:
  const GpuPowerParams* p_;  // the catalog's: outlives the model
  double tgp_ = 0, idle_ = 0, x_m_ = 1;
};

/// A phase made of ops (with counts) under settings: total default time, time and energy under
/// the settings.
struct PhasePower {
  double time_s = 0;           ///< at the default settings
  double capped_time_s = 0;    ///< under the settings
  double energy_J = 0;         ///< under the settings
  double compute_bound_s = 0;  ///< default-time share of compute-bound ops
  [[nodiscard]] double power_W() const { return capped_time_s > 0 ? energy_J / capped_time_s : 0; }
  [[nodiscard]] double slowdown() const { return time_s > 0 ? capped_time_s / time_s : 1; }
  PhasePower& operator+=(const PhasePower& o);
};
PhasePower phase_power(std::span<const OpPower> ops, const GpuPowerModel& gm, const GpuSettings& s);

}  // namespace clustertwin::power
