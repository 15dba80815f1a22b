#pragma once
/// Where a request's names are looked up: the catalog (the one compiled into the binary, or a
/// directory) and the clusters a scenario file defines inline. Every door holds one.

#include <map>
#include <string>

#include "clustertwin/base/result.h"
#include "clustertwin/hardware/catalog.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::scenario {

/// A cluster argument resolved: the catalog, the spec and its topology graph (one resolved
/// cluster: spec + system + GPU).
struct LoadedCluster {
  hardware::Catalog catalog;
  hardware::ClusterSpec spec;
  topology::Topology topo;
  /// The system of the cluster.
  [[nodiscard]] const hardware::SystemSpec& system() const { return **catalog.system(spec.system); }
  /// The GPU of the cluster's systems.
  [[nodiscard]] const hardware::GpuSpec& gpu() const { return **catalog.gpu(system().gpu); }
};

struct Environment {
  std::string catalog_dir;  ///< empty: the catalog compiled into the binary
  /// Clusters defined inline in a scenario (`cluster:` as a mapping), by name: they take
  /// precedence over the catalog for that scenario's runs.
  std::map<std::string, hardware::ClusterSpec> inline_clusters;

  /// The catalog (embedded or `catalog_dir`).
  [[nodiscard]] base::Result<hardware::Catalog> load_catalog() const;
  /// The catalog, the cluster (name, file or SYSTEM*COUNT) and its topology.
  [[nodiscard]] base::Result<LoadedCluster> load_cluster(const std::string& cluster) const;
  /// A cluster argument resolved against `catalog`: an inline cluster, else
  /// hardware::resolve_cluster (name, file or SYSTEM*COUNT).
  [[nodiscard]] base::Result<hardware::ClusterSpec> resolve_cluster(
      const hardware::Catalog& catalog, const std::string& cluster) const;
};

}  // namespace clustertwin::scenario
