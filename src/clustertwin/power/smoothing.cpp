#include "clustertwin/power/smoothing.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "clustertwin/base/text.h"

namespace clustertwin::power {

base::Status check(const SmoothingSettings& s) {
  if (s.floor != 0 && (s.floor < 0.2 || s.floor > 0.9)) {
    return base::fail(fmt::format(
        "{{smoothing}} floor={:g}: expected 0 (off) or a fraction of TDP in 0.2-0.9 (the GB200 "
        "minimum power floor range)",
        s.floor));
  }
  if (!(s.ramp_up_W_per_s > 0)) {
    return base::fail(
        fmt::format("{{smoothing}} ramp-up={:g} W/s: a ramp limit must be > 0", s.ramp_up_W_per_s));
  }
  if (!(s.ramp_down_W_per_s > 0)) {
    return base::fail(fmt::format("{{smoothing}} ramp-down={:g} W/s: a ramp limit must be > 0",
                                  s.ramp_down_W_per_s));
  }
  if (s.hysteresis_s < 0) return base::fail("{smoothing} hysteresis: must be >= 0 s");
  if (s.storage_per_gpu_J < 0) return base::fail("{smoothing} storage: must be >= 0 J");
  if (!(s.storage_efficiency > 0.5 && s.storage_efficiency <= 1)) {
    return base::fail("{smoothing} efficiency: expected a value in (0.5, 1]");
  }
  if (s.average_s < 0) return base::fail("{smoothing} average: must be >= 0 s");
  return {};
}

Smoother::Smoother(double ramp_up_W_per_s, double ramp_down_W_per_s, double hysteresis_s,
                   double storage_J, double efficiency, double average_s)
    : up_(ramp_up_W_per_s),
      down_(ramp_down_W_per_s),
      hyst_(hysteresis_s),
      cap_(storage_J),
      eff_(efficiency),
      tau_(average_s),
      soc_(storage_J) {}

double Smoother::step(double load_W, double dt_s) {
  const double prev = g_;
  if (!started_) {
    g_ = load_W;
    ema_ = load_W;
    started_ = true;
  } else {
    double target = load_W;
    if (tau_ > 0) {
      ema_ += (load_W - ema_) * std::min(1.0, dt_s / tau_);
      target = ema_;
      // Steer to the average only while the store can carry the gap for this step.
      if (load_W > target && soc_ * eff_ < (load_W - target) * dt_s) target = load_W;
    }
    if (target >= g_) {
      below_for_ = 0;
      g_ = std::min(target, g_ + up_ * dt_s);
    } else {
      below_for_ += dt_s;
      if (below_for_ > hyst_) g_ = std::max(target, g_ - down_ * dt_s);
    }
  }
  const double d = g_ - prev;
  if (d > 0) totals_.max_step_up_W = std::max(totals_.max_step_up_W, d);
  if (d < 0) totals_.max_step_down_W = std::max(totals_.max_step_down_W, -d);
  // Balance: the store covers the gap as far as it can.
  if (g_ >= load_W) {
    const double surplus = (g_ - load_W) * dt_s;
    const double in = std::min(surplus, (cap_ - soc_) / eff_);  // drawn from the bus
    soc_ += in * eff_;
    totals_.charged_J += in * eff_;
    totals_.losses_J += in * (1 - eff_);
    totals_.burned_J += surplus - in;
  } else {
    const double deficit = (load_W - g_) * dt_s;
    const double out = std::min(deficit, soc_ * eff_);  // delivered to the bus
    soc_ -= out / eff_;
    totals_.discharged_J += out;
    totals_.losses_J += out / eff_ - out;
    totals_.unserved_J += deficit - out;
  }
  totals_.load_J += load_W * dt_s;
  totals_.supply_J += g_ * dt_s;
  return g_;
}

std::vector<double> smooth(std::span<const double> load_W, double dt_s, Smoother& s) {
  std::vector<double> out;
  out.reserve(load_W.size());
  for (double l : load_W) out.push_back(s.step(l, dt_s));
  return out;
}

base::Result<SmoothingSettings> resolve_smoothing(const SmoothingRequest& r,
                                                  const SmoothingDefaults& d,
                                                  std::string_view system, std::string_view gpu) {
  if (!d.supported) {
    return base::fail(fmt::format(
        "{{smoothing}}: {} ({}) has no power smoothing (the NVML power-smoothing floor and ramps "
        "need Blackwell or newer)",
        system, gpu));
  }
  SmoothingSettings s;
  s.floor = r.floor.value_or(d.floor);
  s.ramp_up_W_per_s = r.ramp_up_W_per_s.value_or(d.ramp_up_W_per_s);
  s.ramp_down_W_per_s = r.ramp_down_W_per_s.value_or(d.ramp_down_W_per_s);
  s.hysteresis_s = r.hysteresis_s.value_or(d.hysteresis.base());
  s.storage_per_gpu_J = r.storage_per_gpu_J.value_or(d.storage_per_gpu.base());
  s.storage_efficiency = r.storage_efficiency.value_or(d.storage_efficiency);
  s.average_s = r.average_s.value_or(0.0);
  if (auto st = check(s); !st) return base::fail(st.error());
  return s;
}

base::Result<SmoothingRequest> parse_smoothing(std::string_view text) {
  SmoothingRequest r;
  std::string t(text);
  if (t == "on" || t == "default" || t.empty()) return r;
  std::stringstream in(t);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      return base::fail(
          "{smoothing}: expected KEY=VALUE items separated by commas (floor=0.8,ramp-up=2000W/s), "
          "got '" +
          item + "'");
    }
    const std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    auto number = [&](double scale_k) -> base::Result<double> {
      // Plain numbers, or with a unit: W/s, kW/s (ramps), s/ms (hysteresis), J/kJ (storage).
      std::string v = val;
      double mult = 1;
      auto strip = [&](const char* suffix, double k) {
        const std::string s(suffix);
        if (v.size() > s.size() && v.compare(v.size() - s.size(), s.size(), s) == 0) {
          v = v.substr(0, v.size() - s.size());
          mult = k;
          return true;
        }
        return false;
      };
      if (scale_k == 1) {  // ramp
        strip("kW/s", 1e3) || strip("W/s", 1);
      } else if (scale_k == 2) {  // time
        strip("ms", 1e-3) || strip("s", 1);
      } else if (scale_k == 3) {  // energy
        strip("kJ", 1e3) || strip("J", 1);
      }
      try {
        size_t used = 0;
        const double x = std::stod(v, &used);
        if (used != v.size() || !std::isfinite(x)) throw std::invalid_argument(v);
        return x * mult;
      } catch (...) {
        return base::fail("{smoothing} " + key + ": expected a number, got '" + val + "'");
      }
    };
    base::Result<double> v = 0.0;
    if (key == "floor") {
      v = number(0);
      if (v) r.floor = *v;
    } else if (key == "ramp-up") {
      v = number(1);
      if (v) r.ramp_up_W_per_s = *v;
    } else if (key == "ramp-down") {
      v = number(1);
      if (v) r.ramp_down_W_per_s = *v;
    } else if (key == "hysteresis") {
      v = number(2);
      if (v) r.hysteresis_s = *v;
    } else if (key == "storage") {
      v = number(3);
      if (v) r.storage_per_gpu_J = *v;
    } else if (key == "efficiency") {
      v = number(0);
      if (v) r.storage_efficiency = *v;
    } else if (key == "average") {
      v = number(2);
      if (v) r.average_s = *v;
    } else {
      const std::vector<std::string> known = {"floor",   "ramp-up",    "ramp-down", "hysteresis",
                                              "storage", "efficiency", "average"};
      return base::fail("{smoothing}: unknown key '" + key + "'" + base::did_you_mean(key, known));
    }
    if (!v) return base::fail(v.error());
  }
  return r;
}

