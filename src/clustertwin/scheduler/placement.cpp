#include "clustertwin/scheduler/placement.h"

#include <algorithm>
#include <numeric>

#include "clustertwin/base/check.h"

namespace clustertwin::scheduler {

std::vector<std::pair<int, int>> best_fit_split(std::span<const int> room, int need) {
  std::vector<std::pair<int, int>> out;
  int total = 0;
  for (int r : room) total += r;
  if (need <= 0 || total < need) return out;
  int best = -1;
  for (int i = 0; i < static_cast<int>(room.size()); ++i) {
    if (room[static_cast<size_t>(i)] >= need &&
        (best < 0 || room[static_cast<size_t>(i)] < room[static_cast<size_t>(best)])) {
      best = i;
    }
  }
  if (best >= 0) {
    out.push_back({best, need});
    return out;
  }
  std::vector<int> order(room.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return room[static_cast<size_t>(a)] > room[static_cast<size_t>(b)];
  });
  // Children in order of room, most first; `p` is the first one not yet taken. The tightest
  // child that covers `left` is the last of order[p..] with room >= left (binary search).
  int left = need;
  size_t p = 0;
  while (left > 0 && p < order.size()) {
    size_t lo = p, hi = order.size();  // first position with room < left
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (room[static_cast<size_t>(order[mid])] >= left) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo > p) {
      out.push_back({order[lo - 1], left});
      left = 0;
      break;
    }
    const int i = order[p++];
    if (room[static_cast<size_t>(i)] == 0) break;
    out.push_back({i, room[static_cast<size_t>(i)]});
    left -= room[static_cast<size_t>(i)];
  }
  if (left > 0) out.clear();
  return out;
}

