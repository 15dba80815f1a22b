// The schedule request, its field table and its run (docs/models/orchestration.md for the
// scheduler; DESIGN.md §2 for the field tables). Moved from apps/clustertwin/cmd_schedule.cpp.

#include "clustertwin/scenario/schedule.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "clustertwin/base/file.h"
#include "clustertwin/base/text.h"
#include "clustertwin/report/progress.h"
#include "clustertwin/report/schedule.h"
#include "clustertwin/scheduler/synthetic.h"

namespace clustertwin::scenario {
namespace {

using R = ScheduleRequest;
using F = Field<R>;

/// Samples of the utilisation timeline (the default is 720 over the horizon).
constexpr double kMaxTimelineSamples = 100000;

FieldTable<R> make_schedule_fields() {
  const double sim_s = base::kMaxSimSeconds;
  const base::IntRange jobs{.min = 0, .max = base::kMaxJobs};
  const base::RealRange rate{.min = 0, .max = 1e6};
  // Slurm's own floors (slurm.conf SchedulerParameters: bf_interval and bf_resolution "Min: 1"
  // second, bf_window "Min: 1" minute): a backfill pass every nanosecond once ran 8.6e13 passes
  // over a day and never finished.
  const base::RealRange at_least_one{.min = 1, .max = sim_s};
  return {
      F{.key = "cluster",
        .flag = "cluster",
        .name = "cluster",
        .member = &R::cluster,
        .help = "catalog name, cluster file or SYSTEM*COUNT",
        .show_default = true,
        .in_file = false},
      F{.key = "tree_file",
        .flag = "tree-file",
        .name = "switch tree file",
        .member = &R::tree_file,
        .help = "a switch tree CSV (host,level1,...,leaf; e.g. Lingjun topo.csv) instead of "
                "{cluster}"},
      F{.key = "gpus_per_node",
        .flag = "gpus-per-node",
        .name = "GPUs per node",
        .member = &R::gpus_per_node,
        .help = "GPUs per host of a {tree_file} cluster",
        .ints = positive(base::kMaxGpus),
        .show_default = true},
      F{.key = "trace",
        .flag = "trace",
        .name = "job trace",
        .member = &R::trace,
        .help = "job trace: CSV (submit_s,gpus,duration_s,...; or the Philly job list) or JSON"},
      F{.key = "synthetic",
        .flag = "synthetic",
        .name = "synthetic stream",
        .member = &R::synthetic,
        .help = "synthetic stream PRESET[:key=value,...]: llm (default) or philly-like; keys "
                "load, jobs, inference, pretrain, finetune, dev, accounts"},
      F{.key = "vc_quotas",
        .flag = "vc-quotas",
        .name = "VC quotas",
        .member = &R::vc_quotas,
        .help = "per-account GPU quotas from a Philly philly_vc.csv (vc,node num)"},
      F{.key = "days",
        .flag = "days",
        .name = "days",
        .member = &R::days,
        .help = "simulated days",
        .reals = {.min = 0, .max = sim_s / 86400, .min_exclusive = true},
        .show_default = true},
      F{.key = "max_events",
        .flag = "max-events",
        .name = "event limit",
        .member = &R::max_events,
        .help = "stop a simulated run with an error after this many events (a bound on run time)",
        .ints = positive(static_cast<int64_t>(1e15)),
        .show_default = true},
      F{.key = "policy",
        .flag = "policy",
        .name = "queue policy",
        .member = &R::policy,
        .help = "queue policy: fifo, easy or conservative (backfill)",
        .show_default = true},
      F{.key = "priority",
        .flag = "priority",
        .name = "priority",
        .member = &R::priority,
        .help = "basic (submit order) or multifactor (age, fair share, QOS)",
        .show_default = true},
      F{.key = "placement",
        .flag = "placement",
        .name = "placement",
        .member = &R::placement,
        .help = "block (Slurm topology/block), tree (topology/tree), first-fit or kueue (TAS "
                "BestFit)",
        .show_default = true},
      F{.key = "compare",
        .flag = "compare",
        .name = "compared placements",
        .member = &R::compare,
        .help = "run several placements side by side, e.g. block,first-fit"},
      F{.key = "failures",
        .flag = "failures",
        .name = "failures",
        .member = &R::failures,
        .help = "on or off",
        .show_default = true},
      F{.key = "fault_replay",
        .flag = "fault-replay",
        .name = "fault replay",
        .member = &R::fault_replay,
        .help = "replay node down intervals (StepFun fault_intervals.csv) instead of random "
                "failures"},
      F{.key = "spares",
        .flag = "spares",
        .name = "spare nodes",
        .member = &R::spares,
        .help = "nodes per base block (NVL72 rack) kept out of gang segments: spare trays",
        .ints = {.min = 0, .max = base::kMaxGpus},
        .show_default = true},
      F{.key = "spare_policy",
        .flag = "spare-policy",
        .name = "spare policy",
        .member = &R::spare_policy,
        .help = "shared (spare trays also run small jobs, Slurm BlockSizes) or reserved (kept "
                "free for hot swaps)",
        .show_default = true},
      F{.key = "sub_node",
        .flag = "sub-node",
        .name = "sub-node fit",
        .member = &R::sub_node,
        .help = "jobs smaller than a node: pack (the fullest node that fits, best fit) or "
                "spread (the emptiest node)",
        .show_default = true},
      F{.key = "seed",
        .flag = "seed",
        .name = "seed",
        .member = &R::seed,
        .help = "random seed (same seed, same result)",
        .ints = {.min = 0},
        .show_default = true},
      F{.key = "bad_rows",
        .flag = "bad-rows",
        .name = "bad rows",
        .member = &R::bad_rows,
        .help = "malformed trace rows and impossible jobs: stop (error) or skip (count)",
        .show_default = true},
      F{.key = "bf_interval",
        .flag = "bf-interval",
        .name = "backfill interval",
        .member = &R::bf_interval_s,
        .help = "bf_interval, seconds",
        .reals = at_least_one,
        .show_default = true},
      F{.key = "bf_window",
        .flag = "bf-window",
        .name = "backfill window",
        .member = &R::bf_window_min,
        .help = "bf_window, minutes",
        .reals = {.min = 1, .max = sim_s / 60},
        .show_default = true},
      F{.key = "bf_resolution",
        .flag = "bf-resolution",
        .name = "backfill resolution",
        .member = &R::bf_resolution_s,
        .help = "bf_resolution, seconds",
        .reals = at_least_one,
        .show_default = true},
      F{.key = "bf_max_job_test",
        .flag = "bf-max-job-test",
        .name = "backfill jobs tested",
        .member = &R::bf_max_job_test,
        .help = "bf_max_job_test",
        .ints = positive(base::kMaxJobs),
        .show_default = true},
      F{.key = "bf_max_job_start",
        .flag = "bf-max-job-start",
        .name = "backfill jobs started",
        .member = &R::bf_max_job_start,
        .help = "bf_max_job_start (0 = no limit)",
        .ints = jobs,
        .show_default = true},
      F{.key = "bf_max_job_user",
        .flag = "bf-max-job-user",
        .name = "backfill jobs per user",
        .member = &R::bf_max_job_user,
        .help = "bf_max_job_user: jobs tested per user in a backfill pass (0 = no limit)",
        .ints = jobs,
        .show_default = true},
      F{.key = "bf_max_job_part",
        .flag = "bf-max-job-part",
        .name = "backfill jobs per partition",
        .member = &R::bf_max_job_part,
        .help = "bf_max_job_part: jobs tested per partition in a backfill pass (0 = no limit)",
        .ints = jobs,
        .show_default = true},
      F{.key = "bf_reserve",
        .flag = "bf-reserve",
        .name = "backfill reservations",
        .member = &R::bf_reserve,
        .help = "bf_job_part_count_reserve (-1: 1 for easy, all tested for conservative)",
        .ints = {.min = -1, .max = base::kMaxJobs},
        .show_default = true},
      F{.key = "preempt",
        .flag = "preempt",
        .name = "preemption",
        .member = &R::preempt,
        .help = "high-QOS jobs (inference) preempt low-QOS ones (fine-tuning): on or off",
        .show_default = true},
      F{.key = "max_jobs_per_user",
        .flag = "max-jobs-per-user",
        .name = "jobs per user",
        .member = &R::max_jobs_per_user,
        .help = "MaxJobs per user (0 = none)",
        .ints = jobs,
        .show_default = true},
      F{.key = "domain_failures",
        .flag = "domain-failures",
        .name = "NVLink-domain failure rate",
        .member = &R::domain_failures,
        .help = "NVLink-domain stop and degrade events per 1,000 domain-days, each (assumption: "
                "no public rate)",
        .reals = rate,
        .show_default = true},
      F{.key = "fault_bursts",
        .flag = "fault-bursts",
        .name = "fault bursts",
        .member = &R::fault_bursts,
        .help = "node failures in StepFun's bursts (up to 8 servers at one instant, node "
                "failure rate kept): on or off",
        .show_default = true},
      F{.key = "failure_scale",
        .flag = "failure-scale",
        .name = "failure scale",
        .member = &R::failure_scale,
        .help = "multiply every failure rate",
        .reals = rate,
        .show_default = true},
      F{.key = "lemon_fraction",
        .flag = "lemon-fraction",
        .name = "lemon fraction",
        .member = &R::lemon_fraction,
        .help = "share of nodes failing 5x as often (rate kept)",
        .reals = {.min = 0, .max = 1},
        .show_default = true},
      F{.key = "async_checkpoint",
        .flag = "async-checkpoint",
        .name = "asynchronous checkpoints",
        .member = &R::async_checkpoint,
        .help = "asynchronous checkpoints (10 s stall)"},
      F{.key = "sample_minutes",
        .flag = "sample-minutes",
        .name = "sample period",
        .member = &R::sample_min,
        .help = "timeline sample period (default: horizon / 720)",
        .reals = {.min = 0, .max = sim_s / 60}},
  };
}

// The text of the file a field names. The message names the field ({trace}, ...), so that the
// door says where it was given (the flag, or the scenario's file:line), and the system's reason.
base::Result<std::string> read_file(const char* key, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return base::fail(
        fmt::format("{{{}}}: '{}' is a directory, expected a file", key, base::verbatim(path)));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return base::fail(fmt::format("{{{}}}: cannot read file '{}': {}", key, base::verbatim(path),
                                  std::strerror(errno)));
  }
  auto text = base::read_all(in);
  if (!text) {
    return base::fail(
        fmt::format("{{{}}}: '{}': {}", key, base::verbatim(path), text.error().message));
  }
  return text;
}

/// The settings that are words, checked: the queue policy, the placements, on/off switches.
struct Choices {
  scheduler::QueuePolicy policy{};
  std::vector<scheduler::PlacementPolicy> placements;
  scheduler::SubNodeFit sub_node{};
};

base::Result<Choices> choices_of(const R& o) {
  using namespace scheduler;
  auto about = [](const char* key, const base::Error& e) {
    return base::fail(std::string("{") + key + "}: " + e.to_string());
  };
  Choices c;
  auto policy = parse_queue_policy(o.policy);
  if (!policy) return about("policy", policy.error());
  c.policy = *policy;
  if (o.compare.empty()) {
    auto p = parse_placement(o.placement);
    if (!p) return about("placement", p.error());
    c.placements.push_back(*p);
  } else {
    std::string_view rest = o.compare;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      auto p = parse_placement(rest.substr(0, comma));
      if (!p) return about("compare", p.error());
      c.placements.push_back(*p);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  if (o.priority != "basic" && o.priority != "multifactor") {
    return base::fail("{priority}: expected basic or multifactor, got '" + o.priority + "'");
  }
  for (const auto& [key, v] : {std::pair{"failures", o.failures},
                               {"preempt", o.preempt},
                               {"fault_bursts", o.fault_bursts}}) {
    if (v != "on" && v != "off") {
      return base::fail(std::string("{") + key + "}: expected on or off, got '" + v + "'");
    }
  }
  if (o.spare_policy != "shared" && o.spare_policy != "reserved") {
    return base::fail("{spare_policy}: expected shared or reserved, got '" + o.spare_policy + "'");
  }
  auto sub_node = parse_sub_node_fit(o.sub_node);
  if (!sub_node) return about("sub_node", sub_node.error());
  c.sub_node = *sub_node;
  if (o.bad_rows != "stop" && o.bad_rows != "skip") {
    return base::fail("{bad_rows}: expected stop or skip, got '" + o.bad_rows + "'");
  }
  if (!o.trace.empty() && !o.synthetic.empty()) {
    return base::fail("give {trace} or {synthetic}, not both");
  }
  if (!(o.days > 0)) return base::fail("{days} must be > 0");
  // The timeline keeps every sample (in memory, the JSON and the report): 10^6 samples took
  // 6.5 s, 0.8 GB and a 195 MB JSON; a period of 1e-9 minutes asked for 4e13 and never ended.
  if (o.sample_min > 0 && o.days * 1440 / o.sample_min > kMaxTimelineSamples) {
    return base::fail(fmt::format(
        "{{sample_minutes}}: {:g} minutes over {:g} days is {:.3g} timeline samples, more than the "
        "limit of {:g} (give at least {:.3g} minutes)",
        o.sample_min, o.days, o.days * 1440 / o.sample_min, kMaxTimelineSamples,
        o.days * 1440 / kMaxTimelineSamples));
  }
  return c;
}

/// The simulation's configuration of a request (the placement is set per run).
scheduler::SimConfig config_of(const R& o, const Choices& c, const scheduler::ClusterModel& cluster,
                               scheduler::Tick horizon) {
  using namespace scheduler;
  SimConfig cfg;
  cfg.horizon = horizon;
  cfg.seed = static_cast<uint64_t>(o.seed);
  cfg.policy = c.policy;
  cfg.spares = o.spares;
  cfg.reserve_spares = o.spare_policy == "reserved";
  cfg.placement.sub_node = c.sub_node;
  cfg.bad_jobs = o.bad_rows == "skip" ? BadRows::kSkip : BadRows::kStop;
  cfg.backfill.interval = engine::to_ticks(base::seconds(o.bf_interval_s));
  cfg.backfill.window = engine::to_ticks(base::seconds(o.bf_window_min * 60));
  cfg.backfill.resolution = engine::to_ticks(base::seconds(o.bf_resolution_s));
  cfg.backfill.max_job_test = o.bf_max_job_test;
  cfg.backfill.max_job_start = o.bf_max_job_start;
  cfg.backfill.max_job_user = o.bf_max_job_user;
  cfg.backfill.max_job_part = o.bf_max_job_part;
  cfg.backfill.reserve = o.bf_reserve;
  cfg.priority.mode = o.priority == "basic" ? PriorityMode::kBasic : PriorityMode::kMultifactor;
  cfg.preempt.enabled = o.preempt == "on";
  cfg.limits.max_running_jobs_per_user = o.max_jobs_per_user;
  cfg.failures.enabled = o.failures == "on";
  cfg.failures.model = FailureModel::llama3(cluster.max_domain_nodes() > 1, o.domain_failures);
  cfg.failures.model.scale(o.failure_scale);
  cfg.failures.model.lemon_fraction = o.lemon_fraction;
  if (o.fault_bursts == "on") cfg.failures.model.burst_weights = FailureModel::stepfun_bursts();
  cfg.storage.async = o.async_checkpoint;
  cfg.max_events = o.max_events;
  if (o.sample_min > 0) cfg.sample_interval = engine::to_ticks(base::seconds(o.sample_min * 60));
  return cfg;
}

}  // namespace

const FieldTable<ScheduleRequest>& schedule_fields() {
  static const FieldTable<ScheduleRequest> kTable = make_schedule_fields();
  return kTable;
}

const std::vector<FieldWord>& schedule_words() {
  static const std::vector<FieldWord> kWords = words_of(schedule_fields());
  return kWords;
}

base::Result<ScheduleRun> run_schedule(const Environment& env, const ScheduleRequest& o, bool quiet,
                                       bool jobs_csv) {
  using namespace scheduler;
  if (auto st = check_fields<R>(o, {&schedule_fields()}); !st) return base::fail(st.error());
  auto choices = choices_of(o);
  if (!choices) return base::fail(choices.error());

  // The cluster: a catalog cluster (with the performance model) or a switch-tree CSV.
  std::optional<LoadedCluster> lc;
  std::optional<ClusterModel> cluster;
  if (!o.tree_file.empty()) {
    auto text = read_file("tree_file", o.tree_file);
    if (!text) return base::fail(text.error());
    auto c = ClusterModel::from_switch_csv(*text, o.tree_file, o.gpus_per_node);
    if (!c) return base::fail(c.error());
    cluster = std::move(*c);
  } else {
    auto l = env.load_cluster(o.cluster);
    if (!l) return base::fail(l.error());
    lc.emplace(std::move(*l));
    cluster = ClusterModel::from_topology(lc->topo, lc->system().gpus_per_node);
  }
  const Tick horizon = engine::to_ticks(base::seconds(o.days * 86400));

  // The job stream.
  Workload w;
  if (!o.trace.empty()) {
    auto text = read_file("trace", o.trace);
    if (!text) return base::fail(text.error());
    TraceOptions to;
    to.bad_rows = o.bad_rows == "skip" ? BadRows::kSkip : BadRows::kStop;
    auto r = read_trace(*text, o.trace, to);
    if (!r) return base::fail(r.error());
    w = std::move(*r);
  } else {
    auto spec = parse_synthetic(o.synthetic.empty() ? "llm" : o.synthetic);
    if (!spec) return base::fail(spec.error());
    auto r = generate(*spec, *cluster, horizon, static_cast<uint64_t>(o.seed));
    if (!r) return base::fail(r.error());
    w = std::move(*r);
    if (lc) {
      SpeedModel fit(lc->catalog, lc->topo);
      if (const int64_t n = fit_to_memory(w, fit); n > 0) {
        w.warnings.push_back(std::to_string(n) +
                             " synthetic training jobs got more tensor or pipeline parallelism to "
                             "fit in GPU memory");
      }
    }
  }
  if (!o.vc_quotas.empty()) {
    auto text = read_file("vc_quotas", o.vc_quotas);
    if (!text) return base::fail(text.error());
    if (auto st = apply_vc_quotas(w, *text, o.vc_quotas, cluster->gpus_per_node()); !st) {
      return base::fail(st.error());
    }
  }

  SimConfig cfg = config_of(o, *choices, *cluster, horizon);
  cfg.record_jobs = jobs_csv;
  if (!o.fault_replay.empty()) {
    auto text = read_file("fault_replay", o.fault_replay);
    if (!text) return base::fail(text.error());
    auto f = read_fault_intervals(*text, o.fault_replay);
    if (!f) return base::fail(f.error());
    cfg.failures.enabled = true;
    cfg.failures.replay = std::move(*f);
  }

  std::vector<ScheduleResult> runs;
  for (auto p : choices->placements) {
    cfg.placement.policy = p;
    std::optional<SpeedModel> speed;
    if (lc) speed.emplace(lc->catalog, lc->topo);
    if (!quiet) std::cerr << "schedule: " << placement_name(p) << " placement ...\n";
    // A bar over simulated time (drawn only on a terminal, see report/progress.h).
    auto bar = report::Progress::to_stderr("simulated time", 1000, quiet);
    cfg.on_progress = [&bar](double f) { bar.set(static_cast<int64_t>(f * 1000)); };
    auto r = simulate(*cluster, w, cfg, speed ? &*speed : nullptr);
    bar.finish();
    cfg.on_progress = nullptr;
    if (!r) return base::fail(r.error());
    runs.push_back(std::move(*r));
  }
  ScheduleRun out;
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : runs) arr.push_back(report::schedule_json(r));
  out.json = {{"runs", arr}};
  out.text = report::schedule_text(runs);
  if (jobs_csv) out.jobs_csv = report::schedule_jobs_csv(runs.front());
  const auto& first = runs.front();
  out.summary = fmt::format(
      "schedule  {} over {:g} days, {} placement: utilisation {:.1f}%, goodput {:.1f}%, {} jobs "
      "finished, {} interruptions",
      first.cluster, o.days, first.placement, 100 * first.utilization, 100 * first.goodput,
      first.jobs_finished, first.interruptions);
  return out;
}

}  // namespace clustertwin::scenario
