#include "clustertwin/topology/summary.h"

#include <algorithm>

namespace clustertwin::topology {

ClusterSummary summarize(const hardware::Catalog& catalog, const Topology& topo) {
  const auto& spec = topo.spec();
  const auto& sys = **catalog.system(spec.system);
  const auto& gpu = **catalog.gpu(sys.gpu);
  const auto& cpu = **catalog.cpu(sys.cpu);
  const auto& nic = **catalog.nic(sys.nic);
  const auto& nvsw = **catalog.switch_spec(sys.nvswitch);
  const auto& sw = **catalog.switch_spec(spec.scale_out.switch_name);

  ClusterSummary s;
  s.name = spec.name;
  s.display_name = spec.display_name;
  s.description = spec.description;
  s.origin = spec.origin;
  s.system = sys.name;
  s.system_display = sys.display_name;
  s.system_kind = sys.kind;
  s.gpu = gpu.name;
  s.gpu_display = gpu.display_name;
  s.cpu = cpu.name;
  s.cpu_display = cpu.display_name;
  s.nic = nic.name;
  s.nic_display = nic.display_name;
  s.nvswitch = nvsw.name;
  s.scale_out_switch = sw.name;
  s.scale_out_switch_display = sw.display_name;
  s.transceiver = spec.scale_out.transceiver;
  s.in_network_reduction_nvlink = nvsw.in_network_reduction;
  s.in_network_reduction_scale_out = sw.in_network_reduction;

  const double n_sys = spec.count;
  s.systems = spec.count;
  s.nodes = sys.nodes * spec.count;
  s.gpus = topo.gpus();
  s.cpus = sys.cpus() * spec.count;
  s.cpu_cores = s.cpus * cpu.cores;
  s.nics = topo.nics();
  s.domains = topo.domains();
  s.domain_size = topo.domain_size();
  s.nvswitch_chips = sys.nvswitch_chips * spec.count;
  s.switch_trays = sys.switch_trays * spec.count;

  const double d = s.domain_size, g = s.gpus;
  for (auto p : hardware::kAllPrecisions) {
    const auto& pk = gpu.peak_for(p);
    if (!pk) continue;
    ComputeFigures c{.precision = p,
                     .dense_per_gpu = pk->dense,
                     .sparse_per_gpu = pk->sparse,
                     .dense_per_domain = pk->dense * d,
                     .dense_per_cluster = pk->dense * g};
    if (pk->sparse) {
      c.sparse_per_domain = *pk->sparse * d;
      c.sparse_per_cluster = *pk->sparse * g;
    }
    s.compute.push_back(c);
  }

  const double cpus_per_domain = static_cast<double>(sys.cpus());  // one domain per system
  s.hbm_per_gpu = gpu.hbm_capacity;
  s.hbm_usable_per_gpu = gpu.hbm_usable;
  s.cpu_memory_per_cpu = cpu.memory_capacity;
  s.hbm_per_domain = gpu.hbm_capacity * d;
  s.hbm_per_cluster = gpu.hbm_capacity * g;
  s.cpu_memory_per_domain = cpu.memory_capacity * cpus_per_domain;
  s.cpu_memory_per_cluster = cpu.memory_capacity * static_cast<double>(s.cpus);
  s.fast_memory_per_domain = gpu.hbm_usable * d + s.cpu_memory_per_domain;
  s.fast_memory_per_cluster = gpu.hbm_usable * g + s.cpu_memory_per_cluster;
  s.hbm_bandwidth_per_gpu = gpu.hbm_bandwidth;
  s.hbm_bandwidth_per_domain = gpu.hbm_bandwidth * d;
  s.hbm_bandwidth_per_cluster = gpu.hbm_bandwidth * g;

  s.nvlink_per_gpu = gpu.nvlink_bandwidth;
  s.nvlink_per_gpu_bidir = gpu.nvlink_bandwidth * 2.0;
  s.nvlink_per_domain_bidir = gpu.nvlink_bandwidth * 2.0 * d;

  const double nics_per_gpu = static_cast<double>(sys.nics_per_node) / sys.gpus_per_node;
  s.scale_out_per_gpu = nic.bandwidth * nics_per_gpu;
  s.scale_out_per_domain = nic.bandwidth * static_cast<double>(sys.nics());

  const auto& plan = topo.fabric();
  s.fabric_tiers = plan.tiers;
  s.planes = topo.planes();
  s.rail_optimized = spec.scale_out.rail_optimized;
  const double planes = s.planes;
  const BytesPerSecond port = sw.port_bandwidth;
  const BytesPerSecond nic_port = nic.bandwidth / planes;
  // Injection: every NIC port into its leaf. Bisection: the smallest uplink capacity of any
  // tier (all endpoints' traffic across an equal cut must climb to the top), halved, and never
  // more than half the injection.
  const BytesPerSecond injection = nic_port * static_cast<double>(s.nics) * planes;
  BytesPerSecond bis = injection / 2.0;
  const std::vector<std::string> names =
      plan.tiers == 1   ? std::vector<std::string>{"leaf"}
      : plan.tiers == 2 ? std::vector<std::string>{"leaf", "spine"}
                        : std::vector<std::string>{"leaf", "aggregation", "core"};
  BytesPerSecond below = injection;
  for (size_t t = 0; t < plan.tier_info.size(); ++t) {
    const auto& ti = plan.tier_info[t];
    FabricTierFigures f;
    f.name = names[t];
    f.switches = ti.switches * s.planes;
    f.ports_per_switch = plan.radix;
    f.ports_used = (ti.down_ports_used + ti.up_ports_used) * s.planes;
    f.cables_up = static_cast<int64_t>(ti.up_ports_used) * s.planes;
    f.uplink_capacity = port * static_cast<double>(f.cables_up);
    if (ti.up_ports > 0) {
      bis = std::min(bis, f.uplink_capacity / 2.0);
      f.oversubscription = below / f.uplink_capacity;
      below = f.uplink_capacity;
    }
    s.tiers.push_back(f);
    s.scale_out_switches += f.switches;
  }
  s.bisection = bis;
  s.scale_out_oversubscription = (injection / 2.0) / bis;
  s.scale_out_cables = static_cast<int64_t>(s.nics) * s.planes;
  for (const auto& f : s.tiers) s.scale_out_cables += f.cables_up;
  s.transceivers = spec.scale_out.transceiver.empty() ? 0 : 2 * s.scale_out_cables;
  s.links = static_cast<int64_t>(topo.links().size());

  s.gpu_tgp_per_domain = gpu.tgp * d;
  s.gpu_tgp_per_cluster = gpu.tgp * g;
  s.system_power = gpu.tgp * static_cast<double>(sys.gpus()) +
                   cpu.tdp * static_cast<double>(sys.cpus()) +
                   nic.power * static_cast<double>(sys.nics()) +
                   sys.node_other_power * static_cast<double>(sys.nodes) +
                   sys.switch_tray_power * static_cast<double>(sys.switch_trays);
  Watts optics{};
  if (!spec.scale_out.transceiver.empty()) {
    optics = (*catalog.transceiver(spec.scale_out.transceiver))->power *
             static_cast<double>(s.transceivers);
  }
  s.fabric_power = sw.power * static_cast<double>(s.scale_out_switches) + optics;
  s.cluster_power = s.system_power * n_sys + s.fabric_power;
  s.rack_power_limit = sys.rack_power_limit;
  return s;
}

}  // namespace clustertwin::topology
