#include "clustertwin/scenario/power_settings.h"

#include "clustertwin/base/units_parse.h"

namespace clustertwin::scenario {

base::Result<double> parse_watts(const std::string& s, const std::string& key) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (...) {
  }
  auto w = base::parse<base::Watts>(s);
  if (!w) return base::fail("{" + key + "}: " + w.error().message);
  return w->base();
}

base::Result<double> parse_mhz(const std::string& s) {
  std::string v = s;
  double mult = 1;
  if (v.size() > 3 && (v.ends_with("MHz") || v.ends_with("GHz"))) {
    mult = v.ends_with("GHz") ? 1e3 : 1;
    v = v.substr(0, v.size() - 3);
  }
  try {
    size_t used = 0;
    const double x = std::stod(v, &used);
    if (used == v.size() && x > 0) return x * mult;
  } catch (...) {
  }
  return base::fail("{clock_lock}: expected a clock such as 1500MHz, got '" + s + "'");
}

base::Result<power::GpuSettings> gpu_settings(const std::string& cap,
                                              const std::string& clock_lock) {
  power::GpuSettings g;
  if (!cap.empty()) {
    auto w = parse_watts(cap, "power_cap");
    if (!w) return base::fail(w.error());
    if (!(*w > 0)) return base::fail("{power_cap}: must be > 0 W");
    g.cap = base::watts(*w);
  }
  if (!clock_lock.empty()) {
    auto f = parse_mhz(clock_lock);
    if (!f) return base::fail(f.error());
    g.clock_lock_MHz = *f;
  }
  return g;
}

base::Result<std::optional<power::SmoothingRequest>> smoothing_request(const std::string& spec,
                                                                       bool off, bool supported) {
  using Request = std::optional<power::SmoothingRequest>;
  if (!spec.empty() && off) return base::fail("{smoothing} and {no_smoothing} exclude each other");
  if (!spec.empty()) {
    auto r = power::parse_smoothing(spec);
    if (!r) return base::fail(r.error());
    return Request(*r);
  }
  return !off && supported ? Request(power::SmoothingRequest{}) : Request();
}

power::CoolingSettings cooling_settings(double pue, double supply_temp, double delta_t,
                                        const std::string& coolant) {
  power::CoolingSettings c;
  if (pue != 0) c.pue = pue;
  if (supply_temp > -999) c.supply_C = supply_temp;
  if (delta_t != 0) c.delta_T_K = delta_t;
  c.coolant = coolant;
  return c;
}

}  // namespace clustertwin::scenario
