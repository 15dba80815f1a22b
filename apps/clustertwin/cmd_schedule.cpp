// `clustertwin schedule`: a cluster over days to months (docs/models/orchestration.md): a job
// stream (trace or synthetic), a queue policy, a placement policy, failures and checkpoints.
// Example: clustertwin schedule --cluster azure-ndv6-gb300 --synthetic llm --days 30
//          --policy easy --compare block,first-fit --spares 2 --seed 1
// Parsing and orchestration only; the numbers come from the scheduler layer.

#include <fstream>
#include <iostream>
#include <sstream>

#include "clustertwin/base/units_parse.h"
#include "clustertwin/report/html.h"
#include "clustertwin/report/progress.h"
#include "clustertwin/report/schedule.h"
#include "clustertwin/scheduler/synthetic.h"
#include "commands.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

struct ScheduleOptions {
  std::string cluster = "azure-ndv6-gb300";
  std::string tree_file;
  int gpus_per_node = 8;
  std::string trace, synthetic, vc_quotas, fault_replay;
  double days = 30;
  int64_t max_events = base::kMaxEvents;
  std::string policy = "easy", priority = "basic", placement = "block", compare;
  std::string failures = "on", preempt = "on", bad_rows = "stop", fault_bursts = "off";
  int spares = 0;
  uint64_t seed = 1;
  std::string spare_policy = "shared", sub_node = "pack";
  double bf_interval_s = 30, bf_window_min = 1440, bf_resolution_s = 60;
  int bf_max_job_test = 500, bf_max_job_start = 0, bf_reserve = -1;
  int bf_max_job_user = 0, bf_max_job_part = 0;
  int max_jobs_per_user = 0;
  double domain_failures = 1.0, failure_scale = 1.0, lemon_fraction = 0.15;
  bool async_checkpoint = false;
  double sample_min = 0;
  std::string json, jobs_csv;
};

