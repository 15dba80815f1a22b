#include "clustertwin/execution/training_rig.h"

#include "clustertwin/models/model_catalog.h"

namespace clustertwin::execution {

TrainingSetup TrainingRig::setup(const workload::TrainingLayout& layout,
                                 const CommModel* comm) const {
  const auto precision = compute::peak_precision(compute.effective(layout.dtype));
  const auto peak = gpu->peak_for(precision);
  TrainingSetup s{.model = &model,
                  .layout = layout,
                  .compute = &compute,
                  .comm = comm ? comm : &analytical,
                  .memory_capacity = gpu->hbm_usable,
                  .peak = peak ? peak->dense : base::FlopsPerSecond{}};
  calibration.apply(s);
  return s;
}

base::Result<std::unique_ptr<TrainingRig>> make_training_rig(const hardware::Catalog& cat,
                                                             std::string_view cluster,
                                                             models::ModelSpec model) {
  auto spec = hardware::resolve_cluster(cat, cluster);
  if (!spec) return base::fail(spec.error());
  auto topo = topology::Topology::build(cat, *spec);
  if (!topo) return base::fail(topo.error());
  auto sys = cat.system(spec->system);
  if (!sys) return base::fail(sys.error());
  auto gpu = cat.gpu((*sys)->gpu);
  if (!gpu) return base::fail(gpu.error());
  auto cm = compute::ComputeModel::for_gpu(**gpu, cat);
  if (!cm) return base::fail(cm.error());
  auto tc = training_calibration(cat);
  if (!tc) return base::fail(tc.error());
  auto rig =
      std::make_unique<TrainingRig>(**gpu, std::move(*topo), std::move(*cm), std::move(model));
  rig->calibration = std::move(*tc);
  return rig;
}

base::Result<std::unique_ptr<TrainingRig>> make_training_rig(const hardware::Catalog& cat,
                                                             std::string_view cluster,
                                                             std::string_view model) {
  auto m = models::load_model(cat, model);
  if (!m) return base::fail(m.error());
  return make_training_rig(cat, cluster, std::move(*m));
}

}  // namespace clustertwin::execution
