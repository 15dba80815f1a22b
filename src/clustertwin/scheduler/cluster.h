#pragma once
/// The cluster as a scheduler sees it (docs/models/orchestration.md §1): nodes (a compute tray
/// of an NVL72 rack, or an HGX server) grouped into NVLink domains, leaf-switch groups and pods.
/// Every level is a contiguous range of node indices, so the finest common partition of domains
/// and leaves ("cells"; leaves alone when every domain is one server) is a list of ranges; the
/// scheduler keeps its free counts per cell and derives domain, block and switch counts from them.
/// Cost: O(nodes) to build, O(cells) memory for every plan.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/hardware/catalog.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::scheduler {

/// A contiguous range of nodes [first, first + count).
struct NodeRange {
  int first = 0;
  int count = 0;
  [[nodiscard]] int end() const { return first + count; }
};

class ClusterModel {
 public:
  /// From a built topology: nodes of `gpus_per_node` GPUs; NVLink domains from the topology;
  /// leaf groups from the leaf switch of each node's first NIC (for rail-optimised fabrics, the
  /// rail group); pods from the fabric plan (3 tiers) or one pod.
  static ClusterModel from_topology(const topology::Topology& topo, int gpus_per_node,
                                    std::string node_prefix = "node");

  /// A switch tree read from a host list: CSV with a header naming a host column followed by
  /// switch levels from the top down (Alibaba Lingjun `ip,DSW,PSW,ASW`). Labels are keyed by
  /// their full path (an ASW name is unique only inside its PSW). Each host is one node of
  /// `gpus_per_node` GPUs and its own NVLink domain; hosts are ordered by their path so that
  /// leaf groups are contiguous. Errors name the file and line.
  static base::Result<ClusterModel> from_switch_csv(std::string_view text, const std::string& file,
                                                    int gpus_per_node);

  /// A uniform model for tests: `domains` domains of `nodes_per_domain` nodes, `domains_per_leaf`
  /// domains under each leaf, `leaves_per_pod` leaves per pod.
  static ClusterModel uniform(int domains, int nodes_per_domain, int gpus_per_node,
                              int domains_per_leaf = 1, int leaves_per_pod = 0);

  [[nodiscard]] int nodes() const { return static_cast<int>(node_domain_.size()); }
  [[nodiscard]] int gpus_per_node() const { return gpus_per_node_; }
  [[nodiscard]] int64_t gpus() const { return static_cast<int64_t>(nodes()) * gpus_per_node_; }
  [[nodiscard]] int domain_of(int node) const { return node_domain_[static_cast<size_t>(node)]; }
  [[nodiscard]] int leaf_of(int node) const { return node_leaf_[static_cast<size_t>(node)]; }
  [[nodiscard]] int pod_of_leaf(int leaf) const { return leaf_pod_[static_cast<size_t>(leaf)]; }
  [[nodiscard]] const std::vector<NodeRange>& domains() const { return domains_; }
  [[nodiscard]] const std::vector<NodeRange>& leaves() const { return leaves_; }
  /// Pods as ranges of leaf indices.
  [[nodiscard]] const std::vector<NodeRange>& pods() const { return pods_; }
  [[nodiscard]] const std::vector<NodeRange>& cells() const { return cells_; }
  [[nodiscard]] int cell_of(int node) const { return node_cell_[static_cast<size_t>(node)]; }
  /// The domain of a cell's first node (the only one when domains have several nodes).
  [[nodiscard]] int cell_domain(int cell) const {
    return domain_of(cells_[static_cast<size_t>(cell)].first);
  }
  [[nodiscard]] int cell_leaf(int cell) const {
    return leaf_of(cells_[static_cast<size_t>(cell)].first);
  }
  /// Nodes in the largest NVLink domain (18 on NVL72 of 4-GPU trays, 1 on HGX).
  [[nodiscard]] int max_domain_nodes() const { return max_domain_nodes_; }
  /// GPUs in one NVLink domain.
  [[nodiscard]] int domain_gpus() const { return max_domain_nodes_ * gpus_per_node_; }

  /// Base blocks for topology/block placement: the NVLink domains when a domain has more than
  /// one node (NVL72 racks), otherwise the leaf groups (HGX servers under one leaf switch).
  [[nodiscard]] const std::vector<NodeRange>& blocks() const {
    return max_domain_nodes_ > 1 ? domains_ : leaves_;
  }
  [[nodiscard]] bool blocks_are_domains() const { return max_domain_nodes_ > 1; }

  /// Host name of a node: prefix + zero-padded index ("node0017"), or the file's name.
  [[nodiscard]] std::string node_name(int node) const;
  [[nodiscard]] const std::string& node_prefix() const { return prefix_; }
  [[nodiscard]] int name_width() const { return width_; }
  /// Leaf and pod names: generated ("leaf003", "pod1") or the file's labels (full path).
  [[nodiscard]] const std::string& leaf_name(int leaf) const {
    return leaf_names_[static_cast<size_t>(leaf)];
  }
  [[nodiscard]] const std::string& pod_name(int pod) const {
    return pod_names_[static_cast<size_t>(pod)];
  }
  [[nodiscard]] const std::string& top_name() const { return top_name_; }
  /// Switch tiers above the hosts: 1 (one leaf), 2 (leaves + top) or 3 (leaves, pods, top).
  [[nodiscard]] int tiers() const { return tiers_; }
  [[nodiscard]] const std::string& cluster_name() const { return cluster_name_; }
  void set_cluster_name(std::string n) { cluster_name_ = std::move(n); }

 private:
  void finish();  // builds cells, node_cell_, max_domain_nodes_

  int gpus_per_node_ = 1;
  std::vector<int> node_domain_, node_leaf_, node_cell_, leaf_pod_;
  std::vector<NodeRange> domains_, leaves_, pods_, cells_;
  int max_domain_nodes_ = 1;
  int tiers_ = 2;
  std::string prefix_ = "node";
  int width_ = 4;
  std::vector<std::string> host_names_;  // only for clusters read from a file
  std::vector<std::string> leaf_names_, pod_names_;
  std::string top_name_ = "top";
  std::string cluster_name_;
};

/// Slurm hostlist expression of sorted node indices: "node[0000-0017,0020]".
std::string hostlist(const ClusterModel& c, const std::vector<int>& nodes);
/// Same for a range.
std::string hostlist(const ClusterModel& c, NodeRange r);
/// Expands a Slurm hostlist expression ("gb[0000-0003,0007],x1") into names; errors on
/// unbalanced brackets, descending ranges and non-numeric bounds.
base::Result<std::vector<std::string>> expand_hostlist(std::string_view expr);

}  // namespace clustertwin::scheduler
