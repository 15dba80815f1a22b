// `clustertwin export slurm|kueue`: topology files a user can deploy for any cluster: Slurm
// topology.conf (block or tree) or topology.yaml, Kueue Topology objects and node labels.
// Example: clustertwin export slurm --cluster azure-ndv6-gb300 --format block --spares 2

#include <fstream>
#include <iostream>
#include <sstream>

#include "clustertwin/report/json_out.h"
#include "clustertwin/scheduler/export.h"
#include "commands.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

struct ExportOptions {
  std::string target;
  std::string cluster = "azure-ndv6-gb300";
  std::string tree_file;
  int gpus_per_node = 8;
  std::string format;
  int spares = 0;
  std::string node_prefix = "node";
  std::string out = "-";
};

int run_export(const Context& ctx, const ExportOptions& o) {
  using namespace scheduler;
  if (o.target != "slurm" && o.target != "kueue") {
    return bad_input("export: expected slurm or kueue, got '" + o.target + "'");
  }
  const bool kueue = o.target == "kueue";
  if (!o.node_prefix.empty()) {
    if (auto st = check_host_name(o.node_prefix, "--node-prefix", kueue); !st) {
      return bad_input(st.error());
    }
  }
  std::optional<ClusterModel> c;
  if (!o.tree_file.empty()) {
    std::ifstream in(o.tree_file, std::ios::binary);
    if (!in) return bad_input(base::Error{"cannot read file", o.tree_file, 0});
    std::stringstream ss;
    ss << in.rdbuf();
    auto m = ClusterModel::from_switch_csv(ss.str(), o.tree_file, o.gpus_per_node);
    if (!m) return bad_input(m.error());
    c = std::move(*m);
  } else {
    auto lc = ctx.load_cluster(o.cluster);
    if (!lc) return bad_input(lc.error());
    c = ClusterModel::from_topology(lc->topo, (**lc->catalog.system(lc->spec.system)).gpus_per_node,
                                    o.node_prefix);
  }
  if (auto st = check_host_names(*c, kueue); !st) return bad_input(st.error());
  int block_nodes = 0;
  for (const auto& b : c->blocks()) block_nodes = std::max(block_nodes, b.count);
  if (o.spares < 0 || (o.spares > 0 && o.spares >= block_nodes)) {
    return bad_input("--spares " + std::to_string(o.spares) +
                     " leaves no capacity: base blocks have " + std::to_string(block_nodes) +
                     " nodes");
  }
  std::string text;
  if (o.target == "kueue") {
    if (!o.format.empty() && o.format != "yaml") {
      return bad_input("--format: kueue exports yaml only, got '" + o.format + "'");
    }
    text = kueue_yaml(*c, o.spares);
  } else {
    const std::string f =
        o.format.empty() ? (c->blocks_are_domains() ? "block" : "tree") : o.format;
    if (f == "block") {
      text = slurm_block_conf(*c, o.spares);
    } else if (f == "tree") {
      text = slurm_tree_conf(*c);
    } else if (f == "yaml") {
      text = slurm_topology_yaml(*c, o.spares);
    } else {
      return bad_input("--format: expected block, tree or yaml, got '" + f + "'");
    }
  }
  if (auto st = report::write_text(text, o.out); !st) return bad_input(st.error());
  return kExitOk;
}

}  // namespace

Verb add_export(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Topology files to deploy: Slurm topology.conf (topology/block with NVL72 racks as base "
      "blocks, or topology/tree), Slurm topology.yaml holding both, or Kueue Topology objects "
      "and node labels (NVLink clique).\n"
      "Example: clustertwin export slurm --cluster azure-ndv6-gb300 --format block --spares 2");
  cmd->add_option("target", o->target, "slurm or kueue")->required();
  cmd->add_option("--cluster", o->cluster, "catalog name, cluster file or SYSTEM*COUNT")
      ->capture_default_str();
  cmd->add_option("--tree-file", o->tree_file,
                  "a switch tree CSV (host,level1,...,leaf) instead of --cluster");
  cmd->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per host of a --tree-file cluster")
      ->check(flags::positive(o->gpus_per_node, base::kMaxGpus))
      ->capture_default_str();
  cmd->add_option("--format", o->format,
                  "slurm: block, tree or yaml (default: block on NVL72 clusters, tree otherwise)");
  cmd->add_option(
         "--spares", o->spares,
         "nodes per block kept spare: BlockSizes and the Kueue slice size plan blocks - spares")
      ->capture_default_str()
      ->check(flags::non_negative(o->spares, base::kMaxGpus));
  cmd->add_option("--node-prefix", o->node_prefix, "host name prefix")->capture_default_str();
  cmd->add_option("--out", o->out, "write to FILE ('-' for stdout)")->capture_default_str();
  return {cmd, [&ctx, o] { return run_export(ctx, *o); }};
}

}  // namespace clustertwin::app
