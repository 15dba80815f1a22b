// `clustertwin run [FILE]` and plain `clustertwin`: a scenario (a cluster and its workloads)
// run end to end: the cluster described, each workload simulated, a one-screen summary, the
// results JSON (--json) and the HTML report. Without a file it runs the built-in flagship,
// examples/azure-ndv6-gb300.yaml, compiled into the binary.

#include <fmt/format.h>

#include <iostream>

#include "clustertwin/config/reader.h"
#include "clustertwin/report/html.h"
#include "commands.h"

namespace clustertwin::app {
namespace {

using config::Reader;
using Need = Reader::Need;

// The flagship scenario (kept identical to examples/azure-ndv6-gb300.yaml; a test diffs them).
constexpr const char* kFlagship =
    R"(# The flagship: Azure NDv6 GB300 (64 GB300 NVL72 racks, 4,608 GPUs) training a trillion-
# parameter GPT on the whole cluster. Run: clustertwin run examples/azure-ndv6-gb300.yaml
name: azure-ndv6-gb300
cluster: azure-ndv6-gb300
workload:
  training:
    model: megatron-gpt-1t
    gpus: 4608
    tp: 8
    pp: 16
    vpp: 2
    global_batch: 4608
    seq_len: 4096
    precision: fp8
    tp_comm_overlap: true
    tokens: 15T
    power: true
  inference:
    model: deepseek-r1
    gpus: 72
    scenario: server
    precision: fp4
    tp: 8
    ep: 8
    dp_attention: true
    power: true
)";

struct Scenario {
  std::string name;
  std::string cluster;  // a catalog name, a file or SYSTEM*COUNT; or the name of `inline_cluster`
  std::optional<hardware::ClusterSpec> inline_cluster;  // `cluster:` given as a mapping
  std::optional<TrainOptions> training;
  std::optional<ServeOptions> inference;
};

/// A scenario's `calibration:` value: a built-in profile name as it is, a file (a value with a
/// '/' or a .yaml/.yml/.json ending) relative to the scenario file's folder, as includes are.
std::string scenario_relative(const std::string& file, const std::string& value) {
  const bool is_file = value.find('/') != std::string::npos || value.ends_with(".yaml") ||
                       value.ends_with(".yml") || value.ends_with(".json");
  if (!is_file || value.starts_with('/') || file.starts_with("built-in:")) return value;
  const auto slash = file.rfind('/');
  return slash == std::string::npos ? value : file.substr(0, slash + 1) + value;
}

base::Result<Scenario> parse_scenario(const config::Document& doc) {
  config::ReadContext ctx{.file = doc.file};
  Reader top(doc.root, ctx);
  Scenario s;
  s.name = top.string("name", Need::kOptional).value_or(doc.file);
  top.allow("description");
  // `calibration:` at the top applies to every workload that runs the collective model
  // (training); one in a workload overrides it there.
  struct Given {
    std::string value, where;
  };
  auto calibration_of = [&](Reader& r) -> std::optional<Given> {
    auto v = r.string("calibration", Need::kOptional);
    if (!v) return std::nullopt;
    return Given{scenario_relative(doc.file, *v),
                 doc.file + ":" + std::to_string(r.line("calibration")) + ": calibration"};
  };
  const auto top_calibration = calibration_of(top);
  if (top.has("cluster") && doc.root["cluster"].IsMap()) {
    // Inline: the body of a cluster file's `cluster:` mapping (docs/scenarios.md).
    if (auto body = top.child("cluster")) {
      auto c = hardware::read_cluster(*body);
      body->finish();
      if (c) {
        if (c->name.empty()) c->name = "inline";
        c->origin = doc.file;
        s.cluster = c->name;
        s.inline_cluster = std::move(*c);
      }
    }
  } else if (top.has("cluster")) {
    auto c = top.string("cluster");
    if (c) s.cluster = *c;
  } else {
    top.error(
        "missing required key 'cluster' (a catalog name such as azure-ndv6-gb300 or a "
        "cluster file)");
  }
  if (auto w = top.child("workload")) {
    if (auto t = w->child("training", Need::kOptional)) {
      TrainOptions o;
      o.cluster = s.cluster;
      o.model = t->string("model").value_or(o.model);
      o.gpus = t->integer("gpus", Need::kOptional, 1).value_or(0);
      o.tp = static_cast<int>(t->integer("tp", Need::kOptional, 1, 4096).value_or(1));
      o.pp = static_cast<int>(t->integer("pp", Need::kOptional, 1, 4096).value_or(1));
      o.dp = static_cast<int>(t->integer("dp", Need::kOptional, 1, 10'000'000).value_or(0));
      o.cp = static_cast<int>(t->integer("cp", Need::kOptional, 1, 4096).value_or(1));
      o.ep = static_cast<int>(t->integer("ep", Need::kOptional, 1, 4096).value_or(1));
      o.vpp = static_cast<int>(t->integer("vpp", Need::kOptional, 1, 1024).value_or(1));
      o.zero = static_cast<int>(t->integer("zero", Need::kOptional, 0, 3).value_or(1));
      o.micro_batch = t->integer("micro_batch", Need::kOptional, 1).value_or(1);
      o.global_batch = t->integer("global_batch", Need::kOptional, 1).value_or(0);
      o.seq_len = t->integer("seq_len", Need::kOptional, 1).value_or(0);
      o.precision =
          t->choice("precision", {"bf16", "fp8", "fp4"}, Need::kOptional).value_or("bf16");
      o.recompute =
          t->choice("recompute", {"none", "selective", "full"}, Need::kOptional).value_or("none");
      o.comm = t->choice("comm", {"analytical", "collective", "flow"}, Need::kOptional)
                   .value_or("collective");
      o.tp_overlap = t->boolean("tp_comm_overlap", Need::kOptional).value_or(false);
      o.ep_overlap = t->boolean("ep_overlap", Need::kOptional).value_or(false);
      o.moe_dispatch = t->string("moe_dispatch", Need::kOptional).value_or("auto");
      o.no_sp = !t->boolean("sequence_parallel", Need::kOptional).value_or(true);
      o.no_dp_overlap = !t->boolean("dp_overlap", Need::kOptional).value_or(true);
      o.tokens = t->string("tokens", Need::kOptional).value_or("");
      o.power = t->boolean("power", Need::kOptional).value_or(false);
      if (auto c = calibration_of(*t); c || top_calibration) {
        o.calibration = c ? c->value : top_calibration->value;
        o.calibration_where = c ? c->where : top_calibration->where;
      }
      o.power_cap = t->string("power_cap", Need::kOptional).value_or("");
      t->finish();
      s.training = o;
    }
    if (auto i = w->child("inference", Need::kOptional)) {
      ServeOptions o;
      o.cluster = s.cluster;
      o.model = i->string("model").value_or(o.model);
      o.gpus = i->integer("gpus", Need::kOptional, 1).value_or(0);
      o.scenario = i->choice("scenario", {"offline", "server", "interactive"}, Need::kOptional)
                       .value_or("server");
      o.precision =
          i->choice("precision", {"bf16", "fp8", "fp4"}, Need::kOptional).value_or(o.precision);
      o.serving = i->string("serving", Need::kOptional).value_or("");
      o.tp = static_cast<int>(i->integer("tp", Need::kOptional, 1, 4096).value_or(0));
      o.ep = static_cast<int>(i->integer("ep", Need::kOptional, 1, 4096).value_or(0));
      o.pp = static_cast<int>(i->integer("pp", Need::kOptional, 1, 4096).value_or(0));
      o.replicas = static_cast<int>(i->integer("replicas", Need::kOptional, 1, 100000).value_or(0));
      o.dp_attention = i->boolean("dp_attention", Need::kOptional).value_or(false);
      o.max_batch = i->integer("max_batch", Need::kOptional, 1).value_or(0);
      o.requests = i->integer("requests", Need::kOptional, 1).value_or(0);
      o.seed = static_cast<uint64_t>(i->integer("seed", Need::kOptional, 0).value_or(1));
      o.power = i->boolean("power", Need::kOptional).value_or(false);
      if (i->has("calibration")) {
        i->error(
            "a calibration profile sets the collective model's lines, which serving does not "
            "run (its TP all-reduce and all-to-all are the serving step model's own); give it "
            "under workload.training or at the top",
            "calibration");
        i->allow("calibration");
      }
      o.power_cap = i->string("power_cap", Need::kOptional).value_or("");
      i->finish();
      s.inference = o;
    }
    w->finish();
  }
  top.finish();
  if (!ctx.errors.empty()) return base::fail(ctx.errors.combined());
  return s;
}

base::Result<ScenarioOutput> run_parsed(const Context& outer, const Scenario& sc) {
  const Scenario* s = &sc;
  Context ctx = outer;
  if (s->inline_cluster) ctx.inline_clusters[s->cluster] = *s->inline_cluster;
  auto d = describe_cluster(ctx, s->cluster);
  if (!d) return base::fail(d.error());
  report::Json results = {{"cluster", d->json}};
  results["cluster"]["cluster"]["scenario"] = s->name;
  const auto& c = d->json;
  auto num = [&](std::initializer_list<const char*> path) {
    const report::Json* j = &c;
    for (const char* k : path) {
      if (!j->contains(k)) return 0.0;
      j = &(*j)[k];
    }
    return j->get<double>();
  };
  const bool racks = c["counts"]["racks"].get<int>() > 0;
  const std::string unit = racks ? "rack" : "NVLink domain";
  std::string summary =
      fmt::format("{}\n  {} GPUs in {} {}s ({} GPUs per NVLink domain), {} CPUs\n",
                  c["cluster"]["display_name"].get<std::string>(), c["counts"]["gpus"].get<int>(),
                  c["counts"]["nvlink_domains"].get<int>(), unit,
                  c["counts"]["nvlink_domain_gpus"].get<int>(), c["counts"]["cpus"].get<int>());
  summary += fmt::format(
      "  per {}: {:.2f} EFLOP/s FP4 sparse ({:.2f} dense), {:.1f} TB fast memory, {:.0f} TB/s "
      "NVLink, ~{:.0f} kW\n",
      unit, num({"compute", "fp4", "sparse_per_domain_FLOPps"}) / 1e18,
      num({"compute", "fp4", "dense_per_domain_FLOPps"}) / 1e18,
      num({"memory", "fast_memory_per_domain_B"}) / 1e12,
      num({"nvlink", "per_domain_bidir_Bps"}) / 1e12, num({"power", "system_nameplate_W"}) / 1e3);
  summary += fmt::format(
      "  fabric: {:.0f} Gb/s per GPU, {}-tier fat tree of {} switches, bisection {:.0f} TB/s; IT "
      "power ~{:.1f} MW\n",
      num({"scale_out", "per_gpu_bps"}) / 1e9, c["scale_out"]["tiers"].get<int>(),
      c["counts"]["scale_out_switches"].get<int>(), num({"scale_out", "bisection_Bps"}) / 1e12,
      num({"power", "cluster_it_W"}) / 1e6);
  if (s->training) {
    auto t = run_training(ctx, *s->training);
    if (!t) return base::fail(t.error());
    results["training"] = t->json;
    summary += "  " + t->summary + "\n";
    if (t->json.contains("time_to_train_s")) {
      summary += fmt::format("            time to train {:.3g} tokens: {:.1f} days\n",
                             t->json["token_budget"].get<double>(),
                             t->json["time_to_train_s"].get<double>() / 86400);
    }
    if (!t->power.is_null()) {
      results["power"] = t->power;
      summary += "  " + t->power_summary + "\n";
    }
  }
  if (s->inference) {
    auto r = run_serving(ctx, *s->inference);
    if (!r) return base::fail(r.error());
    results["inference"] = r->json;
    if (!r->power.is_null()) results["inference"]["power"] = r->power;
    summary += "  " + r->summary + "\n";
    if (!r->power_summary.empty()) summary += "  " + r->power_summary + "\n";
  }
  return ScenarioOutput{std::move(results), std::move(summary)};
}

int run_scenario(const Context& ctx, const config::Document& doc, const std::string& json_path) {
  auto s = parse_scenario(doc);
  if (!s) return bad_input(s.error());
  auto out = run_parsed(ctx, *s);
  if (!out) return bad_input(out.error());
  const auto& results = out->results;
  const auto& summary = out->summary;
  if (!json_path.empty()) {
    if (auto st = report::write_json(results, json_path); !st) return bad_input(st.error());
  }
  if (json_path != "-") std::cout << summary;
  if (!ctx.no_report) {
    const std::string html = report::render_html(results);
    if (auto st = report::write_text(html, ctx.report_path); !st) return bad_input(st.error());
    if (json_path != "-") {
      std::cout << fmt::format("  report: {} ({:.1f} MB); open it in a browser\n", ctx.report_path,
                               static_cast<double>(html.size()) / 1e6);
    }
  }
  return kExitOk;
}

struct RunOptions {
  std::string file;
  std::string json;
};

}  // namespace

