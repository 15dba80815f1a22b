// The export verb's request and run (moved from apps/clustertwin/cmd_export.cpp).

#include "clustertwin/scenario/export.h"

#include <algorithm>
#include <fstream>
#include <optional>

#include "clustertwin/base/file.h"
#include "clustertwin/scheduler/cluster.h"
#include "clustertwin/scheduler/export.h"

namespace clustertwin::scenario {

base::Result<std::string> run_export(const Environment& env, const ExportRequest& r) {
  using namespace scheduler;
  if (r.target != "slurm" && r.target != "kueue") {
    return base::fail("export: expected slurm or kueue, got '" + r.target + "'");
  }
  const bool kueue = r.target == "kueue";
  // An empty prefix is refused too: host names of digits alone (0000, 0001, ...) are the same
  // for every exported cluster.
  if (r.tree_file.empty()) {
    if (auto st = check_host_name(r.node_prefix, "{node_prefix}", kueue); !st) {
      return base::fail(st.error());
    }
  }
  std::optional<ClusterModel> c;
  if (!r.tree_file.empty()) {
    std::ifstream in(r.tree_file, std::ios::binary);
    if (!in) return base::fail(base::Error{"cannot read file", r.tree_file, 0});
    auto text = base::read_all(in);
    if (!text) return base::fail(base::Error{text.error().message, r.tree_file, 0});
    auto m = ClusterModel::from_switch_csv(*text, r.tree_file, r.gpus_per_node);
    if (!m) return base::fail(m.error());
    c = std::move(*m);
  } else {
    auto lc = env.load_cluster(r.cluster);
    if (!lc) return base::fail(lc.error());
    c = ClusterModel::from_topology(lc->topo, lc->system().gpus_per_node, r.node_prefix);
  }
  if (auto st = check_host_names(*c, kueue); !st) return base::fail(st.error());
  int block_nodes = 0;
  for (const auto& b : c->blocks()) block_nodes = std::max(block_nodes, b.count);
  if (r.spares < 0 || (r.spares > 0 && r.spares >= block_nodes)) {
    return base::fail("{spares} " + std::to_string(r.spares) +
                      " leaves no capacity: base blocks have " + std::to_string(block_nodes) +
                      " nodes");
  }
  if (kueue) {
    if (!r.format.empty() && r.format != "yaml") {
      return base::fail("{format}: kueue exports yaml only, got '" + r.format + "'");
    }
    return kueue_yaml(*c, r.spares);
  }
  const std::string f = r.format.empty() ? (c->blocks_are_domains() ? "block" : "tree") : r.format;
  if (f == "block") return slurm_block_conf(*c, r.spares);
  if (f == "tree") return slurm_tree_conf(*c);
  if (f == "yaml") return slurm_topology_yaml(*c, r.spares);
  return base::fail("{format}: expected block, tree or yaml, got '" + f + "'");
}

}  // namespace clustertwin::scenario
