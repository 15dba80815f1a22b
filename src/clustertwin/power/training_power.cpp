#include "clustertwin/power/training_power.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <string>

#include "clustertwin/base/check.h"
#include "clustertwin/base/text.h"
#include "clustertwin/base/units_parse.h"
#include "clustertwin/power/energy.h"
#include "clustertwin/power/power_setup.h"
#include "clustertwin/power/racks.h"
#include "clustertwin/power/step_power.h"
#include "clustertwin/workload/layout.h"

namespace clustertwin::power {
namespace {

std::string fmt_W(double w) { return base::format_quantity(w, base::Dimension::kWatts, 3); }

// The options' own checks (the settings stage checks the cap, clock, smoothing and cooling).
base::Status check_options(const TrainingPowerOptions& o) {
  // Upper ends far above any grid (retail power costs well under 1 per kWh; coal emits about
  // 1,000 gCO2/kWh): beyond them the cost and carbon of a long run overflow to inf.
  if (!(o.price_per_kWh >= 0 && o.price_per_kWh <= 1e6)) {
    return base::fail(
        fmt::format("{{price}}: expected 0 to 1e6 per kWh, got {:g}", o.price_per_kWh));
  }
  if (!(o.grid_gCO2_per_kWh >= 0 && o.grid_gCO2_per_kWh <= 1e6)) {
    return base::fail(fmt::format("{{grid_intensity}}: expected 0 to 1e6 gCO2/kWh, got {:g}",
                                  o.grid_gCO2_per_kWh));
  }
  const auto& w = o.window;
  if (w.checkpoint_every_s > 0 &&
      (w.checkpoint_every_s < 1 || w.checkpoint_every_s <= w.checkpoint_s)) {
    return base::fail(
        fmt::format("{{checkpoint_every}} {:g} s: expected at least 1 s and more than the "
                    "checkpoint pause ({:g} s)",
                    w.checkpoint_every_s, w.checkpoint_s));
  }
  if (w.resolution_s <= 0 || w.resolution_s > 10) {
    return base::fail(fmt::format("{{resolution}} {:g} s: expected a positive step of at most 10 s",
                                  w.resolution_s));
  }
  return {};
}

// The step under some GPU settings and what the power view made of it: the chunks' power, the
// GPU's power levels, the rack classes' power and the cluster's over the step.
struct StepState {
  GpuSettings g;
  std::vector<ChunkPower> cps;
  PowerLevels lv;
  RackPacking racks;
  StepSweep swept;
};

// Runs the step under `st.g`: the chunks' compute slowed by their profiles' factor, fed back to
// execution through its own field (TrainingSetup::cap_slowdown) and simulated again when it binds;
// then the stage timelines, the rack classes and the cluster over it.
class StepRunner {
 public:
  StepRunner(const execution::TrainingSetup& setup, const execution::TrainingResult& base_run,
             const GpuPowerModel& gm, const SystemPowerModel& sm, bool feedback)
      : setup_(setup),
        base_(base_run),
        gm_(gm),
        sm_(sm),
        prof_(build_profiles(gm, setup)),
        feedback_(feedback) {}

  base::Status run(StepState& st, TrainingPowerResult& R) const {
    st.cps = chunk_powers(prof_, setup_, gm_, st.g);
    const double slow = slowdown_of(st.cps);
    R.compute_slowdown = slow;
    if (!feedback_ || slow <= 1.0 + 1e-6) {
      R.training = base_;
    } else {
      execution::TrainingSetup s2 = setup_;
      s2.cap_slowdown = slow;
      auto r = execution::simulate_training_step(s2);
      if (!r) return base::fail(r.error());
      R.training = std::move(*r);
    }
    auto& lv = st.lv;
    lv.idle_W = gm_.idle_W();
    lv.wait_W = gm_.comm_W(0);
    lv.comm_W = gm_.apply(gm_.comm_W(1), false, st.g).power_W;
    lv.optimizer_W = gm_.apply(gm_.memory_bound_W(*setup_.compute), false, st.g).power_W;
    const auto& b = R.training.breakdown;
    const double comm = (b.tp_comm + b.cp_comm + b.ep_comm) / 2;
    lv.fwd_comm_share = comm > 0 ? comm / (b.forward_compute + comm) : 0;
    lv.bwd_comm_share = comm > 0 ? comm / (b.backward_compute + b.recompute + comm) : 0;
    auto stl = stage_timelines(R.training, setup_.layout, st.cps, lv);
    st.swept =
        sweep_step(stl, R.training.step_time_s, st.racks.classes, sm_, lv.idle_W, R.fabric.ac_W);
    R.stage_timelines = std::move(stl.timelines);
    return {};
  }

