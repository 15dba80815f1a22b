#include "clustertwin/power/gpu_power.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "clustertwin/base/check.h"

namespace clustertwin::power {
namespace {

// Share of a memory-bound kernel's dynamic power that follows the SM clock (the rest is HBM and
// its PHY). Assumption (docs/models/power.md §1.3): SM clock locking recovers "up to 32%" of
// decode energy (arXiv 2605.11999, shared/reference/power-and-cooling.md §1.3), which a half
// share reproduces at a 0.6x clock.
constexpr double kMemorySmShare = 0.5;
// Anchor utilisation of the measured memory-bound power (kernels at ~80% of HBM bandwidth).
constexpr double kMemoryAnchorUtil = 0.8;

}  // namespace

GpuPowerModel::GpuPowerModel(const hardware::GpuSpec& gpu, const GpuPowerParams& p)
    : p_(&p), tgp_(gpu.tgp.base()), idle_(gpu.idle_power.base()) {
  const double top = p_->limit_margin * tgp_ - p_->floor.base();
  const double frac = (p_->memory_anchor.base() - p_->floor.base()) / top;
  CT_CHECK(top > 0 && frac > 0 && frac < 1, "power parameters: floor < memory anchor < limit");
  // (u_anchor / x_m)^gamma = frac
  x_m_ = kMemoryAnchorUtil / std::pow(frac, 1.0 / p_->exponent);
}

base::Status GpuPowerModel::check(const GpuSettings& s) const {
  if (s.cap.base() != 0) {
    if (s.cap < p_->min_limit || s.cap > p_->max_limit) {
      return base::fail(
          fmt::format("power cap {:g} W is outside the settable range of {} ({:g}-{:g} W)",
                      s.cap.base(), p_->gpu, p_->min_limit.base(), p_->max_limit.base()));
    }
  }
  if (s.clock_lock_MHz != 0) {
    const double lo = 0.2 * p_->max_clock_MHz;
    if (s.clock_lock_MHz < lo || s.clock_lock_MHz > p_->max_clock_MHz) {
      return base::fail(fmt::format("clock lock {:g} MHz is outside {:g}-{:g} MHz for {}",
                                    s.clock_lock_MHz, lo, p_->max_clock_MHz, p_->gpu));
    }
  }
  return {};
}

double GpuPowerModel::demand(double u_c, double u_m, double u_l) const {
  const double x = std::min(
      1.0, std::max(std::max(0.0, u_c) / p_->compute_saturation, std::max(0.0, u_m) / x_m_));
  const double top = p_->limit_margin * tgp_;
  return p_->floor.base() + (top - p_->floor.base()) * std::pow(x, p_->exponent) +
         p_->link_power.base() * std::clamp(u_l, 0.0, 1.0);
}

Effect GpuPowerModel::apply(double demand_W, bool compute_bound, const GpuSettings& s) const {
  const double alpha = p_->dvfs_exponent;
  double P = demand_W;
  double slow = 1.0;
  if (s.clock_lock_MHz > 0) {
    if (compute_bound) {
      const bool limited = demand_W >= p_->limit_margin * tgp_ - 1e-6;
      const double f0 = limited ? p_->sustained_clock_MHz : p_->max_clock_MHz;
      const double phi = std::min(1.0, s.clock_lock_MHz / f0);
      slow /= phi;
      P = idle_ + std::max(0.0, P - idle_) * std::pow(phi, alpha);
    } else {
      const double phi = std::min(1.0, s.clock_lock_MHz / p_->max_clock_MHz);
      P = idle_ +
          std::max(0.0, P - idle_) * (1.0 - kMemorySmShare + kMemorySmShare * std::pow(phi, alpha));
    }
  }
  const double cap = s.cap.base() > 0 ? s.cap.base() : tgp_;
  const double lim = p_->limit_margin * cap;
  if (P > lim) {
    // The clock falls until the dynamic power fits; floor the headroom so a cap near the static
    // power gives a large but finite slowdown.
    const double headroom = std::max(lim - idle_, 0.02 * tgp_);
    slow *= std::pow(std::max(0.0, P - idle_) / headroom, 1.0 / alpha);
    P = lim;
  }
  return {.slowdown = std::max(1.0, slow), .power_W = P};
}

OpPower GpuPowerModel::op(const compute::ComputeModel& cm, const compute::Op& o) const {
  OpPower r;
  r.time_s = cm.op(o).base();
  if (r.time_s <= 0) {
    r.demand_W = p_->floor.base();
    return r;
  }
  const double peak = cm.peak(o.dtype).base();
  const double bw = cm.hbm_bandwidth().base();
  const double f = o.flops.base(), b = o.bytes.base();
  const double u_c = peak > 0 ? f / (r.time_s * peak) : 0;
  const double u_m = bw > 0 ? b / (r.time_s * bw) : 0;
  r.compute_bound = peak > 0 && bw > 0 && f / peak >= b / bw;
  r.demand_W = demand(u_c, u_m);
  return r;
}

double GpuPowerModel::memory_bound_W(const compute::ComputeModel& cm) const {
  return demand(0, cm.hbm_efficiency());
}

PhasePower& PhasePower::operator+=(const PhasePower& o) {
  time_s += o.time_s;
  capped_time_s += o.capped_time_s;
  energy_J += o.energy_J;
  compute_bound_s += o.compute_bound_s;
  return *this;
}

PhasePower phase_power(std::span<const OpPower> ops, const GpuPowerModel& gm,
                       const GpuSettings& s) {
  PhasePower p;
  for (const auto& o : ops) {
    const auto e = gm.apply(o.demand_W, o.compute_bound, s);
    const double t = o.time_s * o.count;
    p.time_s += t;
    p.capped_time_s += t * e.slowdown;
    p.energy_J += t * e.slowdown * e.power_W;
    if (o.compute_bound) p.compute_bound_s += t;
  }
  return p;
}

}  // namespace clustertwin::power