base::Status check_scenario_document(const config::Document& doc) {
  auto s = parse_scenario(doc);
  if (!s) return base::fail(s.error());
  return {};
}

base::Result<ScenarioOutput> run_scenario_document(const Context& ctx,
                                                   const config::Document& doc) {
  auto s = parse_scenario(doc);
  if (!s) return base::fail(s.error());
  return run_parsed(ctx, *s);
}

int run_flagship(const Context& ctx) {
  auto doc = config::parse_document(kFlagship, "built-in:azure-ndv6-gb300");
  if (!doc) return bad_input(doc.error());
  return run_scenario(ctx, *doc, "");
}

Verb add_run(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run a scenario file (a cluster and its workloads): summary, --json results and the HTML "
      "report. Without a file: the built-in flagship (examples/azure-ndv6-gb300.yaml).\n"
      "Example: clustertwin run examples/azure-ndv6-gb300.yaml --json results.json");
  cmd->add_option("file", o->file, "scenario YAML/JSON file");
  cmd->add_option("--json", o->json, "write results JSON to FILE ('-' for stdout)");
  return {cmd, [&ctx, o] {
            if (o->file.empty()) {
              auto doc = config::parse_document(kFlagship, "built-in:azure-ndv6-gb300");
              return run_scenario(ctx, *doc, o->json);
            }
            auto doc = config::load_document(o->file);
            if (!doc) return bad_input(doc.error());
            return run_scenario(ctx, *doc, o->json);
          }};
}

}  // namespace clustertwin::app
