#pragma once
/// Liquid cooling per rack and CDU, heat rejection and the facility (docs/models/power.md §4;
/// shared/reference/power-and-cooling.md §3.4, §3.5, §6 (5)-(6)).
///
/// Heat balance of a rack: all electrical power becomes heat; liquid takes Q = f_liq x P_rack.
///   flow [L/min] = 60 Q[kW] / (rho[kg/L] c_p[kJ/(kg K)] dT[K])     sized at the rack's peak
///   T_return     = T_supply + Q / (m_dot c_p)                        at any heat with that flow
/// CDUs: n = max(ceil(Q_liquid / capacity), ceil(flow / design flow)); pump power by the affinity
/// law, P = P_design (flow / design flow)^3 per CDU.
/// Facility: P_fac = P_IT / eta_dist + pumps + heat rejection + air cooling + facility pumps + aux
///   heat rejection: dry coolers k_rej per W of liquid heat; below the free-cooling supply
///   temperature a chiller (COP) takes a share growing 10%/K (up to all of it).
///   PUE = P_fac / P_IT (P_IT at the PSU inputs), or a PUE the user gives.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/power/params.h"

namespace clustertwin::power {

struct CoolingSettings {
  std::string coolant;  ///< "" = the facility default
  std::optional<double> supply_C;
  std::optional<double> delta_T_K;
  std::optional<double> pue;  ///< given PUE replaces the facility model's
};

/// Resolved coolant and temperatures; a supply temperature outside the coolant's range, a
/// delta-T outside 1-40 K or a PUE below 1 is bad input.
struct CoolingPlan {
  CoolantParams coolant;
  double supply_C = 25, delta_T_K = 10;
  std::optional<double> pue;
};
base::Result<CoolingPlan> plan_cooling(const FacilityParams& f, const CoolingSettings& s);

/// Coolant flow (L/min) that carries `heat_W` at a temperature rise of `delta_T_K`.
double coolant_flow_L_per_min(double heat_W, const CoolantParams& c, double delta_T_K);
/// Return temperature for `heat_W` at `flow_L_per_min`.
double return_temperature_C(double heat_W, double flow_L_per_min, const CoolantParams& c,
                            double supply_C);

struct RackCooling {
  double heat_peak_W = 0, heat_avg_W = 0;
  double liquid_peak_W = 0, liquid_avg_W = 0, air_avg_W = 0;
  double flow_L_per_min = 0;  ///< sized at the peak for the plan's delta-T
  double return_peak_C = 0, return_avg_C = 0;
};
RackCooling rack_cooling(double peak_W, double avg_W, double liquid_fraction,
                         const CoolingPlan& plan);

struct FacilityPower {
  double it_W = 0;  ///< at the PSU inputs of systems and switches
  double distribution_loss_W = 0, cdu_pumps_W = 0, heat_rejection_W = 0, chiller_W = 0,
         air_cooling_W = 0, facility_pumps_W = 0, auxiliary_W = 0;
  double facility_W = 0;
  double pue = 1;
  bool pue_given = false;
  int cdus = 0;
  double cdu_load = 0;  ///< liquid heat / installed CDU capacity
  double flow_L_per_min = 0;
};

/// The facility model with the CDU fleet sized once for the design (peak) liquid heat and flow;
/// `at()` evaluates it for any IT power (pumps run at design flow).
class FacilityModel {
 public:
  /// `f` and `plan` must outlive the model.
  FacilityModel(const FacilityParams& f, const CoolingPlan& plan, double design_liquid_W,
                double flow_L_per_min, double liquid_fraction);
  [[nodiscard]] FacilityPower at(double it_W) const;
  [[nodiscard]] double facility_W(double it_W) const { return at(it_W).facility_W; }

 private:
  const FacilityParams* f_;  // the caller's: outlive the model
  const CoolingPlan* plan_;
  double liquid_fraction_ = 0, flow_ = 0, pumps_W_ = 0, design_liquid_W_ = 0;
  int cdus_ = 0;
};

/// Racks of one kind (a rack class of a training job, a serving pool's racks): how many, their
/// peak and average power at the PSU inputs.
struct RackLoad {
  double racks = 0;
  double peak_W = 0, avg_W = 0;
};

/// Cooling and facility of a cluster, the stage training and serving power share: the hottest
/// rack's cooling, the CDU fleet sized for the design (peak) liquid heat and flow of all racks,
/// the facility at the cluster's average and peak IT power, and a warning when one rack's liquid
/// heat exceeds a CDU's capacity (a rack cannot be split over CDUs).
struct SizedFacility {
  RackCooling hottest_rack;
  double flow_L_per_min = 0;  ///< all racks' coolant flow
  FacilityPower at_average;
  double peak_W = 0;  ///< facility power at the cluster's peak IT power
  std::vector<std::string> warnings;
  /// The sized facility, for its power at other IT powers (waveforms); refers to the `f` and
  /// `plan` given to size_facility.
  std::optional<FacilityModel> model;
};
SizedFacility size_facility(const FacilityParams& f, const CoolingPlan& plan,
                            double liquid_fraction, const RackLoad& hottest,
                            const std::vector<RackLoad>& racks, double cluster_avg_W,
                            double cluster_peak_W);

/// Writes a sized facility into a power view's result (training's and serving's carry the same
/// fields): the hottest rack's cooling, all racks' coolant flow, the facility at the average and
/// at the peak IT power; its warnings appended (moved out of `s`).
template <class ViewResult>
void record_facility(ViewResult& r, SizedFacility& s) {
  r.rack_cooling = s.hottest_rack;
  r.cluster_flow_L_per_min = s.flow_L_per_min;
  r.facility = s.at_average;
  r.facility_peak_W = s.peak_W;
  for (auto& w : s.warnings) r.warnings.push_back(std::move(w));
}

}  // namespace clustertwin::power