namespace {

std::vector<NodeRange> cell_ranges(const ClusterModel& c, const std::vector<NodeRange>& nodes) {
  std::vector<NodeRange> out;
  out.reserve(nodes.size());
  for (const auto& r : nodes) {
    const int a = c.cell_of(r.first), b = c.cell_of(r.end() - 1);
    out.push_back({a, b - a + 1});
  }
  return out;
}

int sum_range(std::span<const int> v, NodeRange r) {
  int s = 0;
  for (int i = r.first; i < r.end(); ++i) s += v[static_cast<size_t>(i)];
  return s;
}

// Takes `n` whole free nodes from the cells of `r`, in cell order; returns what it could not take.
int take_cells(NodeRange r, std::span<const int> free_nodes, int n, std::vector<CellTake>& out) {
  for (int c = r.first; c < r.end() && n > 0; ++c) {
    const int t = std::min(n, free_nodes[static_cast<size_t>(c)]);
    if (t > 0) {
      out.push_back({c, t});
      n -= t;
    }
  }
  return n;
}

// Spread (worst fit): the cell holding the node with the most free GPUs (exact view), or the
// cell with the most free GPUs (planning view); the lowest cell on ties.
bool place_sub_node_spread(const PlacementIndex& idx, const FreeView& free, int gpus,
                           Placement* out) {
  const int gpn = idx.cluster().gpus_per_node();
  const int cells = static_cast<int>(free.gpus.size());
  int best_cell = -1, best_k = gpus - 1;
  for (int c = 0; c < cells; ++c) {
    if (free.gpus[static_cast<size_t>(c)] < gpus) continue;
    int k = 0;
    if (!free.node_hist.empty()) {
      const int* h = free.node_hist.data() + static_cast<size_t>(c) * static_cast<size_t>(gpn + 1);
      k = gpn;
      while (k > best_k && h[k] == 0) --k;
    } else {
      k = std::min(gpn, free.gpus[static_cast<size_t>(c)]);
    }
    if (k > best_k) {
      best_k = k;
      best_cell = c;
      if (best_k == gpn) break;
    }
  }
  if (best_cell < 0) return false;
  out->sub_cell = best_cell;
  out->sub_node_free = best_k;
  return true;
}

bool place_sub_node(const PlacementIndex& idx, const PlacementConfig& cfg, const FreeView& free,
                    int gpus, Placement* out) {
  if (cfg.sub_node == SubNodeFit::kSpread) return place_sub_node_spread(idx, free, gpus, out);
  const int gpn = idx.cluster().gpus_per_node();
  const int cells = static_cast<int>(free.gpus.size());
  int best_cell = -1, best_k = gpn + 1;
  for (int c = 0; c < cells; ++c) {
    if (free.gpus[static_cast<size_t>(c)] < gpus) continue;
    if (!free.node_hist.empty()) {
      const int* h = free.node_hist.data() + static_cast<size_t>(c) * static_cast<size_t>(gpn + 1);
      for (int k = gpus; k < best_k; ++k) {
        if (h[k] > 0) {
          best_k = k;
          best_cell = c;
          break;
        }
      }
    } else {
      // Planning view: the cell with the fewest free GPUs that may still hold the request.
      const int k = std::min(gpn, free.gpus[static_cast<size_t>(c)]);
      if (k < best_k) {
        best_k = k;
        best_cell = c;
      }
    }
    if (best_k == gpus) break;
  }
  if (best_cell < 0) return false;
  out->sub_cell = best_cell;
  out->sub_node_free = best_k;
  return true;
}

bool place_first_fit(const PlacementIndex& idx, const FreeView& free, int n, Placement* out) {
  const int cells = static_cast<int>(free.nodes.size());
  return take_cells({0, cells}, free.nodes, n, out->takes) == 0 && (void(idx), true);
}

// Slurm topology/block.
bool place_block(const PlacementIndex& idx, const PlacementConfig& cfg, const FreeView& free, int n,
                 int seg, Placement* out) {
  const int B = idx.blocks();
  if (B == 0 || seg <= 0) return false;
  const int m = (n + seg - 1) / seg;  // segments
  if (m == 1) {
    // One segment: the level-0 search alone decides (a higher level holds no more whole
    // segments than its blocks do), so skip the prefix sums: the block with the fewest free
    // nodes that holds the segment, the lowest on ties.
    int best = -1, best_free = 0;
    for (int b = 0; b < B; ++b) {
      const int f = sum_range(free.nodes, idx.block_cells(b));
      if (f >= seg && (best < 0 || f < best_free)) {
        best = b;
        best_free = f;
      }
    }
    if (best < 0) return false;
    const int short_by = take_cells(idx.block_cells(best), free.nodes, n, out->takes);
    CT_CHECK(short_by == 0, "block placement chose a block without room");
    return true;
  }
  // Scratch reused across calls (placement runs millions of times in a month of backfill).
  thread_local std::vector<int> fnodes, cap;
  thread_local std::vector<int64_t> pcap, pfree;
  fnodes.assign(static_cast<size_t>(B), 0);
  cap.assign(static_cast<size_t>(B), 0);
  pcap.assign(static_cast<size_t>(B) + 1, 0);
  pfree.assign(static_cast<size_t>(B) + 1, 0);
  for (int b = 0; b < B; ++b) {
    fnodes[static_cast<size_t>(b)] = sum_range(free.nodes, idx.block_cells(b));
    cap[static_cast<size_t>(b)] = fnodes[static_cast<size_t>(b)] / seg;
    pcap[static_cast<size_t>(b) + 1] = pcap[static_cast<size_t>(b)] + cap[static_cast<size_t>(b)];
    pfree[static_cast<size_t>(b) + 1] =
        pfree[static_cast<size_t>(b)] + fnodes[static_cast<size_t>(b)];
  }
  if (pcap[static_cast<size_t>(B)] < m) return false;
  int levels = 0;
  while ((1 << levels) < B) ++levels;
  if (cfg.max_block_level >= 0) levels = std::min(levels, cfg.max_block_level);
  auto group_sum = [&](const std::vector<int64_t>& p, int k, int j) {
    const int a = std::min(B, j << k), b = std::min(B, (j + 1) << k);
    return p[static_cast<size_t>(b)] - p[static_cast<size_t>(a)];
  };
  int level = -1, group = -1;
  for (int k = 0; k <= levels && level < 0; ++k) {
    const int groups = (B + (1 << k) - 1) >> k;
    int64_t best_free = 0;
    for (int j = 0; j < groups; ++j) {
      if (group_sum(pcap, k, j) < m) continue;
      const int64_t f = group_sum(pfree, k, j);
      if (group < 0 || f < best_free) {
        group = j;
        best_free = f;
      }
    }
    if (group >= 0) level = k;
  }
  if (level < 0) return false;
  // Descend: choose base blocks inside the chosen group.
  thread_local std::vector<std::pair<int, int>> picks;  // (block, segments)
  picks.clear();
  auto cap_of = [&](int k, int j) { return group_sum(pcap, k, j); };
  auto free_of = [&](int k, int j) { return group_sum(pfree, k, j); };
  // Iterative descent with an explicit stack of (level, index, segments).
  thread_local std::vector<std::tuple<int, int, int>> stack;
  stack.assign(1, {level, group, m});
  while (!stack.empty()) {
    auto [k, j, need] = stack.back();
    stack.pop_back();
    if (need <= 0) continue;
    if (k == 0) {
      picks.push_back({j, need});
      continue;
    }
    const int l = 2 * j, r = 2 * j + 1;
    const int64_t cl = cap_of(k - 1, l), cr = cap_of(k - 1, r);
    const bool lf = cl >= need, rf = cr >= need;
    if (lf || rf) {
      int pick = l;
      if (lf && rf) {
        pick = free_of(k - 1, r) < free_of(k - 1, l) ? r : l;
      } else if (rf) {
        pick = r;
      }
      stack.push_back({k - 1, pick, need});
    } else {
      const int big = cr > cl ? r : l, small = big == l ? r : l;
      const int cbig = static_cast<int>(std::max(cl, cr));
      stack.push_back({k - 1, small, need - cbig});
      stack.push_back({k - 1, big, cbig});
    }
  }
  std::sort(picks.begin(), picks.end());
  int left = n;
  for (auto [b, segs] : picks) {
    // The last segment is short when n is not a multiple of seg.
    const int want = std::min(left, segs * seg);
    const int short_by = take_cells(idx.block_cells(b), free.nodes, want, out->takes);
    CT_CHECK(short_by == 0, "block placement chose a block without room");
    left -= want;
  }
  return left == 0;
}

// Slurm topology/tree: the lowest switch whose subtree fits, best fit; then leaves best-fit.
bool place_tree(const PlacementIndex& idx, const FreeView& free, int n, Placement* out) {
  const auto& c = idx.cluster();
  const int L = static_cast<int>(c.leaves().size());
  std::vector<int> leaf_free(static_cast<size_t>(L));
  for (int l = 0; l < L; ++l)
    leaf_free[static_cast<size_t>(l)] = sum_range(free.nodes, idx.leaf_cells(l));
  // A single leaf?
  int best = -1;
  for (int l = 0; l < L; ++l) {
    const int f = leaf_free[static_cast<size_t>(l)];
    if (f >= n && (best < 0 || f < leaf_free[static_cast<size_t>(best)])) best = l;
  }
  if (best >= 0) {
    return take_cells(idx.leaf_cells(best), free.nodes, n, out->takes) == 0;
  }
  const auto& pods = c.pods();
  auto fill_pod = [&](int p, int amount) {
    const NodeRange lr = pods[static_cast<size_t>(p)];
    std::span<const int> room(leaf_free.data() + lr.first, static_cast<size_t>(lr.count));
    for (auto [i, a] : best_fit_split(room, amount)) {
      const int left = take_cells(idx.leaf_cells(lr.first + i), free.nodes, a, out->takes);
      CT_CHECK(left == 0, "tree placement chose a leaf without room");
    }
  };
  std::vector<int> pod_free(pods.size());
  for (size_t p = 0; p < pods.size(); ++p) {
    pod_free[p] = 0;
    for (int l = pods[p].first; l < pods[p].end(); ++l)
      pod_free[p] += leaf_free[static_cast<size_t>(l)];
  }
  if (pods.size() > 1) {
    int bp = -1;
    for (int p = 0; p < static_cast<int>(pods.size()); ++p) {
      const int f = pod_free[static_cast<size_t>(p)];
      if (f >= n && (bp < 0 || f < pod_free[static_cast<size_t>(bp)])) bp = p;
    }
    if (bp >= 0) {
      fill_pod(bp, n);
      return true;
    }
  }
  auto split = best_fit_split(pod_free, n);
  if (split.empty()) return false;
  for (auto [p, a] : split) fill_pod(p, a);
  return true;
}

// Kueue TAS BestFit with slices required inside an NVLink domain.
bool place_kueue(const PlacementIndex& idx, const PlacementConfig& cfg, const FreeView& free, int n,
                 int slice, Placement* out) {
  // Slices go to NVLink domains (blocks); on single-server domains to leaf groups, the level
  // the Kueue export labels in their place.
  const auto& c = idx.cluster();
  const int D = idx.blocks();
  if (slice <= 0) return false;
  const int m = (n + slice - 1) / slice;
  // Pods as ranges of domains: a domain belongs to the pod of its first node's leaf.
  std::vector<int> dcap(static_cast<size_t>(D));
  for (int d = 0; d < D; ++d)
    dcap[static_cast<size_t>(d)] = sum_range(free.nodes, idx.block_cells(d)) / slice;
  std::vector<NodeRange> pod_domains;
  for (int d = 0; d < D; ++d) {
    const int p = c.pod_of_leaf(c.leaf_of(c.blocks()[static_cast<size_t>(d)].first));
    if (static_cast<int>(pod_domains.size()) <= p)
      pod_domains.resize(static_cast<size_t>(p) + 1, {d, 0});
    if (pod_domains[static_cast<size_t>(p)].count == 0)
      pod_domains[static_cast<size_t>(p)].first = d;
    ++pod_domains[static_cast<size_t>(p)].count;
  }
  std::vector<int> pcap(pod_domains.size(), 0);
  for (size_t p = 0; p < pod_domains.size(); ++p) {
    for (int d = pod_domains[p].first; d < pod_domains[p].end(); ++d)
      pcap[p] += dcap[static_cast<size_t>(d)];
  }
  int left_nodes = n;
  auto fill_pod = [&](int p, int slices) {
    const NodeRange dr = pod_domains[static_cast<size_t>(p)];
    std::span<const int> room(dcap.data() + dr.first, static_cast<size_t>(dr.count));
    for (auto [i, s] : best_fit_split(room, slices)) {
      const int want = std::min(left_nodes, s * slice);
      const int short_by = take_cells(idx.block_cells(dr.first + i), free.nodes, want, out->takes);
      CT_CHECK(short_by == 0, "kueue placement chose a domain without room");
      left_nodes -= want;
    }
  };
  // Required/preferred at the pod level: the tightest pod that holds every slice.
  int bp = -1;
  for (int p = 0; p < static_cast<int>(pcap.size()); ++p) {
    if (pcap[static_cast<size_t>(p)] >= m &&
        (bp < 0 || pcap[static_cast<size_t>(p)] < pcap[static_cast<size_t>(bp)]))
      bp = p;
  }
  if (bp >= 0) {
    fill_pod(bp, m);
    return left_nodes == 0;
  }
  if (cfg.kueue_required_pod && pcap.size() > 1) return false;
  auto split = best_fit_split(pcap, m);
  if (split.empty()) return false;
  for (auto [p, s] : split) fill_pod(p, s);
  return left_nodes == 0;
}

}  // namespace

