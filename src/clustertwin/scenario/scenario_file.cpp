// The scenario-file door: read a scenario document over the requests' field tables and run it
// (DESIGN.md §4; docs/scenarios.md). Moved from apps/clustertwin/cmd_run.cpp.

#include "clustertwin/scenario/scenario_file.h"

#include <fmt/format.h>

#include <optional>
#include <sstream>

#include "clustertwin/base/text.h"
#include "clustertwin/hardware/catalog.h"
#include "clustertwin/report/describe.h"
#include "clustertwin/scenario/goodput.h"
#include "clustertwin/scenario/schedule.h"
#include "clustertwin/scenario/search.h"
#include "clustertwin/scenario/serving.h"
#include "clustertwin/scenario/training.h"
#include "clustertwin/topology/summary.h"

namespace clustertwin::scenario {
namespace {

using config::Reader;
using Need = Reader::Need;

/// Where a workload block and each of its keys are, for messages of its run.
struct Block {
  int line = 0;
  std::vector<std::pair<std::string, int>> keys;
};

struct Scenario {
  std::string name;
  std::string cluster;  // a catalog name, a file or SYSTEM*COUNT; or the name of `inline_cluster`
  std::optional<hardware::ClusterSpec> inline_cluster;  // `cluster:` given as a mapping
  int cluster_line = 0;
  std::string file;
  std::optional<TrainingRequest> training;
  Block training_block;
  /// `workload.training.search:` the layout is the full-space search's winner (docs/sweep.md).
  std::optional<SearchSettings> search;
  std::optional<ServingRequest> inference;
  Block inference_block;
  std::optional<std::pair<TrainingRequest, GoodputSettings>> goodput;
  Block goodput_block;
  std::optional<ScheduleRequest> schedule;
  Block schedule_block;
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

/// Reads the fields of `tables` from a workload block into `r`; returns the lines of its keys.
template <class R>
Block read_block(Reader& in, FieldTables<R> tables, R& r) {
  Block b{.line = in.line()};
  for (const auto* t : tables) {
    for (auto& k : read_fields(in, *t, r)) b.keys.push_back(std::move(k));
  }
  return b;
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
    if (v->empty()) {
      r.error("empty value (give one, or leave the key out for its default)", "calibration");
      return std::nullopt;
    }
    return Given{
        scenario_relative(doc.file, *v),
        base::verbatim(doc.file) + ":" + std::to_string(r.line("calibration")) + ": calibration"};
  };
  const auto top_calibration = calibration_of(top);
  auto set_calibration = [&](Reader& r, TrainingRequest& o) {
    if (auto c = calibration_of(r); c || top_calibration) {
      o.calibration = c ? c->value : top_calibration->value;
      o.calibration_where = c ? c->where : top_calibration->where;
    }
  };
  // A block that runs no collective model refuses a calibration rather than ignoring it.
  auto refuse_calibration = [](Reader& r, const char* why) {
    if (!r.has("calibration")) return;
    r.error(std::string("a calibration profile sets the collective model's lines, which ") + why +
                "; give it under workload.training or at the top",
            "calibration");
    r.allow("calibration");
  };
  s.cluster_line = top.line("cluster");
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
      TrainingRequest o;
      o.cluster = s.cluster;
      (void)t->string("model");  // required in a file: a scenario says what it trains
      s.training_block =
          read_block<TrainingRequest>(*t, {&training_fields(), &training_power_fields()}, o);
      if (auto sr = t->child("search", Need::kOptional)) {
        // One search per point: a sweep already runs its points on every core.
        SearchSettings settings{.threads = 1};
        for (auto& k : read_fields(*sr, search_fields(), settings)) {
          s.training_block.keys.emplace_back(std::move(k));
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
      set_calibration(*t, o);
      t->finish();
      s.training = o;
    }
    if (auto i = w->child("inference", Need::kOptional)) {
      ServingRequest o;
      o.cluster = s.cluster;
      (void)i->string("model");  // required in a file: a scenario says what it serves
      s.inference_block = read_block<ServingRequest>(*i, {&serving_fields()}, o);
      // Its own `calibration:` only (a profile's serving: mapping; the top-level one is the
      // collective model's, which serving does not run).
      if (!o.calibration.empty()) {
        o.calibration = scenario_relative(doc.file, o.calibration);
        o.calibration_where = base::verbatim(doc.file) + ":" +
                              std::to_string(i->line("calibration")) + ": calibration";
      }
      i->finish();
      s.inference = o;
    }
    if (auto g = w->child("goodput", Need::kOptional)) {
      TrainingRequest o;
      GoodputSettings gs;
      o.cluster = s.cluster;
      (void)g->string("model");  // required in a file: a scenario says what it trains
      s.goodput_block = read_block<TrainingRequest>(*g, {&training_fields()}, o);
      for (auto& k : read_block<GoodputSettings>(*g, {&goodput_fields()}, gs).keys) {
        s.goodput_block.keys.push_back(std::move(k));
      }
      set_calibration(*g, o);
      g->finish();
      s.goodput.emplace(o, gs);
    }
    if (auto c = w->child("schedule", Need::kOptional)) {
      ScheduleRequest o;
      o.cluster = s.cluster;
      s.schedule_block = read_block<ScheduleRequest>(*c, {&schedule_fields()}, o);
      refuse_calibration(*c, "the scheduler's closed-form speed model does not read");
      c->finish();
      s.schedule = o;
    }
    w->finish();
  }
  top.finish();
  if (!ctx.errors.empty()) return base::fail(ctx.errors.combined());
  return s;
}

/// A message of a workload's run in the file's words: its fields as keys, at the line of the key
/// it is about (else of the workload's block).
base::Error workload_error(const Scenario& s, base::Error e, const Block& block,
                           const std::vector<FieldWord>& words) {
  // Messages that already say where (a top-level calibration's file:line) keep their place.
  if (!e.file.empty() || e.message.starts_with(s.file + ":")) return e;
  const std::string key = leading_key(e.message);
  int line = block.line;
  for (const auto& [k, l] : block.keys) {
    if (k == key) line = l;
  }
  e.message = render(e.message, words, Door::kFile);
  e.file = s.file;
  e.line = line;
  return e;
}

/// The cluster's lines of the one-screen summary.
std::string cluster_summary(const nlohmann::json& c) {
  auto num = [&](std::initializer_list<const char*> path) {
    const nlohmann::json* j = &c;
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
  return summary;
}

base::Result<ScenarioOutput> run_parsed(const Environment& outer, const Scenario& s, bool quiet) {
  Environment env = outer;
  if (s.inline_cluster) env.inline_clusters[s.cluster] = *s.inline_cluster;
  auto d = describe_cluster(env, s.cluster);
  if (!d) {
    base::Error e = d.error();
    e.message = render(e.message, {}, Door::kFile);  // "{cluster}" as the file's key
    // A cluster the catalog refuses (an inline one's unknown system or switch) is the file's
    // `cluster:` key; an error of a cluster file keeps that file's place.
    if (e.file.empty()) {
      e.file = s.file;
      e.line = s.cluster_line;
    }
    return base::fail(std::move(e));
  }
  nlohmann::json results = {{"cluster", d->json}};
  results["cluster"]["cluster"]["scenario"] = s.name;
  std::string summary = cluster_summary(d->json);
  if (s.training) {
    TrainingRequest request = *s.training;
    if (s.search) {
      // The search's winner is then run as `train` runs a layout (power view included).
      auto fail = [&](base::Error e) {
        return base::fail(workload_error(s, std::move(e), s.training_block, search_words()));
      };
      auto found = run_search(env, request, *s.search);
      if (!found) return fail(found.error());
      auto best = with_layout(request, found->best);
      if (!best) return fail(best.error());
      request = std::move(*best);
      results["search"] = found->json;
      summary += fmt::format("  search: {} the best of {} valid layouts\n",
                             found->json["best"][0]["layout"].get<std::string>(),
                             found->json["valid"].get<int64_t>());
    }
    auto t = run_training(env, request);
    if (!t) return base::fail(workload_error(s, t.error(), s.training_block, training_words()));
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
  if (s.inference) {
    auto r = run_serving(env, *s.inference, quiet);
    if (!r) return base::fail(workload_error(s, r.error(), s.inference_block, serving_words()));
    results["inference"] = r->json;
    if (r->power) results["inference"]["power"] = r->power->json;
    summary += "  " + r->summary + "\n";
    if (r->power) summary += "  " + r->power->summary + "\n";
  }
  if (s.goodput) {
    auto g = run_goodput(env, s.goodput->first, s.goodput->second);
    if (!g) return base::fail(workload_error(s, g.error(), s.goodput_block, goodput_words()));
    results["goodput"] = g->json;
    summary += "  " + g->summary + "\n";
  }
  if (s.schedule) {
    auto r = run_schedule(env, *s.schedule, quiet);
    if (!r) return base::fail(workload_error(s, r.error(), s.schedule_block, schedule_words()));
    results["schedule"] = r->json;
    summary += "  " + r->summary + "\n";
  }
  return ScenarioOutput{std::move(results), std::move(summary)};
}

}  // namespace

base::Result<Described> describe_cluster(const Environment& env, const std::string& cluster) {
  auto c = env.load_cluster(cluster);
  if (!c) return base::fail(c.error());
  const auto summary = topology::summarize(c->catalog, c->topo);
  return Described{report::describe_json(summary), report::describe_text(summary)};
}

base::Status check_scenario(const config::Document& doc) {
  auto s = parse_scenario(doc);
  if (!s) return base::fail(s.error());
  return {};
}

base::Result<ScenarioOutput> run_scenario(const Environment& env, const config::Document& doc,
                                          bool quiet) {
  auto s = parse_scenario(doc);
  if (!s) return base::fail(s.error());
  return run_parsed(env, *s, quiet);
}

namespace {

/// The keys of a workload block of a scenario file from a request's field tables (after a
/// `key_header`), each with the flag that sets the same field.
template <class R>
void key_rows(FieldTables<R> tables, const std::vector<FieldWord>& words, std::ostringstream& o) {
  for (const auto* t : tables) {
    for (const auto& f : *t) {
      if (!f.in_file) continue;
      std::string help = render(f.help, words, Door::kFile);
      for (auto& ch : help) {
        if (ch == '\n' || ch == '|') ch = ' ';
      }
      o << "| `" << f.key << "` | `--" << f.flag << "` | " << help << " |\n";
    }
  }
}

void key_header(const char* block, std::ostringstream& o) {
  o << "### `workload." << block << "`\n\n| key | flag | meaning |\n|---|---|---|\n";
}

/// Every workload block's keys, generated from the same tables as the flags (docs/scenarios.md
/// explains the file around them).
void scenario_section(std::ostringstream& o) {
  o << "## Scenario file keys (`clustertwin run FILE`)\n\n"
       "A scenario's workload blocks take the fields of the same requests as the verbs' flags, "
       "by key; `cluster` is the scenario's own (docs/scenarios.md).\n\n";
  key_header("training", o);
  key_rows<TrainingRequest>({&training_fields(), &training_power_fields()}, training_words(), o);
  o << "\n";
  key_header("inference", o);
  key_rows<ServingRequest>({&serving_fields()}, serving_words(), o);
  o << "\n";
  key_header("goodput", o);
  key_rows<TrainingRequest>({&training_fields()}, goodput_words(), o);
  key_rows<GoodputSettings>({&goodput_fields()}, goodput_words(), o);
  o << "\n";
  key_header("schedule", o);
  key_rows<ScheduleRequest>({&schedule_fields()}, schedule_words(), o);
  o << "\n";
}

}  // namespace

std::string scenario_keys_doc() {
  std::ostringstream o;
  scenario_section(o);
  return o.str();
}

}  // namespace clustertwin::scenario
