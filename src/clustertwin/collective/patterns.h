#pragma once
/// The steady-state flow set of each algorithm (docs/models/collectives.md, "Flow patterns"):
/// which GPU sends how many bytes to which while the pipelined collective runs. The flow model
/// solves these with max-min sharing (network::FlowSimulator::solve_steady); the slowest flow
/// sets the bandwidth term. Identical flows are merged into one with a weight (NCCL channels on
/// the same NVLink pair), and with `representative` the intra-domain flows of only the first
/// domain are built: every domain's NVLink ports are its own, so on a uniform fabric they all
/// see the same rates.

#include <cstdint>
#include <utility>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/collective/group.h"
#include "clustertwin/collective/types.h"
#include "clustertwin/network/flow_sim.h"

namespace clustertwin::collective {

struct FlowSet {
  std::vector<network::Transfer> transfers;
  std::vector<int32_t> group;  ///< coupling group (collective instance) of each transfer
  /// Phase of each transfer: phases run one after another (PAT's rounds), transfers of one
  /// phase together. Most algorithms are one pipelined phase (0).
  std::vector<int32_t> phase;
  int64_t flows_before_merge = 0;
};

struct PatternOptions {
  int channels = 16;              ///< ring/tree channels (NCCL nChannels)
  bool representative = true;     ///< intra-domain flows of the first domain only (see above)
  double bytes = 1e9;             ///< the collective's size S (nccl-tests convention)
  int32_t group_id = 0;           ///< coupling group of the flows added
  int64_t max_flows = 8'000'000;  ///< beyond this the pattern is refused (all-to-all at scale)
  /// Channels between the same two GPUs become one weighted flow. Right for adaptive routing,
  /// which spreads every flow over several paths anyway; with ECMP each channel keeps its own
  /// hash (NCCL channels use separate queue pairs, so they can land on different paths).
  bool merge_channels = false;
};

/// Appends the flows of one collective instance. Fails only when the pattern would exceed
/// `max_flows` (a dense all-to-all over very many GPUs).
base::Status add_flows(FlowSet& out, const topology::Topology& topo, const Group& g, Op op,
                       Algorithm algo, const PatternOptions& o);

/// One rank's links in one tree of NCCL's double binary tree (-1: none).
struct TreeLinks {
  int up = -1;
  int down0 = -1;
  int down1 = -1;
};
/// NCCL's binary tree over `count` ranks (src/graph/trees.cc, ncclGetBtree): an in-order tree in
/// which odd ranks are leaves and even ranks inner nodes; rank 0 is the root with one child.
/// Rank r's lowest set bit b gives its parent (r ^ b) | (b << 1) (or r ^ b past the end) and
/// its children r -/+ b/2.
TreeLinks nccl_btree(int count, int rank);
/// The two trees of NCCL's double binary tree (ncclGetDtree): tree 0 is the binary tree, tree 1
/// its mirror (even counts) or its shift by one (odd counts), so that a leaf of one tree is an
/// inner node of the other (Sanders et al. 2009; NCCL 2.4).
std::pair<TreeLinks, TreeLinks> nccl_dtree(int count, int rank);
/// The most tree edges (parent plus children, both trees) at any one rank: the flows one NIC
/// carries, each of the tree's share of the data, up and down. 2 for 2 ranks, 3 for 3 and 4 for
/// 4 and more (NCCL's tuner halves the tree's inter-node bandwidth beyond 2 nodes, tuning.cc).
int nccl_dtree_max_degree(int count);

/// Bytes on each ring edge per byte of S: all_reduce 2(n-1)/n, all_gather and reduce_scatter
/// (n-1)/n, broadcast and reduce 1.
double ring_edge_factor(Op op, int n);
/// Bytes through each GPU's NVLink port (each direction) per byte of S with NVLink SHARP:
/// all_reduce S(1 + 1/n) (reduce-scatter by multimem load-reduce, all-gather by multicast store,
/// overlapped), all_gather and reduce_scatter S.
double nvls_port_factor(Op op, int n);

}  // namespace clustertwin::collective