const char* placement_name(PlacementPolicy p) {
  switch (p) {
    case PlacementPolicy::kBlock:
      return "block";
    case PlacementPolicy::kTree:
      return "tree";
    case PlacementPolicy::kFirstFit:
      return "first-fit";
    case PlacementPolicy::kKueue:
      return "kueue";
  }
  return "?";
}

base::Result<PlacementPolicy> parse_placement(std::string_view s) {
  if (s == "block") return PlacementPolicy::kBlock;
  if (s == "tree") return PlacementPolicy::kTree;
  if (s == "first-fit") return PlacementPolicy::kFirstFit;
  if (s == "kueue") return PlacementPolicy::kKueue;
  return base::fail("unknown placement policy '" + std::string(s) +
                    "' (expected block, tree, first-fit or kueue)");
}

const char* sub_node_fit_name(SubNodeFit f) { return f == SubNodeFit::kPack ? "pack" : "spread"; }

base::Result<SubNodeFit> parse_sub_node_fit(std::string_view s) {
  if (s == "pack") return SubNodeFit::kPack;
  if (s == "spread") return SubNodeFit::kSpread;
  return base::fail("unknown sub-node fit '" + std::string(s) + "' (expected pack or spread)");
}

PlacementIndex::PlacementIndex(const ClusterModel& c) : c_(&c) {
  block_cells_ = cell_ranges(c, c.blocks());
  domain_cells_ = cell_ranges(c, c.domains());
  leaf_cells_ = cell_ranges(c, c.leaves());
  cell_block_.assign(c.cells().size(), 0);
  block_nodes_ = 1;
  for (size_t b = 0; b < block_cells_.size(); ++b) {
    for (int cell = block_cells_[b].first; cell < block_cells_[b].end(); ++cell) {
      cell_block_[static_cast<size_t>(cell)] = static_cast<int>(b);
    }
    block_nodes_ = std::max(block_nodes_, c.blocks()[b].count);
  }
}

