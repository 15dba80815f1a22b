// `clustertwin power`: the power view of a training job: GPU, rack, cluster and facility power,
// the waveform over a job window with and without smoothing, energy per step and per token,
// coolant flow and PUE (docs/models/power.md).
// Example: clustertwin power --cluster azure-ndv6-gb300 --model llama3.1-405b --tp 8 --pp 16
//          --power-cap 1200W --smoothing floor=0.8,ramp-up=2000W/s --price 0.08 --tokens 15T

#include <fmt/format.h>

#include <iostream>

#include "clustertwin/base/units_parse.h"
#include "clustertwin/execution/training.h"
#include "clustertwin/power/training_power.h"
#include "clustertwin/report/power.h"
#include "clustertwin/report/training.h"
#include "clustertwin/scenario/power_settings.h"
#include "commands.h"
#include "field_options.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

struct PowerOptions {
  TrainOptions t;
  std::string json, trace;
  std::string cap, clock_lock, node_policy, smoothing;
  bool no_smoothing = false;
  double pue = 0, supply_temp = -1000, delta_t = 0, price = 0, grid_intensity = 0;
  std::string coolant;
  double duration = 0, resolution = 0.01, start = 5, init = 10, stop = 0, checkpoint_every = 0,
         checkpoint_time = 0;
  bool no_feedback = false;
};

int power(const Context& ctx, const PowerOptions& po) {
  const auto& o = po.t;
  // The cluster, model, layout and compute/communication models as `train` prepares them.
  auto job_r = prepare_training(ctx, o);
  if (!job_r) return bad_input(job_r.error());
  const TrainingJob& job = **job_r;
  const auto& cat = job.cluster->catalog;
  const auto& spec = job.cluster->spec;
  const auto& l = job.layout;
  const auto& gpu = job.cluster->gpu();
  const auto& sys = **cat.system(spec.system);
  const int64_t gpus = job.gpus;
  auto pcat = power::PowerCatalog::load(cat);
  if (!pcat) return bad_input(pcat.error());

  power::TrainingPowerOptions opt;
  opt.token_budget = job.token_budget;
  auto g = scenario::gpu_settings(po.cap, po.clock_lock);
  if (!g) return bad_input(g.error());
  opt.gpu = *g;
  opt.node_policy = po.node_policy;
  const auto sp = pcat->system(sys.name);
  if (!sp) return bad_input(sp.error());
  // Neither flag: the system's profile where it has one (with and without smoothing).
  auto sr = scenario::smoothing_request(po.smoothing, po.no_smoothing, (*sp)->smoothing.supported);
  if (!sr) return bad_input(sr.error());
  opt.smoothing = *sr;
  opt.cooling = scenario::cooling_settings(po.pue, po.supply_temp, po.delta_t, po.coolant);
  opt.price_per_kWh = po.price;
  opt.grid_gCO2_per_kWh = po.grid_intensity;
  opt.window = {.duration_s = po.duration,
                .resolution_s = po.resolution,
                .start_s = po.start,
                .init_s = po.init,
                .stop_s = po.stop,
                .checkpoint_every_s = po.checkpoint_every,
                .checkpoint_s = po.checkpoint_time};
  if (po.duration < 0 || po.start < 0 || po.init < 0 || po.stop < 0 || po.checkpoint_every < 0 ||
      po.checkpoint_time < 0) {
    return bad_input(
        "--duration, --start, --init, --stop, --checkpoint-every and --checkpoint-time must be >= "
        "0 s");
  }
  if (po.duration > 0 && po.duration / po.resolution > 5e7) {
    return bad_input("--duration / --resolution: more than 50 million samples");
  }
  opt.feedback = !po.no_feedback;

  power::TrainingPowerInput in{.catalog = &cat,
                               .power = &*pcat,
                               .cluster = &spec,
                               .topology = &job.cluster->topo,
                               .setup = job.setup};
  auto r = power::analyze_training_power(in, opt);
  if (!r) return bad_input(r.error());

  report::TrainingContext tc{.cluster = spec.name,
                             .model = job.model.name,
                             .gpu = gpu.name,
                             .gpus = gpus,
                             .token_budget = opt.token_budget};
  if (!po.json.empty()) {
    report::Json j = {{"training", report::training_json(r->training, l, tc)},
                      {"power", report::power_json(*r)}};
    if (auto st = report::write_json(j, po.json); !st) return bad_input(st.error());
  }
  if (!po.trace.empty()) {
    auto tw = report::training_trace(r->training, l);
    report::add_power_counters(tw, *r);
    if (auto st = tw.write(po.trace); !st) return bad_input(st.error());
  }
  if (po.json != "-") {
    const auto& tr = r->training;
    std::cout << fmt::format(
        "{} on {} GPUs of {} ({}), TP{} PP{} DP{}: step {:.3f} s, MFU {:.1f}%\n", job.model.name,
        gpus, spec.name, gpu.name, l.tp, l.pp, l.dp, tr.step_time_s, 100 * tr.mfu);
    std::cout << report::power_text(*r);
  }
  return kExitOk;
}

}  // namespace

