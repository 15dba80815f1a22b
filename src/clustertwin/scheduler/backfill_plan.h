#pragma once
/// The backfill plan of the cluster simulation (sim.h; docs/models/orchestration.md; Slurm's
/// backfill scheduler, bf_* options): the free whole nodes and GPUs of every cell now, and the
/// changes to come in time order: running jobs ending at their time limits, reservations of jobs
/// the pass will start later. It answers the one question a backfill pass asks of it: the
/// earliest time a job fits for its whole time limit, where a cell that loses capacity inside the
/// job's window (a reservation) counts at its lowest over the window. The simulation builds the
/// plan once a pass, and the pass's starts and reservations go into it as it tests jobs in
/// priority order. Internal to the scheduler layer.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "clustertwin/engine/engine.h"
#include "clustertwin/scheduler/placement.h"

namespace clustertwin::scheduler::detail {

/// A change of a cell's free capacity at time `t`: whole nodes `dn` and GPUs `dg` freed (> 0)
/// or taken (< 0).
struct PlanDelta {
  engine::Tick t;
  int cell, dn, dg;
};

class BackfillPlan {
 public:
  /// What a job asks of the plan besides its placement.
  struct Ask {
    int seg = 0;             ///< nodes per segment (block placement), 0: not segmented
    engine::Tick limit = 1;  ///< the job's time limit: it must fit over [start, start + limit)
    /// Nodes by free GPUs per cell now (sub-node jobs): used now when nothing is lowered.
    std::span<const int> now_hist;
  };

  explicit BackfillPlan(const PlacementIndex& index) : index_(&index) {}

  /// A fresh plan: `n`, `g` free whole nodes and GPUs per cell now; `deltas` in time order
  /// (changes of equal time apply in their order). `deltas` is swapped in: the caller gets back
  /// a vector to reuse.
  void reset(std::span<const int> n, std::span<const int> g, std::vector<PlanDelta>& deltas);
  /// Takes capacity now (a job the pass started).
  void take_now(int cell, int dn, int dg);
  /// Adds changes in time order, each after those of equal time already there (ties within the
  /// batch in its order); a large batch (a reservation of a gang over many racks) in one merge.
  /// Clears the batch.
  void add(std::vector<PlanDelta>& batch);
  /// Whether a capacity loss of the plan falls inside (t, t + limit).
  [[nodiscard]] bool loss_within(engine::Tick t, engine::Tick limit) const;

  /// The earliest time in [max(now, from), window_end] at which the job fits over its limit:
  /// now first (unless from > now), then each time capacity is freed. `may_fit(nodes, gpus,
  /// segments)`: a necessary test from the free totals, cheap, so that most candidate times are
  /// refused without a placement; `place(FreeView)`: the placement itself on free capacity per
  /// cell. `now_only`: only now is tried. None when no such time. (A template so that the two
  /// tests inline: a backfill pass calls them for every tested job at every candidate time.)
  template <class MayFit, class Place>
  std::optional<engine::Tick> earliest(engine::Tick now, engine::Tick from, engine::Tick window_end,
                                       bool now_only, const Ask& ask, MayFit&& may_fit,
                                       Place&& place);

  [[nodiscard]] const std::vector<int>& nodes_now() const { return n_; }
  [[nodiscard]] const std::vector<int>& gpus_now() const { return g_; }
  [[nodiscard]] const std::vector<PlanDelta>& deltas() const { return deltas_; }

 private:
  struct Touch {
    int cell, n, g;
  };
  // The changes of totals and segment capacity that lowering the present by the window `key`
  // makes, cached per (window end, segment) until the plan's present changes: most tested
  // jobs fail on these totals alone, without lowering the arrays.
  struct Totals {
    int64_t dn = 0, dg = 0, dcap = 0;
  };

  // Per-cell delta lists and the cells that ever lose capacity in the plan (reservations):
  // only those can make the minimum over a window smaller than the value at its start.
  void index();

  // Segment capacity of the free nodes `n` per cell: sum over blocks of floor(free / seg).
  [[nodiscard]] int64_t segment_capacity(std::span<const int> n, int seg) const;

  // Lowers the cells of `n`/`g` (the state at `t`) to their minimum over [t, t + limit) and
  // reports the change of totals and segment capacity; `undo` restores them.
  void window_min(std::vector<int>& n, std::vector<int>& g, engine::Tick t, engine::Tick limit,
                  int seg, std::vector<Touch>& undo, int64_t* dtotal_n, int64_t* dtotal_g,
                  int64_t* dcap);

  // window_min at the present, cached: the result only changes where the window's end passes
  // a delta of a cell that loses capacity, so jobs whose limits fall between two such times
  // share it. Returns the lowest running sum of each such cell's changes over the window (they
  // do not depend on where the cell starts), or nullptr when nothing is lost in the window;
  // `key` names the window end (up to the next relevant change).
  const std::vector<Touch>* now_drops(engine::Tick now, engine::Tick limit, size_t* key);

  // Lowers the present arrays by `drops` (undo_ set; restore() puts them back) and reports the
  // change of totals and, with seg > 0, of segment capacity.
  void lower_now(const std::vector<Touch>& drops, int seg, int64_t* dn, int64_t* dg, int64_t* dcap);

