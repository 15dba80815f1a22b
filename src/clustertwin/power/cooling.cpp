#include "clustertwin/power/cooling.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "clustertwin/base/text.h"
#include "clustertwin/base/units_parse.h"

namespace clustertwin::power {

base::Result<CoolingPlan> plan_cooling(const FacilityParams& f, const CoolingSettings& s) {
  CoolingPlan p;
  const std::string name = s.coolant.empty() ? f.coolant : s.coolant;
  auto it = f.coolants.find(name);
  if (it == f.coolants.end()) {
    std::vector<std::string> known;
    for (const auto& [k, v] : f.coolants) known.push_back(k);
    return base::fail("unknown coolant '" + name + "'" + base::did_you_mean(name, known));
  }
  p.coolant = it->second;
  p.supply_C = s.supply_C.value_or(f.supply_C);
  if (p.supply_C < p.coolant.min_supply_C || p.supply_C > p.coolant.max_supply_C) {
    return base::fail(
        fmt::format("{{supply_temp}} {:g} C is outside the {} supply range {:g}-{:g} C", p.supply_C,
                    p.coolant.name, p.coolant.min_supply_C, p.coolant.max_supply_C));
  }
  p.delta_T_K = s.delta_T_K.value_or(f.delta_T_K);
  if (p.delta_T_K < 1 || p.delta_T_K > 40) {
    return base::fail(fmt::format("{{delta_t}} {:g} K: expected 1-40 K", p.delta_T_K));
  }
  if (s.pue) {
    if (!(*s.pue >= 1.0) || *s.pue > 5.0) {
      return base::fail(fmt::format(
          "{{pue}} {:g}: a PUE is facility / IT power, so at least 1 (and at most 5)", *s.pue));
    }
    p.pue = s.pue;
  }
  return p;
}

double coolant_flow_L_per_min(double heat_W, const CoolantParams& c, double delta_T_K) {
  return 60.0 * (heat_W / 1e3) / (c.density_kg_per_L * c.specific_heat_kJ_per_kgK * delta_T_K);
}

double return_temperature_C(double heat_W, double flow_L_per_min, const CoolantParams& c,
                            double supply_C) {
  if (flow_L_per_min <= 0) return supply_C;
  const double m_dot = flow_L_per_min / 60.0 * c.density_kg_per_L;  // kg/s
  return supply_C + (heat_W / 1e3) / (m_dot * c.specific_heat_kJ_per_kgK);
}

RackCooling rack_cooling(double peak_W, double avg_W, double liquid_fraction,
                         const CoolingPlan& plan) {
  RackCooling r;
  r.heat_peak_W = peak_W;
  r.heat_avg_W = avg_W;
  r.liquid_peak_W = liquid_fraction * peak_W;
  r.liquid_avg_W = liquid_fraction * avg_W;
  r.air_avg_W = avg_W - r.liquid_avg_W;
  if (liquid_fraction > 0) {
    r.flow_L_per_min = coolant_flow_L_per_min(r.liquid_peak_W, plan.coolant, plan.delta_T_K);
    r.return_peak_C =
        return_temperature_C(r.liquid_peak_W, r.flow_L_per_min, plan.coolant, plan.supply_C);
    r.return_avg_C =
        return_temperature_C(r.liquid_avg_W, r.flow_L_per_min, plan.coolant, plan.supply_C);
  }
  return r;
}

FacilityModel::FacilityModel(const FacilityParams& f, const CoolingPlan& plan,
                             double design_liquid_W, double flow_L_per_min, double liquid_fraction)
    : f_(&f),
      plan_(&plan),
      liquid_fraction_(liquid_fraction),
      flow_(flow_L_per_min),
      design_liquid_W_(design_liquid_W) {
  if (design_liquid_W > 0 && f.cdu_capacity.base() > 0) {
    // Design flow of one CDU at the facility's design delta-T.
    const double cdu_flow =
        coolant_flow_L_per_min(f.cdu_capacity.base(), plan.coolant, f.delta_T_K);
    cdus_ = static_cast<int>(std::max(std::ceil(design_liquid_W / f.cdu_capacity.base() - 1e-9),
                                      std::ceil(flow_L_per_min / cdu_flow - 1e-9)));
    cdus_ = std::max(cdus_, 1);
    const double per = flow_L_per_min / cdus_ / cdu_flow;
    pumps_W_ = cdus_ * f.cdu_design_pump_power.base() * per * per * per;
  }
}

FacilityPower FacilityModel::at(double it_W) const {
  FacilityPower p;
  p.it_W = it_W;
  p.cdus = cdus_;
  p.flow_L_per_min = flow_;
  p.cdu_load = cdus_ > 0 ? design_liquid_W_ / (cdus_ * f_->cdu_capacity.base()) : 0;
  const double liquid = liquid_fraction_ * it_W;
  const double air = it_W - liquid;
  p.distribution_loss_W = it_W / f_->distribution_efficiency - it_W;
  p.cdu_pumps_W = pumps_W_;
  // Free cooling above the threshold supply temperature; a chiller takes a share that grows
  // 10% per kelvin below it.
  const double chiller_share =
      std::clamp((f_->free_cooling_min_supply_C - plan_->supply_C) / 10.0, 0.0, 1.0);
  p.heat_rejection_W = f_->heat_rejection_per_W * liquid;
  p.chiller_W = chiller_share * liquid / f_->chiller_cop;
  p.air_cooling_W = f_->air_cooling_per_W * air;
  p.facility_pumps_W = f_->facility_pumps_per_W * it_W;
  p.auxiliary_W = f_->auxiliary_fraction * it_W;
  p.facility_W = it_W + p.distribution_loss_W + p.cdu_pumps_W + p.heat_rejection_W + p.chiller_W +
                 p.air_cooling_W + p.facility_pumps_W + p.auxiliary_W;
  if (plan_->pue) {
    p.pue_given = true;
    p.facility_W = it_W * *plan_->pue;
  }
  p.pue = it_W > 0 ? p.facility_W / it_W : 1;
  return p;
}

SizedFacility size_facility(const FacilityParams& f, const CoolingPlan& plan,
                            double liquid_fraction, const RackLoad& hottest,
                            const std::vector<RackLoad>& racks, double cluster_avg_W,
                            double cluster_peak_W) {
  SizedFacility out;
  out.hottest_rack = rack_cooling(hottest.peak_W, hottest.avg_W, liquid_fraction, plan);
  double design_liquid = 0;
  for (const auto& r : racks) {
    const auto rc = rack_cooling(r.peak_W, r.avg_W, liquid_fraction, plan);
    design_liquid += r.racks * rc.liquid_peak_W;
    out.flow_L_per_min += r.racks * rc.flow_L_per_min;
  }
  const auto& fac = out.model.emplace(f, plan, design_liquid, out.flow_L_per_min, liquid_fraction);
  out.at_average = fac.at(cluster_avg_W);
  out.peak_W = fac.facility_W(cluster_peak_W);
  if (liquid_fraction > 0 && out.hottest_rack.liquid_peak_W > f.cdu_capacity.base()) {
    auto w = [](double x) { return base::format_quantity(x, base::Dimension::kWatts, 3); };
    out.warnings.push_back(fmt::format("one rack's liquid heat ({}) exceeds a CDU's capacity ({})",
                                       w(out.hottest_rack.liquid_peak_W),
                                       w(f.cdu_capacity.base())));
  }
  return out;
}

}  // namespace clustertwin::power
