// The power study's settings, their field table and its run (docs/models/power.md for the
// model; DESIGN.md §2 for the field tables). Moved from apps/clustertwin/cmd_power.cpp.

#include "clustertwin/scenario/power.h"

#include <fmt/format.h>

#include "clustertwin/power/training_power.h"
#include "clustertwin/report/power.h"
#include "clustertwin/report/training.h"
#include "clustertwin/scenario/power_settings.h"

namespace clustertwin::scenario {
namespace {

using S = PowerSettings;
using F = Field<S>;

FieldTable<S> make_power_fields() {
  const base::RealRange seconds{.min = 0, .max = base::kMaxSimSeconds};
  const base::RealRange non_negative{.min = 0};
  const FieldTable<S> first = {
      F{.key = "power_cap",
        .flag = "power-cap",
        .name = "power cap",
        .member = &S::power_cap,
        .help = "GPU power limit (e.g. 1200W), within the GPU's settable range"},
      F{.key = "clock_lock",
        .flag = "clock-lock",
        .name = "clock lock",
        .member = &S::clock_lock,
        .help = "lock the SM clock (e.g. 1500MHz)"},
      F{.key = "node_policy",
        .flag = "node-policy",
        .name = "node power policy",
        .member = &S::node_policy,
        .help = "a DPS node power policy of the system (e.g. GB300-Med)"},
      F{.key = "smoothing",
        .flag = "smoothing",
        .name = "smoothing",
        .member = &S::smoothing,
        .help = "power smoothing profile per GPU: floor=F (of TDP),ramp-up=W/s,ramp-down=W/s,"
                "hysteresis=s,storage=J,efficiency=E; 'on' for the system's profile (default "
                "where supported)"},
      F{.key = "no_smoothing",
        .flag = "no-smoothing",
        .name = "no smoothing",
        .member = &S::no_smoothing,
        .help = "no smoothing waveform"},
  };
  const FieldTable<S> rest = {
      F{.key = "price",
        .flag = "price",
        .name = "electricity price",
        .member = &S::price,
        .help = "electricity price per kWh (cost of the {tokens} run)",
        .reals = non_negative},
      F{.key = "grid_intensity",
        .flag = "grid-intensity",
        .name = "grid carbon intensity",
        .member = &S::grid_intensity,
        .help = "grid carbon intensity, gCO2/kWh",
        .reals = non_negative},
      F{.key = "duration",
        .flag = "duration",
        .name = "waveform window",
        .member = &S::duration,
        .help = "waveform window, s (default: start + init + max(10 steps, 60 s) + 20 s)",
        .reals = seconds},
      F{.key = "resolution",
        .flag = "resolution",
        .name = "waveform step",
        .member = &S::resolution,
        .help = "waveform step, s (a window holds at most 2e6 samples, fewer with many pipeline "
                "stages: docs/limits.md)",
        .reals = {.min = 0, .max = 10, .min_exclusive = true},
        .show_default = true},
      F{.key = "start",
        .flag = "start",
        .name = "job start",
        .member = &S::start,
        .help = "job start in the window, s",
        .reals = seconds,
        .show_default = true},
      F{.key = "init",
        .flag = "init",
        .name = "job initialisation",
        .member = &S::init,
        .help = "job initialisation before the first step, s",
        .reals = seconds,
        .show_default = true},
      F{.key = "stop",
        .flag = "stop",
        .name = "job stop",
        .member = &S::stop,
        .help = "job stop in the window, s (default: 20 s before its end)",
        .reals = seconds},
      F{.key = "checkpoint_every",
        .flag = "checkpoint-every",
        .name = "checkpoint period",
        .member = &S::checkpoint_every,
        .help = "synchronous checkpoint period, s (0: none)",
        .reals = seconds},
      F{.key = "checkpoint_time",
        .flag = "checkpoint-time",
        .name = "checkpoint pause",
        .member = &S::checkpoint_time,
        .help = "checkpoint pause, s",
        .reals = seconds},
      F{.key = "feedback",
        .flag = "no-feedback",
        .name = "cap feedback",
        .member = &S::no_feedback,
        .help = "do not re-simulate the step when a cap slows compute",
        .inverted = true},
  };
  return join<S>({first, cooling_rows<S>(""), rest});
}

}  // namespace

const FieldTable<PowerSettings>& power_fields() {
  static const FieldTable<PowerSettings> kTable = make_power_fields();
  return kTable;
}

const std::vector<FieldWord>& power_words() {
  static const std::vector<FieldWord> kWords = words_of<S>({&power_fields()}, training_words());
  return kWords;
}

base::Result<PowerRun> run_power(const Environment& env, const TrainingRequest& o,
                                 const PowerSettings& po, const std::string& trace_path) {
  if (auto st = check_fields<S>(po, {&power_fields()}); !st) return base::fail(st.error());
  // The cluster, model, layout and compute/communication models as `train` resolves them.
  auto job_r = resolve_training(env, o);
  if (!job_r) return base::fail(job_r.error());
  const TrainingJob& job = **job_r;
  const auto& cat = job.cluster->catalog;
  const auto& spec = job.cluster->spec;
  const auto& l = job.layout;
  const auto& gpu = job.cluster->gpu();
  const auto& sys = job.cluster->system();
  auto pcat = power::PowerCatalog::load(cat);
  if (!pcat) return base::fail(pcat.error());

  power::TrainingPowerOptions opt;
  opt.token_budget = job.token_budget;
  auto g = gpu_settings(po.power_cap, po.clock_lock);
  if (!g) return base::fail(g.error());
  opt.gpu = *g;
  opt.node_policy = po.node_policy;
  const auto sp = pcat->system(sys.name);
  if (!sp) return base::fail(sp.error());
  // Neither setting: the system's profile where it has one (with and without smoothing).
  auto sr = smoothing_request(po.smoothing, po.no_smoothing, (*sp)->smoothing.supported);
  if (!sr) return base::fail(sr.error());
  opt.smoothing = *sr;
  opt.cooling = cooling_settings(po.pue, po.supply_temp, po.delta_t, po.coolant);
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
    return base::fail(
        "{duration}, {start}, {init}, {stop}, {checkpoint_every} and {checkpoint_time} must be >= "
        "0 s");
  }
  opt.feedback = !po.no_feedback;

  power::TrainingPowerInput in{.catalog = &cat,
                               .power = &*pcat,
                               .cluster = &spec,
                               .topology = &job.cluster->topo,
                               .setup = job.setup};
  auto r = power::analyze_training_power(in, opt);
  if (!r) return base::fail(r.error());

  report::TrainingContext tc{.cluster = spec.name,
                             .model = job.model.name,
                             .gpu = gpu.name,
                             .gpus = job.gpus,
                             .token_budget = opt.token_budget};
  PowerRun out;
  out.training = report::training_json(r->training, l, tc);
  out.power = report::power_json(*r);
  if (!trace_path.empty()) {
    auto tw = report::training_trace(r->training, l);
    report::add_power_counters(tw, *r);
    if (auto st = tw.write(trace_path); !st) return base::fail(st.error());
  }
  const auto& tr = r->training;
  out.text = fmt::format("{} on {} GPUs of {} ({}), TP{} PP{} DP{}: step {:.3f} s, MFU {:.1f}%\n",
                         job.model.name, job.gpus, spec.name, gpu.name, l.tp, l.pp, l.dp,
                         tr.step_time_s, 100 * tr.mfu) +
             report::power_text(*r);
  return out;
}

}  // namespace clustertwin::scenario
