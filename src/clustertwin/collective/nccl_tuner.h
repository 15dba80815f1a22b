#pragma once
/// NCCL's own choice of algorithm and protocol (docs/models/collectives.md, "NCCL's tuner").
///
/// NCCL picks, per collective call, the (algorithm, protocol) whose time by its *own* cost model
/// is least (src/graph/tuning.cc ncclTopoTuneModel + ncclTopoGetAlgoTime, src/enqueue.cc
/// topoGetAlgoInfo):
///
///   time(a, p, S) = latency(a, p) + S / (1000 * bw(a, p))        [us, bytes, GB/s]
///   bw(a, p)      = graph(a).nChannels * graph(a).bw, refined per algorithm and protocol
///                   (LL halves it and caps it at llMaxBw, LL128 at 120/128 and a per-channel
///                   cap, tree all-reduce at 0.92 and perChMaxTreeBw, NVLS-tree at
///                   perChMaxNVLSTreeBw, ...), then converted to algorithm bandwidth (ring,
///                   NVLS, NVLS-tree: nRanks / nsteps; tree, CollNet: 1/2)
///   latency(a, p) = baseLat + intra-node steps * hwLat[NVLink] + inter-node steps * hwLat[NET]
///
/// with NCCL's constants (tuner defaults of NCCL 2.28, tuning.cc) and the graph of each
/// algorithm: channels and per-channel bandwidth as NCCL's topology search finds them
/// (src/graph/search.cc ncclTopoCompute, summarised in `derive_graphs`). The pick is NCCL's,
/// the time of the picked line is clustertwin's calibrated model's: NCCL's model is a ranking
/// device, not a prediction (its busbw figures are not what nccl-tests measures).

#include <optional>
#include <string>
#include <vector>

#include "clustertwin/collective/types.h"

namespace clustertwin::collective {

/// NCCL's compute-capability classes (tuning.cc NCCL_*_COMPCAP_IDX).
enum class ComputeClass { kVolta, kAmpere, kHopper, kBlackwell };
/// The host CPU as NCCL's tuner sees it (LL bandwidth cap and network post overhead).
enum class CpuVendor { kIntel, kAmd, kArm };

/// One algorithm's graph (src/include/graph.h struct ncclTopoGraph): what the search found.
struct TunerGraph {
  int channels = 0;          ///< nChannels
  double bw_intra = 0;       ///< GB/s per channel inside a node
  double bw_inter = 0;       ///< GB/s per channel across nodes
  bool nvlink_intra = true;  ///< typeIntra is NVLink (else PCI)
};

/// What NCCL's tuner knows about a communicator.
struct TunerInputs {
  int ranks = 0;
  int nodes = 0;  ///< NCCL's nNodes: NVLink domains (an NVL72 rack with MNNVL is one)
  ComputeClass cc = ComputeClass::kHopper;
  CpuVendor cpu = CpuVendor::kIntel;
  bool collnet = false;  ///< CollNet (SHARP) enabled
  bool nvswitch = true;  ///< the node has NVSwitches (CollNet Direct needs them)
  bool nvls = false;     ///< NVLS supported (NVLink SHARP switch, Hopper or later)
  TunerGraph ring, tree, collnet_direct, collnet_chain, nvls_graph, nvls_tree_graph;
};

/// NCCL's cost table for one collective op: bandwidth (GB/s, algorithm bandwidth) and latency
/// (us) per (algorithm, protocol); bandwidth 0 = disabled.
struct TunerLine {
  Algorithm algorithm;
  Protocol protocol;
  bool collnet_chain = false;  ///< NCCL's CollNet Chain (else Direct) when algorithm is CollNet
  double bw = 0;
  double latency_us = 0;
};

/// The lines NCCL's tuner considers for `op` on `in` (disabled ones left out).
std::vector<TunerLine> nccl_tuner_lines(const TunerInputs& in, Op op);

/// NCCL's predicted time of a line for a size in bytes (ncclTopoGetAlgoTime: tree correction
/// factors by size, the ring plateau factor; one operation, no aggregation).
double nccl_tuner_time_us(const TunerInputs& in, Op op, const TunerLine& line, int64_t bytes);

/// NCCL's ranking of the lines for one call: ascending predicted time.
std::vector<TunerLine> nccl_tuner_rank(const TunerInputs& in, Op op, int64_t bytes);

/// The hardware facts NCCL's topology search uses (its own units: GB/s as topo.h counts them).
struct TunerHardware {
  ComputeClass cc = ComputeClass::kHopper;
  CpuVendor cpu = CpuVendor::kIntel;
  double nvlink_gbs = 0;  ///< per GPU, one direction: links x NCCL's per-link figure
  double nic_gbs = 0;     ///< one NIC's line rate
  double pci_gbs = 0;     ///< the GPU-NIC PCIe path (nccl_pci_gbs of the NIC's host interface)
  int nics_per_domain = 0;
  int gpus_per_domain = 0;
};

/// NCCL's bandwidth of a PCIe link (src/graph/topo.cc, ncclTopoAddPci: kvDictPciGen gives the
/// per-lane rate in units of 100 Mb/s, 15/30/60/120/240/480 for Gen1-Gen6 with the encoding
/// overhead folded in, and the link gets width x rate / 80 GB/s): Gen4 x16 24, Gen5 x16 48,
/// Gen6 x16 96 GB/s. An unknown generation gets NCCL's fallback, Gen3 (60 per lane).
double nccl_pci_gbs(int generation, int lanes);

/// The graphs NCCL's search finds for ring, tree, NVLS and CollNet on this hardware, for a
/// communicator spanning `nodes` domains with `ppn` ranks each (search.cc, summarised: the
/// speeds of NCCL's speed array for the GPU family from the highest the GPU-NIC path allows,
/// each with as many channels as the NICs and NVLink carry, the best channels x speed kept;
/// then the channel duplication rule).
TunerInputs derive_tuner_inputs(const TunerHardware& hw, int ranks, int nodes, int ppn,
                                bool collnet, bool nvls);

ComputeClass compute_class(const std::string& architecture);
CpuVendor cpu_vendor(const std::string& cpu_display_name);

}  // namespace clustertwin::collective
