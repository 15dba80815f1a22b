// `clustertwin goodput`: one long training job under failures: interruptions, where the wall
// time goes (ETTR) and the checkpoint interval that maximises it (docs/models/orchestration.md §4).
// Example: clustertwin goodput --cluster meta-llama3-h100 --gpus 16384 --model llama3.1-405b
//          --tp 8 --pp 16 --days 54 --checkpoint auto

#include <iostream>

#include "clustertwin/base/units_parse.h"
#include "clustertwin/calibration/step_fit.h"
#include "clustertwin/compute/op.h"
#include "clustertwin/report/html.h"
#include "clustertwin/report/schedule.h"
#include "commands.h"
#include "field_options.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

struct GoodputOptions {
  TrainOptions t;
  double days = 30;
  int64_t max_events = base::kMaxEvents;
  std::string checkpoint = "auto";
  bool async = false;
  std::string write_bw = "2 TB/s", read_bw = "7 TB/s", restart = "600 s";
  int spares = 0;
  double domain_failures = 1.0, failure_scale = 1.0, lemon_fraction = 0.15;
  uint64_t seed = 1;
  bool no_sweep = false;
  std::string json;
};

int goodput(const Context& ctx, const GoodputOptions& o, bool html) {
  using namespace scheduler;
  if (!(o.days > 0)) return bad_input("--days must be > 0");
  if (o.t.model == "gpt") {
    return bad_input("--model gpt: goodput runs a catalog model, a YAML file or a config.json");
  }
  // The cluster, model and layout as every training verb resolves them (scenario/training.h).
  auto job = prepare_training(ctx, o.t);
  if (!job) return bad_input(job.error());
  const auto& lc = (*job)->cluster;
  const auto cluster =
      ClusterModel::from_topology(lc->topo, (**lc->catalog.system(lc->spec.system)).gpus_per_node);
  GoodputConfig cfg;
  cfg.gpus = static_cast<int>((*job)->gpus);
  cfg.work.layout = (*job)->layout;
  cfg.work.model = o.t.model;
  cfg.horizon = engine::to_ticks(base::seconds(o.days * 86400));
  if (o.checkpoint != "auto") {
    // A plain number is seconds; a unit string ("15 min" is not a unit here: "900 s") works too.
    auto s = base::parse<base::Seconds>(o.checkpoint);
    if (!s) {
      char* end = nullptr;
      const double v = std::strtod(o.checkpoint.c_str(), &end);
      if (end == o.checkpoint.c_str() || *end != '\0' || !(v > 0)) {
        return bad_input("--checkpoint: expected auto or an interval (seconds, or '900 s'), got '" +
                         o.checkpoint + "'");
      }
      cfg.interval_s = v;
    } else {
      cfg.interval_s = s->base();
    }
    if (!(cfg.interval_s > 0)) return bad_input("--checkpoint: the interval must be > 0");
  }
  auto wb = base::parse<base::BytesPerSecond>(o.write_bw);
  if (!wb) return bad_input("--storage-write: " + wb.error().message);
  auto rb = base::parse<base::BytesPerSecond>(o.read_bw);
  if (!rb) return bad_input("--storage-read: " + rb.error().message);
  auto rs = base::parse<base::Seconds>(o.restart);
  if (!rs) return bad_input("--restart: " + rs.error().message);
  cfg.storage.write_Bps = wb->base();
  cfg.storage.read_Bps = rb->base();
  cfg.storage.restart_s = rs->base();
  cfg.storage.async = o.async;
  cfg.failures = FailureModel::llama3(cluster.max_domain_nodes() > 1, o.domain_failures);
  cfg.failures.scale(o.failure_scale);
  cfg.failures.lemon_fraction = o.lemon_fraction;
  cfg.spares = o.spares;
  cfg.seed = o.seed;
  cfg.max_events = o.max_events;
  cfg.sweep = !o.no_sweep;
  SpeedModel speed(lc->catalog, lc->topo);
  // The scheduler prices communication with closed forms (PlacementComm): of a profile it runs
  // the training model's compute-time scale, and refuses one of collective lines alone.
  if (!o.t.calibration.empty() && !(*job)->compute_scale) {
    return bad_input("--calibration: " + o.t.calibration +
                     " has no training: mapping (the compute-time scale `calibrate` fits to "
                     "step times); goodput prices communication with closed forms, so "
                     "collective lines alone would change nothing");
  }
  const bool fitted = (*job)->compute_scale.has_value() && o.t.overhead < 0;
  if (o.t.overhead >= 0 || fitted) speed.set_framework_overhead((*job)->setup.framework_overhead);
  auto g = run_goodput(cluster, speed, cfg);
  if (!g) return bad_input(g.error());
  if (!o.json.empty() || html) {
    const report::Json results = {{"goodput", report::goodput_json(*g)}};
    if (!o.json.empty()) {
      if (auto st = report::write_json(results, o.json); !st) return bad_input(st.error());
    }
    if (html) {
      const std::string page = report::render_html(results);
      if (auto st = report::write_text(page, ctx.report_path); !st) return bad_input(st.error());
      if (!ctx.quiet) std::cerr << "wrote " << ctx.report_path << "\n";
    }
  }
  if (o.json != "-") {
    std::cout << report::goodput_text(*g);
    if (fitted) {
      std::cout << "  compute-time scale " << *(*job)->compute_scale
                << " fitted to measured steps (calibration profile " << (*job)->calibration_path
                << ")\n";
    }
  }
  return kExitOk;
}

}  // namespace

