// The training validation cases and the built-in training calibration (builtin_training.h).

#include "clustertwin/calibration/builtin_training.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "clustertwin/calibration/profile_text.h"
#include "clustertwin/calibration/sha256.h"
#include "clustertwin/config/reader.h"
#include "clustertwin/execution/serving_step.h"
#include "clustertwin/models/model_catalog.h"

namespace clustertwin::calibration {

namespace {

constexpr const char* kCasesPath = "calibration/training-cases.yaml";
constexpr const char* kOutPath = "catalog/calibration/training.yaml";

using Need = config::Reader::Need;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

/// A case's layout mapping: the keys of `train`'s scenario files (scenario/training.cpp) that the
/// cases use, read into the layout as the scenario reader resolves them, and grad_bytes.
void read_layout(config::Reader& r, TrainingCase& c) {
  auto& l = c.layout;
  auto int_key = [&](const char* key, int& field, int64_t lo, int64_t hi) {
    if (auto v = r.integer(key, Need::kOptional, lo, hi)) field = static_cast<int>(*v);
  };
  int_key("tp", l.tp, 1, 1024);
  int_key("pp", l.pp, 1, 1024);
  int_key("cp", l.cp, 1, 1024);
  int_key("ep", l.ep, 1, 4096);
  int_key("etp", l.etp, 1, 1024);
  int_key("vpp", l.vpp, 1, 1024);
  int_key("zero", l.zero, 0, 3);
  int_key("lora_rank", l.lora_rank, 1, 65536);
  int_key("grad_bytes", l.grad_bytes, 2, 4);
  if (auto v = r.integer("micro_batch", Need::kOptional, 1, 1 << 20)) l.micro_batch = *v;
  l.global_batch = r.integer("global_batch", Need::kRequired, 1, INT32_MAX).value_or(1);
  l.seq_len = r.integer("seq_len", Need::kRequired, 1, 1 << 24).value_or(2048);
  if (auto p = r.choice("precision", {"bf16", "fp8", "fp8_block", "nvfp4"}, Need::kOptional))
    l.dtype = compute::parse_dtype(*p).value_or(compute::DType::kBf16);
  if (auto v = r.choice("recompute", {"none", "selective", "full"}, Need::kOptional))
    l.recompute = models::parse_recompute(*v).value_or(models::Recompute::kNone);
  if (auto v = r.string("recompute_modules", Need::kOptional)) {
    auto bits = workload::parse_recompute_modules(*v);
    if (bits) {
      l.recompute_modules = *bits;
    } else {
      r.error("recompute_modules: " + bits.error().message, "recompute_modules");
    }
  }
  if (auto v = r.string("cuda_graphs", Need::kOptional)) {
    auto bits = execution::parse_cuda_graphs(*v);
    if (bits) {
      c.cuda_graphs = *bits;
    } else {
      r.error("cuda_graphs: " + bits.error().message, "cuda_graphs");
    }
  }
  if (auto v = r.choice("moe_dispatch", {"auto", "alltoall", "dedup", "nvlink-onesided"},
                        Need::kOptional))
    l.moe_dispatch = workload::parse_moe_dispatch(*v).value_or(workload::MoeDispatch::kAuto);
  if (auto v = r.choice("routing", {"balanced", "measured"}, Need::kOptional))
    l.routing = workload::parse_moe_routing(*v).value_or(workload::MoeRouting::kBalanced);
  if (auto v = r.choice("schedule", {"1f1b", "dualpipe"}, Need::kOptional))
    l.schedule = workload::parse_pipeline_schedule(*v).value_or(workload::PipelineSchedule::k1F1B);
  if (auto v = r.choice("attention", {"flash", "unfused"}, Need::kOptional))
    l.flash_attention = *v == "flash";
  auto flag = [&](const char* key, bool& field) {
    if (auto v = r.boolean(key, Need::kOptional)) field = *v;
  };
  flag("sequence_parallel", l.sequence_parallel);
  flag("tp_comm_overlap", l.tp_comm_overlap);
  flag("dp_overlap", l.dp_overlap);
  flag("ep_overlap", l.ep_overlap);
  flag("fp8_attention", l.fp8_attention);
  flag("fp8_act_store", l.fp8_activation_store);
  bool bf16_moments = false;
  flag("bf16_moments", bf16_moments);
  l.moment_bytes = bf16_moments ? 2 : 4;
  r.finish();
}

std::optional<TrainingMetric> parse_metric(std::string_view s) {
  for (auto m : {TrainingMetric::kHardwareTflops, TrainingMetric::kModelTflops,
                 TrainingMetric::kModelTflopsCausal, TrainingMetric::kStepTime,
                 TrainingMetric::kTokensPerGpu}) {
    if (s == training_metric_name(m)) return m;
  }
  return std::nullopt;
}

}  // namespace

const char* training_metric_name(TrainingMetric m) {
  switch (m) {
    case TrainingMetric::kHardwareTflops:
      return "hardware_tflops";
    case TrainingMetric::kModelTflops:
      return "model_tflops";
    case TrainingMetric::kModelTflopsCausal:
      return "model_tflops_causal";
    case TrainingMetric::kStepTime:
      return "step_time_s";
    case TrainingMetric::kTokensPerGpu:
      return "tokens_per_s_per_gpu";
  }
  return "?";
}

const TrainingSource* TrainingCases::source(std::string_view id) const {
  for (const auto& s : sources) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

base::Result<TrainingCases> parse_training_cases(std::string_view text, std::string file) {
  auto doc = config::parse_document(text, file);
  if (!doc) return base::fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  config::Reader top(doc->root, ctx);
  TrainingCases out;
  out.file = doc->file;
  out.text = std::string(text);
  if (auto s = top.child("sources")) {
    for (const auto& key : s->keys()) {
      if (auto e = s->child(key)) {
        TrainingSource src{.id = key};
        src.name = e->string("name").value_or("");
        src.cite = e->string("cite").value_or("");
        e->finish();
        out.sources.push_back(std::move(src));
      }
    }
    s->finish();
  }
  std::set<std::string> ids;
  for (auto& e : top.children("training_cases")) {
    TrainingCase c;
    c.line = e.line();
    c.id = e.string("id").value_or("");
    if (!c.id.empty() && !ids.insert(c.id).second)
      e.error("id '" + c.id + "' is given twice", "id");
    c.source = e.string("source").value_or("");
    if (!c.source.empty() && !out.source(c.source)) {
      std::string known;
      for (const auto& s : out.sources) known += (known.empty() ? "" : ", ") + s.id;
      e.error("source: expected one of the file's sources (" + known + "), got '" + c.source + "'",
              "source");
    }
    c.cluster = e.string("cluster").value_or("");
    c.gpus = e.integer("gpus", Need::kRequired, 1, INT32_MAX).value_or(1);
    c.model = e.string("model").value_or("");
    if (c.model == "gpt") {
      if (auto g = e.child("gpt")) {
        c.gpt_layers =
            static_cast<int>(g->integer("layers", Need::kRequired, 1, 100000).value_or(1));
        c.gpt_hidden = g->integer("hidden", Need::kRequired, 1, 1 << 24).value_or(1);
        c.gpt_heads = g->integer("heads", Need::kRequired, 1, 1 << 16).value_or(1);
        g->finish();
      }
    }
    if (auto l = e.child("layout")) read_layout(*l, c);
    if (auto m = e.choice("metric", {"hardware_tflops", "model_tflops", "model_tflops_causal",
                                     "step_time_s", "tokens_per_s_per_gpu"})) {
      c.metric = parse_metric(*m).value_or(TrainingMetric::kStepTime);
    }
    c.measured = e.number("measured", Need::kRequired, 1e-12).value_or(1);
    c.text = e.string("text").value_or("");
    if (auto t = e.number("tolerance", Need::kOptional, 0.01, 1.0)) c.tolerance = *t;
    c.pending = e.string("pending", Need::kOptional).value_or("");
    const int64_t mp = static_cast<int64_t>(c.layout.tp) * c.layout.pp * c.layout.cp;
    if (c.gpus % mp != 0) {
      e.error("gpus: " + std::to_string(c.gpus) +
                  " is not a multiple of tp * pp * cp = " + std::to_string(mp),
              "gpus");
    } else {
      c.layout.dp = static_cast<int>(c.gpus / mp);
    }
    e.finish();
    out.cases.push_back(std::move(c));
  }
  top.finish();
  if (!ctx.errors.empty()) return base::fail(ctx.errors.combined());
  if (out.cases.empty()) return base::fail("expected at least one case", out.file, 1);
  return out;
}

base::Result<TrainingCases> training_cases(const hardware::Catalog& catalog) {
  for (const auto& f : catalog.other_files()) {
    if (f.path == kCasesPath) return parse_training_cases(f.text, "catalog/" + f.path);
  }
  return base::fail(std::string("the catalog has no ") + kCasesPath +
                    " (the training validation cases)");
}

// ---- One case ----------------------------------------------------------------------------------

base::Result<std::unique_ptr<TrainingCaseRunner>> TrainingCaseRunner::make(
    const hardware::Catalog& catalog, const TrainingCase& c) {
  std::unique_ptr<TrainingCaseRunner> r(new TrainingCaseRunner());
  r->case_ = c;
  auto rig = [&]() -> base::Result<std::unique_ptr<execution::TrainingRig>> {
    if (c.model != "gpt") return execution::make_training_rig(catalog, c.cluster, c.model);
    auto gpt = models::gpt_model({.layers = c.gpt_layers,
                                  .hidden = c.gpt_hidden,
                                  .heads = c.gpt_heads,
                                  .vocab = 51200,
                                  .seq_len = 2048});
    if (!gpt) return base::fail(gpt.error());
    return execution::make_training_rig(catalog, c.cluster, std::move(*gpt));
  }();
  if (!rig) return base::fail(rig.error());
  r->rig_ = std::move(*rig);
  auto fabric = execution::serving_fabric(catalog, r->rig_->topo.spec());
  if (fabric) r->fabric_ = std::move(*fabric);
  return r;
}

execution::TrainingSetup TrainingCaseRunner::setup() const {
  auto s = rig_->setup(case_.layout);
  s.gpus = case_.gpus;
  if (fabric_) s.moe_fabric = &*fabric_;
  s.cuda_graphs = case_.cuda_graphs;
  return s;
}

double TrainingCaseRunner::metric(const execution::TrainingResult& r) const {
  const double g = static_cast<double>(case_.gpus);
  switch (case_.metric) {
    case TrainingMetric::kHardwareTflops:
      return r.hardware_tflops_per_gpu;
    case TrainingMetric::kModelTflops:
      return r.model_tflops_per_gpu;
    case TrainingMetric::kModelTflopsCausal:
      return models::training_flops_per_token(rig_->model, case_.layout.seq_len, /*causal=*/true) *
             static_cast<double>(case_.layout.tokens_per_step()) / r.step_time_s / g / 1e12;
    case TrainingMetric::kStepTime:
      return r.step_time_s;
    case TrainingMetric::kTokensPerGpu:
      return r.tokens_per_s / g;
  }
  return 0;
}

base::Result<TrainingPrediction> TrainingCaseRunner::predict(
    const std::optional<TrainingConstants>& constants) const {
  auto s = setup();
  if (constants) {
    s.fp8_overhead = constants->fp8_overhead;
    s.host_per_expert_gemm = constants->host_per_expert_gemm;
  }
  auto r = execution::simulate_training_step(s);
  if (!r) return base::fail(r.error());
  return TrainingPrediction{.value = metric(*r), .memory_GB = r->memory.total().base() / 1e9};
}

// ---- The built-in fit --------------------------------------------------------------------------

/// The recipe: each constant's start, bounds and what they rest on. The starts are places to
/// begin (no prior pulls toward them); every fit starts from here, never from the file it writes.
const std::vector<TrainingConstantSpec>& training_constant_specs() {
  static const std::vector<TrainingConstantSpec> k = {
      // A fraction of an FP8 GEMM: above 1 the "overhead" would make FP8 slower than BF16,
      // which no FP8 recipe would run; below 1% it is under the kernel tables' own noise.
      {"training.fp8_overhead", "fp8_overhead", "fp8-fit", "", 0.1, 0.01, 1.0,
       "  # Time added to every Transformer Engine FP8 GEMM, as a fraction of the GEMM: amax "
       "history and\n  # scale updates, cast-transposes and FP8 weight transposes that "
       "inference kernel tables omit.\n"},
      // Seconds. Start: the middle of the 20-60 us a count of the per-expert calls at eager
      // PyTorch's 5-30 us per call gives (docs/models/training.md); bounds: a CUDA launch
      // (1 us) to a millisecond per GEMM, beyond which no MoE recipe would run eagerly.
      {"training.host_per_expert_gemm", "host_per_expert_gemm", "host-issue-fit", "us", 40e-6, 1e-6,
       1e-3,
       "  # Host time per expert GEMM issued from eager PyTorch (Transformer Engine "
       "GroupedLinear: one\n  # GEMM per local expert with its per-expert Python work).\n"}};
  return k;
}

namespace {

/// Words wrapped to `width` columns with `indent` before every line.
std::string wrap(const std::string& text, size_t width, const std::string& indent) {
  std::istringstream in(text);
  std::string out, line, word;
  while (in >> word) {
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

std::string value_text(const TrainingConstantSpec& k, double v) {
  if (std::string(k.unit) == "us") return g4(v * 1e6) + " us";
  return g4(v);
}

/// Three significant digits, for ranges.
std::string g3(double v) { return fmt("%.3g", v); }

/// The cases the fit runs: every case that is not pending, each with its runner and weight.
struct FitCase {
  size_t index = 0;  ///< into TrainingCases::cases
  std::unique_ptr<TrainingCaseRunner> runner;
  double weight = 1;
  bool sees = false;  ///< its prediction moves with a constant
  double fixed = 0;   ///< its prediction when it does not
};

/// Predictions of every fitted case at parameter values, caching what does not move.
class CaseModel {
 public:
  explicit CaseModel(std::vector<FitCase>& cases) : cases_(cases) {}

  base::Result<std::vector<double>> operator()(std::span<const double> p,
                                               const std::vector<size_t>& which) {
    const std::vector<double> key(p.begin(), p.end());
    auto it = memo_.find(key);
    if (it == memo_.end()) {
      std::vector<double> all(cases_.size(), 0.0);
      for (size_t i = 0; i < cases_.size(); ++i) {
        if (!cases_[i].sees) {
          all[i] = cases_[i].fixed;
          continue;
        }
        auto r = cases_[i].runner->predict(
            TrainingConstants{.fp8_overhead = p[0], .host_per_expert_gemm = base::seconds(p[1])});
        if (!r) return base::fail(r.error());
        all[i] = r->value;
      }
      it = memo_.emplace(key, std::move(all)).first;
    }
    std::vector<double> out;
    out.reserve(which.size());
    for (size_t i : which) out.push_back(it->second[i]);
    return out;
  }

 private:
  std::vector<FitCase>& cases_;
  std::map<std::vector<double>, std::vector<double>> memo_;
};

FitOptions fit_options() {
  FitOptions o;
  o.loss_scale = 10;        // least squares: every log error is far below the soft-L1 scale
  o.prior_weight = 0;       // the starts are places to begin
  o.folds = 0;              // leave-one-source-out instead (below)
  o.diff_step = 1e-3;       // 0.1%: far above the integer-nanosecond task times' rounding
  o.coordinate_passes = 2;  // the host term binds only where host exceeds GPU time: a kink
  return o;
}

std::vector<Parameter> parameters() {
  std::vector<Parameter> out;
  for (const auto& k : training_constant_specs()) {
    out.push_back({.name = k.name,
                   .start = k.start,
                   .lower = k.lower,
                   .upper = k.upper,
                   .source = "the recipe (src/clustertwin/calibration/builtin_training.cpp)",
                   .grid = true,
                   .prior = false});
  }
  return out;
}

}  // namespace

base::Result<BuiltinTraining> builtin_training(const hardware::Catalog& catalog) {
  auto cases = training_cases(catalog);
  if (!cases) return base::fail(cases.error());
  BuiltinTraining out;
  out.inputs.push_back({.path = cases->file,
                        .sha256 = sha256_hex(cases->text),
                        .format = Format::kTrainingCases,
                        .records = static_cast<int>(cases->cases.size())});
  // Every case that is not pending, ready to run; each source weighs the same.
  std::vector<FitCase> fc;
  std::map<std::string, int> per_source;
  base::Errors errors;
  for (size_t i = 0; i < cases->cases.size(); ++i) {
    const auto& c = cases->cases[i];
    if (!c.pending.empty()) continue;
    auto r = TrainingCaseRunner::make(catalog, c);
    if (!r) {
      errors.add({c.id + ": " + r.error().message, cases->file, c.line});
      continue;
    }
    fc.push_back({.index = i, .runner = std::move(*r)});
    ++per_source[c.source];
  }
  if (!errors.empty()) return base::fail(errors.combined());
  const auto params = parameters();
  // Which cases see a constant: the predictions are monotone in both (more overhead, more host
  // time, never a faster step), so a case that does not move between the lower and the upper
  // bound of each does not see it, and its prediction is computed once.
  for (auto& f : fc) {
    const auto& c = cases->cases[f.index];
    f.weight = 1.0 / per_source[c.source];
    auto at = [&](double fp8, double host) {
      return f.runner->predict(
          TrainingConstants{.fp8_overhead = fp8, .host_per_expert_gemm = base::seconds(host)});
    };
    auto lo = at(params[0].lower, params[1].lower);
    auto hi0 = at(params[0].upper, params[1].lower);
    auto hi1 = at(params[0].lower, params[1].upper);
    if (!lo || !hi0 || !hi1) {
      errors.add({c.id + ": " +
                      (!lo    ? lo.error()
                       : !hi0 ? hi0.error()
                              : hi1.error())
                          .message,
                  cases->file, c.line});
      continue;
    }
    f.sees = lo->value != hi0->value || lo->value != hi1->value;
    f.fixed = lo->value;
  }
  if (!errors.empty()) return base::fail(errors.combined());

  CaseModel model(fc);
  // A fit on the cases `which` (indices into fc).
  auto run_fit = [&](const std::vector<size_t>& which) -> base::Result<FitResult> {
    std::vector<Observation> obs;
    for (size_t i : which) {
      const auto& c = cases->cases[fc[i].index];
      obs.push_back({.value = c.measured, .weight = fc[i].weight, .label = c.id});
    }
    return fit(
        params, obs, [&](std::span<const double> p) { return model(p, which); }, fit_options());
  };
  std::vector<size_t> all(fc.size());
  for (size_t i = 0; i < fc.size(); ++i) all[i] = i;
  auto full = run_fit(all);
  if (!full) return base::fail(full.error());
  out.fit = *full;
  out.parameters = params;

  // The sources each constant's fit rests on: those of the cases that see it.
  std::vector<std::vector<std::string>> seen_by(params.size());
  std::set<std::string> loso_sources;
  for (size_t j = 0; j < params.size(); ++j) {
    for (int o : out.fit.parameters[j].constrained_by) {
      const auto& src = cases->cases[fc[static_cast<size_t>(o)].index].source;
      if (std::find(seen_by[j].begin(), seen_by[j].end(), src) == seen_by[j].end())
        seen_by[j].push_back(src);
      loso_sources.insert(src);
    }
  }
  // Sources in the file's order.
  for (size_t j = 0; j < params.size(); ++j) {
    std::vector<std::string> ordered;
    for (const auto& s : cases->sources) {
      if (std::find(seen_by[j].begin(), seen_by[j].end(), s.id) != seen_by[j].end())
        ordered.push_back(s.name);
    }
    out.fit_sources.push_back([&] {
      std::string t;
      for (size_t i = 0; i < ordered.size(); ++i)
        t += (i == 0 ? "" : i + 1 == ordered.size() ? " and " : ", ") + ordered[i];
      return t;
    }());
  }

  // Case results at the fit.
  for (size_t i = 0; i < fc.size(); ++i) {
    const auto& c = cases->cases[fc[i].index];
    out.cases.push_back({.id = c.id,
                         .source = c.source,
                         .text = c.text,
                         .metric = c.metric,
                         .measured = c.measured,
                         .predicted = out.fit.after[i],
                         .sees = fc[i].sees});
  }
  // Leave one source out: only sources whose cases see a constant change the fit (the others'
  // residuals are constants of the objective), so only they are refitted.
  for (const auto& s : cases->sources) {
    if (!loso_sources.count(s.id)) continue;
    std::vector<size_t> rest, held;
    for (size_t i = 0; i < fc.size(); ++i)
      (cases->cases[fc[i].index].source == s.id ? held : rest).push_back(i);
    auto f = run_fit(rest);
    if (!f) return base::fail(f.error());
    TrainingLoso l{.source = s.id};
    for (const auto& p : f->parameters) {
      l.values.push_back(p.value);
      l.constrained.push_back(p.constrained);
    }
    auto pred = model(l.values, held);
    if (!pred) return base::fail(pred.error());
    for (size_t h = 0; h < held.size(); ++h) {
      out.cases[held[h]].has_loso = true;
      out.cases[held[h]].loso_predicted = (*pred)[h];
    }
    out.loso.push_back(std::move(l));
  }

  // The file.
  std::ostringstream y;
  y << wrap(
           "The training step model's fitted constants (src/clustertwin/execution/"
           "training_calibration.h; docs/models/training.md, \"Calibration: what was fitted on "
           "what\"), written by `clustertwin calibrate --builtin training` "
           "(src/clustertwin/calibration/builtin_training.h) from the training validation cases "
           "of catalog/calibration/training-cases.yaml: least squares of the log errors with "
           "each source weighted equally, every constant within its bounds, both fitted "
           "together. Each source below names the sources whose cases see the constant, its "
           "1-sigma and the range of its leave-one-source-out refits. Not edited by hand: rerun "
           "the verb (tests/cli/calibrate.cmake checks that it writes these bytes).",
           100, "# ")
    << "sources:\n";
  const auto& ks = training_constant_specs();
  for (size_t j = 0; j < ks.size(); ++j) {
    const auto& p = out.fit.parameters[j];
    double lo = p.value, hi = p.value;
    for (const auto& l : out.loso) {
      if (!l.constrained[j]) continue;  // held at its start: no measurement of it remained
      lo = std::min(lo, l.values[j]);
      hi = std::max(hi, l.values[j]);
    }
    const bool us = std::string(ks[j].unit) == "us";
    const double s = us ? 1e6 : 1.0;
    const std::string unit = us ? " us" : "";
    std::string text = "least squares over the training validation cases that see it (" +
                       out.fit_sources[j] + "; " + std::to_string(p.constrained_by.size()) +
                       " cases), each source weighted equally, bounds " +
                       fmt("%g", ks[j].lower * s) + "-" + fmt("%g", ks[j].upper * s) + unit + "; ";
    if (p.constrained) {
      text += "1-sigma " + fmt("%.2g", 100 * p.sigma_rel) + "%; leave-one-source-out " +
              g3(lo * s) + "-" + g3(hi * s) + unit;
    } else {
      text += "not constrained (" + p.why_not + ")";
    }
    text += " (docs/models/training.md, Calibration)";
    y << "  " << ks[j].source << ": >-\n" << wrap(text, 100, "    ");
  }
  y << "training_calibration:\n";
  for (size_t j = 0; j < ks.size(); ++j) {
    y << ks[j].comment << "  " << ks[j].key
      << ": {value: " << value_text(ks[j], out.fit.parameters[j].value)
      << ", source: " << ks[j].source << "}\n";
  }
  out.files.push_back({.path = kOutPath, .text = y.str()});

  // The summary.
  auto& sm = out.summary;
  sm.push_back("Training step constants fitted on " + std::to_string(fc.size()) + " cases of " +
               std::to_string(per_source.size()) + " sources (" + cases->file +
               "), each source weighted equally:");
  for (size_t j = 0; j < ks.size(); ++j) {
    const auto& p = out.fit.parameters[j];
    sm.push_back("  " + std::string(ks[j].key) + " = " + value_text(ks[j], p.value) +
                 (p.constrained ? " (1-sigma " + fmt("%.2g", 100 * p.sigma_rel) + "%)"
                                : " (not constrained: " + p.why_not + ")") +
                 ", seen by " + std::to_string(p.constrained_by.size()) + " cases of " +
                 out.fit_sources[j]);
  }
  sm.push_back("  rms log error: " + fmt("%.2f%%", 100 * out.fit.rms_before) + " at the starts, " +
               fmt("%.2f%%", 100 * out.fit.rms_after) + " fitted");
  sm.push_back(
      "Leave one source out (the constants fitted on the other sources; the source's "
      "cases predicted):");
  for (const auto& l : out.loso) {
    std::string line = "  " + cases->source(l.source)->name + ":";
    for (size_t j = 0; j < ks.size(); ++j) {
      line += " " + std::string(ks[j].key) + " " +
              (l.constrained[j] ? value_text(ks[j], l.values[j]) : "not constrained");
    }
    line += "; held-out errors";
    for (const auto& c : out.cases) {
      if (c.source == l.source && c.has_loso)
        line += " " + fmt("%+.1f", 100 * (c.loso_predicted / c.measured - 1));
    }
    sm.push_back(line);
  }
  std::vector<double> in_sample, held_out;
  for (const auto& c : out.cases) {
    in_sample.push_back(std::abs(c.predicted / c.measured - 1));
    held_out.push_back(std::abs((c.has_loso ? c.loso_predicted : c.predicted) / c.measured - 1));
  }
  auto median_max = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return std::pair{v[v.size() / 2], v.back()};
  };
  const auto [m_in, x_in] = median_max(in_sample);
  const auto [m_out, x_out] = median_max(held_out);
  sm.push_back("  |predicted / measured - 1| over the " + std::to_string(out.cases.size()) +
               " cases: in sample median " + fmt("%.1f%%", 100 * m_in) + ", max " +
               fmt("%.1f%%", 100 * x_in) + "; leave-one-source-out median " +
               fmt("%.1f%%", 100 * m_out) + ", max " + fmt("%.1f%%", 100 * x_out));
  return out;
}

}  // namespace clustertwin::calibration
