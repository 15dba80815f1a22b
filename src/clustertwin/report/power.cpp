#include "clustertwin/report/power.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "clustertwin/base/units_parse.h"
#include "clustertwin/report/table.h"

namespace clustertwin::report {
namespace {

double r6(double v) { return round_sig(v); }

std::string W(double w) { return base::format_quantity(w, base::Dimension::kWatts, 3); }
std::string J(double j) { return base::format_quantity(j, base::Dimension::kJoules, 3); }

// 15T, 2.5B, 300M tokens.
std::string count(double n) {
  const char* suffix[] = {"", "K", "M", "B", "T"};
  int k = 0;
  while (k < 4 && n >= 1000) {
    n /= 1000;
    ++k;
  }
  return fmt::format("{:.3g}{}", n, suffix[k]);
}

Json smoothing_json(const power::SmoothingSummary& s) {
  return {{"floor_fraction", r6(s.settings.floor)},
          {"ramp_up_W_per_s_per_gpu", r6(s.settings.ramp_up_W_per_s)},
          {"ramp_down_W_per_s_per_gpu", r6(s.settings.ramp_down_W_per_s)},
          {"hysteresis_s", r6(s.settings.hysteresis_s)},
          {"storage_per_gpu_J", r6(s.settings.storage_per_gpu_J)},
          {"average_s", r6(s.settings.average_s)},
          {"storage_J", r6(s.storage_J)},
          {"floor_burn_J", r6(s.floor_burn_J)},
          {"ramp_burn_J", r6(s.ramp_burn_J)},
          {"unserved_J", r6(s.unserved_J)},
          {"storage_losses_J", r6(s.storage_losses_J)},
          {"extra_energy_J", r6(s.extra_energy_J)},
          {"throttle_slowdown", r6(s.throttle_slowdown)},
          {"peak_reduction", r6(s.peak_reduction)},
          {"swing_reduction", r6(s.swing_reduction)}};
}

// `during`: where the swing is measured ("in training"); `work`: whose GPU energy the throttled
// energy is a share of ("training").
std::string smoothing_table(const power::SmoothingSummary& s, const char* during,
                            const char* work) {
  Table t({"power smoothing", ""}, {true});
  t.add({"floor (per GPU)", fmt::format("{:.0f}% TDP", 100 * s.settings.floor)});
  t.add({"ramp up / down (per GPU)",
         fmt::format("{:g} / {:g} W/s", s.settings.ramp_up_W_per_s, s.settings.ramp_down_W_per_s)});
  t.add({"hysteresis / storage (per GPU)",
         fmt::format("{:g} s / {:g} J", s.settings.hysteresis_s, s.settings.storage_per_gpu_J)});
  if (s.settings.average_s > 0) {
    t.add({"averaging time constant", fmt::format("{:g} s", s.settings.average_s)});
  }
  t.add({"grid peak reduction", fmt::format("{:.1f}%", 100 * s.peak_reduction)});
  t.add(
      {fmt::format("swing reduction {}", during), fmt::format("{:.1f}%", 100 * s.swing_reduction)});
  t.add({"energy to hold the floor", J(s.floor_burn_J)});
  t.add({"energy burned while ramping down", J(s.ramp_burn_J)});
  t.add({"extra grid energy", J(s.extra_energy_J)});
  t.add(
      {"throttled (unserved) energy", fmt::format("{} ({:.2f}% of GPU {} energy)", J(s.unserved_J),
                                                  100 * s.throttle_slowdown, work)});
  return t.render(2);
}

Json stats_json(const power::WaveformStats& s, bool spectrum) {
  Json j = {{"mean_W", r6(s.mean_W)},
            {"peak_W", r6(s.peak_W)},
            {"min_W", r6(s.min_W)},
            {"swing_W", r6(s.swing_W)},
            {"max_ramp_up_W_per_s", r6(s.max_ramp_up_W_per_s)},
            {"max_ramp_down_W_per_s", r6(s.max_ramp_down_W_per_s)},
            {"energy_J", r6(s.energy_J)}};
  if (spectrum) {
    j["band_0p1_2Hz_rms_W"] = r6(s.band_0p1_2Hz_rms_W);
    j["band_3_30Hz_rms_W"] = r6(s.band_3_30Hz_rms_W);
  }
  return j;
}

bool has_spectrum(const power::Waveform& w) {
  return w.name.rfind("cluster", 0) == 0 || w.name.rfind("grid", 0) == 0;
}

Json waveforms_json(const std::vector<power::Waveform>& waveforms, size_t max_points) {
  Json waves = Json::array();
  for (const auto& wf : waveforms) {
    double dt = 0;
    const auto d = power::downsample(wf.power_W, wf.dt_s, max_points, &dt);
    Json t = Json::array(), p = Json::array();
    for (size_t i = 0; i < d.size(); ++i) {
      t.push_back(r6(static_cast<double>(i) * dt));
      p.push_back(r6(d[i]));
    }
    Json x = {{"name", wf.name}, {"t_s", t}, {"power_W", p}, {"resolution_s", r6(wf.dt_s)}};
    if (wf.limit_W > 0) x["limit_W"] = r6(wf.limit_W);
    x["stats"] = stats_json(wf.stats, has_spectrum(wf));
    waves.push_back(x);
  }
  return waves;
}

Json facility_json(const power::FacilityPower& f) {
  return {{"it_W", r6(f.it_W)},
          {"distribution_loss_W", r6(f.distribution_loss_W)},
          {"cdu_pumps_W", r6(f.cdu_pumps_W)},
          {"heat_rejection_W", r6(f.heat_rejection_W)},
          {"chiller_W", r6(f.chiller_W)},
          {"air_cooling_W", r6(f.air_cooling_W)},
          {"facility_pumps_W", r6(f.facility_pumps_W)},
          {"auxiliary_W", r6(f.auxiliary_W)},
          {"facility_W", r6(f.facility_W)},
          {"pue_given", f.pue_given},
          {"cdus", f.cdus},
          {"cdu_load", r6(f.cdu_load)}};
}

// The cooling block of both power views: the plan, the hottest rack's heat (all of it and its
// liquid share, what the CDU warning compares), coolant flow and return temperatures, the
// cluster's coolant flow.
Json cooling_json(const power::CoolingPlan& plan, const power::RackCooling& c,
                  double cluster_flow_L_per_min) {
  return {{"coolant", plan.coolant.name},
          {"supply_C", r6(plan.supply_C)},
          {"delta_T_K", r6(plan.delta_T_K)},
          {"rack_heat_peak_W", r6(c.heat_peak_W)},
          {"rack_liquid_heat_peak_W", r6(c.liquid_peak_W)},
          {"rack_flow_L_per_min", r6(c.flow_L_per_min)},
          {"rack_return_avg_C", r6(c.return_avg_C)},
          {"rack_return_peak_C", r6(c.return_peak_C)},
          {"cluster_flow_L_per_min", r6(cluster_flow_L_per_min)}};
}

}  // namespace

std::string sparkline(const std::vector<double>& w, size_t width) {
  static const char* kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (w.empty() || width == 0) return "";
  double dt = 0;
  const auto d = power::downsample(w, 1.0, width, &dt);
  const auto [mn, mx] = std::minmax_element(d.begin(), d.end());
  std::string s;
  for (double x : d) {
    const double f = *mx > *mn ? (x - *mn) / (*mx - *mn) : 0.5;
    s += kBlocks[std::clamp(static_cast<int>(f * 7.999), 0, 7)];
  }
  return s;
}

Json power_json(const power::TrainingPowerResult& r, size_t max_points) {
  Json j;
  j["gpu_tgp_W"] = r6(r.gpu_tgp_W);
  j["gpu_cap_W"] = r6(r.cap_W);
  j["cap_reason"] = r.cap_reason;
  if (r.clock_lock_MHz > 0) j["clock_lock_MHz"] = r6(r.clock_lock_MHz);
  j["gpu_idle_W"] = r6(r.gpu_idle_W);
  j["gpu_avg_W"] = r6(r.gpu_avg_W);
  j["gpu_peak_W"] = r6(r.gpu_peak_W);
  j["gpu_min_W"] = r6(r.gpu_min_W);
  j["gpu_compute_W"] = r6(r.gpu_compute_W);
  j["gpu_memory_bound_W"] = r6(r.gpu_memory_bound_W);
  j["gpu_comm_W"] = r6(r.gpu_comm_W);
  Json stages = Json::array();
  for (double w : r.stage_avg_W) stages.push_back(r6(w));
  j["stage_gpu_avg_W"] = stages;
  j["compute_slowdown"] = r6(r.compute_slowdown);
  j["step_time_s"] = r6(r.step_time_s);
  j["baseline_step_time_s"] = r6(r.baseline_step_time_s);
  j["system"] = r.system;
  j["racks"] = r.racks;
  j["job_racks"] = r.job_racks;
  j["systems_per_rack"] = r.systems_per_rack;
  j["rack_avg_W"] = r6(r.rack_avg_W);
  j["rack_peak_W"] = r6(r.rack_peak_W);
  j["rack_min_W"] = r6(r.rack_min_W);
  j["rack_full_load_W"] = r6(r.rack_full_load.ac_W);
  j["rack_limit_W"] = r6(r.rack_limit_W);
  j["rack_limit_ac_W"] = r6(r.rack_limit_ac_W);
  j["rack_limit_basis"] = r.rack_limit_basis;
  j["rack_limit_binds"] = r.rack_limit_binds;
  if (!r.rack_limit_message.empty()) j["rack_limit_message"] = r.rack_limit_message;
  const auto& b = r.rack_peak;
  j["rack_peak_breakdown_W"] = {
      {"gpus", r6(b.gpus_W)},    {"cpus", r6(b.cpus_W)}, {"nics", r6(b.nics_W)},
      {"boards", r6(b.board_W)}, {"fans", r6(b.fans_W)}, {"switch_trays", r6(b.switch_trays_W)},
      {"misc", r6(b.misc_W)},    {"dc", r6(b.dc_W)},     {"psu_loss", r6(b.psu_loss_W)},
      {"ac", r6(b.ac_W)}};
  j["cluster_avg_W"] = r6(r.cluster_avg_W);
  j["cluster_peak_W"] = r6(r.cluster_peak_W);
  j["cluster_min_W"] = r6(r.cluster_min_W);
  j["cluster_nameplate_W"] = r6(r.cluster_nameplate_W);
  j["fabric_W"] = r6(r.fabric.ac_W);
  j["facility_W"] = r6(r.facility.facility_W);
  j["facility_peak_W"] = r6(r.facility_peak_W);
  j["pue"] = r6(r.facility.pue);
  j["facility"] = facility_json(r.facility);
  const auto& c = r.rack_cooling;
  // Also flat, for tables that show scalars only (the HTML report's power card).
  j["rack_coolant_flow_L_per_min"] = r6(c.flow_L_per_min);
  j["rack_return_peak_C"] = r6(c.return_peak_C);
  j["coolant_supply_C"] = r6(r.cooling_plan.supply_C);
  j["cooling"] = cooling_json(r.cooling_plan, c, r.cluster_flow_L_per_min);
  j["gpu_energy_per_step_J"] = r6(r.gpu_energy_per_step_J);
  j["energy_per_step_J"] = r6(r.energy_per_step_J);
  j["facility_energy_per_step_J"] = r6(r.facility_energy_per_step_J);
  j["energy_per_token_J"] = r6(r.energy_per_token_J);
  j["facility_energy_per_token_J"] = r6(r.facility_energy_per_token_J);
  if (r.token_budget > 0) {
    Json run = {{"tokens", r6(r.token_budget)},
                {"steps", r6(r.run_steps)},
                {"time_s", r6(r.run_time_s)},
                {"energy_J", r6(r.run_energy_J)},
                {"energy_kWh", r6(r.run_energy_J / 3.6e6)},
                {"tdp_accounting_energy_J", r6(r.run_tdp_energy_J)}};
    if (r.price_per_kWh > 0) {
      run["price_per_kWh"] = r6(r.price_per_kWh);
      run["cost"] = r6(r.run_cost);
    }
    if (r.grid_gCO2_per_kWh > 0) {
      run["grid_gCO2_per_kWh"] = r6(r.grid_gCO2_per_kWh);
      run["carbon_kg"] = r6(r.run_carbon_kg);
    }
    j["run"] = run;
  }
  if (r.smoothing.enabled) j["smoothing"] = smoothing_json(r.smoothing);
  const auto& w = r.window;
  j["window"] = {{"duration_s", r6(w.duration_s)},
                 {"resolution_s", r6(w.resolution_s)},
                 {"start_s", r6(w.start_s)},
                 {"init_s", r6(w.init_s)},
                 {"stop_s", r6(w.stop_s)},
                 {"checkpoint_every_s", r6(w.checkpoint_every_s)},
                 {"checkpoint_s", r6(w.checkpoint_s)}};
  j["waveforms"] = waveforms_json(r.waveforms, max_points);
  j["notes"] = r.notes;
  j["warnings"] = r.warnings;
  return j;
}

std::string power_text(const power::TrainingPowerResult& r) {
  std::string o;
  o += fmt::format(
      "  GPU ({}) limit {} ({}){}\n", r.system, W(r.cap_W), r.cap_reason,
      r.clock_lock_MHz > 0 ? fmt::format(", clock locked at {:.0f} MHz", r.clock_lock_MHz) : "");
  if (r.compute_slowdown > 1 + 1e-6) {
    o += fmt::format("  compute slowed {:.1f}% by the limit: step {:.3f} s -> {:.3f} s\n",
                     100 * (r.compute_slowdown - 1), r.baseline_step_time_s, r.step_time_s);
  }
  Table g({"per GPU", "W"}, {true});
  g.add({"average over the step", fmt::format("{:.0f}", r.gpu_avg_W)});
  g.add({"forward/backward compute", fmt::format("{:.0f}", r.gpu_compute_W)});
  g.add({"memory-bound (optimizer)", fmt::format("{:.0f}", r.gpu_memory_bound_W)});
  g.add({"communication wait", fmt::format("{:.0f}", r.gpu_comm_W)});
  g.add({"idle", fmt::format("{:.0f}", r.gpu_idle_W)});
  g.add({"peak / min in the step", fmt::format("{:.0f} / {:.0f}", r.gpu_peak_W, r.gpu_min_W)});
  o += "\n" + g.render(2);
  const auto& b = r.rack_peak;
  Table k({fmt::format("{} at its peak",
                       r.systems_per_rack > 1
                           ? "rack of " + std::to_string(r.systems_per_rack) + " systems"
                           : "rack"),
           "kW"},
          {true});
  k.add({"GPUs", fmt::format("{:.1f}", b.gpus_W / 1e3)});
  k.add({"CPUs", fmt::format("{:.1f}", b.cpus_W / 1e3)});
  k.add({"NICs", fmt::format("{:.1f}", b.nics_W / 1e3)});
  k.add({"boards (memory, DPU, storage)", fmt::format("{:.1f}", b.board_W / 1e3)});
  if (b.fans_W > 0) k.add({"fans", fmt::format("{:.1f}", b.fans_W / 1e3)});
  if (b.switch_trays_W > 0)
    k.add({"NVLink switch trays", fmt::format("{:.1f}", b.switch_trays_W / 1e3)});
  k.add({"rack overheads", fmt::format("{:.1f}", b.misc_W / 1e3)});
  k.add({"DC total", fmt::format("{:.1f}", b.dc_W / 1e3)});
  k.add({"PSU losses", fmt::format("{:.1f}", b.psu_loss_W / 1e3)});
  k.add({"AC input (peak)", fmt::format("{:.1f}", b.ac_W / 1e3)});
  k.add({"AC input (step average)", fmt::format("{:.1f}", r.rack_avg_W / 1e3)});
  k.add({"AC input, every GPU at its limit", fmt::format("{:.1f}", r.rack_full_load.ac_W / 1e3)});
  if (r.rack_limit_W > 0 && r.systems_per_rack == 1)
    k.add({"usable PSU capacity (DC)", fmt::format("{:.1f}", r.rack_limit_W / 1e3)});
  o += "\n" + k.render(2);
  if (!r.rack_limit_message.empty()) o += "  " + r.rack_limit_message + "\n";
  Table c({"cluster and facility", ""}, {true});
  c.add({"racks (with the job)", fmt::format("{} ({})", r.racks, r.job_racks)});
  c.add({"IT power: average / peak / min",
         fmt::format("{} / {} / {}", W(r.cluster_avg_W), W(r.cluster_peak_W), W(r.cluster_min_W))});
  c.add({"of which fabric (switches, optics)", W(r.fabric.ac_W)});
  c.add({"nameplate", W(r.cluster_nameplate_W)});
  c.add({"facility power (average)", W(r.facility.facility_W)});
  c.add({"PUE", fmt::format("{:.3f}{}", r.facility.pue, r.facility.pue_given ? " (given)" : "")});
  c.add({"coolant", fmt::format("{}, supply {:.0f} C, dT {:.0f} K", r.cooling_plan.coolant.name,
                                r.cooling_plan.supply_C, r.cooling_plan.delta_T_K)});
  if (r.rack_cooling.flow_L_per_min > 0) {
    c.add({"coolant flow per rack",
           fmt::format("{:.0f} L/min (return {:.1f} C average, {:.1f} C peak)",
                       r.rack_cooling.flow_L_per_min, r.rack_cooling.return_avg_C,
                       r.rack_cooling.return_peak_C)});
    c.add({"cluster flow / CDUs",
           fmt::format("{:.0f} L/min / {} CDUs at {:.0f}% load, pumps {}", r.cluster_flow_L_per_min,
                       r.facility.cdus, 100 * r.facility.cdu_load, W(r.facility.cdu_pumps_W))});
  } else {
    c.add({"cooling", "air (no coolant loop)"});
  }
  o += "\n" + c.render(2);
  Table e({"energy", ""}, {true});
  e.add({"per step (IT, the job)", J(r.energy_per_step_J)});
  e.add({"per step (facility)", J(r.facility_energy_per_step_J)});
  e.add({"per token (facility / IT)",
         fmt::format("{:.3g} J / {:.3g} J", r.facility_energy_per_token_J, r.energy_per_token_J)});
  if (r.token_budget > 0) {
    e.add(
        {"training run", fmt::format("{} tokens in {:.1f} days: {:.3g} MWh", count(r.token_budget),
                                     r.run_time_s / 86400, r.run_energy_J / 3.6e9)});
    e.add({"  TDP accounting (GPU-hours x TGP)",
           fmt::format("{:.3g} MWh", r.run_tdp_energy_J / 3.6e9)});
    if (r.price_per_kWh > 0)
      e.add({"  cost", fmt::format("{:.4g} at {:g} per kWh", r.run_cost, r.price_per_kWh)});
    if (r.grid_gCO2_per_kWh > 0) {
      e.add({"  carbon", fmt::format("{:.4g} t CO2 at {:g} g/kWh", r.run_carbon_kg / 1e3,
                                     r.grid_gCO2_per_kWh)});
    }
  }
  o += "\n" + e.render(2);
  if (r.smoothing.enabled) o += "\n" + smoothing_table(r.smoothing, "in training", "training");
  if (!r.waveforms.empty()) {
    const auto& w = r.window;
    o += fmt::format(
        "\n  waveforms: {:.0f} s at {:g} ms; job {:.0f}-{:.0f} s{}\n", w.duration_s,
        1e3 * w.resolution_s, w.start_s, w.stop_s,
        w.checkpoint_every_s > 0 && w.checkpoint_s > 0
            ? fmt::format(", checkpoint {:g} s every {:g} s", w.checkpoint_s, w.checkpoint_every_s)
            : "");
    Table t(
        {"waveform", "mean", "peak", "min", "swing", "max ramp up", "0.1-2 Hz rms", "3-30 Hz rms"},
        {true});
    for (const auto& wf : r.waveforms) {
      const auto& s = wf.stats;
      const bool sp = has_spectrum(wf);
      t.add({wf.name, W(s.mean_W), W(s.peak_W), W(s.min_W), W(s.swing_W),
             W(s.max_ramp_up_W_per_s) + "/s", sp ? W(s.band_0p1_2Hz_rms_W) : "",
             sp ? W(s.band_3_30Hz_rms_W) : ""});
    }
    o += t.render(2);
    for (const auto& wf : r.waveforms) {
      if (wf.name.rfind("gpu", 0) == 0) continue;
      o += fmt::format("  {:<34} {}\n", wf.name, sparkline(wf.power_W, 72));
    }
  }
  for (const auto& n : r.notes) o += "  note: " + n + "\n";
  for (const auto& n : r.warnings) o += "  warning: " + n + "\n";
  return o;
}

void add_power_counters(TraceWriter& w, const power::TrainingPowerResult& r, size_t max_points) {
  for (size_t s = 0; s < r.stage_timelines.size(); ++s) {
    const auto process = fmt::format("pipeline stage {}", s);
    for (const auto& seg : r.stage_timelines[s].segments()) {
      w.counter(process, "GPU power (W)", base::seconds(seg.t0_s), {{"W", r6(seg.power_W)}});
    }
    w.counter(process, "GPU power (W)", base::seconds(r.stage_timelines[s].period_s()),
              {{"W", r6(r.stage_timelines[s].segments().empty()
                            ? 0
                            : r.stage_timelines[s].segments().front().power_W)}});
  }
  // Job-window waveforms: raw and smoothed of one level share a counter track.
  std::map<std::string, std::vector<const power::Waveform*>> tracks;
  for (const auto& wf : r.waveforms) {
    const auto comma = wf.name.find(", smoothed");
    tracks[comma == std::string::npos ? wf.name : wf.name.substr(0, comma)].push_back(&wf);
  }
  for (const auto& [name, list] : tracks) {
    std::vector<std::vector<double>> series;
    double dt = 0;
    for (const auto* wf : list)
      series.push_back(power::downsample(wf->power_W, wf->dt_s, max_points, &dt));
    for (size_t i = 0; i < series.front().size(); ++i) {
      std::map<std::string, double> v;
      for (size_t k = 0; k < list.size(); ++k) {
        if (i < series[k].size()) v[k == 0 ? "raw" : "smoothed"] = r6(series[k][i]);
      }
      w.counter("power: job window", name + " (W)", base::seconds(static_cast<double>(i) * dt), v);
    }
  }
}

Json serving_power_json(const power::ServingPowerResult& r, size_t max_points) {
  Json j;
  j["gpu_tgp_W"] = r6(r.gpu_tgp_W);
  j["gpu_cap_W"] = r6(r.cap_W);
  j["cap_reason"] = r.cap_reason;
  if (r.clock_lock_MHz > 0) j["clock_lock_MHz"] = r6(r.clock_lock_MHz);
  j["gpu_idle_W"] = r6(r.gpu_idle_W);
  j["gpu_avg_W"] = r6(r.gpu_avg_W);
  j["gpu_peak_W"] = r6(r.gpu_peak_W);
  j["gpu_min_W"] = r6(r.gpu_min_W);
  j["gpu_decode_W"] = r6(r.gpu_decode_W);
  j["gpu_decode_demand_W"] = r6(r.decode_demand_W);
  j["gpu_decode_peak_demand_W"] = r6(r.decode_peak_demand_W);
  j["gpu_prefill_W"] = r6(r.gpu_prefill_W);
  j["gpu_comm_W"] = r6(r.gpu_comm_W);
  j["decode_slowdown"] = r6(r.decode_slowdown);
  j["prefill_slowdown"] = r6(r.prefill_slowdown);
  j["kernel_slowdown"] = r6(r.kernel_slowdown);
  j["tokens_per_s"] = r6(r.serving.tokens_per_s);
  j["baseline_tokens_per_s"] = r6(r.baseline_tokens_per_s);
  j["tpot_p99_s"] = r6(r.serving.tpot_s.p99);
  j["baseline_tpot_p99_s"] = r6(r.baseline_tpot_p99_s);
  j["ttft_p99_s"] = r6(r.serving.ttft_s.p99);
  j["baseline_ttft_p99_s"] = r6(r.baseline_ttft_p99_s);
  Json pools = Json::array();
  for (const auto& p : r.pools) {
    pools.push_back({{"name", p.name},
                     {"layout", p.layout},
                     {"gpus", p.gpus},
                     {"gpu_avg_W", r6(p.gpu_avg_W)},
                     {"gpu_peak_W", r6(p.gpu_peak_W)},
                     {"gpu_min_W", r6(p.gpu_min_W)},
                     {"decode_kernel_share", r6(p.decode_share)},
                     {"prefill_kernel_share", r6(p.prefill_share)},
                     {"other_share", r6(p.other_share)},
                     {"idle_share", r6(p.idle_share)},
                     {"rack_avg_W", r6(p.rack_avg_W)},
                     {"rack_peak_W", r6(p.rack_peak_W)},
                     {"it_avg_W", r6(p.it_avg_W)}});
  }
  j["pools"] = pools;
  j["system"] = r.system;
  j["systems_per_rack"] = r.systems_per_rack;
  j["racks"] = r6(r.racks);
  j["rack_avg_W"] = r6(r.rack_avg_W);
  j["rack_peak_W"] = r6(r.rack_peak_W);
  j["rack_limit_W"] = r6(r.rack_limit_W);
  j["rack_limit_ac_W"] = r6(r.rack_limit_ac_W);
  j["rack_limit_basis"] = r.rack_limit_basis;
  j["rack_limit_binds"] = r.rack_limit_binds;
  if (!r.rack_limit_message.empty()) j["rack_limit_message"] = r.rack_limit_message;
  j["fabric_share_W"] = r6(r.fabric_share_W);
  j["cluster_avg_W"] = r6(r.cluster_avg_W);
  j["cluster_peak_W"] = r6(r.cluster_peak_W);
  j["facility_W"] = r6(r.facility.facility_W);
  j["facility_peak_W"] = r6(r.facility_peak_W);
  j["pue"] = r6(r.facility.pue);
  j["facility"] = facility_json(r.facility);
  const auto& c = r.rack_cooling;
  j["rack_coolant_flow_L_per_min"] = r6(c.flow_L_per_min);
  j["cooling"] = cooling_json(r.cooling_plan, c, r.cluster_flow_L_per_min);
  j["duration_s"] = r6(r.duration_s);
  j["output_tokens"] = r6(r.output_tokens);
  j["energy_J"] = r6(r.energy_J);
  j["gpu_energy_J"] = r6(r.gpu_energy_J);
  j["energy_per_token_J"] = r6(r.energy_per_token_J);
  j["energy_per_token_basis"] = "IT energy of the deployment over the run / output tokens";
  j["gpu_energy_per_token_J"] = r6(r.gpu_energy_per_token_J);
  j["facility_energy_per_token_J"] = r6(r.facility_energy_per_token_J);
  j["energy_per_request_J"] = r6(r.energy_per_request_J);
  j["energy_per_iteration_J"] = r6(r.energy_per_iteration_J);
  if (r.smoothing.enabled) j["smoothing"] = smoothing_json(r.smoothing);
  j["waveforms"] = waveforms_json(r.waveforms, max_points);
  j["notes"] = r.notes;
  j["warnings"] = r.warnings;
  return j;
}

std::string serving_power_text(const power::ServingPowerResult& r) {
  std::string o = fmt::format(
      "\npower ({}): GPU limit {} ({}){}\n", r.system, W(r.cap_W), r.cap_reason,
      r.clock_lock_MHz > 0 ? fmt::format(", clock locked at {:.0f} MHz", r.clock_lock_MHz) : "");
  Table g({"per GPU", "W"}, {true});
  g.add({"average over the run", fmt::format("{:.0f}", r.gpu_avg_W)});
  g.add({"peak / min (10 ms bins)", fmt::format("{:.0f} / {:.0f}", r.gpu_peak_W, r.gpu_min_W)});
  g.add({"prompt chunk kernels (compute-bound)", fmt::format("{:.0f}", r.gpu_prefill_W)});
  g.add({"decode kernels at the mean batch (memory-bound)", fmt::format("{:.0f}", r.gpu_decode_W)});
  g.add({"communication and waits", fmt::format("{:.0f}", r.gpu_comm_W)});
  g.add({"idle", fmt::format("{:.0f}", r.gpu_idle_W)});
  o += "\n" + g.render(2);
  if (r.prefill_slowdown > 1 + 1e-6 || r.decode_slowdown > 1 + 1e-6) {
    o += fmt::format(
        "  the limit slows prompt kernels {:.1f}% and decode kernels {:.1f}% (decode demand {}); "
        "tokens/s {:.0f} -> {:.0f}, TPOT p99 {:.1f} -> {:.1f} ms\n",
        100 * (r.prefill_slowdown - 1), 100 * (r.decode_slowdown - 1), W(r.decode_demand_W),
        r.baseline_tokens_per_s, r.serving.tokens_per_s, 1e3 * r.baseline_tpot_p99_s,
        1e3 * r.serving.tpot_s.p99);
  }
  Table p({"pool", "GPUs", "GPU avg W", "decode / prompt / other / idle", "rack avg / peak kW"},
          {true});
  for (const auto& x : r.pools) {
    p.add({x.name + " (" + x.layout + ")", std::to_string(x.gpus),
           fmt::format("{:.0f}", x.gpu_avg_W),
           fmt::format("{:.0f}% / {:.0f}% / {:.0f}% / {:.0f}%", 100 * x.decode_share,
                       100 * x.prefill_share, 100 * x.other_share, 100 * x.idle_share),
           fmt::format("{:.1f} / {:.1f}", x.rack_avg_W / 1e3, x.rack_peak_W / 1e3)});
  }
  o += "\n" + p.render(2);
  if (!r.rack_limit_message.empty()) o += "  " + r.rack_limit_message + "\n";
  Table c({"deployment", ""}, {true});
  c.add({"racks (GPUs / GPUs per rack)", fmt::format("{:.3g}", r.racks)});
  c.add({"IT power, racks + fabric share: avg / peak",
         fmt::format("{} / {}", W(r.cluster_avg_W), W(r.cluster_peak_W))});
  c.add({"facility power / PUE",
         fmt::format("{} / {:.3f}{}", W(r.facility.facility_W), r.facility.pue,
                     r.facility.pue_given ? " (given)" : "")});
  if (r.rack_cooling.flow_L_per_min > 0) {
    c.add({"coolant flow per rack",
           fmt::format("{:.0f} L/min ({}, supply {:.0f} C, return {:.1f} C "
                       "peak)",
                       r.rack_cooling.flow_L_per_min, r.cooling_plan.coolant.name,
                       r.cooling_plan.supply_C, r.rack_cooling.return_peak_C)});
  }
  c.add({"energy per output token: IT / facility",
         fmt::format("{:.3g} J / {:.3g} J (GPUs {:.3g} J)", r.energy_per_token_J,
                     r.facility_energy_per_token_J, r.gpu_energy_per_token_J)});
  c.add({"energy per request / iteration (IT)",
         fmt::format("{} / {}", J(r.energy_per_request_J), J(r.energy_per_iteration_J))});
  o += "\n" + c.render(2);
  if (r.smoothing.enabled) {
    o += "\n" + smoothing_table(r.smoothing, "over the run (hottest pool's rack)", "serving");
  }
  for (const auto& wf : r.waveforms) {
    if (wf.name.rfind("rack", 0) != 0) continue;
    o += fmt::format("  {:<26} {}\n", wf.name, sparkline(wf.power_W, 72));
  }
  for (const auto& n : r.notes) o += "  note: " + n + "\n";
  for (const auto& n : r.warnings) o += "  warning: " + n + "\n";
  return o;
}

}  // namespace clustertwin::report