base::Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return base::fail("cannot read file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int schedule(const Context& ctx, const ScheduleOptions& o, bool html) {
  using namespace scheduler;
  auto with_flag = [](const char* flag, const base::Error& e) {
    return bad_input(std::string(flag) + ": " + e.to_string());
  };
  auto policy = parse_queue_policy(o.policy);
  if (!policy) return with_flag("--policy", policy.error());
  std::vector<PlacementPolicy> placements;
  if (o.compare.empty()) {
    auto p = parse_placement(o.placement);
    if (!p) return with_flag("--placement", p.error());
    placements.push_back(*p);
  } else {
    std::string_view rest = o.compare;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      auto p = parse_placement(rest.substr(0, comma));
      if (!p) return with_flag("--compare", p.error());
      placements.push_back(*p);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  if (o.priority != "basic" && o.priority != "multifactor") {
    return bad_input("--priority: expected basic or multifactor, got '" + o.priority + "'");
  }
  for (const auto& [flag, v] : {std::pair{"--failures", o.failures},
                                {"--preempt", o.preempt},
                                {"--fault-bursts", o.fault_bursts}}) {
    if (v != "on" && v != "off")
      return bad_input(std::string(flag) + ": expected on or off, got '" + v + "'");
  }
  if (o.spare_policy != "shared" && o.spare_policy != "reserved") {
    return bad_input("--spare-policy: expected shared or reserved, got '" + o.spare_policy + "'");
  }
  auto sub_node = parse_sub_node_fit(o.sub_node);
  if (!sub_node) return with_flag("--sub-node", sub_node.error());
  if (o.bad_rows != "stop" && o.bad_rows != "skip") {
    return bad_input("--bad-rows: expected stop or skip, got '" + o.bad_rows + "'");
  }
  if (!o.trace.empty() && !o.synthetic.empty())
    return bad_input("give --trace or --synthetic, not both");
  if (!(o.days > 0)) return bad_input("--days must be > 0");

  // The cluster: a catalog cluster (with the performance model) or a switch-tree CSV.
  std::optional<LoadedCluster> lc;
  std::optional<ClusterModel> cluster;
  if (!o.tree_file.empty()) {
    auto text = read_file(o.tree_file);
    if (!text) return bad_input(text.error());
    auto c = ClusterModel::from_switch_csv(*text, o.tree_file, o.gpus_per_node);
    if (!c) return bad_input(c.error());
    cluster = std::move(*c);
  } else {
    auto l = ctx.load_cluster(o.cluster);
    if (!l) return bad_input(l.error());
    lc.emplace(std::move(*l));
    cluster = ClusterModel::from_topology(lc->topo,
                                          (**lc->catalog.system(lc->spec.system)).gpus_per_node);
  }
  const Tick horizon = engine::to_ticks(base::seconds(o.days * 86400));

  // The job stream.
  Workload w;
  if (!o.trace.empty()) {
    auto text = read_file(o.trace);
    if (!text) return bad_input(text.error());
    TraceOptions to;
    to.bad_rows = o.bad_rows == "skip" ? BadRows::kSkip : BadRows::kStop;
    auto r = read_trace(*text, o.trace, to);
    if (!r) return bad_input(r.error());
    w = std::move(*r);
  } else {
    auto spec = parse_synthetic(o.synthetic.empty() ? "llm" : o.synthetic);
    if (!spec) return bad_input(spec.error());
    auto r = generate(*spec, *cluster, horizon, o.seed);
    if (!r) return bad_input(r.error());
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
    auto text = read_file(o.vc_quotas);
    if (!text) return bad_input(text.error());
    if (auto st = apply_vc_quotas(w, *text, o.vc_quotas, cluster->gpus_per_node()); !st) {
      return bad_input(st.error());
    }
  }

  SimConfig cfg;
  cfg.horizon = horizon;
  cfg.seed = o.seed;
  cfg.policy = *policy;
  cfg.spares = o.spares;
  cfg.reserve_spares = o.spare_policy == "reserved";
  cfg.placement.sub_node = *sub_node;
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
  cfg.failures.model = FailureModel::llama3(cluster->max_domain_nodes() > 1, o.domain_failures);
  cfg.failures.model.scale(o.failure_scale);
  cfg.failures.model.lemon_fraction = o.lemon_fraction;
  if (o.fault_bursts == "on") cfg.failures.model.burst_weights = FailureModel::stepfun_bursts();
  cfg.storage.async = o.async_checkpoint;
  cfg.record_jobs = !o.jobs_csv.empty();
  cfg.max_events = o.max_events;
  if (o.sample_min > 0) cfg.sample_interval = engine::to_ticks(base::seconds(o.sample_min * 60));
  if (!o.fault_replay.empty()) {
    auto text = read_file(o.fault_replay);
    if (!text) return bad_input(text.error());
    auto f = read_fault_intervals(*text, o.fault_replay);
    if (!f) return bad_input(f.error());
    cfg.failures.enabled = true;
    cfg.failures.replay = std::move(*f);
  }

  std::vector<ScheduleResult> runs;
  for (auto p : placements) {
    cfg.placement.policy = p;
    std::optional<SpeedModel> speed;
    if (lc) speed.emplace(lc->catalog, lc->topo);
    if (!ctx.quiet) std::cerr << "schedule: " << placement_name(p) << " placement ...\n";
    // A bar over simulated time (drawn only on a terminal, see report/progress.h).
    auto bar = report::Progress::to_stderr("simulated time", 1000, ctx.quiet);
    cfg.on_progress = [&bar](double f) { bar.set(static_cast<int64_t>(f * 1000)); };
    auto r = simulate(*cluster, w, cfg, speed ? &*speed : nullptr);
    bar.finish();
    cfg.on_progress = nullptr;
    if (!r) return bad_input(r.error());
    runs.push_back(std::move(*r));
  }
  if (!o.json.empty() || html) {
    report::Json arr = report::Json::array();
    for (const auto& r : runs) arr.push_back(report::schedule_json(r));
    const report::Json results = {{"schedule", {{"runs", arr}}}};
    if (!o.json.empty()) {
      if (auto st = report::write_json(results, o.json); !st) return bad_input(st.error());
    }
    if (html) {
      const std::string page = report::render_html(results);
      if (auto st = report::write_text(page, ctx.report_path); !st) return bad_input(st.error());
      if (!ctx.quiet) std::cerr << "wrote " << ctx.report_path << "\n";
    }
  }
  if (!o.jobs_csv.empty()) {
    if (auto st = report::write_text(report::schedule_jobs_csv(runs.front()), o.jobs_csv); !st) {
      return bad_input(st.error());
    }
  }
  if (o.json != "-") std::cout << report::schedule_text(runs);
  return kExitOk;
}

}  // namespace