int PlacementIndex::segment_for(const PlacementConfig& cfg, int nodes) const {
  int seg = cfg.segment_nodes > 0 ? std::min(cfg.segment_nodes, block_nodes_) : block_nodes_;
  return std::min(nodes, seg);
}

bool place(const PlacementIndex& index, const PlacementConfig& cfg, const FreeView& free,
           const PlacementRequest& req, Placement* out) {
  out->takes.clear();
  out->sub_cell = -1;
  if (req.nodes <= 0) return req.gpus > 0 && place_sub_node(index, cfg, free, req.gpus, out);
  const int seg = req.segment > 0 ? req.segment : index.segment_for(cfg, req.nodes);
  bool ok = false;
  switch (cfg.policy) {
    case PlacementPolicy::kFirstFit:
      ok = place_first_fit(index, free, req.nodes, out);
      break;
    case PlacementPolicy::kBlock:
      ok = place_block(index, cfg, free, req.nodes, seg, out);
      break;
    case PlacementPolicy::kTree:
      ok = place_tree(index, free, req.nodes, out);
      break;
    case PlacementPolicy::kKueue:
      ok = place_kueue(index, cfg, free, req.nodes, seg, out);
      break;
  }
  if (!ok) out->takes.clear();
  return ok;
}

Fragmentation fragmentation(const PlacementIndex& index, const PlacementConfig& cfg,
                            const FreeView& free) {
  Fragmentation f;
  const auto& c = index.cluster();
  const int gpn = c.gpus_per_node();
  if (c.max_domain_nodes() > 1) {
    for (int d = 0; d < static_cast<int>(c.domains().size()); ++d) {
      const int fn = sum_range(free.nodes, index.domain_cells(d));
      if (fn > 0 && fn < c.domains()[static_cast<size_t>(d)].count) ++f.partial_domains;
    }
  } else if (!free.node_hist.empty()) {
    // Single-server domains: servers with some but not all GPUs free.
    for (size_t cell = 0; cell < free.nodes.size(); ++cell) {
      for (int k = 1; k < gpn; ++k)
        f.partial_domains +=
            free.node_hist[cell * static_cast<size_t>(gpn + 1) + static_cast<size_t>(k)];
    }
  }
  const int seg = cfg.segment_nodes > 0 ? std::min(cfg.segment_nodes, index.block_nodes())
                                        : index.block_nodes();
  for (int b = 0; b < index.blocks(); ++b) {
    const int fn = sum_range(free.nodes, index.block_cells(b));
    const int fg = sum_range(free.gpus, index.block_cells(b));
    f.free_gpus += fg;
    if (fn >= seg) {
      ++f.free_blocks;
    } else {
      f.stranded_gpus += fg;
    }
  }
  return f;
}

}  // namespace clustertwin::scheduler
