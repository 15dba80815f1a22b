#include "clustertwin/collective/patterns.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "clustertwin/base/check.h"

namespace clustertwin::collective {
using base::fail;

double ring_edge_factor(Op op, int n) {
  const double dn = n;
  switch (op) {
    case Op::kAllReduce:
      return 2.0 * (dn - 1) / dn;
    case Op::kAllGather:
    case Op::kReduceScatter:
      return (dn - 1) / dn;
    default:
      return 1.0;
  }
}

double nvls_port_factor(Op op, int n) { return op == Op::kAllReduce ? 1.0 + 1.0 / n : 1.0; }

namespace {

/// Merges flows with the same endpoints, routing key and group into one weighted flow.
class Builder {
 public:
  Builder(FlowSet& out, int32_t group, int64_t max_flows)
      : out_(out), group_(group), max_(max_flows) {}

  void set_phase(int32_t phase) { phase_ = phase; }
  void add(int src, int dst, double bytes, uint64_t key = 0, double weight = 1.0) {
    if (src == dst || bytes <= 0) return;
    ++out_.flows_before_merge;
    const Key k{
        (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(dst),
        key ^ (static_cast<uint64_t>(phase_) << 48)};
    auto [it, fresh] = index_.try_emplace(k, out_.transfers.size());
    if (fresh) {
      out_.transfers.push_back(
          {.src = src, .dst = dst, .bytes = base::bytes(bytes), .weight = weight, .key = key});
      out_.group.push_back(group_);
      out_.phase.push_back(phase_);
      return;
    }
    auto& t = out_.transfers[it->second];
    t.bytes = base::bytes(std::max(t.bytes.base(), bytes));
    t.weight += weight;
  }
  [[nodiscard]] bool too_many(int64_t more) const {
    return static_cast<int64_t>(out_.transfers.size()) + more > max_;
  }

 private:
  struct Key {
    uint64_t ends, key;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    size_t operator()(const Key& k) const {
      uint64_t x = k.ends * 0x9e3779b97f4a7c15ULL ^ (k.key + 0x632be59bd9b4e019ULL + (k.ends << 6));
      x ^= x >> 29;
      return static_cast<size_t>(x * 0xbf58476d1ce4e5b9ULL);
    }
  };
  FlowSet& out_;
  int32_t group_;
  int32_t phase_ = 0;
  int64_t max_;
  std::unordered_map<Key, size_t, Hash> index_;
};

int mod(int a, int m) { return ((a % m) + m) % m; }

/// Whether the intra-domain flows of domain index d are built.
bool build_intra(const Group& g, const PatternOptions& o, size_t d) {
  return !o.representative || !g.uniform() || d == 0;
}

/// NCCL's rings: each channel c enters every domain at local rank e_c, visits all local ranks
/// in order and leaves from e_c - 1 to the next domain's e_c. Channels are spread over the local
/// ranks (and so over the NICs), as NCCL's ring search spreads them over the NICs.
void ring(Builder& b, const Group& g, const PatternOptions& o, double edge_bytes) {
  const int D = g.domains();
  const int C = std::max(1, o.channels);
  const double per_channel = edge_bytes / C;
  if (D == 1) {
    const auto& L = g.by_domain[0];
    const int p = static_cast<int>(L.size());
    for (int i = 0; i < p; ++i)
      b.add(L[static_cast<size_t>(i)], L[static_cast<size_t>((i + 1) % p)], per_channel, 0, C);
    return;
  }
  for (int c = 0; c < C; ++c) {
    for (int d = 0; d < D; ++d) {
      const auto& L = g.by_domain[static_cast<size_t>(d)];
      const int p = static_cast<int>(L.size());
      const int stride = std::max(1, p / C);
      const int e = mod(c * stride, p);
      if (build_intra(g, o, static_cast<size_t>(d))) {
        for (int i = 0; i + 1 < p; ++i) {
          b.add(L[static_cast<size_t>(mod(e + i, p))], L[static_cast<size_t>(mod(e + i + 1, p))],
                per_channel);
        }
      }
      const auto& N = g.by_domain[static_cast<size_t>((d + 1) % D)];
      const int pn = static_cast<int>(N.size());
      const int en = mod(c * std::max(1, pn / C), pn);
      const uint64_t key = o.merge_channels ? 1 : static_cast<uint64_t>(c) + 1;
      b.add(L[static_cast<size_t>(mod(e - 1, p))], N[static_cast<size_t>(en)], per_channel, key);
    }
  }
}

/// Both trees of NCCL's double binary tree over `heads` (one rank per domain), each edge both
/// ways with `bytes_per_tree`.
void double_tree(Builder& b, const std::vector<int>& heads, double bytes_per_tree,
                 uint64_t key_base) {
  const int D = static_cast<int>(heads.size());
  for (int i = 0; i < D; ++i) {
    const auto [t0, t1] = nccl_dtree(D, i);
    int t = 0;
    for (const TreeLinks& l : {t0, t1}) {
      if (l.up >= 0) {
        const int child = heads[static_cast<size_t>(i)];
        const int parent = heads[static_cast<size_t>(l.up)];
        b.add(child, parent, bytes_per_tree, key_base + static_cast<uint64_t>(t));
        b.add(parent, child, bytes_per_tree, key_base + static_cast<uint64_t>(t));
      }
      ++t;
    }
  }
}

/// NCCL's tree all-reduce: a chain inside each domain and a double binary tree across domains;
/// channels come in pairs (one per tree) on the same local rank.
void tree(Builder& b, const Group& g, const PatternOptions& o) {
  const int D = g.domains();
  const int C = std::max(2, o.channels);
  const double per_channel = 1.0 * o.bytes / C;
  const int pairs = C / 2;
  for (int q = 0; q < pairs; ++q) {
    std::vector<int> heads;
    for (int d = 0; d < D; ++d) {
      const auto& L = g.by_domain[static_cast<size_t>(d)];
      const int p = static_cast<int>(L.size());
      const int e = mod(q * std::max(1, p / pairs), p);
      heads.push_back(L[static_cast<size_t>(e)]);
      if (!build_intra(g, o, static_cast<size_t>(d))) continue;
      for (int i = 0; i + 1 < p; ++i) {
        const int a = L[static_cast<size_t>(mod(e + i, p))],
                  c = L[static_cast<size_t>(mod(e + i + 1, p))];
        // Two channels (one per tree) each reduce up and broadcast down the chain.
        b.add(a, c, per_channel, 0, 2);
        b.add(c, a, per_channel, 0, 2);
      }
    }
    if (D > 1) {
      // Each tree of the pair carries one channel's share.
      const uint64_t key = o.merge_channels ? 1000 : 1000 + static_cast<uint64_t>(q) * 2;
      double_tree(b, heads, per_channel, key);
    }
  }
}

/// NVLink SHARP inside each domain: every GPU's port carries `port_bytes` each way. The switch
/// does the reduction and multicast, so only the per-port load matters on the non-blocking
/// crossbar; it is expressed as a ring of flows that loads every port up and down once.
void nvls_intra(Builder& b, const Group& g, const PatternOptions& o, double port_bytes) {
  for (size_t d = 0; d < g.by_domain.size(); ++d) {
    if (!build_intra(g, o, d)) continue;
    const auto& L = g.by_domain[d];
    const int p = static_cast<int>(L.size());
    if (p < 2) continue;
    for (int i = 0; i < p; ++i)
      b.add(L[static_cast<size_t>(i)], L[static_cast<size_t>((i + 1) % p)], port_bytes);
  }
}

/// Each local rank r of every domain exchanges `bytes` with rank r of the next domain: the load
/// in-network reduction (SHARP) puts on each NIC, up and down (every NIC sends its slice up the
/// aggregation tree and receives the result).
void rail_rings(Builder& b, const Group& g, double bytes) {
  const int D = g.domains();
  const int p = g.per_domain();
  for (int r = 0; r < p; ++r) {
    for (int d = 0; d < D; ++d) {
      const auto& L = g.by_domain[static_cast<size_t>(d)];
      const auto& N = g.by_domain[static_cast<size_t>((d + 1) % D)];
      if (L.empty() || N.empty()) continue;
      b.add(L[static_cast<size_t>(r) % L.size()], N[static_cast<size_t>(r) % N.size()], bytes,
            2000 + static_cast<uint64_t>(r));
    }
  }
}

}  // namespace

TreeLinks nccl_btree(int count, int rank) {
  TreeLinks l;
  if (count <= 1) return l;
  int bit = 1;
  while (bit < count && (bit & rank) == 0) bit <<= 1;
  if (rank == 0) {
    l.down1 = bit >> 1;
    return l;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= count) up = rank ^ bit;
  l.up = up;
  int low = bit >> 1;
  l.down0 = low == 0 ? -1 : rank - low;
  int d1 = low == 0 ? -1 : rank + low;
  while (d1 >= count) {
    d1 = low == 0 ? -1 : rank + low;
    low >>= 1;
  }
  l.down1 = d1;
  return l;
}

std::pair<TreeLinks, TreeLinks> nccl_dtree(int count, int rank) {
  const TreeLinks t0 = nccl_btree(count, rank);
  TreeLinks t1;
  auto map = [&](int x, bool mirror) {
    if (x < 0) return -1;
    return mirror ? count - 1 - x : (x + 1) % count;
  };
  if (count % 2 == 1) {
    const TreeLinks s = nccl_btree(count, (rank - 1 + count) % count);
    t1 = {map(s.up, false), map(s.down0, false), map(s.down1, false)};
  } else {
    const TreeLinks m = nccl_btree(count, count - 1 - rank);
    t1 = {map(m.up, true), map(m.down0, true), map(m.down1, true)};
  }
  return {t0, t1};
}

int nccl_dtree_max_degree(int count) {
  if (count <= 1) return 0;
  int best = 0;
  for (int r = 0; r < count; ++r) {
    const auto [a, b] = nccl_dtree(count, r);
    int deg = 0;
    for (const TreeLinks& l : {a, b}) deg += (l.up >= 0) + (l.down0 >= 0) + (l.down1 >= 0);
    best = std::max(best, deg);
    if (best == 4) break;  // the most any rank has (every count up to 3,000 checked)
  }
  return best;
}

base::Status add_flows(FlowSet& out, const topology::Topology& topo, const Group& g, Op op,
                       Algorithm algo, const PatternOptions& o) {
  (void)topo;
  Builder b(out, o.group_id, o.max_flows);
  const int n = g.ranks();
  const int D = g.domains();
  const int p = g.per_domain();
  const double S = o.bytes;
  if (n < 2) return {};
  switch (algo) {
    case Algorithm::kRing:
      ring(b, g, o, ring_edge_factor(op, n) * S);
      break;
    case Algorithm::kTree:
      tree(b, g, o);
      break;
    case Algorithm::kNvls:
      nvls_intra(b, g, o, nvls_port_factor(op, p) * S);
      if (D > 1) rail_rings(b, g, S / p);
      break;
    case Algorithm::kNvlsTree: {
      nvls_intra(b, g, o, nvls_port_factor(op, p) * S);
      // Per local rank, a double binary tree over the domains carries that rank's slice S/p,
      // half in each tree.
      for (int r = 0; r < p; ++r) {
        std::vector<int> heads;
        for (const auto& L : g.by_domain) heads.push_back(L[static_cast<size_t>(r) % L.size()]);
        double_tree(b, heads, S / (2.0 * p), 3000 + 2 * static_cast<uint64_t>(r));
      }
      break;
    }
    case Algorithm::kCollNet: {
      // Reduce-scatter and all-gather over NVLink inside each domain, SHARP across domains.
      for (size_t d = 0; d < g.by_domain.size(); ++d) {
        if (!build_intra(g, o, d)) continue;
        const auto& L = g.by_domain[d];
        const int pl = static_cast<int>(L.size());
        for (int i = 0; i < pl && pl > 1; ++i) {
          b.add(L[static_cast<size_t>(i)], L[static_cast<size_t>((i + 1) % pl)],
                ring_edge_factor(op, pl) * S);
        }
      }
      rail_rings(b, g, S / p);
      break;
    }
    case Algorithm::kPat: {
      // Parallel aggregated trees (NCCL 2.23): ceil(log2 n) rounds of distance-doubling
      // exchanges, one after another (phases). In round k rank i sends min(2^k, n - 2^k) / n of
      // S to rank i + 2^k: (n-1)/n of S in all, like a ring, in log2(n) steps instead of n-1.
      if (b.too_many(static_cast<int64_t>(n) * 32)) return fail("pat: too many flows");
      int32_t round = 0;
      for (int dist = 1; dist < n; dist *= 2) {
        b.set_phase(round++);
        const double share = std::min(dist, n - dist) * S / n;
        for (int i = 0; i < n; ++i) {
          b.add(g.gpus[static_cast<size_t>(i)], g.gpus[static_cast<size_t>((i + dist) % n)], share,
                4000 + static_cast<uint64_t>(dist));
        }
      }
      break;
    }
    case Algorithm::kDirect: {
      if (op == Op::kSendRecv) {
        // nccl-tests sendrecv_perf: every rank sends S to the next and receives S from the
        // previous one.
        for (size_t d = 0; d < g.by_domain.size(); ++d) {
          const auto& L = g.by_domain[d];
          for (size_t i = 0; i + 1 < L.size(); ++i) {
            if (build_intra(g, o, d)) b.add(L[i], L[i + 1], S);
          }
          const auto& N = g.by_domain[(d + 1) % g.by_domain.size()];
          b.add(L.back(), N.front(), S, 1);
        }
        break;
      }
      // All-to-all: every rank sends S/n to every other rank.
      const double share = S / n;
      const bool aggregate = static_cast<int64_t>(n) * (n - 1) > o.max_flows && g.uniform();
      for (size_t d = 0; d < g.by_domain.size(); ++d) {
        const auto& L = g.by_domain[d];
        if (build_intra(g, o, d)) {
          for (int a : L) {
            for (int c : L) b.add(a, c, share);
          }
        }
      }
      if (D > 1) {
        if (aggregate) {
          // Too many pairs to list: rank r of a domain sends one domain's worth (p * S/n) to
          // rank r of every other domain. The NIC loads are exact; fabric paths are rail-aligned.
          if (b.too_many(static_cast<int64_t>(n) * (D - 1))) {
            return fail("all_to_all over " + std::to_string(n) + " GPUs in " + std::to_string(D) +
                        " domains needs more than " + std::to_string(o.max_flows) +
                        " flows even aggregated per domain; use {model} analytical");
          }
          for (int d = 0; d < D; ++d) {
            for (int e = 0; e < D; ++e) {
              if (e == d) continue;
              const auto& L = g.by_domain[static_cast<size_t>(d)];
              const auto& N = g.by_domain[static_cast<size_t>(e)];
              for (size_t r = 0; r < L.size(); ++r)
                b.add(L[r], N[r], share * static_cast<double>(N.size()), 1);
            }
          }
        } else {
          for (size_t d = 0; d < g.by_domain.size(); ++d) {
            for (size_t e = 0; e < g.by_domain.size(); ++e) {
              if (e == d) continue;
              for (int a : g.by_domain[d]) {
                for (int c : g.by_domain[e]) b.add(a, c, share, 1);
              }
            }
          }
        }
      }
      break;
    }
    case Algorithm::kHierarchical:
    case Algorithm::kAuto:
      CT_CHECK(false, "hierarchical and auto have no single flow pattern");
  }
  return {};
}

}  // namespace clustertwin::collective
