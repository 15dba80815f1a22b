#pragma once
/// Cells and free capacity of the cluster simulation (sim.h; docs/models/orchestration.md): per
/// node its free GPUs, whether it is down (a count: failures overlap) and whether it is a
/// reserved hot spare; per cell the free whole nodes, the free GPUs and the nodes by free GPUs
/// (placement's FreeView); per base block the free whole nodes (segment capacity for the main
/// loop's quick test), the down nodes and the spares; the totals; and the time integrals of
/// allocated GPUs, busy nodes, down GPUs and blocks with a node down or short of spares. A node
/// that is down or a spare offers nothing. The simulation decides what happens when; this class
/// keeps the counts consistent. Internal to the scheduler layer.

#include <cstdint>
#include <utility>
#include <vector>

#include "clustertwin/engine/engine.h"
#include "clustertwin/scheduler/cluster.h"
#include "clustertwin/scheduler/placement.h"

namespace clustertwin::scheduler::detail {

class FreeCapacity {
 public:
  /// The time integrals, in unit x ticks.
  struct Integrals {
    double allocated_gpus = 0, busy_nodes = 0, down_gpus = 0;
    double blocks_any_down = 0, blocks_short = 0;  ///< blocks with a node down; more than spares
  };

  FreeCapacity() = default;
  /// Every node up and free. `segment_sizes`: the segment sizes (nodes) whose capacity is kept
  /// (sum over blocks of floor(free nodes / size)); empty: none. `spares` per base block count
  /// a block as short; with `reserve_spares` that many free nodes per block (the last ones) are
  /// withheld as hot spares, and a node that comes back whole refills its block's.
  FreeCapacity(const ClusterModel& c, const PlacementIndex& index, int spares, bool reserve_spares,
               const std::vector<int>& segment_sizes);

  [[nodiscard]] int nodes() const { return static_cast<int>(node_free_.size()); }
  [[nodiscard]] int free(int n) const { return node_free_[static_cast<size_t>(n)]; }
  [[nodiscard]] bool up(int n) const { return node_down_[static_cast<size_t>(n)] == 0; }
  [[nodiscard]] bool spare(int n) const { return spare_[static_cast<size_t>(n)] != 0; }
  [[nodiscard]] const std::vector<int>& cell_nodes() const { return cell_nodes_; }
  [[nodiscard]] const std::vector<int>& cell_gpus() const { return cell_gpus_; }
  /// Nodes of each cell by free GPUs: [cell x (gpus per node + 1) + free].
  [[nodiscard]] const std::vector<int>& cell_hist() const { return cell_hist_; }
  [[nodiscard]] FreeView view() const { return {cell_nodes_, cell_gpus_, cell_hist_}; }
  [[nodiscard]] int64_t free_nodes() const { return free_nodes_total_; }
  [[nodiscard]] int64_t free_gpus() const { return free_gpus_total_; }
  [[nodiscard]] int64_t allocated_gpus() const { return alloc_gpus_; }
  [[nodiscard]] int64_t busy_nodes() const { return busy_nodes_; }
  [[nodiscard]] int64_t down_gpus() const { return down_gpus_; }
  /// (segment size, segments the free nodes of every block hold now).
  [[nodiscard]] const std::vector<std::pair<int, int64_t>>& segment_capacity() const {
    return seg_cap_;
  }
  /// Grows whenever capacity does (GPUs freed, a node repaired): a job that did not fit at an
  /// epoch does not fit until it changes.
  [[nodiscard]] uint64_t epoch() const { return free_epoch_; }
  [[nodiscard]] const Integrals& integrals() const { return integrals_; }

  /// Takes `gpus` GPUs of node `n` for a job; gives them back.
  void take(int n, int gpus);
  void give_back(int n, int gpus);
  /// One more failure holding `n` down; one fewer. repair() returns whether the node is up now.
  void fail(int n);
  bool repair(int n);
  /// Withholds a free node as a hot spare, or returns it to placement.
  void set_spare(int n, bool on);
  /// With reserved spares: withholds `n` when it is up, wholly free, not a spare yet and its
  /// block holds fewer spares than asked.
  void refill_spare(int n);
  /// Accumulates the integrals up to `now` (call before any change).
  void integrate(engine::Tick now);

 private:
  void contrib(int n, int sign);
  void set_free(int n, int f);
  void block_down_change(int n, int sign);
  [[nodiscard]] int block_of(int n) const { return index_->block_of_cell(c_->cell_of(n)); }

  const ClusterModel* c_ = nullptr;
  const PlacementIndex* index_ = nullptr;
  int gpn_ = 1;
  int spares_ = 0;
  bool reserve_spares_ = false;
  std::vector<int> node_free_, node_down_;
  std::vector<char> spare_;
  std::vector<int> cell_nodes_, cell_gpus_, cell_hist_;
  std::vector<int> block_free_;                   // free whole nodes per block (with segments)
  std::vector<std::pair<int, int64_t>> seg_cap_;  // segment size -> segment capacity
  std::vector<int> block_spares_, block_down_;
  int64_t free_nodes_total_ = 0, free_gpus_total_ = 0;
  int64_t alloc_gpus_ = 0, busy_nodes_ = 0, down_gpus_ = 0;
  int64_t blocks_any_down_ = 0, blocks_short_ = 0;
  uint64_t free_epoch_ = 0;
  Integrals integrals_;
  engine::Tick last_integral_ = 0;
};

}  // namespace clustertwin::scheduler::detail
