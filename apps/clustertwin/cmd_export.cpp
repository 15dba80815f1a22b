// `clustertwin export slurm|kueue`: topology files a user can deploy for any cluster: Slurm
// topology.conf (block or tree) or topology.yaml, Kueue Topology objects and node labels. The
// run is the library's (scenario/export.h); this is the door.
// Example: clustertwin export slurm --cluster azure-ndv6-gb300 --format block --spares 2

#include "clustertwin/report/json_out.h"
#include "clustertwin/scenario/export.h"
#include "commands.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

struct ExportOptions {
  scenario::ExportRequest request;
  std::string out = "-";
};

int run_export(const Context& ctx, const ExportOptions& o) {
  auto text = scenario::run_export(ctx, o.request);
  if (!text) return bad_input(text.error());
  if (auto st = report::write_text(*text, o.out); !st) return bad_input(st.error());
  return kExitOk;
}

}  // namespace

Verb add_export(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<ExportOptions>();
  auto& r = o->request;
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Topology files to deploy: Slurm topology.conf (topology/block with NVL72 racks as base "
      "blocks, or topology/tree), Slurm topology.yaml holding both, or Kueue Topology objects "
      "and node labels (NVLink clique).\n"
      "Example: clustertwin export slurm --cluster azure-ndv6-gb300 --format block --spares 2");
  cmd->add_option("target", r.target, "slurm or kueue")->required();
  cmd->add_option("--cluster", r.cluster, "catalog name, cluster file or SYSTEM*COUNT")
      ->capture_default_str();
  auto* tree = cmd->add_option("--tree-file", r.tree_file,
                               "a switch tree CSV (host,level1,...,leaf) instead of --cluster");
  // A catalog cluster's nodes have their system's GPUs, and a tree file names its hosts: each
  // flag applies to one kind of cluster only, and given for the other it is refused, not ignored.
  cmd->add_option("--gpus-per-node", r.gpus_per_node, "GPUs per host of a --tree-file cluster")
      ->check(flags::positive(r.gpus_per_node, base::kMaxGpus))
      ->capture_default_str()
      ->needs(tree);
  cmd->add_option("--format", r.format,
                  "slurm: block, tree or yaml (default: block on NVL72 clusters, tree otherwise)");
  cmd->add_option(
         "--spares", r.spares,
         "nodes per block kept spare: BlockSizes and the Kueue slice size plan blocks - spares")
      ->capture_default_str()
      ->check(flags::non_negative(r.spares, base::kMaxGpus));
  cmd->add_option("--node-prefix", r.node_prefix,
                  "host name prefix (not with --tree-file, whose hosts are named in the file)")
      ->capture_default_str()
      ->excludes(tree);
  cmd->add_option("--out", o->out, "write to FILE ('-' for stdout)")->capture_default_str();
  return {cmd, [&ctx, o] { return run_export(ctx, *o); }};
}

}  // namespace clustertwin::app