 private:
  const execution::TrainingSetup& setup_;
  const execution::TrainingResult& base_;
  const GpuPowerModel& gm_;
  const SystemPowerModel& sm_;
  Profiles prof_;
  bool feedback_;
};

// The rack limit (racks.h): a class's system over the usable PSU capacity caps the GPUs at the
// largest limit that fits (power_setup.h) and the step runs again, or (not enforced) says so.
base::Status apply_rack_limit(TrainingPowerResult& R, StepState& st, const StepRunner& step,
                              const PowerSetup& ps, bool enforce) {
  const RackLimit limit = rack_limit(ps.sm());
  R.rack_limit_W = limit.dc_W;
  R.rack_limit_ac_W = limit.ac_W;
  R.rack_limit_basis = limit.basis;
  double need = 0;
  for (const auto& c : st.racks.classes) need = std::max(need, c.peak_dc_W / c.systems);
  if (!limit.exceeded_by(need)) return {};
  if (enforce) {
    const double before = R.training.step_time_s;
    st.g.cap = base::watts(
        ps.rack_limit_cap_W(st.g.cap.base() > 0 ? st.g.cap.base() : ps.gpu->tgp.base()));
    R.cap_reason = "rack limit";
    if (auto s = step.run(st, R); !s) return s;
    R.rack_limit_binds = true;
    const auto& psu = ps.system_params->psu;
    R.rack_limit_message = fmt::format(
        "rack limit binds: a {} needs {} DC at its peak, over the {} usable PSU capacity ({} of "
        "{} units of {}, the rest redundant); GPUs capped at {} each, step time {:.3f} s -> "
        "{:.3f} s (+{:.1f}%)",
        ps.system->name, fmt_W(need), fmt_W(R.rack_limit_W), psu.units - psu.redundant_units,
        psu.units, fmt_W(psu.rating.base()), fmt_W(st.g.cap.base()), before, R.training.step_time_s,
        100 * (R.training.step_time_s / before - 1));
  } else {
    R.rack_limit_message = fmt::format("rack over its limit: needs {} DC, {} usable", fmt_W(need),
                                       fmt_W(R.rack_limit_W));
  }
  R.warnings.push_back(R.rack_limit_message);
  return {};
}

// Per GPU over the step: the levels, each stage's timeline's average, peak and minimum, compute.
void gpu_figures(TrainingPowerResult& R, const StepState& st, const GpuPowerModel& gm,
                 const workload::TrainingLayout& l) {
  const auto& tr = R.training;
  R.step_time_s = tr.step_time_s;
  R.tokens_per_step = tr.tokens_per_step;
  R.gpu_idle_W = gm.idle_W();
  R.gpu_floor_W = gm.floor_W();
  R.gpu_comm_W = st.lv.comm_W;
  R.gpu_memory_bound_W = st.lv.optimizer_W;
  double e_gpu = 0, pk = 0, mn = 1e300, comp_e = 0, comp_t = 0;
  for (const auto& tl : R.stage_timelines) {
    R.stage_avg_W.push_back(tl.average_W());
    e_gpu += tl.energy_per_period_J();
    pk = std::max(pk, tl.peak_W());
    mn = std::min(mn, tl.min_W());
  }
  for (const auto& c : st.cps) {
    comp_e += c.fwd.energy_J + c.bwd.energy_J;
    comp_t += c.fwd.capped_time_s + c.bwd.capped_time_s;
  }
  R.gpu_compute_W = comp_t > 0 ? comp_e / comp_t : 0;
  R.gpu_avg_W = e_gpu / (l.pp * tr.step_time_s);
  R.gpu_peak_W = pk;
  R.gpu_min_W = mn;
  R.gpu_energy_per_step_J = e_gpu * (static_cast<double>(l.gpus()) / l.pp);
}

// The rack classes' figures: the worst class's rack (highest peak per system) at its peak, a full
// rack at the GPUs' power-limited draw, the job's racks; the cluster over the step.
void rack_figures(TrainingPowerResult& R, const StepState& st, const PowerSetup& ps,
                  int systems_in_cluster) {
  const auto& classes = st.racks.classes;
  const auto& sm = ps.sm();
  R.rack_classes = classes;
  size_t worst = 0;
  for (size_t i = 0; i < classes.size(); ++i) {
    if (classes[i].peak_ac_W / classes[i].systems >
        classes[worst].peak_ac_W / classes[worst].systems)
      worst = i;
  }
  R.worst_class = worst;
  const auto& wc = classes[worst];
  R.rack_avg_W = wc.avg_ac_W;
  R.rack_peak_W = wc.peak_ac_W;
  R.rack_min_W = wc.min_ac_W;
  R.rack_peak = class_power(wc, sm, st.swept.peak_sum[worst], true);
  const int rack_gpus = sm.gpus() * R.systems_per_rack;
  const RackClass full{
      .stage_gpus = {rack_gpus}, .present = {{0, rack_gpus}}, .systems = R.systems_per_rack};
  R.rack_full_load =
      class_power(full, sm, ps.gm().limited_W(R.cap_W) * sm.gpus() * R.systems_per_rack, true);
  for (const auto& c : classes) R.job_racks += c.job_gpus() > 0 ? c.count : 0;
  R.cluster_avg_W = st.swept.it_avg_W;
  R.cluster_peak_W = st.swept.it_peak_W;
  R.cluster_min_W = st.swept.it_min_W;
  R.cluster_nameplate_W = sm.nameplate_W() * systems_in_cluster + R.fabric.dc_W;
}

// Energy (energy.h): the job's IT share per step (its racks and its share of the fabric), x PUE,
// per token, and a run of the token budget.
void energy_figures(TrainingPowerResult& R, const TrainingPowerOptions& o, int64_t job_gpus,
                    int64_t cluster_gpus) {
  const auto& tr = R.training;
  double job_e = 0;
  for (const auto& c : R.rack_classes) {
    if (c.job_gpus() > 0) job_e += c.count * c.avg_ac_W * tr.step_time_s;
  }
  job_e += R.fabric.ac_W * tr.step_time_s * static_cast<double>(job_gpus) /
           static_cast<double>(cluster_gpus);
  R.energy_per_step_J = job_e;
  R.facility_energy_per_step_J = job_e * R.facility.pue;
  const auto per_token = energy_per_token(job_e, tr.tokens_per_step, R.facility.pue);
  R.energy_per_token_J = per_token.it_J;
  R.facility_energy_per_token_J = per_token.facility_J;
  const auto run = run_energy({.token_budget = o.token_budget,
                               .tokens_per_step = tr.tokens_per_step,
                               .step_time_s = tr.step_time_s,
                               .facility_energy_per_step_J = R.facility_energy_per_step_J,
                               .price_per_kWh = o.price_per_kWh,
                               .grid_gCO2_per_kWh = o.grid_gCO2_per_kWh,
                               .gpus = static_cast<double>(job_gpus),
                               .gpu_tgp_W = R.gpu_tgp_W});
  R.run_steps = run.steps;
  R.run_time_s = run.time_s;
  R.run_energy_J = run.energy_J;
  R.run_cost = run.cost;
  R.run_carbon_kg = run.carbon_kg;
  R.run_tdp_energy_J = run.tdp_energy_J;
}

// The window sampled: per bin the first stage's GPU, the worst class's rack, the cluster and the
// grid, each also smoothed when asked.
struct WindowSamples {
  std::vector<double> gpu, rack, cluster, grid, rack_s, cluster_s, grid_s;
};

// Per bin: each stage's GPU power over the job window's intervals (idle, training at the stage's
// timeline, other phases at the wait power), each class's racks from it (with smoothing: floored
// while the job runs and through the class's controller), the cluster and the grid (facility).
WindowSamples sample_window(TrainingPowerResult& R, std::span<const WallInterval> sched,
                            const StepState& st, const PowerSetup& ps,
                            const workload::TrainingLayout& l, const FacilityModel& fac,
                            RackSmoothing* smoothing) {
  const auto& classes = st.racks.classes;
  const auto& sm = ps.sm();
  const double dt = R.window.resolution_s;
  const auto n = static_cast<size_t>(std::ceil(R.window.duration_s / dt - 1e-9));
  const auto pp = static_cast<size_t>(l.pp);
  const double gpus_per_stage = static_cast<double>(l.gpus()) / l.pp;
  WindowSamples w;
  for (auto* v : {&w.gpu, &w.rack, &w.cluster, &w.grid}) v->resize(n);
  if (smoothing) {
    for (auto* v : {&w.rack_s, &w.cluster_s, &w.grid_s}) v->resize(n);
  }
  std::vector<double> stage_W(pp), floored(pp);
  // Each stage's timeline position at the start and end of the last training piece: the bins
  // move forward, so the segments are found without bisection (PeriodicTimeline::energy_J).
  std::vector<size_t> hint0(pp, 0), hint1(pp, 0);
  const bool floors = smoothing && smoothing->floor_W() > 0;
  double train_gpu_J = 0;
  size_t j = 0;
  for (size_t b = 0; b < n; ++b) {
    const double a = static_cast<double>(b) * dt, e = std::min(R.window.duration_s, a + dt);
    const double len = e - a;
    std::fill(stage_W.begin(), stage_W.end(), 0.0);
    bool active = false;
    while (j < sched.size() && sched[j].t1_s <= a) ++j;
    for (size_t k = j; k < sched.size() && sched[k].t0_s < e; ++k) {
      const auto& iv = sched[k];
      const double x0 = std::max(a, iv.t0_s), x1 = std::min(e, iv.t1_s);
      if (x1 <= x0) continue;
      if (iv.activity != Activity::kIdle) active = true;
      for (size_t s = 0; s < pp; ++s) {
        double en = 0;
        switch (iv.activity) {
          case Activity::kIdle:
            en = st.lv.idle_W * (x1 - x0);
            break;
          case Activity::kCompute: {
            const auto& tl = R.stage_timelines[s];
            en = tl.energy_J(iv.tau0_s + (x1 - iv.t0_s), hint1[s]) -
                 tl.energy_J(iv.tau0_s + (x0 - iv.t0_s), hint0[s]);
            train_gpu_J += en * gpus_per_stage;
            break;
          }
          default:
            en = st.lv.wait_W * (x1 - x0);
            break;
        }
        stage_W[s] += en / len;
      }
    }
    w.gpu[b] = stage_W[0];
    if (active && floors) {
      for (size_t s = 0; s < pp; ++s) floored[s] = smoothing->floored_W(stage_W[s]);
    }
    double cluster = R.fabric.ac_W, cluster_s = R.fabric.ac_W;
    for (size_t ci = 0; ci < classes.size(); ++ci) {
      const auto& c = classes[ci];
      const double sum = class_gpu_sum(c, stage_W, st.lv.idle_W);
      const auto raw = class_power(c, sm, sum, active);
      cluster += c.count * raw.ac_W;
      if (ci == R.worst_class) w.rack[b] = raw.ac_W;
      if (!smoothing) continue;
      double sum_f = sum;
      if (active && c.job_gpus() > 0 && floors) {
        sum_f = class_gpu_sum(c, floored, st.lv.idle_W);
        smoothing->add_floor_burn(c.count * (sum_f - sum) * len);
      }
      // Above the floor the load is the raw power: the system model is not asked twice.
      const auto load = sum_f == sum ? raw : class_power(c, sm, sum_f, active);
      const double g_dc = smoothing->step(ci, load.dc_W, len);
      const double g_ac = c.systems * sm.psu_input_W(g_dc / c.systems);
      cluster_s += c.count * g_ac;
      if (ci == R.worst_class) w.rack_s[b] = g_ac;
    }
    w.cluster[b] = cluster;
    w.grid[b] = fac.facility_W(cluster);
    if (smoothing) {
      w.cluster_s[b] = cluster_s;
      w.grid_s[b] = fac.facility_W(cluster_s);
    }
  }
  if (smoothing) R.smoothing = smoothing->summary(train_gpu_J);
  return w;
}

// The window's samples against kMaxWindowSamples and kMaxWindowStageSamples; the refusal names
// the resolution that fits (1, 2 or 5 x 10^k s).
base::Status check_window_samples(const JobWindow& w, int64_t stages, size_t classes) {
  const double n = std::ceil(w.duration_s / w.resolution_s - 1e-9);
  const double units = static_cast<double>(stages) + static_cast<double>(classes);
  const double most = std::floor(std::min(kMaxWindowSamples, kMaxWindowStageSamples / units));
  if (n <= most) return {};
  std::string fix = "a shorter window ({duration}, {stop})";
  const double need = w.duration_s / most;
  for (double decade = std::pow(10.0, std::floor(std::log10(need)) - 1); decade <= 10;
       decade *= 10) {
    const double nice[] = {1 * decade, 2 * decade, 5 * decade};
    const auto* it = std::find_if(std::begin(nice), std::end(nice), [&](double r) {
      return r <= 10 && std::ceil(w.duration_s / r - 1e-9) <= most;
    });
    if (it != std::end(nice)) {
      fix = fmt::format("{{resolution}} {:g} s or coarser, or a shorter window", *it);
      break;
    }
  }
  return base::fail(
      fmt::format("{{duration}} / {{resolution}}: expected at most {:.0f} samples for this job, "
                  "got {:g}: a {:g} s window at {:g} s ({{stop}} {:g} s); a window holds at most "
                  "{:g} samples and {:g} samples x (pipeline stages + rack classes), here {} + "
                  "{}; use {}",
                  most, n, w.duration_s, w.resolution_s, w.stop_s, kMaxWindowSamples,
                  kMaxWindowStageSamples, stages, classes, fix));
}

// The waveforms over the job window, with and without smoothing (smoothing.h), and what
// smoothing did to the grid: its peak, its extra energy, its swing while training.
base::Status window_waveforms(TrainingPowerResult& R, const StepState& st, const PowerSetup& ps,
                              const workload::TrainingLayout& l, const FacilityModel& fac) {
  const double dt = R.window.resolution_s;
  // The window as sampled: with no duration given it ends 20 s after the stop, so a far stop
  // (or a tiny resolution) is counted here, in doubles, before anything is allocated.
  const auto sched = job_schedule(R.window, R.training.step_time_s);
  if (auto s = check_window_samples(R.window, l.pp, st.racks.classes.size()); !s) return s;
  std::optional<RackSmoothing> smoothing;
  if (ps.smoothing) {
    smoothing.emplace(*ps.smoothing, ps.gpu->tgp.base());
    for (const auto& c : st.racks.classes) smoothing->add(c.count, c.systems * ps.sm().gpus());
  }
  auto w = sample_window(R, sched, st, ps, l, fac, smoothing ? &*smoothing : nullptr);
  const auto& wc = st.racks.classes[R.worst_class];
  std::string stages;
  for (size_t s = 0; s < wc.stage_gpus.size(); ++s) {
    if (wc.stage_gpus[s] > 0) stages += (stages.empty() ? "" : ",") + std::to_string(s);
  }
  const std::string rack =
      fmt::format("rack (stage{} {})", stages.find(',') == std::string::npos ? "" : "s",
                  stages.empty() ? "none" : stages);
  const double rack_limit = R.systems_per_rack == 1 ? ps.sm().psu_input_W(R.rack_limit_W) : 0;
  auto add = [&](std::string name, std::vector<double>& v, double limit, bool spectrum) {
    R.waveforms.push_back({.name = std::move(name),
                           .dt_s = dt,
                           .power_W = std::move(v),
                           .limit_W = limit,
                           .stats = {}});
    R.waveforms.back().stats = waveform_stats(R.waveforms.back().power_W, dt, spectrum);
  };
  add("gpu (stage 0)", w.gpu, R.cap_W, false);
  add(rack, w.rack, rack_limit, false);
  if (smoothing) add(rack + ", smoothed", w.rack_s, rack_limit, false);
  add("cluster IT", w.cluster, 0, true);
  if (smoothing) add("cluster IT, smoothed", w.cluster_s, 0, true);
  add("grid (facility)", w.grid, 0, true);
  if (!smoothing) return {};
  add("grid (facility), smoothed", w.grid_s, 0, true);
  const auto& raw = R.waveforms[R.waveforms.size() - 2];
  const auto& smoothed = R.waveforms.back();
  R.smoothing.peak_reduction = peak_reduction(raw.power_W, smoothed.power_W);
  R.smoothing.extra_energy_J = smoothed.stats.energy_J - raw.stats.energy_J;
  // Swing during training: the grid waveform between start+init and stop.
  const auto i0 = static_cast<size_t>((R.window.start_s + R.window.init_s) / dt) + 1;
  const auto i1 = static_cast<size_t>(R.window.stop_s / dt);
  if (i1 > i0 + 2) {
    const std::span<const double> r(raw.power_W), s(smoothed.power_W);
    R.smoothing.swing_reduction = swing_reduction(r.subspan(i0, i1 - i0), s.subspan(i0, i1 - i0));
  }
  return {};
}

}  // namespace

base::Result<double> training_compute_slowdown(const hardware::Catalog& catalog,
                                               const PowerCatalog& power,
                                               const execution::TrainingSetup& setup,
                                               const hardware::GpuSpec& gpu, const GpuSettings& s) {
  (void)catalog;
  auto gp = power.gpu(gpu.name);
  if (!gp) return base::fail(gp.error());
  GpuPowerModel gm(gpu, **gp);
  if (auto st = gm.check(s); !st) return base::fail(st.error());
  const auto prof = build_profiles(gm, setup);
  return slowdown_of(chunk_powers(prof, setup, gm, s));
}

base::Result<TrainingPowerResult> analyze_training_power(const TrainingPowerInput& in,
                                                         const TrainingPowerOptions& o) {
  CT_CHECK(
      in.catalog && in.power && in.cluster && in.topology && in.setup.model && in.setup.compute,
      "power analysis needs catalog, power catalog, cluster, topology and a training setup");
  // 1. Settings (power_setup.h, the stage serving shares): the system, its GPU and their power
  //    models; cap (user, node policy), clock lock, smoothing, cooling. Then the options' own.
  auto ps = resolve_power_setup(
      *in.catalog, *in.power, *in.cluster,
      {.gpu = o.gpu, .node_policy = o.node_policy, .smoothing = o.smoothing, .cooling = o.cooling});
  if (!ps) return base::fail(ps.error());
  if (auto st = check_options(o); !st) return base::fail(st.error());
  const auto& sys = *ps->system;
  const auto& setup = in.setup;
  TrainingPowerResult R;
  R.system = sys.name;
  R.systems_per_rack = ps->system_params->systems_per_rack;
  R.price_per_kWh = o.price_per_kWh;
  R.grid_gCO2_per_kWh = o.grid_gCO2_per_kWh;
  R.token_budget = o.token_budget;
  R.cap_reason = ps->cap_reason;
  R.clock_lock_MHz = ps->settings.clock_lock_MHz;
  R.cooling_plan = ps->cooling_plan;
  R.gpu_tgp_W = ps->gpu->tgp.base();

  // 2. The step at the default settings (the caller's if given; only read).
  execution::TrainingResult own_run;
  if (!in.baseline) {
    auto r = execution::simulate_training_step(setup);
    if (!r) return base::fail(r.error());
    own_run = std::move(*r);
  }
  const execution::TrainingResult& base_run = in.baseline ? *in.baseline : own_run;
  R.baseline_step_time_s = base_run.step_time_s;

  // 3. Rack classes (racks.h) and the step under the settings: timelines, classes, cluster.
  R.fabric = fabric_power(*in.catalog, *in.topology, *ps->facility);
  const int64_t cluster_gpus = in.topology->gpus();
  StepState st{.g = ps->settings};
  st.racks =
      pack_stages(setup.layout, setup.first_gpu, cluster_gpus, sys.gpus(), R.systems_per_rack);
  R.racks = st.racks.racks;
  const StepRunner step(setup, base_run, ps->gm(), ps->sm(), o.feedback);
  if (auto s = step.run(st, R); !s) return base::fail(s.error());

  // 4. The rack limit (racks.h), then the figures of GPUs, racks and the cluster.
  if (auto s = apply_rack_limit(R, st, step, *ps, o.enforce_rack_limit); !s)
    return base::fail(s.error());
  R.cap_W = st.g.cap.base() > 0 ? st.g.cap.base() : R.gpu_tgp_W;
  gpu_figures(R, st, ps->gm(), setup.layout);
  rack_figures(R, st, *ps, in.cluster->count);

  // 5. Cooling and facility sized at the racks' peaks (cooling.h), then energy (energy.h).
  const double fl = ps->system_params->liquid_fraction;
  std::vector<RackLoad> loads;
  for (const auto& c : R.rack_classes)
    loads.push_back({static_cast<double>(c.count), c.peak_ac_W, c.avg_ac_W});
  auto sized = size_facility(*ps->facility, R.cooling_plan, fl, {1, R.rack_peak_W, R.rack_avg_W},
                             loads, R.cluster_avg_W, R.cluster_peak_W);
  record_facility(R, sized);
  energy_figures(R, o, setup.layout.gpus(), cluster_gpus);

  // 6. Notes, and the waveforms over the job window (smoothing.h).
  R.notes.push_back(fmt::format(
      "GPU power: activity model on {} ({}), compute-bound power at {:.1f}% of the limit",
      ps->gpu->name, "catalog/power/gpus.yaml", 100 * ps->gpu_params->limit_margin));
  if (R.compute_slowdown > 1 + 1e-6) {
    R.notes.push_back(
        fmt::format("cap/clock slow compute by {:.1f}% (compute-bound share); step re-simulated: "
                    "{:.3f} s -> {:.3f} s",
                    100 * (R.compute_slowdown - 1), R.baseline_step_time_s, R.step_time_s));
  }
  R.notes.push_back(
      "within a forward/backward task the exposed TP/CP/EP communication share is mixed into one "
      "average power (sub-millisecond phases are not resolved)");
  R.window = o.window;
  if (o.waveforms) {
    if (auto s = window_waveforms(R, st, *ps, setup.layout, *sized.model); !s)
      return base::fail(s.error());
  }
  return R;
}

}  // namespace clustertwin::power
