#pragma once
/// Node, rack and fabric power (docs/models/power.md §2; shared/reference/power-and-cooling.md
/// §1.5, §2.1, §6 (3)).
///
///   P_node_DC = Σ P_gpu + n_cpu (P_cpu_idle + (TDP - P_cpu_idle) u_cpu) + n_nic P_nic + P_board
///               + P_fans_max (f_min + (1 - f_min) x^3)          x = node heat / nameplate heat
///   P_sys_DC  = Σ P_node_DC + n_trays P_switch_tray + P_rack_misc
///   P_sys_AC  = (P_sys_DC + n_active L_const) / eta(P_sys_DC / usable PSU capacity)
/// P_board = node_other_power - fans_max - psu_loss (the catalog's node_other_power is a
/// nameplate figure that on HGX/DGX includes fans and PSU losses).
/// Rated envelope (docs/models/power.md §2): a published whole-node figure P_rated (GB300 tray
/// ~6.5 kW, GB200 tray 5.4 kW, DGX H100 10.2 kW, DGX B200 14.3 kW, DGX B300 14.5 kW) is the
/// most the node draws with every GPU at its TGP, so the non-GPU share at that load is at most
/// P_rated - n_gpu TGP (at the PSU input for DGX figures). The component sum above is scaled by
///   k = min(1, (P_rated_DC - n_gpu TGP) / (CPUs + NICs + board + fans at that load))
/// at every load: the components keep their proportions and their dependence on load. The PSU
/// usable capacity (units - redundant units) x rating is the rack limit: NVL72 8 shelves x 6 x 5.5
/// kW, N+N = 132 kW. Fabric: scale-out switches and their optics draw a flat power (switch power
/// varies little with traffic; the NVLink switch trays likewise), through switch PSUs.

#include <string>

#include "clustertwin/hardware/catalog.h"
#include "clustertwin/power/params.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::power {

struct SystemBreakdown {
  double gpus_W = 0, cpus_W = 0, nics_W = 0, board_W = 0, fans_W = 0, switch_trays_W = 0,
         misc_W = 0;
  double dc_W = 0;        ///< sum of the above
  double psu_loss_W = 0;  ///< conversion losses
  double ac_W = 0;        ///< at the PSU input
};

class SystemPowerModel {
 public:
  /// `sys` and `p` must outlive the model (they are the catalogs').
  SystemPowerModel(const hardware::Catalog& catalog, const hardware::SystemSpec& sys,
                   const SystemPowerParams& p);

  /// Power of one system whose GPUs draw `gpu_sum_W` together; `hosts_active`: a job runs (CPUs
  /// at the training load) or not (CPUs idle).
  [[nodiscard]] SystemBreakdown at(double gpu_sum_W, bool hosts_active) const;
  [[nodiscard]] double ac_W(double gpu_sum_W, bool hosts_active) const {
    return at(gpu_sum_W, hosts_active).ac_W;
  }
  /// DC power of everything but the GPUs at a given GPU power (fans depend on it).
  [[nodiscard]] double non_gpu_dc_W(double gpu_sum_W, bool hosts_active) const {
    const auto b = at(gpu_sum_W, hosts_active);
    return b.dc_W - b.gpus_W;
  }
  /// PSU input for a DC load.
  [[nodiscard]] double psu_input_W(double dc_W) const;
  /// The usable DC capacity of the system's PSUs (spares excluded): the rack limit.
  [[nodiscard]] double usable_W() const { return p_->psu.usable().base(); }
  /// usable_W() drawn at the PSU inputs: where an AC waveform of the system meets the limit.
  [[nodiscard]] double usable_ac_W() const { return psu_input_W(usable_W()); }
  /// How usable_W() is made up, for a reader: "24 of 48 PSUs x 5.50 kW DC, the rest redundant
  /// (catalog/power/systems.yaml)".
  [[nodiscard]] std::string usable_basis() const;
  /// The largest sum of GPU power whose system DC power fits `usable_W()` (bisection).
  [[nodiscard]] double gpu_budget_W(bool hosts_active) const;

  [[nodiscard]] int gpus() const { return sys_->gpus(); }
  [[nodiscard]] int gpus_per_node() const { return sys_->gpus_per_node; }
  [[nodiscard]] const SystemPowerParams& params() const { return *p_; }
  [[nodiscard]] const hardware::SystemSpec& spec() const { return *sys_; }
  [[nodiscard]] double tgp_W() const { return tgp_; }
  /// k of the rated envelope: 1 where no rated figure binds.
  [[nodiscard]] double non_gpu_scale() const { return non_gpu_scale_; }
  /// The nameplate estimate of topology::summarize (TGP, TDP, NICs, node other, switch trays).
  [[nodiscard]] double nameplate_W() const;

 private:
  const hardware::SystemSpec* sys_;  // the catalog's: outlive the model
  const SystemPowerParams* p_;
  double tgp_ = 0, cpu_tdp_ = 0, nic_W_ = 0, board_W_ = 0, nameplate_heat_ = 0;
  double non_gpu_scale_ = 1.0;
  /// The components before the rated envelope's scale (dc_W, ac_W and psu_loss_W left 0: at()
  /// sums them after scaling, and the PSU curve is read once per call).
  SystemBreakdown components(double gpu_sum_W, bool hosts_active) const;
};

/// Scale-out fabric: switches and optics of the cluster (flat), DC and at the switch PSU input.
struct FabricPower {
  int64_t switches = 0, transceivers = 0;
  double switches_W = 0, optics_W = 0, dc_W = 0, ac_W = 0;
};
FabricPower fabric_power(const hardware::Catalog& catalog, const topology::Topology& topo,
                         const FacilityParams& f);

}  // namespace clustertwin::power
