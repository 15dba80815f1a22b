#pragma once
/// Where a job's nodes go (docs/models/orchestration.md §2). Placement decides on free counts
/// per cell (cluster.h), so the same code places a job now and plans one into the future
/// (backfill reservations); the simulation then picks the concrete free nodes of each cell.
///
/// Policies:
/// - block (Slurm topology/block, 23.11+): base blocks are the NVLink domains (or leaf groups on
///   single-node domains); a job of N nodes is cut into segments of `segment` nodes, each inside
///   one base block; the smallest aggregation level (2^k consecutive base blocks, aligned, as
///   block_record.c builds them) that holds every segment is chosen, best fit (fewest free nodes);
///   inside it, a child that alone fits is preferred (the smallest such), otherwise the child with
///   more room is taken whole and the other gets the rest. Spare trays per rack come from
///   `segment` < nodes per block (BlockSizes=16 of 18).
/// - tree (Slurm topology/tree): the lowest switch (leaf, pod, top) whose subtree has N free
///   nodes, best fit; inside it leaves are filled largest first and the last one is the smallest
///   that covers the rest. It knows no NVLink domains.
/// - first-fit: the lowest-numbered free nodes. The baseline.
/// - kueue (Kueue TAS, BestFit): slices of `segment` nodes required inside one NVLink domain
///   (podset-slice-required-topology = clique, podset-slice-size), the whole job preferred (or
///   required) inside one pod; domains taken by most free slices first, the last domain the
///   tightest that fits; no adjacency rule.
/// Sub-node requests (fewer GPUs than a node) go, whatever the policy, to the node with the
/// fewest free GPUs that fits (`pack`, best fit, the default), or to the node with the most free
/// GPUs (`spread`, worst fit: one small job per server while there are empty servers, what a
/// scheduler that avoids co-locating jobs does, like Slurm's LLN=YES); lowest index on ties.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/scheduler/cluster.h"

namespace clustertwin::scheduler {

enum class PlacementPolicy { kBlock, kTree, kFirstFit, kKueue };
const char* placement_name(PlacementPolicy p);
base::Result<PlacementPolicy> parse_placement(std::string_view s);

/// Where sub-node requests go: the fullest node that fits (pack) or the emptiest (spread).
enum class SubNodeFit { kPack, kSpread };
const char* sub_node_fit_name(SubNodeFit f);
base::Result<SubNodeFit> parse_sub_node_fit(std::string_view s);

struct PlacementConfig {
  PlacementPolicy policy = PlacementPolicy::kBlock;
  /// Nodes per segment (block) or slice (kueue): base block size planned per NVLink domain.
  /// 0 = the whole block. `--spares K` sets it to nodes per block - K.
  int segment_nodes = 0;
  /// block: highest aggregation level, in doublings of the base block (BlockSizes); -1 = up to
  /// the whole cluster.
  int max_block_level = -1;
  /// kueue: true = podset-required-topology at the pod level (wait rather than split across
  /// pods); false = podset-preferred-topology.
  bool kueue_required_pod = false;
  /// Sub-node requests: best fit (pack) or worst fit (spread).
  SubNodeFit sub_node = SubNodeFit::kPack;
};

/// Free capacity per cell: whole free nodes and free GPUs (whole free nodes included).
/// `node_hist`, when set, holds per cell the count of nodes with exactly k free GPUs
/// (k = 0..gpus_per_node, row-major), which makes sub-node placement exact.
struct FreeView {
  std::span<const int> nodes;
  std::span<const int> gpus;
  std::span<const int> node_hist;
};

struct PlacementRequest {
  int nodes = 0;    ///< whole nodes; 0 for a sub-node request
  int gpus = 0;     ///< GPUs of a sub-node request (< gpus per node)
  int segment = 0;  ///< nodes per segment/slice for this job (0: from the config)
};

struct CellTake {
  int cell = 0;
  int nodes = 0;
};

/// The outcome: whole nodes to take per cell, or for a sub-node request the cell and the free
/// GPU count of the node to use (best fit).
struct Placement {
  std::vector<CellTake> takes;
  int sub_cell = -1;
  int sub_node_free = 0;
};

/// Cell ranges of every level, built once per cluster.
class PlacementIndex {
 public:
  explicit PlacementIndex(const ClusterModel& c);
  [[nodiscard]] const ClusterModel& cluster() const { return *c_; }
  /// Cells of base block b, domain d, leaf l (contiguous ranges of cell ids).
  [[nodiscard]] NodeRange block_cells(int b) const { return block_cells_[static_cast<size_t>(b)]; }
  [[nodiscard]] NodeRange domain_cells(int d) const {
    return domain_cells_[static_cast<size_t>(d)];
  }
  [[nodiscard]] NodeRange leaf_cells(int l) const { return leaf_cells_[static_cast<size_t>(l)]; }
  [[nodiscard]] int blocks() const { return static_cast<int>(block_cells_.size()); }
  [[nodiscard]] int block_nodes() const { return block_nodes_; }
  [[nodiscard]] int block_of_cell(int cell) const { return cell_block_[static_cast<size_t>(cell)]; }
  /// Segment size for a job of `nodes` nodes: the config's (or the whole block) when the job
  /// is larger, the job itself when it is smaller. A job that is not a multiple of the segment
  /// (Slurm would reject it) gets a short last segment.
  [[nodiscard]] int segment_for(const PlacementConfig& cfg, int nodes) const;

 private:
  const ClusterModel* c_;
  std::vector<NodeRange> block_cells_, domain_cells_, leaf_cells_;
  std::vector<int> cell_block_;
  int block_nodes_ = 1;
};

/// How much each child contributes to `need` (Kueue BestFit, Slurm tree): the tightest child
/// that alone fits; otherwise children by most room first and the last one the tightest that
/// covers the rest (the KEP's example: rooms 3, 3, 2, 1 and 7 pods give 3 + 3 + 1). Returns
/// (child, amount) pairs; empty when the children together are short.
std::vector<std::pair<int, int>> best_fit_split(std::span<const int> room, int need);

/// Decides where a request goes on `free`; false when it does not fit now under the policy.
bool place(const PlacementIndex& index, const PlacementConfig& cfg, const FreeView& free,
           const PlacementRequest& req, Placement* out);

/// Fragmentation of a free view (orchestration.md §5).
struct Fragmentation {
  int partial_domains = 0;    ///< domains with some but not all nodes free
  int free_blocks = 0;        ///< base blocks that can host a full segment
  int64_t stranded_gpus = 0;  ///< free GPUs in blocks that cannot host a full segment
  int64_t free_gpus = 0;
};
Fragmentation fragmentation(const PlacementIndex& index, const PlacementConfig& cfg,
                            const FreeView& free);

}  // namespace clustertwin::scheduler
