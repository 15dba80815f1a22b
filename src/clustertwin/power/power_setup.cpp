// The settings stage of the power views (power_setup.h; docs/models/power.md).

#include "clustertwin/power/power_setup.h"

#include <algorithm>

#include "clustertwin/base/text.h"
#include "clustertwin/base/units_parse.h"

namespace clustertwin::power {

double PowerSetup::cap_W() const {
  return settings.cap.base() > 0 ? settings.cap.base() : gpu->tgp.base();
}

double PowerSetup::rack_limit_cap_W(double current_cap_W) const {
  const double budget = sm().gpu_budget_W(true) / system->gpus();
  return std::min(current_cap_W,
                  std::max(gpu_params->min_limit.base(), budget / gpu_params->limit_margin));
}

base::Result<PowerSetup> resolve_power_setup(const hardware::Catalog& catalog,
                                             const PowerCatalog& power,
                                             const hardware::ClusterSpec& cluster,
                                             const PowerSettings& settings) {
  PowerSetup S;
  auto sys = catalog.system(cluster.system);
  if (!sys) return base::fail(sys.error());
  S.system = *sys;
  auto gpu = catalog.gpu(S.system->gpu);
  if (!gpu) return base::fail(gpu.error());
  S.gpu = *gpu;
  auto gp = power.gpu(S.gpu->name);
  if (!gp) return base::fail(gp.error());
  S.gpu_params = *gp;
  auto sp = power.system(S.system->name);
  if (!sp) return base::fail(sp.error());
  S.system_params = *sp;
  S.facility = &power.facility();
  S.gpu_model.emplace(*S.gpu, *S.gpu_params);
  S.system_model.emplace(catalog, *S.system, *S.system_params);

  // The cap and clock lock as given; a node policy's per-node budget lowers the cap.
  S.settings = settings.gpu;
  if (auto st = S.gm().check(S.settings); !st) return base::fail(st.error());
  S.cap_reason = S.settings.cap.base() > 0 ? "power cap (asked)" : "default (TGP)";
  if (!settings.node_policy.empty()) {
    const auto& pol = S.system_params->node_policies;
    auto it = std::find_if(pol.begin(), pol.end(),
                           [&](const auto& p) { return p.first == settings.node_policy; });
    if (it == pol.end()) {
      std::vector<std::string> known;
      for (const auto& p : pol) known.push_back(p.first);
      return base::fail("{node_policy} '" + settings.node_policy + "' is not a policy of " +
                        S.system->name +
                        (known.empty() ? std::string(" (it has none)")
                                       : base::did_you_mean(settings.node_policy, known)));
    }
    const double cap = it->second.base() / S.system->gpus_per_node;
    if (S.settings.cap.base() == 0 || cap < S.settings.cap.base()) {
      S.settings.cap = base::watts(std::max(cap, S.gpu_params->min_limit.base()));
      S.cap_reason = "node policy " + settings.node_policy + " (" +
                     base::format_quantity(it->second.base(), base::Dimension::kWatts, 3) +
                     " per node)";
    }
  }
  if (settings.smoothing) {
    auto rs = resolve_smoothing(*settings.smoothing, S.system_params->smoothing, S.system->name,
                                S.gpu->name);
    if (!rs) return base::fail(rs.error());
    S.smoothing = *rs;
  }
  auto plan = plan_cooling(*S.facility, settings.cooling);
  if (!plan) return base::fail(plan.error());
  S.cooling_plan = *plan;
  return S;
}

}  // namespace clustertwin::power
