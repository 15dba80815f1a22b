#include "clustertwin/scheduler/cluster.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

#include "clustertwin/base/check.h"

namespace clustertwin::scheduler {
namespace {

// Dense ids for keys that arrive in runs: a new id whenever the key changes from the previous
// node's. A key that comes back after another is a new group (groups stay contiguous ranges).
std::vector<int> runs(const std::vector<int64_t>& keys) {
  std::vector<int> out(keys.size());
  int id = -1;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i == 0 || keys[i] != keys[i - 1]) ++id;
    out[i] = id;
  }
  return out;
}

std::vector<NodeRange> ranges_of(const std::vector<int>& ids) {
  std::vector<NodeRange> out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (out.empty() || static_cast<int>(out.size()) - 1 != ids[i]) {
      out.push_back({static_cast<int>(i), 0});
    }
    ++out.back().count;
  }
  return out;
}

std::string pad(int v, int width) {
  std::string s = std::to_string(v);
  if (static_cast<int>(s.size()) < width) s.insert(0, static_cast<size_t>(width) - s.size(), '0');
  return s;
}

int digits(int n) {
  int d = 1;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

}  // namespace

void ClusterModel::finish() {
  domains_ = ranges_of(node_domain_);
  leaves_ = ranges_of(node_leaf_);
  max_domain_nodes_ = 1;
  for (const auto& d : domains_) max_domain_nodes_ = std::max(max_domain_nodes_, d.count);
  node_cell_.assign(node_domain_.size(), 0);
  cells_.clear();
  for (int n = 0; n < nodes(); ++n) {
    // Single-server domains (HGX) do not split cells: any whole server is domain-aligned.
    const bool fresh = n == 0 || (max_domain_nodes_ > 1 && domain_of(n) != domain_of(n - 1)) ||
                       leaf_of(n) != leaf_of(n - 1);
    if (fresh) cells_.push_back({n, 0});
    ++cells_.back().count;
    node_cell_[static_cast<size_t>(n)] = static_cast<int>(cells_.size()) - 1;
  }
  pods_.clear();
  for (size_t l = 0; l < leaf_pod_.size(); ++l) {
    if (pods_.empty() || static_cast<int>(pods_.size()) - 1 != leaf_pod_[l]) {
      pods_.push_back({static_cast<int>(l), 0});
    }
    ++pods_.back().count;
  }
  width_ = host_names_.empty() ? std::max(4, digits(std::max(1, nodes() - 1))) : 0;
  if (leaf_names_.size() != leaves_.size()) {
    leaf_names_.clear();
    const int w = digits(std::max(1, static_cast<int>(leaves_.size()) - 1));
    for (size_t l = 0; l < leaves_.size(); ++l)
      leaf_names_.push_back("leaf" + pad(static_cast<int>(l), w));
  }
  if (pod_names_.size() != pods_.size()) {
    pod_names_.clear();
    const int w = digits(std::max(1, static_cast<int>(pods_.size()) - 1));
    for (size_t p = 0; p < pods_.size(); ++p)
      pod_names_.push_back("pod" + pad(static_cast<int>(p), w));
  }
}

ClusterModel ClusterModel::from_topology(const topology::Topology& topo, int gpus_per_node,
                                         std::string node_prefix) {
  CT_CHECK(gpus_per_node > 0 && topo.gpus() % gpus_per_node == 0, "gpus per node must divide gpus");
  ClusterModel c;
  c.gpus_per_node_ = gpus_per_node;
  c.prefix_ = std::move(node_prefix);
  c.cluster_name_ = topo.spec().name;
  const int nodes = topo.gpus() / gpus_per_node;
  std::vector<int64_t> dkey(static_cast<size_t>(nodes)), lkey(static_cast<size_t>(nodes));
  const auto& plan = topo.fabric();
  for (int n = 0; n < nodes; ++n) {
    const int g = n * gpus_per_node;
    dkey[static_cast<size_t>(n)] = topo.domain_of(g);
    lkey[static_cast<size_t>(n)] = topo.leaf_of(topo.nic_of(g));
  }
  c.node_domain_ = runs(dkey);
  c.node_leaf_ = runs(lkey);
  // Pods: leaves under one pod of a 3-tier fabric; one pod otherwise.
  const int leaves = c.node_leaf_.empty() ? 0 : c.node_leaf_.back() + 1;
  c.leaf_pod_.assign(static_cast<size_t>(leaves), 0);
  c.tiers_ = std::clamp(plan.tiers, 1, 3);
  if (plan.tiers == 3 && plan.leaves_per_pod > 0) {
    std::vector<int64_t> pkey;
    int last_leaf = -1;
    for (int n = 0; n < nodes; ++n) {
      const int leaf = c.node_leaf_[static_cast<size_t>(n)];
      if (leaf == last_leaf) continue;
      last_leaf = leaf;
      pkey.push_back(lkey[static_cast<size_t>(n)] / plan.leaves_per_pod);
    }
    c.leaf_pod_ = runs(pkey);
  }
  c.finish();
  return c;
}

