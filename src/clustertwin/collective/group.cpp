#include "clustertwin/collective/group.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace clustertwin::collective {
using base::fail;

base::Result<Group> make_group(const topology::Topology& topo, std::span<const int> gpus) {
  Group g;
  if (gpus.empty()) return fail("a collective needs at least 1 GPU");
  std::vector<char> seen(static_cast<size_t>(topo.gpus()), 0);
  std::unordered_map<int, size_t> slot;  // topology domain -> index in by_domain
  for (int gpu : gpus) {
    if (gpu < 0 || gpu >= topo.gpus()) {
      return fail("GPU " + std::to_string(gpu) + " is not in the cluster (it has " +
                  std::to_string(topo.gpus()) + " GPUs, ids 0.." + std::to_string(topo.gpus() - 1) +
                  ")");
    }
    if (seen[static_cast<size_t>(gpu)])
      return fail("GPU " + std::to_string(gpu) + " appears twice in the group");
    seen[static_cast<size_t>(gpu)] = 1;
    g.gpus.push_back(gpu);
    const int d = topo.domain_of(gpu);
    auto [it, fresh] = slot.try_emplace(d, g.by_domain.size());
    if (fresh) {
      g.domain_ids.push_back(d);
      g.by_domain.emplace_back();
    }
    g.by_domain[it->second].push_back(gpu);
  }
  for (const auto& dom : g.by_domain) {
    g.per_domain_ = std::max(g.per_domain_, static_cast<int>(dom.size()));
    g.uniform_ = g.uniform_ && dom.size() == g.by_domain.front().size();
  }
  return g;
}

base::Result<Group> place_first(const topology::Topology& topo, int n, int per_domain) {
  if (n < 1) return fail("{gpus}: expected at least 1 GPU, got " + std::to_string(n));
  const int ds = topo.domain_size();
  if (per_domain < 0 || per_domain > ds) {
    return fail("{gpus_per_domain}: expected 1.." + std::to_string(ds) +
                " (the NVLink domain size), got " + std::to_string(per_domain));
  }
  const int k = per_domain == 0 ? ds : per_domain;
  const long capacity = static_cast<long>(topo.domains()) * k;
  if (n > capacity) {
    if (k == ds) {
      return fail("{gpus} " + std::to_string(n) + " is more than the cluster's " +
                  std::to_string(topo.gpus()) + " GPUs");
    }
    return fail("{gpus} " + std::to_string(n) + " with " + std::to_string(k) +
                " per NVLink domain needs " + std::to_string((n + k - 1) / k) +
                " domains; the cluster has " + std::to_string(topo.domains()));
  }
  std::vector<int> gpus;
  gpus.reserve(static_cast<size_t>(n));
  for (int d = 0; static_cast<int>(gpus.size()) < n; ++d) {
    for (int i = 0; i < k && static_cast<int>(gpus.size()) < n; ++i) gpus.push_back(d * ds + i);
  }
  return make_group(topo, gpus);
}

base::Result<std::vector<Group>> place_groups(const topology::Topology& topo, int count, int size,
                                              bool across_domains) {
  if (count < 1 || size < 1) return fail("expected at least one group of at least one GPU");
  std::vector<Group> out;
  const long total = static_cast<long>(count) * size;
  if (total > topo.gpus()) {
    return fail(std::to_string(count) + " groups of " + std::to_string(size) + " GPUs need " +
                std::to_string(total) + " GPUs; the cluster has " + std::to_string(topo.gpus()));
  }
  const int ds = topo.domain_size();
  for (int g = 0; g < count; ++g) {
    std::vector<int> gpus;
    if (across_domains) {
      // Group g takes local rank (g % ds) of `size` consecutive domains.
      if (size > topo.domains()) {
        return fail("a group of " + std::to_string(size) + " GPUs, one per NVLink domain, needs " +
                    std::to_string(size) + " domains; the cluster has " +
                    std::to_string(topo.domains()));
      }
      const int block = g / ds;
      for (int i = 0; i < size; ++i) {
        const int d = (block * size + i) % topo.domains();
        gpus.push_back(d * ds + g % ds);
      }
    } else {
      for (int i = 0; i < size; ++i) gpus.push_back(g * size + i);
    }
    auto grp = make_group(topo, gpus);
    if (!grp) return fail(grp.error());
    out.push_back(std::move(*grp));
  }
  return out;
}

}  // namespace clustertwin::collective