Smoother smoother_for(const SmoothingSettings& s, double gpus) {
  return Smoother(s.ramp_up_W_per_s * gpus, s.ramp_down_W_per_s * gpus, s.hysteresis_s,
                  s.storage_per_gpu_J * gpus, s.storage_efficiency, s.average_s);
}

void add_totals(SmoothingSummary& summary, double units, const SmootherTotals& totals) {
  summary.ramp_burn_J += units * totals.burned_J;
  summary.unserved_J += units * totals.unserved_J;
  summary.storage_losses_J += units * totals.losses_J;
}

RackSmoothing::RackSmoothing(const SmoothingSettings& s, double tgp_W)
    : s_(s), floor_W_(s.floor * tgp_W) {
  summary_.enabled = true;
  summary_.settings = s;
}

size_t RackSmoothing::add(double count, double gpus) {
  units_.push_back({count, smoother_for(s_, gpus)});
  summary_.storage_J += count * s_.storage_per_gpu_J * gpus;
  return units_.size() - 1;
}

SmoothingSummary RackSmoothing::summary(double gpu_energy_J) const {
  SmoothingSummary out = summary_;
  for (const auto& u : units_) add_totals(out, u.count, u.ctl.totals());
  out.throttle_slowdown = gpu_energy_J > 0 ? out.unserved_J / gpu_energy_J : 0;
  return out;
}

double peak_reduction(std::span<const double> raw, std::span<const double> smoothed) {
  if (raw.empty() || smoothed.empty()) return 0;
  const double r = *std::max_element(raw.begin(), raw.end());
  const double s = *std::max_element(smoothed.begin(), smoothed.end());
  return r > 0 ? 1 - s / r : 0;
}

double swing_reduction(std::span<const double> raw, std::span<const double> smoothed) {
  if (raw.empty() || smoothed.empty()) return 0;
  const auto [r_lo, r_hi] = std::minmax_element(raw.begin(), raw.end());
  const auto [s_lo, s_hi] = std::minmax_element(smoothed.begin(), smoothed.end());
  const double r = *r_hi - *r_lo;
  return r > 0 ? 1 - (*s_hi - *s_lo) / r : 0;
}

}  // namespace clustertwin::power