ClusterModel ClusterModel::uniform(int domains, int nodes_per_domain, int gpus_per_node,
                                   int domains_per_leaf, int leaves_per_pod) {
  ClusterModel c;
  c.gpus_per_node_ = gpus_per_node;
  const int nodes = domains * nodes_per_domain;
  c.node_domain_.resize(static_cast<size_t>(nodes));
  c.node_leaf_.resize(static_cast<size_t>(nodes));
  for (int n = 0; n < nodes; ++n) {
    c.node_domain_[static_cast<size_t>(n)] = n / nodes_per_domain;
    c.node_leaf_[static_cast<size_t>(n)] = n / (nodes_per_domain * std::max(1, domains_per_leaf));
  }
  const int leaves = c.node_leaf_.empty() ? 0 : c.node_leaf_.back() + 1;
  c.leaf_pod_.resize(static_cast<size_t>(leaves));
  for (int l = 0; l < leaves; ++l) {
    c.leaf_pod_[static_cast<size_t>(l)] = leaves_per_pod > 0 ? l / leaves_per_pod : 0;
  }
  c.tiers_ = leaves_per_pod > 0 ? 3 : (leaves > 1 ? 2 : 1);
  c.cluster_name_ = "uniform";
  c.finish();
  return c;
}

base::Result<ClusterModel> ClusterModel::from_switch_csv(std::string_view text,
                                                         const std::string& file,
                                                         int gpus_per_node) {
  if (gpus_per_node <= 0) return base::fail("gpus per node must be positive", file);
  std::istringstream in{std::string(text)};
  std::string line;
  int line_no = 0;
  std::vector<std::string> header;
  struct Host {
    std::string name;
    std::vector<std::string> path;  // full-path keys, top level first
  };
  std::vector<Host> hosts;
  base::Errors errors;
  auto split = [](const std::string& s) {
    std::vector<std::string> f;
    std::string cur;
    for (char ch : s) {
      if (ch == ',') {
        f.push_back(cur);
        cur.clear();
      } else if (ch != '\r') {
        cur += ch;
      }
    }
    f.push_back(cur);
    return f;
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r") continue;
    auto f = split(line);
    if (header.empty()) {
      header = f;
      if (header.size() < 2) {
        errors.add({"expected a host column followed by 1 to 3 switch levels, got " +
                        std::to_string(header.size()) + " columns",
                    file, line_no});
        break;
      }
      if (header.size() > 4) {
        errors.add(
            {"at most 3 switch levels are supported, got " + std::to_string(header.size() - 1),
             file, line_no});
        break;
      }
      continue;
    }
    if (f.size() != header.size()) {
      errors.add(
          {"expected " + std::to_string(header.size()) + " fields, got " + std::to_string(f.size()),
           file, line_no});
      continue;
    }
    Host h;
    h.name = f[0];
    std::string key;
    bool bad = h.name.empty();
    for (size_t i = 1; i < f.size(); ++i) {
      if (f[i].empty()) bad = true;
      key += (i > 1 ? "/" : "") + f[i];
      h.path.push_back(key);
    }
    if (bad) {
      errors.add({"empty host or switch label", file, line_no});
      continue;
    }
    hosts.push_back(std::move(h));
  }
  if (header.empty() && errors.empty()) errors.add({"the file is empty", file, 0});
  if (hosts.empty() && errors.empty()) errors.add({"no hosts", file, 0});
  if (!errors.empty()) return base::fail(errors.combined());
  std::stable_sort(hosts.begin(), hosts.end(),
                   [](const Host& a, const Host& b) { return a.path < b.path; });
  ClusterModel c;
  c.gpus_per_node_ = gpus_per_node;
  c.cluster_name_ = file;
  const size_t levels = header.size() - 1;
  std::map<std::string, int> leaf_id, pod_id;
  for (size_t n = 0; n < hosts.size(); ++n) {
    const auto& h = hosts[n];
    c.node_domain_.push_back(static_cast<int>(n));
    const std::string& leaf = h.path.back();
    auto [it, fresh] = leaf_id.emplace(leaf, static_cast<int>(leaf_id.size()));
    c.node_leaf_.push_back(it->second);
    c.host_names_.push_back(h.name);
    if (fresh) {
      c.leaf_names_.push_back(leaf);
      const std::string pod = levels >= 3 ? h.path[levels - 2] : std::string("all");
      auto [pit, pfresh] = pod_id.emplace(pod, static_cast<int>(pod_id.size()));
      c.leaf_pod_.push_back(pit->second);
      if (pfresh) c.pod_names_.push_back(pod);
    }
  }
  if (levels >= 2) c.top_name_ = hosts.front().path.front();
  if (levels == 3) {
    // The top level may hold several labels (several cores); the tree's root is above them all.
    std::map<std::string, int> tops;
    for (const auto& h : hosts) tops.emplace(h.path.front(), 0);
    if (tops.size() > 1) c.top_name_ = "root";
  }
  if (levels < 3) {
    c.pod_names_.assign(1, c.top_name_);
  }
  c.tiers_ = static_cast<int>(levels);
  c.finish();
  return c;
}

