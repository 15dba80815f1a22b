// The power section of a serving run (`serve --power`, the flagship's inference with `power:
// true`): the power layer observes the run the serve verb simulated (docs/models/power.md §6).

#include <fmt/format.h>

#include "clustertwin/base/units_parse.h"
#include "clustertwin/power/serving_power.h"
#include "clustertwin/report/power.h"
#include "commands.h"

namespace clustertwin::app {

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
  if (!o.power_cap.empty()) {
    // "1200", "1200W", "1.2 kW"
    double w = -1;
    try {
      size_t used = 0;
      w = std::stod(o.power_cap, &used);
      if (used != o.power_cap.size()) w = -1;
    } catch (...) {
      w = -1;
    }
    if (w < 0) {
      auto q = base::parse<base::Watts>(o.power_cap);
      if (!q) return base::fail("--power-cap: " + q.error().message);
      w = q->base();
    }
    if (!(w > 0)) return base::fail("--power-cap: must be > 0 W");
    opt.gpu.cap = base::watts(w);
  }
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
