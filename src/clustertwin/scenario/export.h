#pragma once
/// Topology files to deploy as the user asks for them (`ExportRequest`): Slurm topology.conf
/// (block or tree) or topology.yaml, Kueue Topology objects and node labels, for a catalog
/// cluster or a switch tree read from a host list (scheduler/export.h does the writing).

#include <string>

#include "clustertwin/base/result.h"
#include "clustertwin/scenario/environment.h"

namespace clustertwin::scenario {

struct ExportRequest {
  std::string target;  ///< slurm or kueue
  std::string cluster = "azure-ndv6-gb300";
  std::string tree_file;  ///< a switch tree CSV (host,level1,...,leaf) instead of the cluster
  int gpus_per_node = 8;  ///< GPUs per host of a tree-file cluster
  std::string format;     ///< slurm: block, tree or yaml; "": block on NVL72 clusters, else tree
  int spares = 0;         ///< nodes per block kept spare
  std::string node_prefix = "node";
};

/// The file's text. Messages name fields ({spares}, {format}, {node_prefix}).
base::Result<std::string> run_export(const Environment& env, const ExportRequest& r);

}  // namespace clustertwin::scenario
