#pragma once
/// The pending queue of the cluster simulation (sim.h; docs/models/orchestration.md): the ids of
/// pending jobs in priority order, over all partitions (the backfill pass tests them in that
/// order) and per partition (Slurm's main loop takes each partition's head; the first job of a
/// partition that does not fit blocks the rest of it). The order is the simulation's (priority,
/// then submit time, then id), given to every call that orders as `before(a, b)`; whether a job
/// is still pending is the simulation's too, given as `gone(id)`. Jobs that start leave lazily:
/// readers skip entries that are `gone`, and the vectors are compacted once half the entries are
/// stale (amortised O(1) per start). Internal to the scheduler layer.

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace clustertwin::scheduler::detail {

class PendingQueue {
 public:
  /// Empty, with `partitions` partition queues.
  void reset(size_t partitions) {
    all_.clear();
    parts_.assign(partitions, {});
    pos_.assign(partitions, 0);
    blocked_.assign(partitions, 0);
    stale_ = 0;
  }

  /// Queues `id` in `partition`, after the entries it is not `before` (equal keys keep their
  /// arrival order).
  template <class Before>
  void insert(int id, size_t partition, Before before) {
    all_.insert(std::upper_bound(all_.begin(), all_.end(), id, before), id);
    auto& pp = parts_[partition];
    pp.insert(std::upper_bound(pp.begin(), pp.end(), id, before), id);
  }

  /// Orders every queue again after the priorities changed (stable).
  template <class Before>
  void resort(Before before) {
    std::stable_sort(all_.begin(), all_.end(), before);
    for (auto& pp : parts_) std::stable_sort(pp.begin(), pp.end(), before);
  }

  /// A queued job started: its entries stay until a compaction.
  void left() { ++stale_; }
  [[nodiscard]] size_t stale() const { return stale_; }

  /// Removes every entry that is `gone` now.
  template <class Gone>
  void compact(Gone gone) {
    all_.erase(std::remove_if(all_.begin(), all_.end(), gone), all_.end());
    for (auto& pp : parts_) pp.erase(std::remove_if(pp.begin(), pp.end(), gone), pp.end());
    stale_ = 0;
  }
  /// compact() once more than half the entries of the whole queue are stale.
  template <class Gone>
  void compact_if_half_stale(Gone gone) {
    if (2 * stale_ > all_.size()) compact(gone);
  }

  /// Drops the `gone` entries at the front of the whole queue: a pass starts jobs from the
  /// front, and every later pass would walk over them again until the next compaction.
  template <class Gone>
  void drop_gone_front(Gone gone) {
    stale_ -= drop_front(all_, gone);
  }

  /// The whole queue in priority order (entries that are `gone` included: skip them).
  [[nodiscard]] const std::vector<int>& all() const { return all_; }
  [[nodiscard]] size_t partitions() const { return parts_.size(); }

  /// The main loop's walk: the partitions' queues merged by priority, a blocked partition
  /// skipped. begin_pass() starts it; next() gives the highest-priority head of an unblocked
  /// partition (and moves past it) with its partition, or none when every partition is
  /// blocked or done; block() stops a partition for the rest of the pass.
  template <class Gone>
  void begin_pass(Gone gone) {
    for (auto& pp : parts_) drop_front(pp, gone);
    pos_.assign(parts_.size(), 0);
    std::fill(blocked_.begin(), blocked_.end(), 0);
  }
  template <class Gone, class Before>
  std::optional<std::pair<int, size_t>> next(Gone gone, Before before) {
    int best = -1;
    size_t best_p = 0;
    for (size_t p = 0; p < parts_.size(); ++p) {
      const auto& pp = parts_[p];
      while (!blocked_[p] && pos_[p] < pp.size() && gone(pp[pos_[p]])) ++pos_[p];
      if (blocked_[p] || pos_[p] >= pp.size()) continue;
      const int id = pp[pos_[p]];
      if (best < 0 || before(id, best)) {
        best = id;
        best_p = p;
      }
    }
    if (best < 0) return std::nullopt;
    ++pos_[best_p];
    return std::pair{best, best_p};
  }
  void block(size_t partition) { blocked_[partition] = 1; }

 private:
  template <class Gone>
  static size_t drop_front(std::vector<int>& q, Gone gone) {
    size_t k = 0;
    while (k < q.size() && gone(q[k])) ++k;
    if (k > 0) q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(k));
    return k;
  }

  std::vector<int> all_;                 // every partition's, by priority
  std::vector<std::vector<int>> parts_;  // per partition, by priority
  std::vector<size_t> pos_;              // the main loop's place in each partition
  std::vector<char> blocked_;            // per partition, within a main pass
  size_t stale_ = 0;                     // entries of all_ that are no longer pending
};

}  // namespace clustertwin::scheduler::detail
