#include "clustertwin/network/flow_sim.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "clustertwin/base/check.h"

namespace clustertwin::network {

FlowSimulator::FlowSimulator(const topology::Topology& topo, Routing routing, int adaptive_paths)
    : topo_(&topo), routing_(routing), adaptive_paths_(std::max(1, adaptive_paths)) {}

int FlowSimulator::add(const Transfer& t) {
  CT_CHECK(t.src >= 0 && t.src < topo_->gpus() && t.dst >= 0 && t.dst < topo_->gpus(),
           "transfer endpoint out of range");
  CT_CHECK(t.bytes.base() >= 0 && t.weight > 0, "transfer with negative size or weight");
  transfers_.push_back(t);
  return static_cast<int>(transfers_.size() - 1);
}

void FlowSimulator::set_capacity(Seconds at, topology::LinkId link, BytesPerSecond capacity) {
  changes_.push_back({at.base(), link, capacity.base()});
}

Seconds FlowSimulator::makespan() const {
  double m = 0;
  for (double f : finish_) m = std::max(m, f);
  return Seconds::from_base(m);
}

void FlowSimulator::build_bundles() {
  if (shared_ != nullptr || own_built_) return;
  own_ = SprayBundles::build(*topo_);
  own_built_ = true;
}

SprayBundles SprayBundles::build(const topology::Topology& topo) {
  SprayBundles bundles;
  const size_t nl = topo.links().size();
  bundles.of_link.assign(nl, -1);
  const auto& plan = topo.fabric();
  if (plan.tiers < 2) return bundles;
  // The first and the last GPU under each leaf, to walk the paths that start and end there.
  // Both are kept because a path needs its two ends in different NVLink domains (GPUs of one
  // domain talk over NVLink): a leaf of a 72-GPU rack's NICs may have its neighbour leaves in
  // the same rack, and only the far end of one of them is in another.
  std::vector<int> gpu_of_leaf(static_cast<size_t>(plan.leaves), -1);
  std::vector<int> last_of_leaf(static_cast<size_t>(plan.leaves), -1);
  for (int g = 0; g < topo.gpus(); ++g) {
    const auto leaf = static_cast<size_t>(topo.leaf_of(topo.nic_of(g)));
    if (gpu_of_leaf[leaf] < 0) gpu_of_leaf[leaf] = g;
    last_of_leaf[leaf] = g;
  }
  // A GPU under leaf `lb` in another domain than `a` (-1 if none).
  auto partner = [&](int a, int lb) {
    for (int c : {gpu_of_leaf[static_cast<size_t>(lb)], last_of_leaf[static_cast<size_t>(lb)]}) {
      if (c >= 0 && topo.domain_of(c) != topo.domain_of(a)) return c;
    }
    return -1;
  };
  // bundle key: (plane, kind, tier, leaf or pod) -> bundle id
  std::map<std::tuple<int, int, int, int>, int32_t> ids;
  std::vector<topology::LinkId> path;
  const int planes = topo.planes();
  const int per_pod = plan.tiers == 3 ? plan.leaves_per_pod : plan.leaves;
  auto assign = [&](int a, int b, int64_t index) {
    path.clear();
    topo.path(a, b, index, path);
    const int la = topo.leaf_of(topo.nic_of(a)), lb = topo.leaf_of(topo.nic_of(b));
    for (topology::LinkId l : path) {
      const auto& link = topo.link(l);
      if (link.kind != topology::LinkKind::kFabricUp &&
          link.kind != topology::LinkKind::kFabricDown)
        continue;
      if (bundles.of_link[static_cast<size_t>(l)] >= 0) continue;
      const bool up = link.kind == topology::LinkKind::kFabricUp;
      const int leaf = up ? la : lb;
      const int where = link.tier == 1 ? leaf : leaf / per_pod;
      const auto key =
          std::tuple{static_cast<int>(link.plane), up ? 0 : 1, static_cast<int>(link.tier), where};
      auto [it, fresh] = ids.try_emplace(key, static_cast<int32_t>(bundles.members.size()));
      if (fresh) bundles.members.emplace_back();
      bundles.of_link[static_cast<size_t>(l)] = it->second;
      bundles.members[static_cast<size_t>(it->second)].push_back(l);
    }
  };
  for (int la = 0; la < plan.leaves; ++la) {
    const int a = gpu_of_leaf[static_cast<size_t>(la)];
    if (a < 0) continue;
    // A partner leaf in another pod when there is one (its paths also cross the pod bundles).
    int b = -1;
    for (int step = 1; step < plan.leaves && b < 0 && plan.tiers == 3; ++step) {
      const int lb = (la + step) % plan.leaves;
      if (lb / per_pod != la / per_pod) b = partner(a, lb);
    }
    for (int step = 1; step < plan.leaves && b < 0; ++step) {
      b = partner(a, (la + step) % plan.leaves);
    }
    if (b < 0) continue;
    const int64_t n = topo.path_count(a, b);
    // Every leaf up-link (all first choices); every pod up-link once per pod (all choices).
    const bool whole = plan.tiers == 3 && la % per_pod == 0;
    const int64_t choices = n / planes;
    for (int64_t c = 0; c < choices; ++c) {
      if (!whole && plan.tiers == 3 && c >= plan.leaf_up) break;
      for (int p = 0; p < planes; ++p) {
        assign(a, b, c * planes + p);
        assign(b, a, c * planes + p);
      }
    }
  }
  return bundles;
}

std::vector<double> FlowSimulator::capacities(double until, const std::array<double, 6>& scale) {
  const size_t nl = topo_->links().size();
  if (routing_ == Routing::kSpray) build_bundles();
  std::vector<double> capacity(nl + bundles().members.size());
  for (size_t l = 0; l < nl; ++l) {
    const auto& link = topo_->links()[l];
    capacity[l] = link.capacity.base() * scale[static_cast<size_t>(link.kind)];
  }
  for (const auto& c : changes_) {
    if (c.at <= until) {
      const auto& link = topo_->link(c.link);
      capacity[static_cast<size_t>(c.link)] = c.capacity * scale[static_cast<size_t>(link.kind)];
    }
  }
  for (size_t b = 0; b < bundles().members.size(); ++b) {
    double sum = 0;
    for (auto l : bundles().members[b]) sum += capacity[static_cast<size_t>(l)];
    capacity[nl + b] = sum;
  }
  return capacity;
}

std::vector<double> FlowSimulator::capacities_of(std::span<const int32_t> used, double until,
                                                 const std::array<double, 6>& scale) {
  const size_t nl = topo_->links().size();
  if (routing_ == Routing::kSpray) build_bundles();
  // Capacity changes at or before `until`, the last one per link winning (as in capacities()).
  std::unordered_map<topology::LinkId, double> changed;
  for (const auto& c : changes_) {
    if (c.at <= until) changed[c.link] = c.capacity;
  }
  auto one = [&](topology::LinkId l) {
    const auto& link = topo_->link(l);
    auto it = changed.find(l);
    const double cap = it == changed.end() ? link.capacity.base() : it->second;
    return cap * scale[static_cast<size_t>(link.kind)];
  };
  std::vector<double> out(used.size());
  for (size_t i = 0; i < used.size(); ++i) {
    const auto id = static_cast<size_t>(used[i]);
    if (id < nl) {
      out[i] = one(static_cast<topology::LinkId>(id));
    } else {
      double sum = 0;
      for (auto l : bundles().members[id - nl]) sum += one(l);
      out[i] = sum;
    }
  }
  return out;
}

void FlowSimulator::expand(Expanded& out, bool with_latency, std::vector<double>* latency) {
  std::vector<topology::LinkId> path;
  std::vector<int64_t> choices;
  out.paths.clear();
  out.owner.clear();
  out.share.clear();
  if (routing_ == Routing::kSpray) build_bundles();
  const auto nl = static_cast<topology::LinkId>(topo_->links().size());
  const int planes = topo_->planes();
  for (size_t t = 0; t < transfers_.size(); ++t) {
    const Transfer& tr = transfers_[t];
    const int64_t n = topo_->path_count(tr.src, tr.dst);
    choices.clear();
    if (routing_ == Routing::kSpray && n > 1) {
      // One sub-flow per plane; its fabric links stand for their bundles.
      const double share = 1.0 / planes;
      for (int p = 0; p < planes; ++p) {
        path.clear();
        topo_->path(tr.src, tr.dst, p, path);
        if (with_latency) latency->push_back(topo_->latency(path).base());
        for (auto& l : path) {
          const int32_t b = bundles().of_link[static_cast<size_t>(l)];
          if (b >= 0) l = nl + b;
        }
        out.paths.add(path, tr.weight * share, tr.rate_cap.base());
        out.owner.push_back(static_cast<int32_t>(t));
        out.share.push_back(share);
      }
      continue;
    }
    if (n == 0) {
      choices.push_back(-1);  // same GPU: a local copy, no links
    } else if (routing_ == Routing::kEcmp || n == 1) {
      choices.push_back(topo_->ecmp_index(tr.src, tr.dst, tr.key));
    } else {
      const int64_t k = std::min<int64_t>(n, adaptive_paths_);
      const int64_t first = topo_->ecmp_index(tr.src, tr.dst, tr.key);
      for (int64_t i = 0; i < k; ++i) choices.push_back((first + i * (n / k)) % n);
    }
    const double share = 1.0 / static_cast<double>(choices.size());
    for (int64_t c : choices) {
      path.clear();
      if (c >= 0) topo_->path(tr.src, tr.dst, c, path);
      // A split transfer competes as one flow: each sub-flow weighs its share, so an adaptively
      // routed transfer gets the same max-min share as a single-path one. The solver's rate is
      // per unit of weight; the sub-flow moves share * rate bytes/s of each copy.
      out.paths.add(path, tr.weight * share, tr.rate_cap.base());
      out.owner.push_back(static_cast<int32_t>(t));
      out.share.push_back(share);
      if (with_latency) latency->push_back(topo_->latency(path).base());
    }
  }
}

SteadyState FlowSimulator::solve_steady(const SteadyOptions& options) {
  const size_t nt = transfers_.size();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Expanded ex;
  expand(ex, false, nullptr);
  // Only the links the sub-flows cross take part: renumber them densely (in link-id order, so
  // the solve is the one on the whole fabric) and size every array to them, not to the fabric
  // (at 131,072 GPUs the fabric has millions of links and a step solves hundreds of flow sets).
  std::vector<int32_t> used(ex.paths.links);
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  for (auto& l : ex.paths.links) {
    l = static_cast<int32_t>(std::lower_bound(used.begin(), used.end(), l) - used.begin());
  }
  std::vector<double> capacity = capacities_of(used, 0.0, options.kind_scale);
  const size_t ns = ex.owner.size();
  stats_.flows = static_cast<int64_t>(nt);
  stats_.subflows = static_cast<int64_t>(ns);
  std::vector<size_t> all(ns);
  for (size_t s = 0; s < ns; ++s) all[s] = s;
  MaxMinSolver solver(capacity.size());
  std::vector<double> sub_rate;
  SteadyState out;
  int32_t groups = 0;
  const bool coupled = !options.group.empty();
  if (coupled) {
    CT_CHECK(options.group.size() == nt, "one coupling group per transfer");
    for (int32_t g : options.group) groups = std::max(groups, g + 1);
  }
  std::vector<double> base_cap(ex.paths.caps);
  const int rounds = coupled ? std::max(1, options.rounds) : 1;
  for (int round = 0; round < rounds; ++round) {
    solver.solve(ex.paths, capacity, all, sub_rate);
    ++stats_.rate_solves;
    // A transfer split over k sub-flows finishes with its slowest one; sub-flow s moves share_s
    // of the bytes at share_s * rate_s, so the transfer's rate is min over s of rate_s.
    out.rate.assign(nt, kInf);
    for (size_t s = 0; s < ns; ++s) {
      const auto t = static_cast<size_t>(ex.owner[s]);
      out.rate[t] = std::min(out.rate[t], sub_rate[s]);
    }
    if (!coupled) break;
    out.group_time.assign(static_cast<size_t>(groups), 0.0);
    for (size_t t = 0; t < nt; ++t) {
      const int32_t g = options.group[t];
      if (g < 0) continue;
      const double need = transfers_[t].bytes.base();
      const double time = need <= 0 ? 0.0 : (out.rate[t] > 0 ? need / out.rate[t] : kInf);
      out.group_time[static_cast<size_t>(g)] =
          std::max(out.group_time[static_cast<size_t>(g)], time);
    }
    if (round + 1 == rounds) break;
    // Cap every coupled sub-flow at the rate that finishes it with its group; the capacity a
    // fast stage cannot use goes to the other groups in the next solve.
    bool changed = false;
    for (size_t s = 0; s < ns; ++s) {
      const auto t = static_cast<size_t>(ex.owner[s]);
      const int32_t g = options.group[t];
      double cap = base_cap[s];
      if (g >= 0) {
        const double tg = out.group_time[static_cast<size_t>(g)];
        if (tg > 0 && std::isfinite(tg)) {
          // Only stages faster than their group are held back; the group's bottleneck stays
          // free to grow when another group leaves capacity.
          const double need = transfers_[t].bytes.base() / tg;
          if (need > 0 && sub_rate[s] > need * (1 + 1e-9))
            cap = cap > 0 ? std::min(cap, need) : need;
        }
      }
      if (cap != ex.paths.caps[s]) {
        ex.paths.caps[s] = cap;
        changed = true;
      }
    }
    if (!changed) break;
  }
  return out;
}

void FlowSimulator::run() {
  const size_t nt = transfers_.size();
  finish_.assign(nt, 0.0);
  delivered_.assign(nt, 0.0);
  const size_t nl = topo_->links().size();
  std::vector<double> capacity =
      capacities(-std::numeric_limits<double>::infinity(), {1, 1, 1, 1, 1, 1});
  link_bytes_.assign(nl, 0.0);

  // Expand transfers into sub-flows on concrete paths.
  Expanded ex;
  std::vector<double> latency;  // path latency per sub-flow
  expand(ex, true, &latency);
  FlowPaths& paths = ex.paths;
  const std::vector<int32_t>& owner = ex.owner;
  std::vector<double> remaining(owner.size());  // bytes left per sub-flow
  std::vector<int32_t> subs_left(nt, 0);
  std::vector<double> last_done(nt, 0.0);
  for (size_t s = 0; s < owner.size(); ++s) {
    const auto t = static_cast<size_t>(owner[s]);
    remaining[s] = transfers_[t].bytes.base() * ex.share[s];
    ++subs_left[t];
  }
  const size_t ns = owner.size();
  stats_.flows = static_cast<int64_t>(nt);
  stats_.subflows = static_cast<int64_t>(ns);

  // Event loop over start times, capacity changes and completions.
  std::vector<size_t> by_start(ns);
  for (size_t s = 0; s < ns; ++s) by_start[s] = s;
  std::stable_sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) {
    return transfers_[static_cast<size_t>(owner[a])].start <
           transfers_[static_cast<size_t>(owner[b])].start;
  });
  std::stable_sort(changes_.begin(), changes_.end(),
                   [](const CapacityChange& a, const CapacityChange& b) { return a.at < b.at; });
  std::vector<uint8_t> active(ns, 0);
  std::vector<size_t> live;  // active sub-flows, so each event costs O(active), not O(all)
  MaxMinSolver solver(capacity.size());
  std::vector<double> rate(ns, 0.0);
  size_t next_start = 0, next_change = 0, done = 0;
  double now = 0.0;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto complete = [&](size_t s, double t_done) {
    active[s] = 0;
    const auto t = static_cast<size_t>(owner[s]);
    delivered_[t] += remaining[s];  // the sub-epsilon tail, so delivered == sent exactly
    remaining[s] = 0;
    last_done[t] = std::max(last_done[t], t_done + latency[s]);
    if (--subs_left[t] == 0) finish_[t] = last_done[t];
    ++done;
  };
  bool dirty = true;
  while (done < ns) {
    // Admit everything that starts now; zero-byte flows complete at once.
    while (next_start < ns &&
           transfers_[static_cast<size_t>(owner[by_start[next_start]])].start.base() <= now) {
      const size_t s = by_start[next_start++];
      if (remaining[s] <= 0) {
        complete(s, now);
      } else {
        active[s] = 1;
        live.push_back(s);
        dirty = true;
      }
    }
    while (next_change < changes_.size() && changes_[next_change].at <= now) {
      const auto link = static_cast<size_t>(changes_[next_change].link);
      if (routing_ == Routing::kSpray && bundles().of_link[link] >= 0) {
        capacity[nl + static_cast<size_t>(bundles().of_link[link])] +=
            changes_[next_change].capacity - capacity[link];
      }
      capacity[link] = changes_[next_change].capacity;
      ++next_change;
      dirty = true;
    }
    if (done == ns) break;
    if (dirty) {
      solver.solve(paths, capacity, live, rate);
      ++stats_.rate_solves;
      dirty = false;
    }
    // Next event: a completion, a start or a capacity change.
    double t_next = kInf;
    for (size_t s : live) {
      if (rate[s] > 0) t_next = std::min(t_next, now + remaining[s] / (rate[s] * ex.share[s]));
    }
    if (next_start < ns) {
      t_next = std::min(t_next,
                        transfers_[static_cast<size_t>(owner[by_start[next_start]])].start.base());
    }
    if (next_change < changes_.size()) t_next = std::min(t_next, changes_[next_change].at);
    if (t_next == kInf) {
      // Stalled: every remaining flow crosses a failed link and nothing will change.
      for (size_t s = 0; s < ns; ++s) {
        if (active[s] || remaining[s] > 0) {
          const auto t = static_cast<size_t>(owner[s]);
          finish_[t] = kInf;
        }
      }
      break;
    }
    const double dt = t_next - now;
    // Advance: flows whose remainder drops below a relative epsilon finish together, so that a
    // symmetric pattern costs one solve, not one per flow.
    for (size_t s : live) {
      if (rate[s] <= 0) continue;
      const double sent = std::min(remaining[s], rate[s] * ex.share[s] * dt);
      remaining[s] -= sent;
      delivered_[static_cast<size_t>(owner[s])] += sent;
      for (int32_t i = paths.offsets[s]; i < paths.offsets[s + 1]; ++i) {
        const auto l = static_cast<size_t>(paths.links[static_cast<size_t>(i)]);
        const double carried = sent * transfers_[static_cast<size_t>(owner[s])].weight;
        if (l < nl) {
          link_bytes_[l] += carried;
        } else {  // a sprayed bundle: its links share the bytes evenly
          const auto& members = bundles().members[l - nl];
          for (auto m : members) {
            link_bytes_[static_cast<size_t>(m)] += carried / static_cast<double>(members.size());
          }
        }
      }
      const auto t = static_cast<size_t>(owner[s]);
      if (remaining[s] <= 1e-9 * std::max(1.0, transfers_[t].bytes.base())) {
        complete(s, t_next);
        dirty = true;
      }
    }
    std::erase_if(live, [&](size_t s) { return active[s] == 0; });
    now = t_next;
    ++stats_.events;
  }
}

}  // namespace clustertwin::network
