// `clustertwin serve`: LLM serving on a cluster: throughput, TTFT/TPOT, the highest request rate
// that meets MLPerf's latency limits, and (--serving auto) the best layout with its Pareto
// frontier. Example: clustertwin serve --cluster azure-ndv6-gb300 --gpus 72 --model deepseek-r1
//                    --scenario server

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>

#include "clustertwin/base/units_parse.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/report/progress.h"
#include "clustertwin/report/serving.h"
#include "clustertwin/search/serving_search.h"
#include "commands.h"
#include "flags.h"

namespace clustertwin::app {
namespace {

struct ServeOutput {
  report::Json json;
  std::string text, csv;
  std::optional<ServingPowerOutput> power;  // --power
};

bool layout_flags_given(const ServeOptions& o) {
  return o.tp > 0 || o.pp > 0 || o.ep > 0 || o.dp_attention || o.max_batch > 0 ||
         o.max_tokens > 0 || o.disaggregated || o.replicas > 0;
}

base::Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return base::fail("cannot read serving file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The explicit layout of the flags (or of a file); replicas default to what the GPUs hold.
base::Result<workload::ServingLayout> explicit_layout(const ServeOptions& o, int64_t gpus,
                                                      compute::DType weights, double kv_bytes) {
  workload::ServingLayout l;
  if (!o.serving.empty() && o.serving != "auto") {
    auto text = read_text(o.serving);
    if (!text) return base::fail(text.error());
    auto f = workload::parse_serving_yaml(*text, o.serving);
    if (!f) return f;
    l = *f;
  } else {
    l.weights = weights;
    l.kv_bytes = kv_bytes;
    auto& i = l.instance;
    i.tp = std::max(1, o.tp);
    i.pp = std::max(1, o.pp);
    i.dp_attention = o.dp_attention;
    i.ep = o.ep > 0 ? o.ep : (o.dp_attention ? i.tp : 1);
    i.max_batch = o.max_batch > 0 ? o.max_batch : 256;
    i.max_tokens = o.max_tokens > 0 ? o.max_tokens : 8192;
    i.chunked_prefill = !o.no_chunked;
    l.replicas = o.replicas;
    if (o.disaggregated) {
      l.disaggregated = true;
      l.prefill.tp = std::max(1, o.prefill_tp);
      l.prefill.dp_attention = o.prefill_dp_attention;
      l.prefill.ep = o.prefill_ep > 0 ? o.prefill_ep : (o.prefill_dp_attention ? l.prefill.tp : 1);
      l.prefill.max_tokens = o.prefill_max_tokens;
      l.prefill.max_batch = o.prefill_max_batch;
      l.prefill_replicas = std::max(1, o.prefill_replicas);
    }
    l.mtp = o.mtp;
    l.mtp_acceptance = o.mtp_acceptance;
    l.kv_policy =
        o.kv_policy == "reserve" ? workload::KvPolicy::kReserve : workload::KvPolicy::kPreempt;
    if (o.tp_overlap >= 0) l.tp_overlap = o.tp_overlap;
    l.adp_balance = o.adp_assign == "balanced";
  }
  if (l.replicas <= 0) {
    const int64_t rest = gpus - (l.disaggregated ? l.prefill_replicas * l.prefill.gpus() : 0);
    const int per = l.instance.gpus();
    if (rest <= 0 || rest % per != 0) {
      return base::fail(fmt::format(
          "layout {} needs {} GPUs per instance, which does not divide the {} GPUs{} (give "
          "--replicas, change --gpus or the layout)",
          l.instance.label(), per, rest, l.disaggregated ? " left after the prefill pool" : ""));
    }
    l.replicas = static_cast<int>(rest / per);
  }
  return l;
}

base::Result<workload::LatencyLimits> limits_of(const ServeOptions& o, const workload::Dataset& d,
                                                workload::ServingScenario sc) {
  auto from_dataset = d.limits(sc);
  workload::LatencyLimits l;
  if (from_dataset) l = *from_dataset;
  auto read = [](const std::string& text, const char* flag) -> base::Result<base::Seconds> {
    auto v = base::parse<base::Seconds>(text);
    if (!v) return base::fail(std::string(flag) + ": " + v.error().message);
    if (v->base() <= 0) return base::fail(std::string(flag) + ": expected a time > 0");
    return *v;
  };
  if (!o.ttft_limit.empty()) {
    auto v = read(o.ttft_limit, "--ttft-limit");
    if (!v) return base::fail(v.error());
    l.ttft = *v;
  }
  if (!o.tpot_limit.empty()) {
    auto v = read(o.tpot_limit, "--tpot-limit");
    if (!v) return base::fail(v.error());
    l.tpot = *v;
  }
  if (l.ttft.base() <= 0 || l.tpot.base() <= 0) {
    return base::fail(std::string("the ") + workload::scenario_name(sc) + " scenario needs p99 " +
                      "limits: dataset '" + d.name +
                      "' has none, give --ttft-limit and --tpot-limit");
  }
  return l;
}

base::Status serve_impl(const Context& ctx, const ServeOptions& o, ServeOutput& out) {
  if (!o.power) {
    const std::pair<bool, const char*> given[] = {{!o.power_cap.empty(), "--power-cap"},
                                                  {!o.clock_lock.empty(), "--clock-lock"},
                                                  {o.pue != 0, "--pue"},
                                                  {o.supply_temp > -999, "--supply-temp"},
                                                  {o.delta_t != 0, "--delta-t"},
                                                  {!o.coolant.empty(), "--coolant"},
                                                  {!o.smoothing.empty(), "--smoothing"},
                                                  {o.no_smoothing, "--no-smoothing"}};
    for (const auto& [on, flag] : given) {
      if (on) return base::fail(std::string(flag) + " goes with --power");
    }
  }
  auto cat = ctx.load_catalog();
  if (!cat) return base::fail(cat.error());
  auto spec = ctx.resolve_cluster(*cat, o.cluster);
  if (!spec) return base::fail(spec.error());
  const auto& sys = **cat->system(spec->system);
  const auto& gpu = **cat->gpu(sys.gpu);
  const int64_t total = static_cast<int64_t>(spec->count) * sys.gpus();
  const int64_t gpus = o.gpus > 0 ? o.gpus : total;
  if (gpus > total) {
    return base::fail(
        fmt::format("--gpus {} is more than cluster '{}' has ({})", gpus, spec->name, total));
  }
  auto model = models::load_model(*cat, o.model);
  if (!model) return base::fail(model.error());
  auto sc = workload::parse_scenario(o.scenario);
  if (!sc)
    return base::fail("--scenario: expected offline, server or interactive, got '" + o.scenario +
                      "'");
  base::Result<workload::Dataset> dataset = base::fail("");
  if (o.isl > 0 || o.osl > 0) {
    if (o.isl <= 0 || o.osl <= 0) return base::fail("--isl and --osl go together (both > 0)");
    dataset = workload::fixed_dataset(o.isl, o.osl);
  } else if (!o.dataset.empty()) {
    dataset = workload::find_dataset(*cat, o.dataset);
  } else {
    dataset = workload::dataset_for_model(*cat, model->name);
  }
  if (!dataset) return base::fail(dataset.error());
  auto cm = compute::ComputeModel::for_gpu(gpu, *cat);
  if (!cm) return base::fail(cm.error());
  auto dtype = compute::parse_dtype(o.precision);
  if (!dtype)
    return base::fail("--precision: expected bf16, fp8 or fp4, got '" + o.precision + "'");
  if (o.kv != "fp8" && o.kv != "bf16")
    return base::fail("--kv-precision: expected fp8 or bf16, got '" + o.kv + "'");
  std::vector<std::string> notes;
  const compute::DType weights = cm->effective(*dtype);
  if (weights != *dtype) {
    notes.push_back(fmt::format("{} has no {} GEMMs: weights run as {}", gpu.name,
                                compute::dtype_name(*dtype), compute::dtype_name(weights)));
  }
  auto fabric = execution::serving_fabric(*cat, *spec);
  if (!fabric) return base::fail(fabric.error());

  execution::ServingSetup s;
  s.model = &*model;
  s.compute = &*cm;
  s.fabric = *fabric;
  s.memory_capacity = gpu.hbm_usable;
  s.dataset = *dataset;
  s.scenario = *sc;
  s.seed = o.seed;
  s.requests = o.requests;
  s.layout.weights = weights;
  s.layout.kv_bytes = o.kv == "fp8" ? 1.0 : 2.0;
  s.layout.mtp = o.mtp;
  s.layout.mtp_acceptance = o.mtp_acceptance;
  if (o.tp_overlap >= 0) s.layout.tp_overlap = o.tp_overlap;
  s.layout.adp_balance = o.adp_assign == "balanced";
  if (*sc != workload::ServingScenario::kOffline) {
    auto lim = limits_of(o, *dataset, *sc);
    if (!lim) return base::fail(lim.error());
    s.limits = *lim;
  }

  report::ServingReport rep;
  rep.cluster = spec->name;
  rep.model = model->name;
  rep.gpu = gpu.name;
  rep.gpus = gpus;
  rep.dataset = dataset->name;
  rep.scenario = *sc;
  rep.limits = s.limits;
  rep.notes = notes;
  std::optional<search::ServingSearchResult> found;
  const bool automatic = o.serving == "auto" || (o.serving.empty() && !layout_flags_given(o));
  if (automatic) {
    search::ServingSpace space{
        .gpus = gpus, .domain_size = fabric->domain_size, .verify_requests = o.requests};
    std::optional<report::Progress> bar;
    std::once_flag once;
    auto r = search::search_serving(s, space, o.threads, [&](int64_t done, int64_t all) {
      std::call_once(once, [&] {
        bar.emplace(report::Progress::to_stderr("serving search", all, ctx.quiet));
      });
      bar->set(done);
    });
    if (bar) bar->finish();
    if (!r) return base::fail(r.error());
    found = std::move(*r);
    const auto& best = found->points[static_cast<size_t>(found->best)];
    rep.layout = best.layout;
    if (found->run) rep.result = *found->run;
    rep.rate = found->rate;
    rep.search = &*found;
    if (!found->run) {
      // Nothing verified (e.g. --requests 0 with verify disabled): simulate the best once.
      s.layout = rep.layout;
      auto run = execution::simulate_serving(s);
      if (!run) return base::fail(run.error());
      rep.result = *run;
    }
  } else {
    auto l = explicit_layout(o, gpus, weights, s.layout.kv_bytes);
    if (!l) return base::fail(l.error());
    if (auto st = workload::validate(*l, *model, gpus); !st) return base::fail(st.error());
    s.layout = *l;
    rep.layout = *l;
    if (*sc == workload::ServingScenario::kOffline || o.rate > 0) {
      s.rate_qps = o.rate;
      auto r = execution::simulate_serving(s);
      if (!r) return base::fail(r.error());
      // A chosen request count must load the GPUs, or the figures describe the drain.
      if (o.requests > 0 && !r->steady) return base::fail("--requests: " + r->steady_note);
      rep.result = *r;
    } else {
      auto r = execution::find_max_rate(s);
      if (!r) return base::fail(r.error());
      rep.result = r->result;
      rep.rate = std::move(*r);
    }
  }
  if (rep.rate && !rep.rate->found) {
    rep.notes.push_back(
        "no arrival rate meets the limits: the best achievable (lightest load "
        "probed) is reported");
  }
  if (!o.trace.empty()) {
    // Re-run the chosen configuration keeping its iterations for the timeline.
    execution::ServingSetup t = s;
    t.layout = rep.layout;
    t.rate_qps = rep.result.rate_qps;
    t.trace_iterations = 20000;
    auto r = execution::simulate_serving(t);
    if (!r) return base::fail(r.error());
    rep.result.trace = std::move(r->trace);
  }
  if (!o.compare.empty()) {
    auto other = hardware::resolve_cluster(*cat, o.compare);
    if (!other) return base::fail(other.error());
    const auto& osys = **cat->system(other->system);
    const auto& ogpu = **cat->gpu(osys.gpu);
    auto ocm = compute::ComputeModel::for_gpu(ogpu, *cat);
    if (!ocm) return base::fail(ocm.error());
    auto ofab = execution::serving_fabric(*cat, *other);
    if (!ofab) return base::fail(ofab.error());
    const int64_t ogpus = static_cast<int64_t>(other->count) * osys.gpus();
    search::GenerationTarget from{.gpu = &ogpu,
                                  .compute = &*ocm,
                                  .fabric = *ofab,
                                  .gpus = ogpus,
                                  .weights = ocm->effective(*dtype)};
    search::GenerationTarget to{.gpu = &gpu,
                                .compute = &*cm,
                                .fabric = *fabric,
                                .gpus = std::min<int64_t>(gpus, fabric->domain_size),
                                .weights = weights};
    auto steps = search::generation_breakdown(s, from, to, o.threads);
    if (!steps) return base::fail(steps.error());
    rep.generation = *steps;
    rep.generation_title = fmt::format(
        "per-GPU {} {} throughput, {} ({} GPUs, {}) over {} ({} GPUs, {}), same software "
        "assumptions (steady-state estimates, best layout at each step):",
        model->name, workload::scenario_name(*sc), spec->name, to.gpus,
        compute::dtype_name(to.weights), other->name, ogpus, compute::dtype_name(from.weights));
  }

  if (o.power) {
    execution::ServingSetup ps = s;
    ps.layout = rep.layout;
    auto p = serving_power(o, *cat, *spec, ps, rep.result);
    if (!p) return base::fail(p.error());
    out.power = std::move(*p);
  }
  out.json = report::serving_json(rep);
  out.text = report::serving_text(rep);
  out.csv = report::serving_csv(rep);
  if (!o.trace.empty()) {
    if (auto st = report::serving_trace(rep).write(o.trace); !st) return base::fail(st.error());
  }
  return {};
}

int serve(const Context& ctx, const ServeOptions& o) {
  ServeOutput out;
  if (auto st = serve_impl(ctx, o, out); !st) return bad_input(st.error());
  report::Json j = {{"inference", out.json}};
  if (out.power) j["power"] = out.power->json;
  if (!o.json.empty()) {
    if (auto st = report::write_json(j, o.json); !st) return bad_input(st.error());
  }
  if (o.json != "-") {
    if (o.format == "json") {
      std::cout << report::dump(j);
    } else if (o.format == "csv") {
      std::cout << out.csv;
    } else {
      std::cout << out.text;
      if (out.power) std::cout << out.power->text;
    }
  }
  return kExitOk;
}

}  // namespace

base::Result<RunOutput> run_serving(const Context& ctx, const ServeOptions& o) {
  ServeOutput so;
  if (auto st = serve_impl(ctx, o, so); !st) return base::fail(st.error());
  RunOutput out;
  out.json = so.json;
  out.text = so.text;
  const auto& j = so.json;
  auto num = [&](const char* k) {
    return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0;
  };
  out.summary = fmt::format(
      "serving   {} on {} GPUs ({}), MLPerf {}: {:.0f} tokens/s per GPU, TTFT p99 {:.2f} s, TPOT "
      "p99 {:.0f} ms",
      j.value("model", std::string("?")), j.value("gpus", 0),
      j.contains("layout") && j["layout"].contains("summary")
          ? j["layout"]["summary"].get<std::string>()
          : std::string("?"),
      j.value("scenario", std::string("?")), num("tokens_per_s_per_gpu"), num("ttft_p99_s"),
      1e3 * num("tpot_p99_s"));
  if (so.power) {
    out.power = so.power->json;
    out.power_summary = so.power->summary;
  }
  return out;
}

namespace {}  // namespace

Verb add_serve(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "LLM serving on a cluster: tokens/s per GPU and per user, TTFT and TPOT percentiles, the "
      "highest request rate meeting MLPerf's p99 limits, and with --serving auto the best layout "
      "and the Pareto frontier.\n"
      "Example: clustertwin serve --cluster azure-ndv6-gb300 --gpus 72 --model deepseek-r1 "
      "--scenario server");
  cmd->add_option("--cluster", o->cluster, "catalog name, cluster file or SYSTEM*COUNT")
      ->capture_default_str();
  cmd->add_option("--gpus", o->gpus, "GPUs to serve on (default: the whole cluster)")
      ->check(flags::positive(o->gpus, base::kMaxGpus));
  cmd->add_option("--model", o->model, "catalog model, YAML file or HF config.json")
      ->capture_default_str();
  cmd->add_option("--dataset", o->dataset,
                  "request lengths: a catalog dataset (default: the model's MLPerf set)");
  cmd->add_option("--isl", o->isl, "fixed input tokens per request (with --osl)")
      ->check(flags::positive(o->isl, base::kMaxSequence));
  cmd->add_option("--osl", o->osl, "fixed output tokens per request (with --isl)")
      ->check(flags::positive(o->osl, base::kMaxSequence));
  cmd->add_option("--scenario", o->scenario, "offline, server or interactive (MLPerf LoadGen)")
      ->capture_default_str();
  cmd->add_option("--precision", o->precision, "weights: bf16, fp8 or fp4")->capture_default_str();
  cmd->add_option("--kv-precision", o->kv, "KV cache: fp8 or bf16")->capture_default_str();
  cmd->add_option(
      "--serving", o->serving,
      "'auto' (search) or a serving layout FILE (default: auto unless layout flags are given)");
  cmd->add_option("--ttft-limit", o->ttft_limit,
                  "p99 time to first token, e.g. '2 s' (default: the dataset's MLPerf limit)");
  cmd->add_option("--tpot-limit", o->tpot_limit, "p99 time per output token, e.g. '80 ms'");
  cmd->add_option("--tp", o->tp, "tensor parallel per instance")
      ->check(flags::positive(o->tp, base::kMaxGpus));
  cmd->add_option("--pp", o->pp, "pipeline stages per instance")
      ->check(flags::positive(o->pp, base::kMaxGpus));
  cmd->add_option("--ep", o->ep, "expert parallel (divides tp)")
      ->check(flags::positive(o->ep, base::kMaxGpus));
  cmd->add_flag("--dp-attention", o->dp_attention,
                "attention data parallel over the tp GPUs, EP = tp (wide EP)");
  cmd->add_option("--max-batch", o->max_batch, "sequences per rank")
      ->check(flags::positive(o->max_batch, base::kMaxBatch));
  cmd->add_option("--max-tokens", o->max_tokens, "tokens per rank per iteration")
      ->check(flags::positive(o->max_tokens, base::kMaxTokensPerStep));
  cmd->add_flag("--no-chunked-prefill", o->no_chunked, "run each prompt in one iteration");
  cmd->add_option("--replicas", o->replicas, "instances (default: the GPUs / instance size)")
      ->check(flags::positive(o->replicas, base::kMaxGpus));
  cmd->add_flag("--disaggregated", o->disaggregated,
                "separate prefill and decode pools (--prefill-*)");
  cmd->add_option("--prefill-tp", o->prefill_tp, "disaggregated: prefill instance tp")
      ->check(flags::positive(o->prefill_tp, base::kMaxGpus));
  cmd->add_option("--prefill-ep", o->prefill_ep, "disaggregated: prefill instance ep")
      ->check(flags::positive(o->prefill_ep, base::kMaxGpus));
  cmd->add_flag("--prefill-dp-attention", o->prefill_dp_attention,
                "disaggregated: prefill attention DP");
  cmd->add_option("--prefill-replicas", o->prefill_replicas, "disaggregated: prefill instances")
      ->check(flags::positive(o->prefill_replicas, base::kMaxGpus));
  cmd->add_option("--prefill-max-tokens", o->prefill_max_tokens,
                  "disaggregated: prefill tokens per rank per iteration")
      ->check(flags::positive(o->prefill_max_tokens, base::kMaxTokensPerStep))
      ->capture_default_str();
  cmd->add_option("--mtp", o->mtp, "speculative draft tokens per step from the MTP module")
      ->check(flags::range(o->mtp, 0, 8));
  cmd->add_option("--mtp-acceptance", o->mtp_acceptance,
                  "acceptance probability of each draft token")
      ->check(flags::range(o->mtp_acceptance, 0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--kv-policy", o->kv_policy,
                  "preempt (admit by prompt, evict on overflow) or reserve")
      ->check(CLI::IsMember({"preempt", "reserve"}))
      ->capture_default_str();
  cmd->add_option("--adp-assign", o->adp_assign,
                  "attention-DP request assignment: balanced (the rank with the fewest active "
                  "requests, TensorRT-LLM) or fill (rank 0 first)")
      ->check(CLI::IsMember({"balanced", "fill"}))
      ->capture_default_str();
  cmd->add_option("--tp-overlap", o->tp_overlap,
                  "fraction of TP all-reduce hidden behind GEMMs (default 0.5)")
      ->check(flags::range(o->tp_overlap, 0.0, 1.0));
  cmd->add_option("--rate", o->rate,
                  "server/interactive: simulate this arrival rate (requests/s) instead of "
                  "searching the highest compliant one")
      ->check(flags::positive(o->rate));
  cmd->add_option("--requests", o->requests,
                  "requests to simulate (default: LoadGen-like run length)")
      ->check(flags::positive(o->requests, base::kMaxRequests));
  cmd->add_option("--seed", o->seed, "random seed of request lengths and arrivals")
      ->capture_default_str()
      ->check(flags::non_negative(o->seed));
  cmd->add_option("--threads", o->threads, "search threads (default: all cores)")
      ->check(flags::range(o->threads, 0, base::kMaxThreads));
  cmd->add_option("--compare", o->compare,
                  "also break down the per-GPU ratio to this cluster (e.g. 'hgx-h200*1'): GPU, "
                  "memory, FP4, NVLink domain");
  cmd->add_option("--format", o->format, "text, json or csv (the searched points)")
      ->check(CLI::IsMember({"text", "json", "csv"}))
      ->capture_default_str();
  cmd->add_flag("--power", o->power,
                "add the power view of the run (GPU power of prompt and decode phases, racks, "
                "facility, energy per output token)");
  cmd->add_option("--power-cap", o->power_cap,
                  "with --power: GPU power limit (e.g. 1000W); slowed kernels are fed back");
  cmd->add_option("--clock-lock", o->clock_lock,
                  "with --power: lock the SM clock (e.g. 1500MHz); slowed kernels are fed back");
  cmd->add_option("--pue", o->pue,
                  "with --power: use this PUE instead of the facility model (>= 1)")
      ->check(flags::finite(o->pue));
  cmd->add_option("--supply-temp", o->supply_temp,
                  "with --power: coolant supply temperature, C (default: 25)")
      ->check(flags::range(o->supply_temp, -50, 150));
  cmd->add_option("--delta-t", o->delta_t,
                  "with --power: coolant temperature rise across a rack, K (default: 10)")
      ->check(flags::positive(o->delta_t, 100));
  cmd->add_option("--coolant", o->coolant, "with --power: pg25 or water (default: pg25)");
  cmd->add_option("--smoothing", o->smoothing,
                  "with --power: power smoothing of the racks, 'on' (the system's profile) or "
                  "floor=0.6,ramp-up=2000W/s,ramp-down=500W/s,hysteresis=2s,storage=65J,"
                  "efficiency=0.95,average=10s (default: on where the system has it)");
  cmd->add_flag("--no-smoothing", o->no_smoothing, "with --power: no smoothed rack waveform");
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  cmd->add_option("--trace", o->trace, "write a Chrome trace of batches per instance to FILE");
  return {cmd, [&ctx, o] { return serve(ctx, *o); }};
}

}  // namespace clustertwin::app
