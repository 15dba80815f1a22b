// Cells and free capacity of the cluster simulation (free_capacity.h). Moved out of the Sim
// class (sim_cells.cpp) with its arithmetic unchanged.

#include "clustertwin/scheduler/free_capacity.h"

#include <algorithm>

#include "clustertwin/base/check.h"

namespace clustertwin::scheduler::detail {

FreeCapacity::FreeCapacity(const ClusterModel& c, const PlacementIndex& index, int spares,
                           bool reserve_spares, const std::vector<int>& segment_sizes)
    : c_(&c),
      index_(&index),
      gpn_(c.gpus_per_node()),
      spares_(spares),
      reserve_spares_(reserve_spares && spares > 0) {
  const auto N = static_cast<size_t>(c.nodes());
  const auto blocks = static_cast<size_t>(index.blocks());
  node_free_.assign(N, gpn_);
  node_down_.assign(N, 0);
  spare_.assign(N, 0);
  block_spares_.assign(blocks, 0);
  block_down_.assign(blocks, 0);
  const size_t C = c.cells().size();
  cell_nodes_.assign(C, 0);
  cell_gpus_.assign(C, 0);
  cell_hist_.assign(C * static_cast<size_t>(gpn_ + 1), 0);
  if (!segment_sizes.empty()) {
    block_free_.assign(blocks, 0);
    for (int seg : segment_sizes) seg_cap_.push_back({seg, 0});
  }
  for (int n = 0; n < c.nodes(); ++n) contrib(n, +1);
  if (reserve_spares_) {
    for (const auto& b : c.blocks()) {
      for (int k = 0; k < spares && k < b.count; ++k) set_spare(b.end() - 1 - k, true);
    }
  }
}

void FreeCapacity::contrib(int n, int sign) {
  if (node_down_[static_cast<size_t>(n)] > 0 || spare_[static_cast<size_t>(n)]) return;
  const int cell = c_->cell_of(n);
  const int f = node_free_[static_cast<size_t>(n)];
  cell_gpus_[static_cast<size_t>(cell)] += sign * f;
  free_gpus_total_ += sign * f;
  if (f == gpn_) {
    cell_nodes_[static_cast<size_t>(cell)] += sign;
    free_nodes_total_ += sign;
    if (!seg_cap_.empty()) {
      int& bf = block_free_[static_cast<size_t>(index_->block_of_cell(cell))];
      for (auto& [seg, cap] : seg_cap_) cap += (bf + sign) / seg - bf / seg;
      bf += sign;
    }
  }
  cell_hist_[static_cast<size_t>(cell) * static_cast<size_t>(gpn_ + 1) + static_cast<size_t>(f)] +=
      sign;
}

void FreeCapacity::set_free(int n, int f) {
  const int was = node_free_[static_cast<size_t>(n)];
  if (f > was) ++free_epoch_;
  busy_nodes_ += (f < gpn_ ? 1 : 0) - (was < gpn_ ? 1 : 0);
  contrib(n, -1);
  node_free_[static_cast<size_t>(n)] = f;
  contrib(n, +1);
}

void FreeCapacity::take(int n, int gpus) {
  set_free(n, node_free_[static_cast<size_t>(n)] - gpus);
  alloc_gpus_ += gpus;
}

void FreeCapacity::give_back(int n, int gpus) {
  set_free(n, node_free_[static_cast<size_t>(n)] + gpus);
  alloc_gpus_ -= gpus;
  refill_spare(n);
}

void FreeCapacity::fail(int n) {
  if (node_down_[static_cast<size_t>(n)] == 0) {
    contrib(n, -1);
    down_gpus_ += gpn_;
    block_down_change(n, +1);
  }
  ++node_down_[static_cast<size_t>(n)];
}

bool FreeCapacity::repair(int n) {
  CT_CHECK(node_down_[static_cast<size_t>(n)] > 0, "repair of a node that is up");
  --node_down_[static_cast<size_t>(n)];
  if (node_down_[static_cast<size_t>(n)] > 0) return false;
  ++free_epoch_;
  contrib(n, +1);
  down_gpus_ -= gpn_;
  block_down_change(n, -1);
  refill_spare(n);
  return true;
}

void FreeCapacity::block_down_change(int n, int sign) {
  int& d = block_down_[static_cast<size_t>(block_of(n))];
  const int was = d;
  d += sign;
  blocks_any_down_ += (d > 0 ? 1 : 0) - (was > 0 ? 1 : 0);
  blocks_short_ += (d > spares_ ? 1 : 0) - (was > spares_ ? 1 : 0);
}

void FreeCapacity::set_spare(int n, bool on) {
  contrib(n, -1);
  spare_[static_cast<size_t>(n)] = on ? 1 : 0;
  block_spares_[static_cast<size_t>(block_of(n))] += on ? 1 : -1;
  contrib(n, +1);
}

void FreeCapacity::refill_spare(int n) {
  if (!reserve_spares_ || spare_[static_cast<size_t>(n)] || !up(n) ||
      node_free_[static_cast<size_t>(n)] != gpn_) {
    return;
  }
  if (block_spares_[static_cast<size_t>(block_of(n))] < spares_) set_spare(n, true);
}

void FreeCapacity::integrate(engine::Tick now) {
  const double dt = static_cast<double>(now - last_integral_);
  integrals_.allocated_gpus += dt * static_cast<double>(alloc_gpus_);
  integrals_.busy_nodes += dt * static_cast<double>(busy_nodes_);
  integrals_.blocks_any_down += dt * static_cast<double>(blocks_any_down_);
  integrals_.blocks_short += dt * static_cast<double>(blocks_short_);
  integrals_.down_gpus += dt * static_cast<double>(down_gpus_);
  last_integral_ = now;
}

}  // namespace clustertwin::scheduler::detail