Verb add_goodput(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<GoodputOptions>();
  const CLI::Option* report_flag = app.get_option("--report");
  CLI::App* cmd = app.add_subcommand(
      "goodput",
      "One long training job under failures: interruptions, MTBI, where the wall time goes "
      "(ETTR) and the Young/Daly checkpoint interval, with a sweep around it.\n"
      "Example: clustertwin goodput --cluster meta-llama3-h100 --gpus 16384 --model "
      "llama3.1-405b --tp 8 --pp 16 --days 54 --checkpoint auto");
  add_fields(cmd, scenario::training_fields(), o->t, scenario::training_words());
  cmd->add_option("--days", o->days, "days of training")
      ->capture_default_str()
      ->check(flags::positive(o->days, base::kMaxSimSeconds / 86400));
  cmd->add_option("--max-events", o->max_events,
                  "stop a simulated run with an error after this many events (a bound on run time)")
      ->capture_default_str()
      ->check(flags::positive(o->max_events, 1e15));
  cmd->add_option("--checkpoint", o->checkpoint, "auto (Young/Daly) or the interval in seconds")
      ->capture_default_str();
  cmd->add_flag("--async-checkpoint", o->async, "asynchronous checkpoints (10 s stall)");
  cmd->add_option("--storage-write", o->write_bw, "checkpoint write bandwidth")
      ->capture_default_str();
  cmd->add_option("--storage-read", o->read_bw, "checkpoint read bandwidth")->capture_default_str();
  cmd->add_option("--restart", o->restart, "restart overhead besides the checkpoint read")
      ->capture_default_str();
  cmd->add_option("--spares", o->spares,
                  "spare trays per NVL72 rack kept out of the job's segments")
      ->capture_default_str()
      ->check(flags::non_negative(o->spares, base::kMaxGpus));
  cmd->add_option("--domain-failures", o->domain_failures,
                  "NVLink-domain events per 1,000 domain-days (assumption)")
      ->capture_default_str()
      ->check(flags::non_negative(o->domain_failures, 1e6));
  cmd->add_option("--failure-scale", o->failure_scale, "multiply every failure rate")
      ->capture_default_str()
      ->check(flags::non_negative(o->failure_scale, 1e6));
  cmd->add_option("--lemon-fraction", o->lemon_fraction,
                  "share of nodes failing 5x as often (rate kept)")
      ->check(flags::range(o->lemon_fraction, 0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed")
      ->capture_default_str()
      ->check(flags::non_negative(o->seed));
  cmd->add_flag("--no-sweep", o->no_sweep, "skip the interval sweep");
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  return {cmd, [&ctx, o, report_flag] { return goodput(ctx, *o, report_flag->count() > 0); }};
}

}  // namespace clustertwin::app
