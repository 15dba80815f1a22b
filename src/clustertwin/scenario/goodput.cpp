// The goodput study's settings, their field table and the study's run (docs/models/
// orchestration.md §4 for the model; DESIGN.md §2 for the field tables). Moved from
// apps/clustertwin/cmd_goodput.cpp.

#include "clustertwin/scenario/goodput.h"

#include <fmt/format.h>

#include "clustertwin/base/number.h"
#include "clustertwin/base/text.h"
#include "clustertwin/base/units_parse.h"
#include "clustertwin/report/schedule.h"
#include "clustertwin/scheduler/goodput.h"
#include "clustertwin/scheduler/limits.h"

namespace clustertwin::scenario {
namespace {

using S = GoodputSettings;
using F = Field<S>;

FieldTable<S> make_goodput_fields() {
  const base::RealRange rate{.min = 0, .max = 1e6};
  return {
      F{.key = "days",
        .flag = "days",
        .name = "days",
        .member = &S::days,
        .help = "days of training",
        .reals = {.min = 0, .max = base::kMaxSimSeconds / 86400, .min_exclusive = true},
        .show_default = true},
      F{.key = "max_events",
        .flag = "max-events",
        .name = "event limit",
        .member = &S::max_events,
        .help = "stop a simulated run with an error after this many events (a bound on run time)",
        .ints = positive(static_cast<int64_t>(1e15)),
        .show_default = true},
      F{.key = "checkpoint",
        .flag = "checkpoint",
        .name = "checkpoint interval",
        .member = &S::checkpoint,
        .help = "auto (Young/Daly) or the interval in seconds",
        .show_default = true},
      F{.key = "async_checkpoint",
        .flag = "async-checkpoint",
        .name = "asynchronous checkpoints",
        .member = &S::async_checkpoint,
        .help = "asynchronous checkpoints (10 s stall)"},
      F{.key = "storage_write",
        .flag = "storage-write",
        .name = "checkpoint write bandwidth",
        .member = &S::storage_write,
        .help = "checkpoint write bandwidth",
        .show_default = true},
      F{.key = "storage_read",
        .flag = "storage-read",
        .name = "checkpoint read bandwidth",
        .member = &S::storage_read,
        .help = "checkpoint read bandwidth",
        .show_default = true},
      F{.key = "restart",
        .flag = "restart",
        .name = "restart overhead",
        .member = &S::restart,
        .help = "restart overhead besides the checkpoint read",
        .show_default = true},
      F{.key = "spares",
        .flag = "spares",
        .name = "spare trays",
        .member = &S::spares,
        .help = "spare trays per NVL72 rack kept out of the job's segments",
        .ints = {.min = 0, .max = base::kMaxGpus},
        .show_default = true},
      F{.key = "domain_failures",
        .flag = "domain-failures",
        .name = "NVLink-domain failure rate",
        .member = &S::domain_failures,
        .help = "NVLink-domain events per 1,000 domain-days (assumption)",
        .reals = rate,
        .show_default = true},
      F{.key = "failure_scale",
        .flag = "failure-scale",
        .name = "failure scale",
        .member = &S::failure_scale,
        .help = "multiply every failure rate",
        .reals = rate,
        .show_default = true},
      F{.key = "lemon_fraction",
        .flag = "lemon-fraction",
        .name = "lemon fraction",
        .member = &S::lemon_fraction,
        .help = "share of nodes failing 5x as often (rate kept)",
        .reals = {.min = 0, .max = 1},
        .show_default = true},
      F{.key = "seed",
        .flag = "seed",
        .name = "seed",
        .member = &S::seed,
        .help = "random seed",
        .ints = {.min = 0},
        .show_default = true},
      F{.key = "sweep",
        .flag = "no-sweep",
        .name = "interval sweep",
        .member = &S::no_sweep,
        .help = "skip the interval sweep",
        .inverted = true},
  };
}

/// A checkpoint interval: a plain number of seconds or a time with its unit ("900 s"), from 1 s
/// (power's checkpoint_every floor) to the scheduler's longest duration (40 years). Parsed
/// strictly: strtod once took '0x10' as 16 s, 'inf' as "no failures" and 1e308 s as a
/// 300-digit number of days.
base::Result<double> interval_of(const std::string& text) {
  const base::RealRange range{.min = 1, .max = scheduler::kMaxDurationS};
  auto fail = [&](const std::string& why) {
    return base::fail("{checkpoint}: expected auto or an interval (seconds, or '900 s') in [1 s, " +
                      fmt::format("{:.0f}", range.max) + " s] (40 years), got '" + text + "'" +
                      why);
  };
  double v = 0;
  if (auto s = base::parse<base::Seconds>(text)) {
    v = s->base();
  } else if (auto n = base::parse_real(text)) {
    v = *n;
  } else {
    return fail("");
  }
  if (!base::check_real(v, range)) return fail(v < range.min ? " (too short)" : " (too long)");
  return v;
}

}  // namespace

const FieldTable<GoodputSettings>& goodput_fields() {
  static const FieldTable<GoodputSettings> kTable = make_goodput_fields();
  return kTable;
}

const std::vector<FieldWord>& goodput_words() {
  static const std::vector<FieldWord> kWords = words_of<S>({&goodput_fields()}, training_words());
  return kWords;
}

base::Result<GoodputRun> run_goodput(const Environment& env, const TrainingRequest& t,
                                     const GoodputSettings& o) {
  using namespace scheduler;
  if (auto st = check_fields<S>(o, {&goodput_fields()}); !st) return base::fail(st.error());
  if (!(o.days > 0)) return base::fail("{days} must be > 0");
  if (t.model == "gpt") {
    return base::fail("{model} gpt: goodput runs a catalog model, a YAML file or a config.json");
  }
  // The cluster, model and layout as every training verb resolves them.
  auto job = resolve_training(env, t);
  if (!job) return base::fail(job.error());
  const auto& lc = (*job)->cluster;
  const auto cluster = ClusterModel::from_topology(lc->topo, lc->system().gpus_per_node);
  GoodputConfig cfg;
  cfg.gpus = static_cast<int>((*job)->gpus);
  cfg.work.layout = (*job)->layout;
  cfg.work.model = t.model;
  cfg.horizon = engine::to_ticks(base::seconds(o.days * 86400));
  if (o.checkpoint != "auto") {
    auto v = interval_of(o.checkpoint);
    if (!v) return base::fail(v.error());
    cfg.interval_s = *v;
  }
  auto wb = base::parse<base::BytesPerSecond>(o.storage_write);
  if (!wb) return base::fail("{storage_write}: " + wb.error().message);
  auto rb = base::parse<base::BytesPerSecond>(o.storage_read);
  if (!rb) return base::fail("{storage_read}: " + rb.error().message);
  auto rs = base::parse<base::Seconds>(o.restart);
  if (!rs) return base::fail("{restart}: " + rs.error().message);
  // A bandwidth of 0 made a save take 'inf s' in the message that refused it.
  if (!(wb->base() > 0)) {
    return base::fail("{storage_write}: expected a bandwidth > 0, got '" + o.storage_write + "'");
  }
  if (!(rb->base() > 0)) {
    return base::fail("{storage_read}: expected a bandwidth > 0, got '" + o.storage_read + "'");
  }
  cfg.storage.write_Bps = wb->base();
  cfg.storage.read_Bps = rb->base();
  cfg.storage.restart_s = rs->base();
  cfg.storage.async = o.async_checkpoint;
  cfg.failures = FailureModel::llama3(cluster.max_domain_nodes() > 1, o.domain_failures);
  cfg.failures.scale(o.failure_scale);
  cfg.failures.lemon_fraction = o.lemon_fraction;
  cfg.spares = o.spares;
  cfg.seed = static_cast<uint64_t>(o.seed);
  cfg.max_events = o.max_events;
  cfg.sweep = !o.no_sweep;
  SpeedModel speed(lc->catalog, lc->topo);
  // The scheduler prices communication with closed forms (PlacementComm): of a profile it runs
  // the training model's compute-time scale and kernel tables, and refuses one of collective
  // lines alone (a profile's eager issue time per layer, its serving: mapping, it runs too).
  if (!t.calibration.empty() && !(*job)->compute_scale && (*job)->compute_note.empty() &&
      (*job)->stack_note.empty()) {
    return base::fail(t.calibration_where + ": " + base::verbatim(t.calibration) +
                      " has no training: or compute: mapping (the compute-time scale and kernel "
                      "efficiencies `calibrate` fits to step times and kernel tables); goodput "
                      "prices communication with closed forms, so collective lines alone would "
                      "change nothing");
  }
  if (!(*job)->compute_note.empty()) speed.set_compute(*(*job)->compute);
  const bool fitted = (*job)->compute_scale.has_value() && t.overhead < 0;
  if (t.overhead >= 0 || fitted) speed.set_framework_overhead((*job)->setup.framework_overhead);
  // The profile's per-iteration host time, as train applies it (also when the overhead is
  // given: the two were fitted together, and the host time is not part of the overhead).
  const base::Seconds host = (*job)->setup.host_time;
  speed.set_host_time(host);
  // The step model's constants as the job runs them: training.yaml's, or those the profile's
  // step-time fit constrained (scenario/training.cpp, read_compute_scale).
  speed.set_training_calibration((*job)->training_calibration);
  auto g = scheduler::run_goodput(cluster, speed, cfg);
  if (!g) return base::fail(g.error());
  GoodputRun out;
  out.json = report::goodput_json(*g);
  out.text = report::goodput_text(*g);
  if (fitted) {
    out.text +=
        fmt::format("  compute-time scale {:g} fitted to measured steps (calibration profile {})\n",
                    *(*job)->compute_scale, (*job)->calibration_path);
  }
  if (host.base() > 0) {
    out.text += fmt::format(
        "  per-iteration host time {:.4g} s fitted to measured steps (calibration profile {})\n",
        host.base(), (*job)->calibration_path);
  }
  if (!(*job)->compute_note.empty()) out.text += "  " + (*job)->compute_note + "\n";
  if (!(*job)->stack_note.empty()) out.text += "  " + (*job)->stack_note + "\n";
  out.summary = fmt::format(
      "goodput   {} on {} GPUs over {:g} days: ETTR {:.1f}%, {} interruptions, checkpoint every "
      "{:.0f} s",
      g->model, g->gpus, o.days, 100 * g->breakdown.ettr(), g->interruptions, g->interval_s);
  return out;
}

}  // namespace clustertwin::scenario
