#pragma once
/// Where a collective's ranks sit: the GPUs of a communicator in rank order and how they fall
/// into NVLink domains. NCCL calls a domain a "node" (an NVL72 rack with multi-node NVLink is one).

#include <span>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::collective {

struct Group {
  std::vector<int> gpus;                    ///< rank r runs on gpus[r]
  std::vector<std::vector<int>> by_domain;  ///< GPUs of each domain the group uses, in rank order
  std::vector<int> domain_ids;              ///< topology domain index of each by_domain entry

  [[nodiscard]] int ranks() const { return static_cast<int>(gpus.size()); }
  /// NCCL's nNodes: NVLink domains the group spans.
  [[nodiscard]] int domains() const { return static_cast<int>(by_domain.size()); }
  /// The largest number of ranks in one domain (NCCL's localRanks).
  [[nodiscard]] int per_domain() const { return per_domain_; }
  /// Every domain holds the same number of ranks.
  [[nodiscard]] bool uniform() const { return uniform_; }

  // Derived once by make_group().
  int per_domain_ = 0;
  bool uniform_ = true;
};

/// A group from explicit GPU ids (distinct, in range); ranks follow the given order.
base::Result<Group> make_group(const topology::Topology& topo, std::span<const int> gpus);

/// Placement as `--gpus N [--gpus-per-domain K]` does it, like a scheduler that packs
/// model-parallel groups in NVLink domains: K GPUs (default: the domain size) from each domain in
/// order, lowest GPU ids first, until N are placed. Fails when the cluster has fewer GPUs, or
/// when K does not fit a domain.
base::Result<Group> place_first(const topology::Topology& topo, int n, int per_domain = 0);

/// `count` groups of `size` GPUs packed the same way one after another (e.g. 9 tensor-parallel
/// groups of 8 per 72-GPU rack); `across_domains` instead builds each group from one GPU per
/// domain at the same local rank (the data-parallel groups across racks).
base::Result<std::vector<Group>> place_groups(const topology::Topology& topo, int count, int size,
                                              bool across_domains = false);

}  // namespace clustertwin::collective
