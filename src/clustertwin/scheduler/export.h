#pragma once
/// Topology files a user can deploy (docs/models/orchestration.md §5), for any cluster:
/// - Slurm topology.conf for topology/tree: one SwitchName line per leaf switch group with its
///   nodes, one per pod of a 3-tier fabric, and the top switch (the recommended form: leaves
///   plus the switches above them, not every cable);
/// - Slurm topology.conf for topology/block (23.11+): one BlockName per base block (NVL72 rack;
///   leaf group when NVLink domains are single servers), in fabric order so that Slurm's
///   aggregation of consecutive blocks follows IB locality, and BlockSizes = base, 2 base, ...
///   with base = nodes per block - spares (each size base x 2^k, k <= 15, 2^k <= blocks);
/// - Slurm topology.yaml (25.05+) holding both: the block topology as cluster default and the
///   tree for partitions that ask for it;
/// - Kueue: a Topology (levels: fabric pod, NVLink clique, hostname), a ResourceFlavor that
///   names it, and one Node per host carrying the labels (nvidia.com/gpu.clique =
///   <ClusterUUID>.<CliqueID>, Topograph's fabric.topograph.run/tier-N, kubernetes.io/hostname).
/// Names from a switch file are made Slurm-safe ('/' and other punctuation become '-').

#include <string>
#include <string_view>

#include "clustertwin/base/result.h"
#include "clustertwin/scheduler/cluster.h"

namespace clustertwin::scheduler {

/// Host names must survive the formats they go into (issue 19: a prefix holding a newline wrote
/// a SwitchName line of its own into topology.conf). A Slurm node name: letters, digits, '.',
/// '_' and '-', starting with a letter or digit, at most 64 characters; `kubernetes` adds
/// Kubernetes' rules for Node names and label values (lowercase RFC 1123: no '_', no capitals,
/// at most 63 characters).
/// `what` names the source in the message ("--node-prefix", "host").
base::Status check_host_name(std::string_view name, std::string_view what, bool kubernetes);
/// Every node name of the cluster, checked as above; all errors at once.
base::Status check_host_names(const ClusterModel& c, bool kubernetes);

std::string slurm_tree_conf(const ClusterModel& c);
std::string slurm_block_conf(const ClusterModel& c, int spares);
std::string slurm_topology_yaml(const ClusterModel& c, int spares);
std::string kueue_yaml(const ClusterModel& c, int spares);

/// Checks a topology/block topology.conf against the documented grammar (topology.conf.5,
/// Slurm 23.11-26.x): only BlockName=<name> Nodes=<hostlist> and BlockSizes=<n>[,<n>...] lines
/// (keys case-insensitive, '#' comments); unique block names; every node in exactly one block;
/// BlockSizes increasing, each the first times a power of two (2^k, k <= 15); every block with
/// at least the first BlockSizes nodes. All errors at once, with line numbers.
base::Status check_block_conf(std::string_view text);

/// The same for topology/tree: SwitchName=<name> (Nodes=<hostlist> | Switches=<hostlist>)
/// [LinkSpeed=<n>]; names unique and at most 64 characters; every referenced switch defined;
/// exactly one root; no node under two leaves.
base::Status check_tree_conf(std::string_view text);

}  // namespace clustertwin::scheduler
