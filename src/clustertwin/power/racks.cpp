// The rack classes stage of the power views (racks.h; docs/models/power.md §2).

#include "clustertwin/power/racks.h"

#include <algorithm>

namespace clustertwin::power {

int RackClass::job_gpus() const {
  int n = 0;
  for (const auto& sg : present) n += sg.second;
  return n;
}

RackPacking pack_stages(const workload::TrainingLayout& l, int64_t first_gpu, int64_t cluster_gpus,
                        int gpus_per_system, int systems_per_rack) {
  RackPacking packing;
  const int64_t job = l.gpus();
  const int64_t per_rack = static_cast<int64_t>(gpus_per_system) * systems_per_rack;
  const int64_t n_racks = (cluster_gpus + per_rack - 1) / per_rack;
  packing.racks = static_cast<int>(n_racks);
  // Stages are outermost in the rank order (workload::coord_of: tp-cp-dp-pp), so stage s holds
  // the job's ranks [s * per_stage, (s + 1) * per_stage): a rack's share of each stage is an
  // interval intersection, O(racks x stages) rather than O(GPUs).
  const int64_t per_stage = job / l.pp;
  // Neighbouring racks mostly hold the same stages: runs of equal keys are counted once, then
  // equal keys merged (sorted by key).
  using Key = std::pair<std::vector<int>, std::pair<int, int>>;
  std::vector<std::pair<Key, int>> runs;
  Key prev;
  int run = 0;
  std::vector<int> stages(static_cast<size_t>(l.pp), 0);
  for (int64_t r = 0; r < n_racks; ++r) {
    const int64_t g0 = r * per_rack, g1 = std::min(cluster_gpus, g0 + per_rack);
    std::fill(stages.begin(), stages.end(), 0);
    const int64_t j0 = std::max(g0, first_gpu) - first_gpu,
                  j1 = std::min(g1, first_gpu + job) - first_gpu;
    int in_job = 0;
    if (j1 > j0) {
      for (int64_t st = j0 / per_stage; st <= (j1 - 1) / per_stage; ++st) {
        const int64_t a = std::max(j0, st * per_stage), b = std::min(j1, (st + 1) * per_stage);
        stages[static_cast<size_t>(st)] = static_cast<int>(b - a);
        in_job += static_cast<int>(b - a);
      }
    }
    const int idle = static_cast<int>(g1 - g0) - in_job;
    const int systems = static_cast<int>((g1 - g0 + gpus_per_system - 1) / gpus_per_system);
    if (run > 0 && prev.second == std::pair{idle, systems} && prev.first == stages) {
      ++run;
      continue;
    }
    if (run > 0) runs.emplace_back(std::move(prev), run);
    prev = {stages, {idle, systems}};
    run = 1;
  }
  if (run > 0) runs.emplace_back(std::move(prev), run);
  std::sort(runs.begin(), runs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<Key, int>> classes;
  for (auto& r : runs) {
    if (!classes.empty() && classes.back().first == r.first) {
      classes.back().second += r.second;
    } else {
      classes.push_back(std::move(r));
    }
  }
  std::vector<RackClass> out;
  out.reserve(classes.size());
  for (const auto& [key, count] : classes) {
    RackClass c;
    c.stage_gpus = key.first;
    for (size_t st = 0; st < c.stage_gpus.size(); ++st) {
      if (c.stage_gpus[st] > 0) c.present.emplace_back(static_cast<int>(st), c.stage_gpus[st]);
    }
    c.idle_gpus = key.second.first;
    c.systems = key.second.second;
    c.count = count;
    out.push_back(std::move(c));
  }
  // Job racks first (among them, by their stage shares: later stages first), for readable
  // output.
  std::stable_sort(out.begin(), out.end(), [](const RackClass& a, const RackClass& b) {
    return a.job_gpus() > b.job_gpus();
  });
  packing.classes = std::move(out);
  return packing;
}

double class_gpu_sum(const RackClass& c, std::span<const double> stage_W, double idle_W) {
  double s = c.idle_gpus * idle_W;
  for (const auto& [st, n] : c.present) s += n * stage_W[static_cast<size_t>(st)];
  return s;
}

SystemBreakdown class_power(const RackClass& c, const SystemPowerModel& sm, double gpu_sum,
                            bool active) {
  const double n = c.systems;
  auto b = sm.at(gpu_sum / n, active && c.job_gpus() > 0);
  for (double* x : {&b.gpus_W, &b.cpus_W, &b.nics_W, &b.board_W, &b.fans_W, &b.switch_trays_W,
                    &b.misc_W, &b.dc_W, &b.psu_loss_W, &b.ac_W}) {
    *x *= n;
  }
  return b;
}

PoolRackPower pool_rack_power(const SystemPowerModel& sm, int systems_per_rack, double gpu_W,
                              double idle_W, int64_t pool_gpus) {
  const int per_sys = sm.gpus();
  const int per_rack = per_sys * systems_per_rack;
  const auto n = static_cast<int>(std::min<int64_t>(pool_gpus, per_rack));
  const int full = n / per_sys, part = n % per_sys;
  const int idle_sys = systems_per_rack - full - (part > 0 ? 1 : 0);
  PoolRackPower r;
  auto add = [&](int count, int busy) {
    if (count <= 0) return;
    const auto b = sm.at(busy * gpu_W + (per_sys - busy) * idle_W, busy > 0);
    r.ac_W += count * b.ac_W;
    r.dc_W = std::max(r.dc_W, b.dc_W);
    r.dc_total_W += count * b.dc_W;
  };
  add(full, per_sys);
  add(part > 0 ? 1 : 0, part);
  add(idle_sys, 0);
  return r;
}

double pool_it_share_W(const SystemPowerModel& sm, int systems_per_rack, double gpu_W,
                       int64_t pool_gpus) {
  const int per_rack = sm.gpus() * systems_per_rack;
  return sm.ac_W(gpu_W * sm.gpus(), true) * systems_per_rack / per_rack *
         static_cast<double>(pool_gpus);
}

bool RackLimit::exceeded_by(double dc) const { return dc > dc_W * (1 + 1e-9); }

RackLimit rack_limit(const SystemPowerModel& sm) {
  return {.dc_W = sm.usable_W(), .ac_W = sm.usable_ac_W(), .basis = sm.usable_basis()};
}

}  // namespace clustertwin::power
