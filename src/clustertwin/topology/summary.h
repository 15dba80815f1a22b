#pragma once
/// What the cluster is, in numbers, derived from its parts (never stored): the figures of
/// `clustertwin describe`. Each aggregate is a product or sum of catalog figures and topology
/// counts; docs/models/topology.md gives the formulas.

#include <optional>
#include <string>
#include <vector>

#include "clustertwin/base/units.h"
#include "clustertwin/hardware/catalog.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::topology {

using base::Bytes;
using base::FlopsPerSecond;
using base::Watts;

struct ComputeFigures {
  hardware::Precision precision;
  FlopsPerSecond dense_per_gpu;
  std::optional<FlopsPerSecond> sparse_per_gpu;
  FlopsPerSecond dense_per_domain, dense_per_cluster;
  std::optional<FlopsPerSecond> sparse_per_domain, sparse_per_cluster;
};

struct FabricTierFigures {
  std::string name;  ///< "leaf", "spine", "aggregation", "core"
  int switches = 0;  ///< all planes
  int ports_per_switch = 0;
  int ports_used = 0;              ///< all planes, down + up
  int64_t cables_up = 0;           ///< cables from this tier to the next (all planes)
  BytesPerSecond uplink_capacity;  ///< all planes, per direction
  double oversubscription = 1.0;   ///< down:up bandwidth at this tier (as built)
};

struct ClusterSummary {
  std::string name, display_name, description, origin;
  std::string system, system_display, system_kind;
  std::string gpu, gpu_display, cpu, cpu_display, nic, nic_display;
  std::string nvswitch, scale_out_switch, scale_out_switch_display, transceiver;
  std::string in_network_reduction_nvlink, in_network_reduction_scale_out;

  int systems = 0, nodes = 0, gpus = 0, cpus = 0, cpu_cores = 0, nics = 0;
  int domains = 0, domain_size = 0, nvswitch_chips = 0, switch_trays = 0;

  std::vector<ComputeFigures> compute;

  Bytes hbm_per_gpu, hbm_usable_per_gpu, cpu_memory_per_cpu;
  Bytes hbm_per_domain, hbm_per_cluster, cpu_memory_per_domain, cpu_memory_per_cluster;
  /// HBM software can allocate + CPU memory: what NVIDIA and Azure call "fast memory".
  Bytes fast_memory_per_domain, fast_memory_per_cluster;
  BytesPerSecond hbm_bandwidth_per_gpu, hbm_bandwidth_per_domain, hbm_bandwidth_per_cluster;

  BytesPerSecond nvlink_per_gpu;  ///< per direction
  BytesPerSecond nvlink_per_gpu_bidir;
  BytesPerSecond nvlink_per_domain_bidir;  ///< sum over the domain's GPUs, both directions

  BytesPerSecond scale_out_per_gpu;  ///< NIC line rate per GPU, per direction
  BytesPerSecond scale_out_per_domain;
  BytesPerSecond bisection;               ///< worst equal cut, per direction
  double scale_out_oversubscription = 1;  ///< injection / bisection x 1/2 (1 = non-blocking)
  int fabric_tiers = 0, planes = 1;
  bool rail_optimized = false;
  std::vector<FabricTierFigures> tiers;
  int scale_out_switches = 0;
  int64_t scale_out_cables = 0, transceivers = 0;
  int64_t links = 0;  ///< directed links in the simulation graph

  Watts gpu_tgp_per_domain, gpu_tgp_per_cluster;
  Watts system_power;      ///< nameplate estimate of one system (rack or node)
  Watts fabric_power;      ///< scale-out switches and optics
  Watts cluster_power;     ///< systems + fabric (IT load, before PSU and facility losses)
  Watts rack_power_limit;  ///< power shelf capacity (racks only)
};

/// Derives the summary of a built topology.
ClusterSummary summarize(const hardware::Catalog& catalog, const Topology& topo);

}  // namespace clustertwin::topology
