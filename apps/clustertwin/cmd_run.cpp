// `clustertwin run [FILE]` and plain `clustertwin`: a scenario (a cluster and its workloads)
// run end to end: the cluster described, each workload simulated, a one-screen summary, the
// results JSON (--json) and the HTML report. Without a file it runs the built-in flagship,
// examples/azure-ndv6-gb300.yaml, compiled into the binary.

#include <fmt/format.h>

#include <iostream>

#include "clustertwin/config/reader.h"
#include "clustertwin/report/html.h"
#include "clustertwin/scenario/search.h"
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
  std::optional<scenario::TrainingRequest> training;
  /// Where the training block and each of its keys are, for messages of its resolution.
  std::string file;
  int training_line = 0;
  std::vector<std::pair<std::string, int>> training_keys;
  /// `workload.training.search:` the layout is the full-space search's winner (docs/sweep.md).
  std::optional<scenario::SearchSettings> search;
  std::optional<scenario::ServingRequest> inference;
  int inference_line = 0;
  std::vector<std::pair<std::string, int>> inference_keys;
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
  s.file = doc.file;
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
      scenario::TrainingRequest o;
      o.cluster = s.cluster;
      (void)t->string("model");  // required in a file: a scenario says what it trains
      s.training_line = t->line();
      s.training_keys = scenario::read_fields(*t, scenario::training_fields(), o);
      for (auto& k : scenario::read_fields(*t, scenario::training_power_fields(), o)) {
        s.training_keys.push_back(std::move(k));
      }
      if (auto sr = t->child("search", Need::kOptional)) {
        // One search per point: a sweep already runs its points on every core.
        scenario::SearchSettings settings{.threads = 1};
        for (auto& k : scenario::read_fields(*sr, scenario::search_fields(), settings)) {
          s.training_keys.emplace_back(std::move(k));
        }
        sr->finish();
        s.search = settings;
        // The search chooses the layout: a key that fixes part of it is the file's error.
        for (const char* key :
             {"tp", "pp", "dp", "cp", "ep", "etp", "vpp", "micro_batch", "recompute", "zero"}) {
          if (t->has(key)) {
            t->error(std::string("the layout search (search:) chooses the parallel layout: '") +
                         key + "' cannot be given with it",
                     key);
          }
        }
      }
      if (auto c = calibration_of(*t); c || top_calibration) {
        o.calibration = c ? c->value : top_calibration->value;
        o.calibration_where = c ? c->where : top_calibration->where;
      }
      t->finish();
      s.training = o;
    }
    if (auto i = w->child("inference", Need::kOptional)) {
      scenario::ServingRequest o;
      o.cluster = s.cluster;
      (void)i->string("model");  // required in a file: a scenario says what it serves
      s.inference_line = i->line();
      s.inference_keys = scenario::read_fields(*i, scenario::serving_fields(), o);
      if (i->has("calibration")) {
        i->error(
            "a calibration profile sets the collective model's lines, which serving does not "
            "run (its TP all-reduce and all-to-all are the serving step model's own); give it "
            "under workload.training or at the top",
            "calibration");
        i->allow("calibration");
      }
      i->finish();
      s.inference = o;
    }
    w->finish();
  }
  top.finish();
  if (!ctx.errors.empty()) return base::fail(ctx.errors.combined());
  return s;
}

/// A message of a workload's resolution in the file's words: its fields as keys, at the line of
/// the key it is about (else of the workload's block).
base::Error workload_error(const Scenario& s, base::Error e, int block_line,
                           const std::vector<std::pair<std::string, int>>& keys,
                           const std::vector<scenario::FieldWord>& words) {
  // Messages that already say where (a top-level calibration's file:line) keep their place.
  if (!e.file.empty() || e.message.starts_with(s.file + ":")) return e;
  const std::string key = scenario::leading_key(e.message);
  int line = block_line;
  for (const auto& [k, l] : keys) {
    if (k == key) line = l;
  }
  e.message = scenario::render(e.message, words, scenario::Door::kFile);
  e.file = s.file;
  e.line = line;
  return e;
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
    scenario::TrainingRequest request = *s->training;
    if (s->search) {
      // The search's winner is then run as `train` runs a layout (power view included).
      auto fail = [&](base::Error e) {
        return base::fail(workload_error(*s, std::move(e), s->training_line, s->training_keys,
                                         scenario::search_words()));
      };
      auto found = scenario::run_search(ctx, request, *s->search);
      if (!found) return fail(found.error());
      auto best = scenario::with_layout(request, found->best);
      if (!best) return fail(best.error());
      request = std::move(*best);
      results["search"] = found->json;
      summary += fmt::format("  search: {} the best of {} valid layouts\n",
                             found->json["best"][0]["layout"].get<std::string>(),
                             found->json["valid"].get<int64_t>());
    }
    auto t = scenario::run_training(ctx, request);
    if (!t) {
      return base::fail(workload_error(*s, t.error(), s->training_line, s->training_keys,
                                       scenario::training_words()));
    }
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
    auto r = scenario::run_serving(ctx, *s->inference, ctx.quiet);
    if (!r) {
      return base::fail(workload_error(*s, r.error(), s->inference_line, s->inference_keys,
                                       scenario::serving_words()));
    }
    results["inference"] = r->json;
    if (r->power) results["inference"]["power"] = r->power->json;
    summary += "  " + r->summary + "\n";
    if (r->power) summary += "  " + r->power->summary + "\n";
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