Verb add_power(CLI::App& app, const Context& ctx) {
  auto po = std::make_shared<PowerOptions>();
  auto& o = po->t;
  CLI::App* cmd = app.add_subcommand(
      "power",
      "Power of a training job: GPU, rack, cluster and facility power, the waveform over a job "
      "window "
      "(start, steps, checkpoints, stop) with and without power smoothing, its swings and "
      "spectrum, energy "
      "per step and per token, coolant flow per rack and PUE; a power cap or clock lock slows the "
      "step.\n"
      "Example: clustertwin power --cluster azure-ndv6-gb300 --model llama3.1-405b --tp 8 --pp 16 "
      "--power-cap 1200W --smoothing floor=0.8,ramp-up=2000W/s --price 0.08 --tokens 15T");
  add_fields(cmd, scenario::training_fields(), o, scenario::training_words());
  cmd->add_option("--power-cap", po->cap,
                  "GPU power limit (e.g. 1200W), within the GPU's settable range");
  cmd->add_option("--clock-lock", po->clock_lock, "lock the SM clock (e.g. 1500MHz)");
  cmd->add_option("--node-policy", po->node_policy,
                  "a DPS node power policy of the system (e.g. GB300-Med)");
  cmd->add_option(
      "--smoothing", po->smoothing,
      "power smoothing profile per GPU: floor=F (of TDP),ramp-up=W/s,ramp-down=W/s,hysteresis=s,"
      "storage=J,efficiency=E; 'on' for the system's profile (default where supported)");
  cmd->add_flag("--no-smoothing", po->no_smoothing, "no smoothing waveform");
  cmd->add_option("--pue", po->pue, "use this PUE instead of the facility model (>= 1)")
      ->check(flags::finite(po->pue));
  cmd->add_option("--supply-temp", po->supply_temp, "coolant supply temperature, C (default: 25)")
      ->check(flags::range(po->supply_temp, -50, 150));
  cmd->add_option("--delta-t", po->delta_t,
                  "coolant temperature rise across a rack, K (default: 10)")
      ->check(flags::positive(po->delta_t, 100));
  cmd->add_option("--coolant", po->coolant, "pg25 or water (default: pg25)");
  cmd->add_option("--price", po->price, "electricity price per kWh (cost of the --tokens run)")
      ->check(flags::non_negative(po->price));
  cmd->add_option("--grid-intensity", po->grid_intensity, "grid carbon intensity, gCO2/kWh")
      ->check(flags::non_negative(po->grid_intensity));
  cmd->add_option("--duration", po->duration,
                  "waveform window, s (default: start + init + max(10 steps, 60 s) + 20 s)")
      ->check(flags::non_negative(po->duration, base::kMaxSimSeconds));
  cmd->add_option("--resolution", po->resolution, "waveform step, s")
      ->capture_default_str()
      ->check(flags::positive(po->resolution, base::kMaxSimSeconds));
  cmd->add_option("--start", po->start, "job start in the window, s")
      ->capture_default_str()
      ->check(flags::non_negative(po->start, base::kMaxSimSeconds));
  cmd->add_option("--init", po->init, "job initialisation before the first step, s")
      ->capture_default_str()
      ->check(flags::non_negative(po->init, base::kMaxSimSeconds));
  cmd->add_option("--stop", po->stop, "job stop in the window, s (default: 20 s before its end)")
      ->check(flags::non_negative(po->stop, base::kMaxSimSeconds));
  cmd->add_option("--checkpoint-every", po->checkpoint_every,
                  "synchronous checkpoint period, s (0: none)")
      ->check(flags::non_negative(po->checkpoint_every, base::kMaxSimSeconds));
  cmd->add_option("--checkpoint-time", po->checkpoint_time, "checkpoint pause, s")
      ->check(flags::non_negative(po->checkpoint_time, base::kMaxSimSeconds));
  cmd->add_flag("--no-feedback", po->no_feedback,
                "do not re-simulate the step when a cap slows compute");
  cmd->add_option("--json", po->json, "write results JSON to FILE ('-' for stdout)");
  cmd->add_option("--trace", po->trace,
                  "write a Chrome trace of the step with power counters to FILE");
  return {cmd, [&ctx, po] { return power(ctx, *po); }};
}

}  // namespace clustertwin::app
