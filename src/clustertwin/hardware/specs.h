#pragma once
/// What the hardware is, as typed values read from catalog/ (every figure with its source, see
/// `provenance`). Specs are plain data; derived figures (per rack, per cluster) are computed in
/// cluster_summary.h and in the topology layer, never stored.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "clustertwin/base/units.h"
#include "clustertwin/config/reader.h"

namespace clustertwin::hardware {

using base::Bytes;
using base::BytesPerSecond;
using base::FlopsPerSecond;
using base::Seconds;
using base::Watts;

/// Tensor-core number formats. FP16 and BF16 share a peak on every GPU in the catalog.
enum class Precision { kFp4, kFp8, kBf16, kTf32, kFp64, kInt8 };
inline constexpr std::array kAllPrecisions = {Precision::kFp4,  Precision::kFp8,  Precision::kBf16,
                                              Precision::kTf32, Precision::kFp64, Precision::kInt8};
/// "fp4", "fp8", "bf16", "tf32", "fp64", "int8" (the catalog and CLI spelling).
const char* precision_name(Precision p);
std::optional<Precision> parse_precision(std::string_view s);

/// Peak tensor throughput of one precision. `sparse` is the 2:4 structured-sparsity figure the
/// datasheets also print; all models use `dense`.
struct PeakFlops {
  FlopsPerSecond dense;
  std::optional<FlopsPerSecond> sparse;
};

struct GpuSpec {
  std::string name;  ///< catalog key, e.g. "gb300"
  std::string display_name;
  std::string architecture;  ///< "Blackwell Ultra", "Hopper", ...
  std::array<std::optional<PeakFlops>, kAllPrecisions.size()> peak;  ///< by Precision index
  Bytes hbm_capacity;  ///< marketing capacity (288 GB)
  Bytes hbm_usable;    ///< what software can allocate (279 GB on GB300)
  BytesPerSecond hbm_bandwidth;
  int nvlink_generation = 0;
  int nvlink_links = 0;
  BytesPerSecond nvlink_bandwidth;  ///< per GPU, per direction, all links together
  Watts tgp;                        ///< total graphics power (the power limit)
  Watts idle_power;                 ///< idle draw at the board
  int sms = 0;  ///< streaming multiprocessors (0: not in the catalog); kernels that reserve SMs
  config::Provenance provenance;

  [[nodiscard]] const std::optional<PeakFlops>& peak_for(Precision p) const {
    return peak[static_cast<size_t>(p)];
  }
};

struct CpuSpec {
  std::string name;
  std::string display_name;
  int cores = 0;
  Bytes memory_capacity;
  BytesPerSecond memory_bandwidth;
  BytesPerSecond c2c_bandwidth;  ///< CPU<->GPU link per direction (NVLink-C2C, PCIe); 0 if none
  Watts tdp;
  config::Provenance provenance;
};

struct NicSpec {
  std::string name;
  std::string display_name;
  BytesPerSecond bandwidth;  ///< line rate of the NIC, per direction
  Seconds latency;           ///< one-way NIC pipeline latency (send + receive side)
  /// The NIC's host interface: PCIe generation and lanes (NCCL sizes the GPU-NIC path from them,
  /// collective::nccl_pci_gbs).
  int pcie_generation = 0;
  int pcie_lanes = 0;
  Watts power;
  config::Provenance provenance;
};

enum class SwitchKind { kNvlink, kInfiniband, kEthernet };
const char* switch_kind_name(SwitchKind k);

struct SwitchSpec {
  std::string name;
  std::string display_name;
  SwitchKind kind = SwitchKind::kInfiniband;
  int ports = 0;                     ///< radix
  BytesPerSecond port_bandwidth;     ///< per port, per direction
  Seconds latency;                   ///< port-to-port cut-through latency
  std::string in_network_reduction;  ///< "" when none; "NVLink SHARP", "SHARPv3", "SHARPv4"
  Watts power;                       ///< ASIC and box, without pluggable optics
  config::Provenance provenance;
};

/// A pluggable optic or a cable class; counted per end of every scale-out link.
struct TransceiverSpec {
  std::string name;
  std::string display_name;
  BytesPerSecond bandwidth;
  Watts power;
  Seconds latency;  ///< fibre + module latency of one link
  config::Provenance provenance;
};

/// A rack (GB300 NVL72) or a node (HGX H100): the unit a cluster is built from.
struct SystemSpec {
  std::string name;
  std::string display_name;
  std::string kind;  ///< "rack" or "node"
  std::string gpu;   ///< GpuSpec name
  int nodes = 1;     ///< compute trays (rack) or 1 (node)
  int gpus_per_node = 8;
  std::string cpu;  ///< CpuSpec name
  int cpus_per_node = 0;
  std::string nic;  ///< NicSpec name of the scale-out NIC
  int nics_per_node = 0;
  int nvlink_domain_gpus = 8;  ///< GPUs in one NVLink domain (all GPUs of the system)
  std::string nvswitch;        ///< SwitchSpec name of the NVLink switch chip
  int nvswitch_chips = 0;      ///< chips in the domain
  int switch_trays = 0;        ///< NVLink switch trays (0 on HGX, where chips are on the board)
  Watts switch_tray_power;     ///< per tray, chips included
  Watts node_other_power;      ///< per node: board, memory, fans, storage, DPU
  Watts rack_power_limit;      ///< power shelf capacity of a rack system (0 if not a rack)
  std::string default_scale_out_switch;  ///< for the SYSTEM*COUNT shorthand
  std::string default_transceiver;
  config::Provenance provenance;

  [[nodiscard]] int gpus() const { return nodes * gpus_per_node; }
  [[nodiscard]] int cpus() const { return nodes * cpus_per_node; }
  [[nodiscard]] int nics() const { return nodes * nics_per_node; }
};

/// The scale-out fabric: a folded-Clos fat tree of one switch model.
struct ScaleOutSpec {
  std::string switch_name;
  std::string transceiver;  ///< per link end; "" for passive copper
  int tiers = 0;            ///< 1, 2 or 3; 0 = the fewest that connect all endpoints
  /// Down:up port ratio per tier, from the leaves up (1.0 = non-blocking; 7.0 = 1:7). Missing
  /// entries are 1.0.
  std::vector<double> oversubscription;
  bool rail_optimized = false;  ///< leaf per rail (local GPU index) instead of per system
  int planes = 1;               ///< independent parallel fabrics; each NIC splits its ports
  Seconds cable_latency = base::nanoseconds(50);  ///< per link, fibre and SerDes
  /// In-network reduction (SHARP) enabled for collectives: NCCL runs CollNet and multi-node
  /// NVLS only with the SHARP plugin loaded and NCCL_COLLNET_ENABLE=1, so it is off unless the
  /// cluster says so (and the switch must have it).
  bool sharp = false;
};

struct ClusterSpec {
  std::string name;
  std::string display_name;
  std::string description;
  std::string system;  ///< SystemSpec name
  int count = 0;       ///< systems
  ScaleOutSpec scale_out;
  config::Provenance provenance;
  std::string origin;  ///< "catalog", a file path, or "shorthand"
};

}  // namespace clustertwin::hardware
