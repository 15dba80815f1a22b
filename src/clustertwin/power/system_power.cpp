#include "clustertwin/power/system_power.h"

#include <algorithm>
#include <cmath>

#include "clustertwin/base/check.h"
#include "clustertwin/base/units_parse.h"

namespace clustertwin::power {

SystemPowerModel::SystemPowerModel(const hardware::Catalog& catalog,
                                   const hardware::SystemSpec& sys, const SystemPowerParams& p)
    : sys_(&sys), p_(&p) {
  auto gpu = catalog.gpu(sys.gpu);
  CT_CHECK(gpu.has_value(), "system GPU is in the catalog (checked at load)");
  tgp_ = (*gpu)->tgp.base();
  if (!sys.cpu.empty()) {
    if (auto cpu = catalog.cpu(sys.cpu)) cpu_tdp_ = (*cpu)->tdp.base();
  }
  if (!sys.nic.empty()) {
    if (auto nic = catalog.nic(sys.nic)) nic_W_ = (*nic)->power.base();
  }
  board_W_ = std::max(0.0, sys.node_other_power.base() - p.fans_max.base() - p.psu_loss.base());
  nameplate_heat_ = tgp_ * sys.gpus_per_node + cpu_tdp_ * sys.cpus_per_node +
                    nic_W_ * sys.nics_per_node + board_W_;
  if (p.rated_node_power.base() > 0) {
    // The rated envelope: at full GPU load with the hosts busy, the node's non-GPU share may not
    // exceed what the published whole-node figure leaves beside the GPUs.
    const double nodes = sys.nodes;
    const double full_gpus = tgp_ * sys.gpus();
    const SystemBreakdown b = components(full_gpus, true);
    const double non_gpu = (b.cpus_W + b.nics_W + b.board_W + b.fans_W) / nodes;
    double rated_dc = p.rated_node_power.base();
    if (p.rated_at_input) {
      // The figure is at the node's PSU input (one node per system): the DC load it feeds,
      // inverting (dc + units L) / eta(dc / installed) by bisection.
      CT_CHECK(sys.nodes == 1, "a PSU-input rating is per node and the system is one node");
      double lo = 0, hi = rated_dc;
      for (int i = 0; i < 60; ++i) {
        const double mid = 0.5 * (lo + hi);
        (psu_input_W(mid) <= rated_dc ? lo : hi) = mid;
      }
      rated_dc = lo;
    }
    const double allowed = rated_dc - tgp_ * sys.gpus_per_node;
    if (non_gpu > 0 && allowed < non_gpu) non_gpu_scale_ = std::max(0.0, allowed / non_gpu);
  }
}

SystemBreakdown SystemPowerModel::at(double gpu_sum_W, bool hosts_active) const {
  SystemBreakdown b = components(gpu_sum_W, hosts_active);
  const double k = non_gpu_scale_;
  b.cpus_W *= k;
  b.nics_W *= k;
  b.board_W *= k;
  b.fans_W *= k;
  b.dc_W = b.gpus_W + b.cpus_W + b.nics_W + b.board_W + b.fans_W + b.switch_trays_W + b.misc_W;
  b.ac_W = psu_input_W(b.dc_W);
  b.psu_loss_W = b.ac_W - b.dc_W;
  return b;
}

SystemBreakdown SystemPowerModel::components(double gpu_sum_W, bool hosts_active) const {
  SystemBreakdown b;
  const double nodes = sys_->nodes;
  b.gpus_W = gpu_sum_W;
  const double cpu_idle = std::min(p_->cpu_idle.base(), cpu_tdp_);
  const double load = hosts_active ? p_->cpu_training_load : 0.0;
  b.cpus_W = sys_->cpus() * (cpu_idle + (cpu_tdp_ - cpu_idle) * load);
  b.nics_W = sys_->nics() * nic_W_;
  b.board_W = nodes * board_W_;
  if (p_->fans_max.base() > 0 && nameplate_heat_ > 0) {
    const double heat_per_node = (b.gpus_W + b.cpus_W + b.nics_W + b.board_W) / nodes;
    const double x = std::clamp(heat_per_node / nameplate_heat_, 0.0, 1.0);
    b.fans_W = nodes * p_->fans_max.base() * (p_->fan_min + (1 - p_->fan_min) * x * x * x);
  }
  b.switch_trays_W = sys_->switch_trays * sys_->switch_tray_power.base();
  b.misc_W = p_->rack_misc.base() / p_->systems_per_rack;
  return b;
}

std::string SystemPowerModel::usable_basis() const {
  const auto& psu = p_->psu;
  std::string o = std::to_string(psu.units - psu.redundant_units) + " of " +
                  std::to_string(psu.units) + " PSUs x " +
                  base::format_quantity(psu.rating.base(), base::Dimension::kWatts, 3) + " DC";
  if (psu.redundant_units > 0) o += ", the rest redundant";
  return o + " (catalog/power/systems.yaml)";
}

double SystemPowerModel::psu_input_W(double dc_W) const {
  const auto& psu = p_->psu;
  // Redundant PSUs share the load (N+N shelves run every unit at half the load), so the
  // efficiency is read at the load of all units; constant losses count every unit.
  const double installed = psu.rating.base() * psu.units;
  const double eff = psu.efficiency.at(installed > 0 ? dc_W / installed : 1.0);
  return (dc_W + psu.units * psu.constant_loss.base()) / eff;
}

double SystemPowerModel::gpu_budget_W(bool hosts_active) const {
  double lo = 0, hi = tgp_ * gpus();
  if (at(hi, hosts_active).dc_W <= usable_W()) return hi;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (at(mid, hosts_active).dc_W <= usable_W() ? lo : hi) = mid;
  }
  return lo;
}

FabricPower fabric_power(const hardware::Catalog& catalog, const topology::Topology& topo,
                         const FacilityParams& f) {
  // Counts as topology::summarize derives them (switches of every tier and plane; a transceiver
  // at each end of every NIC and inter-switch cable), without the rest of the summary.
  const auto& spec = topo.spec();
  const auto& plan = topo.fabric();
  const int64_t planes = topo.planes();
  int64_t switches = 0, cables = static_cast<int64_t>(topo.nics()) * planes;
  for (const auto& t : plan.tier_info) {
    switches += static_cast<int64_t>(t.switches) * planes;
    cables += static_cast<int64_t>(t.up_ports_used) * planes;
  }
  FabricPower p;
  p.switches = switches;
  p.transceivers = spec.scale_out.transceiver.empty() ? 0 : 2 * cables;
  if (auto sw = catalog.switch_spec(spec.scale_out.switch_name)) {
    p.switches_W = (*sw)->power.base() * static_cast<double>(switches);
  }
  if (p.transceivers > 0) {
    if (auto t = catalog.transceiver(spec.scale_out.transceiver)) {
      p.optics_W = (*t)->power.base() * static_cast<double>(p.transceivers);
    }
  }
  p.dc_W = p.switches_W + p.optics_W;
  p.ac_W = p.dc_W / f.switch_psu_efficiency;
  return p;
}

double SystemPowerModel::nameplate_W() const {
  return tgp_ * sys_->gpus() + cpu_tdp_ * sys_->cpus() + nic_W_ * sys_->nics() +
         sys_->node_other_power.base() * sys_->nodes +
         sys_->switch_trays * sys_->switch_tray_power.base();
}

}  // namespace clustertwin::power
