#include "clustertwin/scenario/environment.h"

namespace clustertwin::scenario {

base::Result<hardware::Catalog> Environment::load_catalog() const {
  if (catalog_dir.empty()) return hardware::Catalog::load_embedded();
  return hardware::Catalog::load_directory(catalog_dir);
}

base::Result<hardware::ClusterSpec> Environment::resolve_cluster(const hardware::Catalog& catalog,
                                                                 const std::string& cluster) const {
  if (auto it = inline_clusters.find(cluster); it != inline_clusters.end()) {
    if (auto st = catalog.validate(it->second); !st) {
      return base::fail("cluster '" + cluster + "': " + st.error().message);
    }
    return it->second;
  }
  return hardware::resolve_cluster(catalog, cluster);
}

base::Result<LoadedCluster> Environment::load_cluster(const std::string& cluster) const {
  auto cat = load_catalog();
  if (!cat) return base::fail(cat.error());
  auto spec = resolve_cluster(*cat, cluster);
  if (!spec) return base::fail(spec.error());
  auto topo = topology::Topology::build(*cat, *spec);
  if (!topo) return base::fail(topo.error());
  return LoadedCluster{std::move(*cat), std::move(*spec), std::move(*topo)};
}

}  // namespace clustertwin::scenario
