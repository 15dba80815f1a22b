#include "clustertwin/network/max_min.h"

#include <algorithm>
#include <limits>
#include <queue>

#include "clustertwin/base/check.h"

namespace clustertwin::network {

std::vector<double> max_min_rates(const FlowPaths& flows, std::span<const double> capacity,
                                  std::span<const uint8_t> active) {
  MaxMinSolver solver(capacity.size());
  std::vector<size_t> list;
  for (size_t f = 0; f < flows.size(); ++f) {
    if (active.empty() || active[f] != 0) list.push_back(f);
  }
  std::vector<double> rates;
  solver.solve(flows, capacity, list, rates);
  return rates;
}

void MaxMinSolver::solve(const FlowPaths& flows, std::span<const double> capacity,
                         std::span<const size_t> active, std::vector<double>& rate) {
  const size_t nf = flows.size();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (rate.size() != nf) rate.assign(nf, 0.0);
  if (local_.size() < capacity.size()) local_.resize(capacity.size(), -1);

  // Only links that some active flow crosses take part, renumbered densely, so the cost follows
  // the flows, not the size of the whole fabric.
  link_ids_.clear();
  remaining_.clear();
  weight_.clear();
  if (cap_link_.size() != nf) cap_link_.assign(nf, -1);
  if (frozen_.size() != nf) frozen_.assign(nf, 0);
  for (size_t f : active) {
    cap_link_[f] = -1;
    frozen_[f] = 0;
  }
  for (size_t f : active) {
    for (int32_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) {
      const int32_t l = flows.links[static_cast<size_t>(i)];
      int32_t& loc = local_[static_cast<size_t>(l)];
      if (loc < 0) {
        loc = static_cast<int32_t>(link_ids_.size());
        link_ids_.push_back(l);
        remaining_.push_back(capacity[static_cast<size_t>(l)]);
        weight_.push_back(0.0);
      }
      weight_[static_cast<size_t>(loc)] += flows.weights[f];
    }
    // A per-flow cap is one private virtual link.
    if (flows.caps[f] > 0) {
      cap_link_[f] = static_cast<int32_t>(remaining_.size());
      link_ids_.push_back(-1);
      remaining_.push_back(flows.caps[f] * flows.weights[f]);
      weight_.push_back(flows.weights[f]);
    }
  }
  const size_t nl = remaining_.size();
  auto for_each_local = [&](size_t f, auto&& fn) {
    for (int32_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) {
      fn(local_[static_cast<size_t>(flows.links[static_cast<size_t>(i)])]);
    }
    if (cap_link_[f] >= 0) fn(cap_link_[f]);
  };
  lf_off_.assign(nl + 1, 0);
  for (size_t f : active)
    for_each_local(f, [&](int32_t l) { ++lf_off_[static_cast<size_t>(l) + 1]; });
  for (size_t l = 0; l < nl; ++l) lf_off_[l + 1] += lf_off_[l];
  lf_.resize(static_cast<size_t>(lf_off_[nl]));
  fill_.assign(lf_off_.begin(), lf_off_.end() - 1);
  for (size_t f : active) {
    for_each_local(f, [&](int32_t l) {
      lf_[static_cast<size_t>(fill_[static_cast<size_t>(l)]++)] = static_cast<int32_t>(f);
    });
  }

  size_t unfrozen = 0;
  for (size_t f : active) {
    if (flows.offsets[f] == flows.offsets[f + 1] && cap_link_[f] < 0) {
      rate[f] = kInf;
      frozen_[f] = 1;
      continue;
    }
    ++unfrozen;
  }
  using Entry = std::pair<double, int32_t>;  // (saturation level, local link)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  auto level = [&](size_t l) {
    return weight_[l] > 1e-12 ? std::max(remaining_[l], 0.0) / weight_[l] : kInf;
  };
  for (size_t l = 0; l < nl; ++l) {
    if (weight_[l] > 1e-12) heap.emplace(level(l), static_cast<int32_t>(l));
  }
  while (unfrozen > 0 && !heap.empty()) {
    auto [x, l] = heap.top();
    heap.pop();
    const auto ul = static_cast<size_t>(l);
    if (weight_[ul] <= 1e-12) continue;
    const double now = level(ul);
    if (now > x * (1 + 1e-12) + 1e-300) {  // stale entry: the link has slack left
      heap.emplace(now, l);
      continue;
    }
    for (int32_t i = lf_off_[ul]; i < lf_off_[ul + 1]; ++i) {
      const auto f = static_cast<size_t>(lf_[static_cast<size_t>(i)]);
      if (frozen_[f]) continue;
      frozen_[f] = 1;
      --unfrozen;
      rate[f] = now;
      for_each_local(f, [&](int32_t m) {
        const auto um = static_cast<size_t>(m);
        remaining_[um] -= now * flows.weights[f];
        weight_[um] -= flows.weights[f];
        // Levels only rise when flows freeze at or below them, so the heap entry of link m is a
        // lower bound; the stale check above re-queues it when popped.
      });
    }
    weight_[ul] = 0;
  }
  CT_CHECK(unfrozen == 0, "progressive filling left unfrozen flows");
  for (int32_t l : link_ids_) {
    if (l >= 0) local_[static_cast<size_t>(l)] = -1;
  }
}

}  // namespace clustertwin::network