std::string ClusterModel::node_name(int node) const {
  if (!host_names_.empty()) return host_names_[static_cast<size_t>(node)];
  return prefix_ + pad(node, width_);
}

std::string hostlist(const ClusterModel& c, const std::vector<int>& nodes) {
  if (nodes.empty()) return "";
  // Named hosts (from a file) are listed one by one; generated names compress into ranges.
  if (c.name_width() == 0) {
    std::string s;
    for (size_t i = 0; i < nodes.size(); ++i) s += (i ? "," : "") + c.node_name(nodes[i]);
    return s;
  }
  std::string body;
  size_t i = 0;
  int parts = 0;
  while (i < nodes.size()) {
    size_t j = i;
    while (j + 1 < nodes.size() && nodes[j + 1] == nodes[j] + 1) ++j;
    body += parts++ ? "," : "";
    body += pad(nodes[i], c.name_width());
    if (j > i) body += "-" + pad(nodes[j], c.name_width());
    i = j + 1;
  }
  if (parts == 1 && nodes.size() == 1) return c.node_prefix() + body;
  return c.node_prefix() + "[" + body + "]";
}

std::string hostlist(const ClusterModel& c, NodeRange r) {
  std::vector<int> v(static_cast<size_t>(r.count));
  std::iota(v.begin(), v.end(), r.first);
  return hostlist(c, v);
}

base::Result<std::vector<std::string>> expand_hostlist(std::string_view expr) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < expr.size()) {
    // One item: prefix[ranges]suffix? up to a top-level comma.
    size_t j = i;
    int depth = 0;
    while (j < expr.size() && (depth > 0 || expr[j] != ',')) {
      if (expr[j] == '[') ++depth;
      if (expr[j] == ']') --depth;
      if (depth < 0) return base::fail("unbalanced ']' in hostlist '" + std::string(expr) + "'");
      ++j;
    }
    if (depth != 0) return base::fail("unbalanced '[' in hostlist '" + std::string(expr) + "'");
    const std::string_view item = expr.substr(i, j - i);
    if (item.empty()) return base::fail("empty name in hostlist '" + std::string(expr) + "'");
    const size_t lb = item.find('[');
    if (lb == std::string_view::npos) {
      out.emplace_back(item);
    } else {
      const size_t rb = item.find(']', lb);
      if (rb == std::string_view::npos || item.find('[', lb + 1) != std::string_view::npos) {
        return base::fail("hostlist item '" + std::string(item) + "' must have one [ranges]");
      }
      const std::string prefix(item.substr(0, lb));
      const std::string suffix(item.substr(rb + 1));
      std::string_view ranges = item.substr(lb + 1, rb - lb - 1);
      size_t k = 0;
      while (k <= ranges.size()) {
        size_t e = ranges.find(',', k);
        if (e == std::string_view::npos) e = ranges.size();
        const std::string_view part = ranges.substr(k, e - k);
        const size_t dash = part.find('-');
        const std::string_view lo = part.substr(0, dash);
        const std::string_view hi = dash == std::string_view::npos ? lo : part.substr(dash + 1);
        auto numeric = [](std::string_view s) {
          return !s.empty() &&
                 std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        };
        if (!numeric(lo) || !numeric(hi)) {
          return base::fail("hostlist range '" + std::string(part) + "' is not numeric");
        }
        const long a = std::stol(std::string(lo)), b = std::stol(std::string(hi));
        if (b < a) return base::fail("hostlist range '" + std::string(part) + "' descends");
        const size_t width = lo.size();
        for (long v = a; v <= b; ++v) {
          std::string num = std::to_string(v);
          if (num.size() < width) num.insert(0, width - num.size(), '0');
          out.push_back(prefix + num + suffix);
        }
        k = e + 1;
      }
    }
    i = j + 1;
  }
  return out;
}

}  // namespace clustertwin::scheduler