Verb add_schedule(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<ScheduleOptions>();
  const CLI::Option* report_flag = app.get_option("--report");
  CLI::App* cmd = app.add_subcommand(
      "schedule",
      "A cluster over days to months: jobs from a trace or a synthetic LLM mix, queue and "
      "placement policies, failures with hot spares and checkpoints; utilisation, waits, "
      "interruptions, goodput and ETTR.\n"
      "Example: clustertwin schedule --cluster azure-ndv6-gb300 --synthetic llm --days 30 "
      "--policy easy --compare block,first-fit --spares 2 --report schedule.html");
  cmd->add_option("--cluster", o->cluster, "catalog name, cluster file or SYSTEM*COUNT")
      ->capture_default_str();
  cmd->add_option(
      "--tree-file", o->tree_file,
      "a switch tree CSV (host,level1,...,leaf; e.g. Lingjun topo.csv) instead of --cluster");
  cmd->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per host of a --tree-file cluster")
      ->check(flags::positive(o->gpus_per_node, base::kMaxGpus))
      ->capture_default_str();
  cmd->add_option("--trace", o->trace,
                  "job trace: CSV (submit_s,gpus,duration_s,...; or the Philly job list) or JSON");
  cmd->add_option("--synthetic", o->synthetic,
                  "synthetic stream PRESET[:key=value,...]: llm (default) or philly-like; keys "
                  "load, jobs, inference, pretrain, finetune, dev, accounts");
  cmd->add_option("--vc-quotas", o->vc_quotas,
                  "per-account GPU quotas from a Philly philly_vc.csv (vc,node num)");
  cmd->add_option("--days", o->days, "simulated days")
      ->capture_default_str()
      ->check(flags::positive(o->days, base::kMaxSimSeconds / 86400));
  cmd->add_option("--max-events", o->max_events,
                  "stop a simulated run with an error after this many events (a bound on run time)")
      ->capture_default_str()
      ->check(flags::positive(o->max_events, 1e15));
  cmd->add_option("--policy", o->policy, "queue policy: fifo, easy or conservative (backfill)")
      ->capture_default_str();
  cmd->add_option("--priority", o->priority,
                  "basic (submit order) or multifactor (age, fair share, QOS)")
      ->capture_default_str();
  cmd->add_option(
         "--placement", o->placement,
         "block (Slurm topology/block), tree (topology/tree), first-fit or kueue (TAS BestFit)")
      ->capture_default_str();
  cmd->add_option("--compare", o->compare,
                  "run several placements side by side, e.g. block,first-fit");
  cmd->add_option("--failures", o->failures, "on or off")->capture_default_str();
  cmd->add_option(
      "--fault-replay", o->fault_replay,
      "replay node down intervals (StepFun fault_intervals.csv) instead of random failures");
  cmd->add_option("--spares", o->spares,
                  "nodes per base block (NVL72 rack) kept out of gang segments: spare trays")
      ->capture_default_str()
      ->check(flags::non_negative(o->spares, base::kMaxGpus));
  cmd->add_option("--spare-policy", o->spare_policy,
                  "shared (spare trays also run small jobs, Slurm BlockSizes) or reserved (kept "
                  "free for hot swaps)")
      ->capture_default_str();
  cmd->add_option("--sub-node", o->sub_node,
                  "jobs smaller than a node: pack (the fullest node that fits, best fit) or "
                  "spread (the emptiest node)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed (same seed, same result)")
      ->capture_default_str()
      ->check(flags::non_negative(o->seed));
  cmd->add_option("--bad-rows", o->bad_rows,
                  "malformed trace rows and impossible jobs: stop (error) or skip (count)")
      ->capture_default_str();
  cmd->add_option("--bf-interval", o->bf_interval_s, "bf_interval, seconds")
      ->capture_default_str()
      ->check(flags::positive(o->bf_interval_s, base::kMaxSimSeconds));
  cmd->add_option("--bf-window", o->bf_window_min, "bf_window, minutes")
      ->capture_default_str()
      ->check(flags::positive(o->bf_window_min, base::kMaxSimSeconds / 60));
  cmd->add_option("--bf-resolution", o->bf_resolution_s, "bf_resolution, seconds")
      ->capture_default_str()
      ->check(flags::positive(o->bf_resolution_s, base::kMaxSimSeconds));
  cmd->add_option("--bf-max-job-test", o->bf_max_job_test, "bf_max_job_test")
      ->check(flags::positive(o->bf_max_job_test, base::kMaxJobs))
      ->capture_default_str();
  cmd->add_option("--bf-max-job-start", o->bf_max_job_start, "bf_max_job_start (0 = no limit)")
      ->capture_default_str()
      ->check(flags::non_negative(o->bf_max_job_start, base::kMaxJobs));
  cmd->add_option("--bf-max-job-user", o->bf_max_job_user,
                  "bf_max_job_user: jobs tested per user in a backfill pass (0 = no limit)")
      ->check(flags::non_negative(o->bf_max_job_user, base::kMaxJobs))
      ->capture_default_str();
  cmd->add_option("--bf-max-job-part", o->bf_max_job_part,
                  "bf_max_job_part: jobs tested per partition in a backfill pass (0 = no limit)")
      ->check(flags::non_negative(o->bf_max_job_part, base::kMaxJobs))
      ->capture_default_str();
  cmd->add_option("--bf-reserve", o->bf_reserve,
                  "bf_job_part_count_reserve (-1: 1 for easy, all tested for conservative)")
      ->capture_default_str()
      ->check(flags::range(o->bf_reserve, -1, base::kMaxJobs));
  cmd->add_option("--preempt", o->preempt,
                  "high-QOS jobs (inference) preempt low-QOS ones (fine-tuning): on or off")
      ->capture_default_str();
  cmd->add_option("--max-jobs-per-user", o->max_jobs_per_user, "MaxJobs per user (0 = none)")
      ->capture_default_str()
      ->check(flags::non_negative(o->max_jobs_per_user, base::kMaxJobs));
  cmd->add_option("--domain-failures", o->domain_failures,
                  "NVLink-domain stop and degrade events per 1,000 domain-days, each (assumption: "
                  "no public rate)")
      ->capture_default_str()
      ->check(flags::non_negative(o->domain_failures, 1e6));
  cmd->add_option("--fault-bursts", o->fault_bursts,
                  "node failures in StepFun's bursts (up to 8 servers at one instant, node "
                  "failure rate kept): on or off")
      ->capture_default_str();
  cmd->add_option("--failure-scale", o->failure_scale, "multiply every failure rate")
      ->capture_default_str()
      ->check(flags::non_negative(o->failure_scale, 1e6));
  cmd->add_option("--lemon-fraction", o->lemon_fraction,
                  "share of nodes failing 5x as often (rate kept)")
      ->check(flags::range(o->lemon_fraction, 0.0, 1.0))
      ->capture_default_str();
  cmd->add_flag("--async-checkpoint", o->async_checkpoint, "asynchronous checkpoints (10 s stall)");
  cmd->add_option("--sample-minutes", o->sample_min,
                  "timeline sample period (default: horizon / 720)")
      ->check(flags::non_negative(o->sample_min, base::kMaxSimSeconds / 60));
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  cmd->add_option("--jobs-csv", o->jobs_csv, "write one line per job of the first run to FILE");
  return {cmd, [&ctx, o, report_flag] { return schedule(ctx, *o, report_flag->count() > 0); }};
}

}  // namespace clustertwin::app
