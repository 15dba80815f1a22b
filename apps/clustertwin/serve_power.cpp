// The power section of a serving run (`serve --power`, the flagship's inference with `power:
// true`): the power layer observes the run the serve verb simulated (docs/models/power.md §6).

#include <fmt/format.h>

#include "clustertwin/base/units_parse.h"
#include "clustertwin/power/serving_power.h"
#include "clustertwin/report/power.h"
#include "commands.h"

namespace clustertwin::app {

// "1200", "1200W", "1.2 kW"
base::Result<double> parse_watts(const std::string& s, const char* flag) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (...) {
  }
  auto w = base::parse<base::Watts>(s);
  if (!w) return base::fail(std::string(flag) + ": " + w.error().message);
  return w->base();
}

// "1500", "1500MHz", "1.5GHz"
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
  return base::fail("--clock-lock: expected a clock such as 1500MHz, got '" + s + "'");
}

base::Result<power::GpuSettings> gpu_settings(const std::string& cap,
                                              const std::string& clock_lock) {
  power::GpuSettings g;
  if (!cap.empty()) {
    auto w = parse_watts(cap, "--power-cap");
    if (!w) return base::fail(w.error());
    if (!(*w > 0)) return base::fail("--power-cap: must be > 0 W");
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
  if (!spec.empty() && off) return base::fail("--smoothing and --no-smoothing exclude each other");
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

base::Result<ServingPowerOutput> serving_power(const ServeOptions& o,
                                               const hardware::Catalog& catalog,
                                               const hardware::ClusterSpec& cluster,
                                               const execution::ServingSetup& setup,
                                               const execution::ServingResult& result) {
  auto pcat = power::PowerCatalog::load(catalog);
  if (!pcat) return base::fail(pcat.error());
  auto topo = topology::Topology::build(catalog, cluster);
  if (!topo) return base::fail(topo.error());
  power::ServingPowerOptions opt;
  auto g = gpu_settings(o.power_cap, o.clock_lock);
  if (!g) return base::fail(g.error());
  opt.gpu = *g;
  opt.cooling = cooling_settings(o.pue, o.supply_temp, o.delta_t, o.coolant);
  auto sp = pcat->system(cluster.system);
  if (!sp) return base::fail(sp.error());
  auto sr = smoothing_request(o.smoothing, o.no_smoothing, (*sp)->smoothing.supported);
  if (!sr) return base::fail(sr.error());
  opt.smoothing = *sr;
  power::ServingPowerInput in{.catalog = &catalog,
                              .power = &*pcat,
                              .cluster = &cluster,
                              .topology = &*topo,
                              .setup = &setup,
                              .result = &result};
  auto r = power::analyze_serving_power(in, opt);
  if (!r) return base::fail(r.error());
  ServingPowerOutput out;
  out.json = report::serving_power_json(*r);
  out.text = report::serving_power_text(*r);
  out.summary = fmt::format(
      "power     GPU {:.0f} W avg (prompt kernels {:.0f} W, decode {:.0f} W); rack {:.0f} kW avg, "
      "{:.0f} kW peak; {:.3g} J per output token (IT), PUE {:.2f}",
      r->gpu_avg_W, r->gpu_prefill_W, r->gpu_decode_W, r->rack_avg_W / 1e3, r->rack_peak_W / 1e3,
      r->energy_per_token_J, r->facility.pue);
  return out;
}

}  // namespace clustertwin::app
