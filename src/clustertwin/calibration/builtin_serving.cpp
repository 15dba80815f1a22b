#include "clustertwin/calibration/builtin_serving.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "clustertwin/base/text.h"
#include "clustertwin/calibration/sha256.h"
#include "clustertwin/config/reader.h"
#include "clustertwin/execution/serving_calibration.h"
#include "clustertwin/execution/serving_sim.h"
#include "clustertwin/execution/serving_step.h"
#include "clustertwin/models/model_catalog.h"
#include "clustertwin/workload/serving_dataset.h"

namespace clustertwin::calibration {
using base::fail;

namespace {

using config::Reader;
using Need = Reader::Need;

constexpr const char* kCases = "calibration/serving-cases.yaml";
constexpr const char* kOutput = "calibration/serving.yaml";
// The replay's rate search: as many probes as the validation test gives each server case.
constexpr int kRateProbes = 12;
constexpr uint64_t kSeed = 1;

/// A constant's value in the case file's unit and in seconds (or as a fraction).
struct Constant {
  const char* name;
  const char* unit;    ///< the unit serving.yaml writes it in ("" for a fraction)
  double to_base = 1;  ///< seconds per unit
};
constexpr Constant kConstants[] = {{"tp_overlap", "", 1.0},
                                   {"stream_host_per_response", "us", 1e-6},
                                   {"eager_host_per_layer", "ms", 1e-3},
                                   {"engine_host_per_iteration", "ms", 1e-3}};

struct Case {
  std::string id, source;
  const Constant* constant = nullptr;
  double lower = 0, upper = 0, resolution = 0;
  std::string cluster, model, precision = "fp4", kv = "fp8", runtime = "pytorch";
  std::optional<workload::ServingScenario> scenario;  ///< a server / interactive run; else a
                                                      ///< decode iteration
  bool norm_quant_fusion = true;  ///< ServingLayout::norm_quant_fusion (the submitter's build)
  int64_t gpus = 0;
  workload::InstanceLayout instance;
  // A decode iteration:
  int64_t sequences = 0, largest_graph = 0;
  double context = 0;
  double measured = 0;  ///< eager / graph, or tokens/s of the whole system
};

base::Result<std::vector<Case>> read_cases(const std::string& path, const std::string& text) {
  auto doc = config::parse_document(text, path);
  if (!doc) return fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  Reader top(doc->root, ctx);
  std::vector<Case> out;
  for (auto& r : top.children("serving_cases")) {
    Case c;
    c.id = r.string("id").value_or("");
    c.source = r.string("source").value_or("");
    if (auto f = r.child("fits")) {
      std::vector<std::string> names;
      for (const auto& k : kConstants) names.emplace_back(k.name);
      const std::string name = f->choice("constant", names).value_or("");
      for (const auto& k : kConstants)
        if (name == k.name) c.constant = &k;
      if (c.constant != nullptr) {
        const std::string unit =
            f->string("unit", *c.constant->unit ? Need::kRequired : Need::kOptional).value_or("");
        if (unit != c.constant->unit) {
          f->error(std::string("unit: expected '") + c.constant->unit + "' for " + name +
                       " (the unit serving.yaml writes it in), got '" + unit + "'",
                   "unit");
        }
      }
      c.lower = f->number("lower", Need::kRequired, 1e-12).value_or(0);
      c.upper = f->number("upper", Need::kRequired, 1e-12).value_or(0);
      c.resolution = f->number("resolution", Need::kRequired, 1e-12).value_or(0);
      if (c.upper <= c.lower) f->error("upper: expected above lower", "upper");
      f->finish();
    }
    c.cluster = r.string("cluster").value_or("");
    c.model = r.string("model").value_or("");
    c.precision = r.choice("precision", {"bf16", "fp8", "fp4"}).value_or("fp4");
    c.kv = r.choice("kv_cache", {"fp8", "bf16"}, Need::kOptional).value_or("fp8");
    c.runtime = r.choice("runtime", {"pytorch", "trt-engine"}, Need::kOptional).value_or("pytorch");
    if (auto i = r.child("instance")) {
      auto& in = c.instance;
      in.tp = static_cast<int>(i->integer("tp", Need::kRequired, 1, 1024).value_or(1));
      in.pp = static_cast<int>(i->integer("pp", Need::kOptional, 1, 1024).value_or(1));
      in.ep = static_cast<int>(i->integer("ep", Need::kOptional, 1, 1024).value_or(1));
      in.dp_attention = i->boolean("dp_attention", Need::kOptional).value_or(false);
      in.max_batch = i->integer("max_batch", Need::kRequired, 1, 1 << 20).value_or(1);
      in.max_tokens = i->integer("max_tokens", Need::kRequired, 1, 1 << 24).value_or(1);
      in.chunked_prefill = i->boolean("chunked_prefill", Need::kRequired).value_or(true);
      in.chunk_unit =
          static_cast<int>(i->integer("chunk_unit", Need::kOptional, 1, 1 << 16).value_or(1));
      i->finish();
    }
    auto m = r.child("measured");
    if (auto d = r.child("decode_iteration", Need::kOptional)) {
      c.sequences = d->integer("sequences_per_rank", Need::kRequired, 1, 1 << 20).value_or(1);
      c.context = d->number("context", Need::kRequired, 1.0, 1e8).value_or(1);
      c.largest_graph = d->integer("largest_graph", Need::kRequired, 1, 1 << 20).value_or(1);
      d->finish();
      if (m) c.measured = m->number("eager_over_graph", Need::kRequired, 1.0, 100.0).value_or(0);
      if (c.largest_graph >= c.sequences) {
        r.error(
            "decode_iteration: expected largest_graph below sequences_per_rank (else the "
            "iteration replays a graph)",
            "decode_iteration");
      }
    } else {
      if (auto sc = r.choice("scenario", {"server", "interactive"})) {
        c.scenario = *sc == "server" ? workload::ServingScenario::kServer
                                     : workload::ServingScenario::kInteractive;
      }
      c.norm_quant_fusion =
          r.boolean("norm_quant_fusion", Need::kOptional).value_or(c.norm_quant_fusion);
      c.gpus = r.integer("gpus", Need::kRequired, 1, 1 << 20).value_or(1);
      if (m) c.measured = m->number("tokens_per_s", Need::kRequired, 1e-9).value_or(0);
      const int64_t per = static_cast<int64_t>(c.instance.tp) * c.instance.pp;
      if (c.gpus % per != 0) {
        r.error("gpus: expected a multiple of tp x pp = " + std::to_string(per) + ", got " +
                    std::to_string(c.gpus),
                "gpus");
      }
    }
    if (m) m->finish();
    r.finish();
    out.push_back(std::move(c));
  }
  top.finish();
  if (!ctx.errors.empty()) return fail(ctx.errors.combined());
  if (out.empty()) return fail("expected at least one case under serving_cases", path, 0);
  return out;
}

/// What the model predicts for `c` with the constants `sc` (one of which the fit varies).
base::Result<double> replay(const hardware::Catalog& cat, const Case& c,
                            const execution::ServingStepCalibration& sc) {
  auto spec = hardware::resolve_cluster(cat, c.cluster);
  if (!spec) return fail(spec.error());
  const auto& sys = **cat.system(spec->system);
  const auto& gpu = **cat.gpu(sys.gpu);
  auto cm = compute::ComputeModel::for_gpu(gpu, cat);
  if (!cm) return fail(cm.error());
  auto model = models::load_model(cat, c.model);
  if (!model) return fail(model.error());
  auto fabric = execution::serving_fabric(cat, *spec);
  if (!fabric) return fail(fabric.error());
  auto dtype = compute::parse_dtype(c.precision);
  if (!dtype) return fail("precision: unknown '" + c.precision + "'");
  const double kv_bytes = c.kv == "fp8" ? 1.0 : 2.0;
  if (!c.scenario) {
    execution::StepSetup st;
    sc.apply(st);
    st.model = &*model;
    st.instance = c.instance;
    st.weights = *dtype;
    st.kv_bytes = kv_bytes;
    st.compute = &*cm;
    st.fabric = *fabric;
    st.runtime = c.runtime == "trt-engine" ? workload::ServingRuntime::kTrtEngine
                                           : workload::ServingRuntime::kPytorch;
    auto graph = execution::StepModel::build(st);
    if (!graph) return fail(graph.error());
    st.instance.cuda_graph_batches = {c.largest_graph};
    auto eager = execution::StepModel::build(st);
    if (!eager) return fail(eager.error());
    const execution::RankBatch d{.decode = c.sequences,
                                 .decode_context = static_cast<double>(c.sequences) * c.context,
                                 .logits = c.sequences};
    const std::vector<execution::RankBatch> ranks(static_cast<size_t>(c.instance.tp), d);
    return eager->time(ranks).total / graph->time(ranks).total;
  }
  execution::ServingSetup s;
  sc.apply(s);
  s.model = &*model;
  s.compute = &*cm;
  s.fabric = *fabric;
  s.memory_capacity = gpu.hbm_usable;
  auto dataset = workload::dataset_for_model(cat, c.model);
  if (!dataset) return fail(dataset.error());
  s.dataset = *dataset;
  s.scenario = *c.scenario;
  auto limits = s.dataset.limits(*c.scenario);
  if (!limits) return fail("dataset '" + s.dataset.name + "' has no limits for the scenario");
  s.limits = *limits;
  s.layout.weights = *dtype;
  s.layout.instance = c.instance;
  s.layout.replicas = static_cast<int>(c.gpus / (c.instance.tp * c.instance.pp));
  s.layout.kv_bytes = kv_bytes;
  s.layout.norm_quant_fusion = c.norm_quant_fusion;
  s.layout.runtime = c.runtime == "trt-engine" ? workload::ServingRuntime::kTrtEngine
                                               : workload::ServingRuntime::kPytorch;
  s.seed = kSeed;
  auto r = execution::find_max_rate(s, kRateProbes);
  if (!r) return fail(r.error());
  if (!r->found) return fail(c.id + ": the replay meets its limits at no rate");
  return r->result.tokens_per_s_per_gpu;
}

/// The text of "  <name>: {value: V, ..." with V replaced.
base::Status set_value(std::string& text, const std::string& name, const std::string& value) {
  const std::string key = "\n  " + name + ": {value: ";
  const size_t at = text.find(key);
  if (at == std::string::npos || text.find(key, at + 1) != std::string::npos) {
    return fail("expected exactly one line '  " + name + ": {value: ...'",
                std::string("catalog/") + kOutput, 0);
  }
  const size_t v = at + key.size();
  const size_t comma = text.find(',', v);
  if (comma == std::string::npos) {
    return fail("expected '" + name + ": {value: V, source: ...}'",
                std::string("catalog/") + kOutput, 0);
  }
  text.replace(v, comma - v, value);
  return {};
}

/// A grid value as written: the fewest digits that give it back at the grid's resolution.
std::string format_constant(double v, double resolution, const char* unit) {
  int decimals = 0;
  while (decimals < 12 && std::abs(std::round(resolution * std::pow(10.0, decimals)) -
                                   resolution * std::pow(10.0, decimals)) > 1e-9) {
    ++decimals;
  }
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  std::string s = b;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return *unit ? s + " " + unit : s;
}

}  // namespace

base::Result<BuiltinServing> builtin_serving(const hardware::Catalog& catalog) {
  const std::string path = std::string("catalog/") + kCases;
  const hardware::CatalogFile* file = nullptr;
  for (const auto& f : catalog.other_files())
    if (f.path == kCases) file = &f;
  if (file == nullptr) {
    return fail(std::string("the catalog has no ") + kCases +
                " (the cases the serving step constants are fitted on)");
  }
  const std::string& text = file->text;
  auto cases = read_cases(path, text);
  if (!cases) return fail(cases.error());
  BuiltinServing out;
  out.inputs.push_back({.path = path,
                        .sha256 = sha256_hex(text),
                        .format = Format::kServingCases,
                        .records = static_cast<int>(cases->size())});
  auto sc = execution::serving_step_calibration(catalog);
  if (!sc) return fail(sc.error());
  std::string yaml;
  for (const auto& f : catalog.other_files())
    if (f.path == kOutput) yaml = f.text;
  for (const Case& c : *cases) {
    const Constant& k = *c.constant;
    auto set = [&](execution::ServingStepCalibration& into, double v) {
      const double base = v * k.to_base;
      if (std::string(k.name) == "tp_overlap") into.tp_overlap = base;
      if (std::string(k.name) == "stream_host_per_response")
        into.stream_host_per_response = base::seconds(base);
      if (std::string(k.name) == "eager_host_per_layer")
        into.eager_host_per_layer = base::seconds(base);
      if (std::string(k.name) == "engine_host_per_iteration")
        into.engine_host_per_iteration = base::seconds(base);
    };
    const Parameter p{
        .name = k.name, .start = c.lower, .lower = c.lower, .upper = c.upper, .source = path};
    const double measured = c.scenario ? c.measured / static_cast<double>(c.gpus) : c.measured;
    auto fit = fit_serving_constant(p, c.resolution, measured, [&](double v) {
      execution::ServingStepCalibration trial = *sc;
      set(trial, v);
      return replay(catalog, c, trial);
    });
    if (!fit) return fail(c.id + ": " + fit.error().to_string(), path);
    set(*sc, fit->value);
    if (auto st = set_value(yaml, k.name, format_constant(fit->value, c.resolution, k.unit)); !st)
      return fail(st.error());
    char line[320];
    const char* what = c.scenario ? "tokens/s per GPU" : "eager / graph";
    std::snprintf(line, sizeof line,
                  "%-25s %-8s on %s: %s predicted, %s measured (%s; %+.1f%%); the grid's "
                  "neighbour %s gives %s (%+.1f%%); %zu replays",
                  k.name, format_constant(fit->value, c.resolution, k.unit).c_str(), c.id.c_str(),
                  format_g(fit->predicted, 5).c_str(), format_g(measured, 5).c_str(), what,
                  100.0 * (fit->predicted / measured - 1.0),
                  format_constant(fit->other, c.resolution, k.unit).c_str(),
                  format_g(fit->other_predicted, 5).c_str(),
                  100.0 * (fit->other_predicted / measured - 1.0), fit->probes.size());
    out.summary.emplace_back(line);
    out.cases.push_back({.id = c.id,
                         .source = c.source,
                         .constant = k.name,
                         .unit = k.unit,
                         .fit = std::move(*fit)});
  }
  // The rewritten file must load as the catalog reads it.
  {
    hardware::CatalogFile f{kOutput, yaml};
    auto cat = hardware::Catalog::load_files(std::vector<hardware::CatalogFile>{f});
    if (!cat) return fail(cat.error());
    auto back = execution::serving_step_calibration(*cat);
    if (!back) return fail(back.error());
  }
  out.files.push_back({.path = std::string("catalog/") + kOutput, .text = yaml});
  return out;
}

std::string builtin_serving_html_section(const BuiltinServing& b) {
  std::ostringstream h;
  h << "<h2>Serving step constants (catalog/calibration/serving.yaml)</h2>\n<p>" << b.cases.size()
    << " constants, each fitted on its case on a grid (docs/models/calibration.md, \"The "
       "built-in serving constants\").</p>\n<h3>Constants</h3>\n<pre>";
  for (const auto& l : b.summary) h << base::escape_html(l) << "\n";
  h << "</pre>\n<h3>Every replay</h3>\n<div class=scroll><table><tr><th>constant</th>"
    << "<th>case</th><th>source</th><th>value</th><th>predicted</th><th>measured</th>"
    << "<th>error</th></tr>\n";
  for (const auto& c : b.cases) {
    for (const auto& [v, p] : c.fit.probes) {
      char row[96];
      std::snprintf(row, sizeof row, "<td>%.6g %s</td><td>%.5g</td><td>%.5g</td><td>%+.1f%%</td>",
                    v, c.unit.c_str(), p, c.fit.measured, 100.0 * (p / c.fit.measured - 1.0));
      h << "<tr><td class=l>" << base::escape_html(c.constant) << "</td><td class=l>"
        << base::escape_html(c.id) << "</td><td class=l>" << base::escape_html(c.source) << "</td>"
        << row << "</tr>\n";
    }
  }
  h << "</table></div>\n";
  return h.str();
}

}  // namespace clustertwin::calibration
