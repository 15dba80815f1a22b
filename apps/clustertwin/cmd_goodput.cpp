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
#include "flags.h"

namespace clustertwin::app {
namespace {

struct GoodputOptions {
  std::string cluster = "azure-ndv6-gb300";
  int gpus = 0;
  std::string model = "llama3.1-405b";
  int tp = 8, pp = 16, cp = 1, ep = 1, vpp = 1;
  int64_t micro_batch = 1, global_batch = 0, seq_len = 8192;
  std::string precision = "bf16", recompute = "full";
  double days = 30;
  int64_t max_events = base::kMaxEvents;
  std::string checkpoint = "auto";
  bool async = false;
  std::string write_bw = "2 TB/s", read_bw = "7 TB/s", restart = "600 s";
  int spares = 0;
  double domain_failures = 1.0, failure_scale = 1.0, lemon_fraction = 0.15;
  uint64_t seed = 1;
  bool no_sweep = false;
  std::string calibration;
  std::string json;
};

int goodput(const Context& ctx, const GoodputOptions& o, bool html) {
  using namespace scheduler;
  auto lc = ctx.load_cluster(o.cluster);
  if (!lc) return bad_input(lc.error());
  const auto cluster =
      ClusterModel::from_topology(lc->topo, (**lc->catalog.system(lc->spec.system)).gpus_per_node);
  if (!(o.days > 0)) return bad_input("--days must be > 0");
  GoodputConfig cfg;
  cfg.gpus = o.gpus > 0 ? o.gpus : static_cast<int>(cluster.gpus());
  if (cfg.gpus > cluster.gpus()) {
    return bad_input("--gpus " + std::to_string(cfg.gpus) + " is more than cluster '" +
                     lc->spec.name + "' has (" + std::to_string(cluster.gpus()) + ")");
  }
  auto& l = cfg.work.layout;
  l.tp = o.tp;
  l.pp = o.pp;
  l.cp = o.cp;
  l.ep = o.ep;
  l.vpp = o.vpp;
  l.micro_batch = o.micro_batch;
  l.seq_len = o.seq_len;
  auto mp_r = workload::model_parallel_size(l);
  if (!mp_r) return bad_input(mp_r.error());
  const int64_t mp = *mp_r;
  if (cfg.gpus % mp != 0) {
    return bad_input("--gpus " + std::to_string(cfg.gpus) +
                     " is not a multiple of tp*pp*cp = " + std::to_string(mp));
  }
  l.dp = static_cast<int>(cfg.gpus / mp);
  auto gb = o.global_batch > 0 ? base::Result<int64_t>(o.global_batch)
                               : workload::default_global_batch(l);
  if (!gb) return bad_input(gb.error());
  l.global_batch = *gb;
  auto dtype = compute::parse_dtype(o.precision);
  if (!dtype) return bad_input("--precision: expected bf16, fp8 or fp4, got '" + o.precision + "'");
  l.dtype = *dtype;
  auto rc = models::parse_recompute(o.recompute);
  if (!rc)
    return bad_input("--recompute: expected none, selective or full, got '" + o.recompute + "'");
  l.recompute = *rc;
  cfg.work.model = o.model;
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
  std::optional<calibration::TrainingCalibration> fitted;
  if (!o.calibration.empty()) {
    // The scheduler prices communication with closed forms (PlacementComm): of a profile it
    // runs the training model's compute-time scale, and refuses one of collective lines alone.
    auto tc = calibration::training_calibration_of(
        o.calibration, (*lc->catalog.system(lc->spec.system))->gpu, "--calibration");
    if (!tc) return bad_input(tc.error());
    if (!*tc) {
      return bad_input("--calibration: " + o.calibration +
                       " has no training: mapping (the compute-time scale `calibrate` fits to "
                       "step times); goodput prices communication with closed forms, so "
                       "collective lines alone would change nothing");
    }
    fitted = *tc;
    speed.set_framework_overhead(fitted->compute_scale - 1.0);
  }
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
      std::cout << "  compute-time scale " << fitted->compute_scale
                << " fitted to measured steps (calibration profile " << fitted->path << ")\n";
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
  cmd->add_option("--cluster", o->cluster, "catalog name, cluster file or SYSTEM*COUNT")
      ->capture_default_str();
  cmd->add_option("--gpus", o->gpus,
                  "GPUs of the job (default: the whole cluster; the rest are spares)")
      ->check(flags::positive(o->gpus, base::kMaxGpus));
  cmd->add_option("--model", o->model, "catalog model, YAML file or HF config.json")
      ->capture_default_str();
  cmd->add_option("--tp", o->tp, "tensor parallel")
      ->check(flags::positive(o->tp, base::kMaxGpus))
      ->capture_default_str();
  cmd->add_option("--pp", o->pp, "pipeline stages")
      ->check(flags::positive(o->pp, base::kMaxGpus))
      ->capture_default_str();
  cmd->add_option("--cp", o->cp, "context parallel")
      ->check(flags::positive(o->cp, base::kMaxGpus))
      ->capture_default_str();
  cmd->add_option("--ep", o->ep, "expert parallel")
      ->check(flags::positive(o->ep, base::kMaxGpus))
      ->capture_default_str();
  cmd->add_option("--vpp", o->vpp, "virtual pipeline stages")
      ->check(flags::positive(o->vpp, base::kMaxLayers))
      ->capture_default_str();
  cmd->add_option("--micro-batch", o->micro_batch, "sequences per micro-batch")
      ->check(flags::positive(o->micro_batch, base::kMaxBatch))
      ->capture_default_str();
  cmd->add_option("--global-batch", o->global_batch,
                  "sequences per step (default: micro_batch*dp*4*pp)")
      ->check(flags::positive(o->global_batch, base::kMaxBatch));
  cmd->add_option("--seq-len", o->seq_len, "sequence length")
      ->check(flags::positive(o->seq_len, base::kMaxSequence))
      ->capture_default_str();
  cmd->add_option("--precision", o->precision, "bf16, fp8 or fp4")->capture_default_str();
  cmd->add_option("--recompute", o->recompute, "none, selective or full")->capture_default_str();
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
  cmd->add_option("--calibration", o->calibration,
                  "a calibration profile with a training: mapping (`clustertwin calibrate` on "
                  "step times): its compute-time scale");
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  return {cmd, [&ctx, o, report_flag] { return goodput(ctx, *o, report_flag->count() > 0); }};
}

}  // namespace clustertwin::app
