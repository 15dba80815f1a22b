#pragma once
// Test-only helpers shared by the power layer's tests: the embedded catalog, a cluster's
// topology, compute and comm models, and a training setup on it.

#include <memory>
#include <string>

#include "clustertwin/execution/training.h"
#include "clustertwin/execution/training_calibration.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/power/params.h"
#include "clustertwin/power/training_power.h"

namespace clustertwin::power::testing {

inline const hardware::Catalog& catalog() {
  static const hardware::Catalog cat = *hardware::Catalog::load_embedded();
  return cat;
}

inline const PowerCatalog& power_catalog() {
  static const PowerCatalog p = *PowerCatalog::load(catalog());
  return p;
}

/// The embedded power catalog with a GB300 NVL72 that holds `redundant` of its 48 PSUs as spares
/// (24 in the catalog: N+N): fewer usable shelves make its rack limit bind.
inline base::Result<PowerCatalog> gb300_with_spare_psus(int redundant) {
  std::string gpus, systems, facility;
  for (const auto& f : catalog().other_files()) {
    if (f.path == "power/gpus.yaml") gpus = f.text;
    if (f.path == "power/systems.yaml") systems = f.text;
    if (f.path == "power/facility.yaml") facility = f.text;
  }
  const std::string from = "redundant_units: {value: 24, source: n-plus-n}";
  const auto at = systems.find(from);
  if (at == std::string::npos) return base::fail("power/systems.yaml: no N+N GB300 shelves");
  systems.replace(at, from.size(),
                  "redundant_units: {value: " + std::to_string(redundant) + ", source: n-plus-n}");
  return PowerCatalog::parse(gpus, systems, facility);
}

/// A system's power model from the embedded catalogs.
inline SystemPowerModel model_of(const std::string& system) {
  return SystemPowerModel(catalog(), **catalog().system(system), **power_catalog().system(system));
}

struct Job {
  hardware::ClusterSpec spec;
  topology::Topology topo;
  const hardware::GpuSpec* gpu;
  compute::ComputeModel cm;
  models::ModelSpec model;
  std::unique_ptr<execution::AnalyticalComm> comm;
  Job(const std::string& cluster, const std::string& m)
      : spec(*hardware::resolve_cluster(catalog(), cluster)),
        topo(*topology::Topology::build(catalog(), spec)),
        gpu(*catalog().gpu((*catalog().system(spec.system))->gpu)),
        cm(*compute::ComputeModel::for_gpu(*gpu, catalog())),
        model(*models::load_model(catalog(), m)),
        comm(std::make_unique<execution::AnalyticalComm>(topo)) {}
  [[nodiscard]] execution::TrainingSetup setup(const workload::TrainingLayout& l) const {
    execution::TrainingSetup s{.model = &model,
                               .layout = l,
                               .compute = &cm,
                               .comm = comm.get(),
                               .memory_capacity = gpu->hbm_usable,
                               .peak = gpu->peak_for(hardware::Precision::kBf16)->dense};
    execution::training_calibration(catalog())->apply(s);
    return s;
  }
  [[nodiscard]] TrainingPowerInput input(const workload::TrainingLayout& l) const {
    return TrainingPowerInput{.catalog = &catalog(),
                              .power = &power_catalog(),
                              .cluster = &spec,
                              .topology = &topo,
                              .setup = setup(l)};
  }
};

}  // namespace clustertwin::power::testing