  Totals now_totals(const std::vector<Touch>& drops, size_t key, int seg);

  // undo_ holds (cell, new n, new g): writes them into n/g, sums the changes of totals and of
  // segment capacity (blocks summed before and after), and leaves undo_ holding the old values.
  void apply_lowered(std::vector<int>& n, std::vector<int>& g, int seg, int64_t* dn, int64_t* dg,
                     int64_t* dcap);

  static void restore(std::vector<int>& n, std::vector<int>& g, const std::vector<Touch>& undo);

  void apply_delta(const PlanDelta& d, int seg, int64_t* total_n, int64_t* total_g, int64_t* cap);

  const PlacementIndex* index_;
  std::vector<int> n_, g_;         // free whole nodes and GPUs per cell now
  std::vector<PlanDelta> deltas_;  // in time order
  int64_t total_n_ = 0, total_g_ = 0;
  std::vector<std::vector<PlanDelta>> cell_deltas_;
  std::vector<char> neg_flag_;
  std::vector<int> neg_cells_;
  std::vector<engine::Tick> neg_t_;
  std::ptrdiff_t neg_sorted_ = 0;  // neg_t_ is sorted up to here
  std::vector<engine::Tick> relevant_t_;
  bool relevant_ok_ = false;
  std::map<int, int64_t> base_cap_;                      // segment -> capacity now
  std::map<size_t, std::vector<Touch>> now_cache_;       // window end -> per-cell drops
  std::map<std::pair<size_t, int>, Totals> now_totals_;  // (window end, segment) -> changes
  // scratch for earliest()
  std::vector<int> cur_n_, cur_g_, cur_bn_, touched_blocks_;
  std::vector<Touch> undo_;
};

template <class MayFit, class Place>
std::optional<engine::Tick> BackfillPlan::earliest(engine::Tick now, engine::Tick from,
                                                   engine::Tick window_end, bool now_only,
                                                   const Ask& ask, MayFit&& may_fit,
                                                   Place&& place) {
  using engine::Tick;
  const Tick limit = ask.limit;
  const int seg = ask.seg;
  int64_t dn = 0, dg = 0, dcap = 0;
  // The present, on the plan's own arrays (no copy).
  if (from <= now) {
    auto cap_it = base_cap_.find(seg);
    if (cap_it == base_cap_.end()) {
      cap_it = base_cap_.emplace(seg, seg > 0 ? segment_capacity(n_, seg) : 0).first;
    }
    undo_.clear();
    size_t key = 0;
    const auto* drops = now_drops(now, limit, &key);
    if (drops != nullptr) {
      const Totals tot = now_totals(*drops, key, seg);
      dn = tot.dn;
      dg = tot.dg;
      dcap = tot.dcap;
    }
    bool ok = may_fit(total_n_ + dn, total_g_ + dg, cap_it->second + dcap);
    if (ok) {
      if (drops != nullptr) {
        int64_t unused_n = 0, unused_g = 0, unused_cap = 0;
        lower_now(*drops, 0, &unused_n, &unused_g, &unused_cap);
      }
      FreeView v{n_, g_, {}};
      if (!ask.now_hist.empty() && undo_.empty()) v.node_hist = ask.now_hist;  // exact now
      ok = place(v);
    }
    restore(n_, g_, undo_);
    if (ok) return now;
    if (now_only) return std::nullopt;
  }
  // The future: walk the plan's releases.
  cur_n_ = n_;
  cur_g_ = g_;
  int64_t total_n = total_n_, total_g = total_g_;
  const size_t B = static_cast<size_t>(index_->blocks());
  cur_bn_.assign(B, 0);
  int64_t cap = 0;
  if (seg > 0) {
    for (size_t b = 0; b < B; ++b) {
      const NodeRange r = index_->block_cells(static_cast<int>(b));
      for (int c = r.first; c < r.end(); ++c) cur_bn_[b] += cur_n_[static_cast<size_t>(c)];
      cap += std::max(0, cur_bn_[b]) / seg;
    }
  }
  size_t i = 0;
  while (i < deltas_.size() && deltas_[i].t <= now) ++i;
  while (true) {
    // Next time something is released, then everything that happens by then.
    while (i < deltas_.size() && deltas_[i].dn <= 0 && deltas_[i].dg <= 0) {
      apply_delta(deltas_[i++], seg, &total_n, &total_g, &cap);
    }
    if (i >= deltas_.size()) return std::nullopt;
    const Tick t = deltas_[i].t;
    if (t > window_end) return std::nullopt;
    while (i < deltas_.size() && deltas_[i].t <= t)
      apply_delta(deltas_[i++], seg, &total_n, &total_g, &cap);
    if (t < from || !may_fit(total_n, total_g, cap)) continue;
    window_min(cur_n_, cur_g_, t, limit, seg, undo_, &dn, &dg, &dcap);
    bool ok =
        may_fit(total_n + dn, total_g + dg, cap + dcap) && place(FreeView{cur_n_, cur_g_, {}});
    restore(cur_n_, cur_g_, undo_);
    if (ok) return t;
  }
}

}  // namespace clustertwin::scheduler::detail
