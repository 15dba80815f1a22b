#pragma once
/// Power and cooling parameters read from catalog/power/ (handed over by the hardware catalog via
/// Catalog::other_files()): per-GPU activity-to-power curves, per-system host, fan, PSU and
/// smoothing figures, and facility defaults. Every figure carries its source in `provenance`;
/// docs/models/power.md explains each one and which are assumptions.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/base/units.h"
#include "clustertwin/config/reader.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::power {

using base::Joules;
using base::Seconds;
using base::Watts;

/// The activity-to-power curve of one GPU model (docs/models/power.md §1):
///   P_dem = floor + (margin*TGP - floor) * min(1, max(u_c/x_c, u_m/x_m))^gamma + link*u_l
struct GpuPowerParams {
  std::string gpu;
  Watts floor;                      ///< active but light: tiny kernels, NCCL waits
  double limit_margin = 0.98;       ///< power-limited kernels settle at this fraction of the limit
  double compute_saturation = 0.4;  ///< x_c: compute utilisation at which power saturates
  double exponent = 0.75;           ///< gamma
  Watts memory_anchor;              ///< streaming at 80% of HBM bandwidth draws this (sets x_m)
  Watts link_power;                 ///< added at full NVLink/NIC utilisation
  Watts min_limit, max_limit;       ///< settable power-limit range
  double dvfs_exponent = 3;         ///< alpha in P_dynamic ~ f^alpha
  double max_clock_MHz = 0;
  double sustained_clock_MHz = 0;  ///< clock of power-limited compute at the default limit
  config::Provenance provenance;
};

/// A piecewise-linear efficiency curve of load fraction (output / active capacity).
struct EfficiencyCurve {
  std::vector<std::pair<double, double>> points;  ///< (load fraction, efficiency), sorted
  [[nodiscard]] double at(double load) const;
};

struct PsuParams {
  Watts rating;  ///< per unit, DC output
  int units = 1;
  int redundant_units = 0;  ///< spares: usable capacity = (units - redundant) * rating
  Watts constant_loss;      ///< per active unit
  EfficiencyCurve efficiency;
  [[nodiscard]] Watts usable() const {
    return rating * static_cast<double>(units - redundant_units);
  }
};

/// Default power-smoothing profile of a system (NVML power-smoothing fields; per GPU).
struct SmoothingDefaults {
  bool supported = false;
  Joules storage_per_gpu;
  double storage_efficiency = 0.95;
  double floor = 0.6;  ///< fraction of TGP
  double ramp_up_W_per_s = 2000;
  double ramp_down_W_per_s = 500;
  Seconds hysteresis;
};

struct SystemPowerParams {
  std::string system;
  int systems_per_rack = 1;
  bool liquid = false;
  double liquid_fraction = 0;  ///< share of the heat captured by liquid
  Watts cpu_idle;
  double cpu_training_load = 0.85;
  Watts fans_max;  ///< per node (part of node_other_power)
  double fan_min = 0.25;
  Watts psu_loss;   ///< per node, PSU losses at nameplate (part of node_other_power)
  Watts rack_misc;  ///< per rack
  /// A published whole-node figure (the GB300 compute tray's ~6.5 kW, DGX H100's 10.2 kW): the
  /// most a node draws with every GPU at its TGP. 0 = none. It bounds the non-GPU share
  /// (SystemPowerModel::non_gpu_scale). `rated_at_input`: the figure is at the PSU input (a DGX
  /// at the wall) rather than the node's DC draw (an NVL72 tray on the rack busbar).
  Watts rated_node_power;
  bool rated_at_input = false;
  PsuParams psu;  ///< the system's PSUs (rack shelves or node PSUs)
  std::vector<std::pair<std::string, Watts>> node_policies;  ///< GPU budget per node
  SmoothingDefaults smoothing;
  config::Provenance provenance;
};

struct CoolantParams {
  std::string name;
  double density_kg_per_L = 1.0;
  double specific_heat_kJ_per_kgK = 4.18;
  double min_supply_C = 15, max_supply_C = 45;
};

struct FacilityParams {
  std::map<std::string, CoolantParams, std::less<>> coolants;
  std::string coolant = "pg25";
  double supply_C = 25;
  double delta_T_K = 10;
  Watts cdu_capacity;
  Watts cdu_design_pump_power;
  double distribution_efficiency = 0.97;
  double heat_rejection_per_W = 0.04;
  double free_cooling_min_supply_C = 22;
  double chiller_cop = 5;
  double air_cooling_per_W = 0.25;
  double facility_pumps_per_W = 0.01;
  double auxiliary_fraction = 0.02;
  double switch_psu_efficiency = 0.94;
  config::Provenance provenance;
};

/// Everything in catalog/power/.
class PowerCatalog {
 public:
  /// Parses power/gpus.yaml, power/systems.yaml and power/facility.yaml among `catalog`'s other
  /// files; every error of every file together.
  static base::Result<PowerCatalog> load(const hardware::Catalog& catalog);
  /// From the three texts (tests).
  static base::Result<PowerCatalog> parse(std::string_view gpus, std::string_view systems,
                                          std::string_view facility);

  [[nodiscard]] base::Result<const GpuPowerParams*> gpu(std::string_view name) const;
  [[nodiscard]] base::Result<const SystemPowerParams*> system(std::string_view name) const;
  [[nodiscard]] const FacilityParams& facility() const { return facility_; }

 private:
  std::map<std::string, GpuPowerParams, std::less<>> gpus_;
  std::map<std::string, SystemPowerParams, std::less<>> systems_;
  FacilityParams facility_;
};

}  // namespace clustertwin::power
