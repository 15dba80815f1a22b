#include "clustertwin/scheduler/speed.h"

#include <algorithm>
#include <numeric>

#include "clustertwin/execution/training.h"
#include "clustertwin/models/model_catalog.h"

namespace clustertwin::scheduler {

base::Seconds PlacementComm::time(const execution::CommRequest& r) const {
  const int n = r.group_size;
  if (n <= 1 || domain_ <= 1) return inner_.time(r);
  const int share = r.stride == 1 ? gcd_ : min_;
  if (share >= domain_) return inner_.time(r);  // the job fills its domains, as assumed inside
  int per = 0;  // ranks of the group that share one domain, in the worst domain
  if (r.stride == 1) {
    // Groups of n consecutive ranks cross a domain boundary unless n divides every share;
    // the pieces are then multiples of gcd(share, n).
    if (share % n == 0) return inner_.time(r);
    per = std::gcd(share, n);
  } else {
    per = std::max(1, share / r.stride);
    if (per >= n) return inner_.time(r);
  }
  // The analytical model puts domain / stride ranks of a group in a domain; choose the stride
  // that gives the largest count not above `per`.
  execution::CommRequest q = r;
  q.stride = std::max(r.stride, domain_ / (per + 1) + 1);
  return inner_.time(q);
}

SpeedModel::SpeedModel(const hardware::Catalog& catalog, const topology::Topology& topo)
    : catalog_(&catalog),
      topo_(&topo),
      domain_gpus_(topo.domain_size()),
      training_calibration_(execution::training_calibration(catalog)) {
  auto sys = catalog.system(topo.spec().system);
  if (sys) {
    auto g = catalog.gpu((*sys)->gpu);
    if (g) {
      gpu_ = *g;
      hbm_ = gpu_->hbm_usable;
      auto cm = compute::ComputeModel::for_gpu(*gpu_, catalog);
      if (cm) compute_ = std::make_unique<compute::ComputeModel>(std::move(*cm));
    }
  }
}

base::Result<int> SpeedModel::add(const TrainingWork& work, int gpus) {
  const auto& l = work.layout;
  auto key = std::make_tuple(work.model, static_cast<int64_t>(gpus), l.tp, l.pp, l.cp, l.ep, l.vpp,
                             l.micro_batch, l.global_batch, static_cast<int>(l.recompute));
  if (auto it = type_ids_.find(key); it != type_ids_.end()) return it->second;
  if (!compute_) return base::fail("no compute model for the cluster's GPU");
  if (!training_calibration_) return base::fail(training_calibration_.error());
  auto& spec = models_[work.model];
  if (!spec) {
    auto m = models::load_model(*catalog_, work.model);
    if (!m) {
      models_.erase(work.model);
      return base::fail(m.error());
    }
    spec = std::make_unique<models::ModelSpec>(std::move(*m));
  }
  Type t{work.model, l, gpus, models::count_params(*spec).total, spec.get()};
  t.layout.dp = static_cast<int>(gpus / (static_cast<int64_t>(l.tp) * l.pp * l.cp));
  const int share = std::min(gpus, domain_gpus_);
  auto est = estimate(t, share, share);
  if (!est) {
    return base::fail("model " + work.model + " on " + std::to_string(gpus) + " GPUs (tp " +
                      std::to_string(l.tp) + ", pp " + std::to_string(l.pp) +
                      "): " + est.error().message);
  }
  const int id = static_cast<int>(types_.size());
  types_.push_back(std::move(t));
  type_ids_[key] = id;
  cache_[{id, share, share}] = *est;
  return id;
}

base::Result<double> SpeedModel::estimate(const Type& t, int gcd, int min) {
  ++estimates_;
  PlacementComm comm(*topo_, gcd, min);
  const auto peak = gpu_->peak_for(compute::peak_precision(compute_->effective(t.layout.dtype)));
  execution::TrainingSetup s{.model = t.spec,
                             .layout = t.layout,
                             .compute = compute_.get(),
                             .comm = &comm,
                             .memory_capacity = hbm_,
                             .peak = peak ? peak->dense : base::FlopsPerSecond{}};
  s.framework_overhead = framework_overhead_;
  s.host_time = host_time_;
  training_calibration_->apply(s);
  auto r = execution::estimate_training_step(s);
  if (!r) return base::fail(r.error());
  return r->step_time_s;
}

double SpeedModel::best_step_s(int id) {
  const int share = std::min(types_[static_cast<size_t>(id)].gpus, domain_gpus_);
  return step_s(id, share, share);
}

double SpeedModel::step_s(int id, int gcd_gpus, int min_gpus) {
  auto key = std::make_tuple(id, gcd_gpus, min_gpus);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  auto r = estimate(types_[static_cast<size_t>(id)], gcd_gpus, min_gpus);
  // A placement the estimate rejects (it cannot, memory does not depend on placement) would
  // be a bug; fall back to the best time so the simulation continues.
  const double v = r ? *r : best_step_s(id);
  cache_[key] = v;
  return v;
}

}  // namespace clustertwin::scheduler
