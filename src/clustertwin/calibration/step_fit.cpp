#include "clustertwin/calibration/step_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "clustertwin/base/file.h"
#include "clustertwin/base/text.h"
#include "clustertwin/calibration/builtin_training.h"
#include "clustertwin/calibration/profile_text.h"
#include "clustertwin/calibration/report.h"
#include "clustertwin/config/reader.h"

namespace clustertwin::calibration {
using base::fail;

namespace {

std::string quote(const std::string& s) { return yaml_quote(s); }

std::string where(const StepTime& s) { return s.file + ":" + std::to_string(s.line); }

std::string layout_of(const StepTime& s) {
  std::string l = "TP" + std::to_string(s.tp) + " PP" + std::to_string(s.pp);
  if (s.dp > 0) l += " DP" + std::to_string(s.dp);
  if (s.cp > 1) l += " CP" + std::to_string(s.cp);
  if (s.ep > 1) l += " EP" + std::to_string(s.ep);
  if (s.vpp > 1) l += " VPP" + std::to_string(s.vpp);
  return l;
}

/// The result of the parameter named `name` (nullptr: not offered).
const ParameterResult* result_named(const FitResult& r, const char* name) {
  for (const auto& p : r.parameters) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

/// A constant's value as a profile writes it ("0.1756", "122.7 us").
std::string constant_text(const TrainingConstantSpec& k, double v) {
  return std::string(k.unit) == "us" ? g4(v * 1e6) + " us" : g4(v);
}

}  // namespace

const ParameterResult* StepFit::fp8_result() const {
  return result_named(result, training_constant_specs()[kFp8OverheadSpec].name);
}

const ParameterResult* StepFit::host_per_expert_result() const {
  return result_named(result, training_constant_specs()[kHostPerExpertGemmSpec].name);
}

base::Result<StepFit> fit_step_times(std::string gpu, std::span<const StepTime> steps,
                                     const StepPredictor& predict, FitOptions options,
                                     StepConstants constants) {
  if (steps.empty()) return fail("calibrate: no training step times to fit");
  StepFit out;
  out.gpu = std::move(gpu);
  out.constants = constants;
  out.fp8_overhead = constants.fp8_overhead;
  out.host_per_expert_gemm_s = constants.host_per_expert_gemm_s;
  out.parameters.push_back(
      {.name = "training.compute_scale",
       .start = 1.0,
       .lower = kMinComputeScale,
       .upper = kMaxComputeScale,
       .source = "the compute model's kernel tables as they are (catalog/compute/" + out.gpu +
                 ".yaml), no framework overhead",
       .grid = true});
  out.parameters.push_back({.name = "training.host_time_s",
                            .start = kHostTimeStart,
                            .lower = kMinHostTime,
                            .upper = kMaxHostTime,
                            .source = "none: 1 ms, negligible against a step, to begin from",
                            .grid = true,
                            .prior = false});
  // The step model's constants the runs can see: their definitions are the built-in fit's
  // (builtin_training.h); each starts at the catalog's value, with no prior (held there only
  // when nothing constrains it).
  int fp8_at = -1, host_at = -1;
  auto offer = [&](size_t spec, double catalog_value) -> base::Status {
    const auto& k = training_constant_specs()[spec];
    if (!(catalog_value > k.lower && catalog_value < k.upper)) {
      return fail(constants.path + ": " + k.key + " " + g4(catalog_value) +
                  " is outside the fit's bounds (" + g4(k.lower) + ", " + g4(k.upper) + ")");
    }
    out.parameters.push_back({.name = k.name,
                              .start = catalog_value,
                              .lower = k.lower,
                              .upper = k.upper,
                              .source = constants.path,
                              .grid = true,
                              .prior = false});
    return {};
  };
  if (constants.offer_fp8) {
    if (auto st = offer(kFp8OverheadSpec, constants.fp8_overhead); !st) return fail(st.error());
    fp8_at = static_cast<int>(out.parameters.size()) - 1;
  }
  if (constants.offer_host_per_expert) {
    if (auto st = offer(kHostPerExpertGemmSpec, constants.host_per_expert_gemm_s); !st)
      return fail(st.error());
    host_at = static_cast<int>(out.parameters.size()) - 1;
  }
  auto values_of = [&](std::span<const double> v) {
    return StepValues{
        .scale = v[0],
        .host_s = v[1],
        .fp8_overhead = fp8_at >= 0 ? v[static_cast<size_t>(fp8_at)] : constants.fp8_overhead,
        .host_per_expert_gemm_s =
            host_at >= 0 ? v[static_cast<size_t>(host_at)] : constants.host_per_expert_gemm_s};
  };
  for (const auto& s : steps) {
    if (!(s.step_time_s > 0) || !std::isfinite(s.step_time_s)) {
      return fail("expected a step time > 0 s, got " + g4(s.step_time_s), s.file, s.line);
    }
    out.observations.push_back({.value = s.step_time_s, .weight = 1.0, .label = where(s)});
  }
  // Cross-validation needs two runs per fold at least; with fewer than four runs there is none
  // (the summary says so).
  const int m = static_cast<int>(steps.size());
  options.folds = m >= 4 ? std::min(std::max(options.folds, 2), m / 2) : 0;
  ModelFn model = [&](std::span<const double> v) -> base::Result<std::vector<double>> {
    std::vector<double> t;
    t.reserve(steps.size());
    for (size_t i = 0; i < steps.size(); ++i) {
      auto p = predict(i, values_of(v));
      if (!p) {
        auto e = p.error();
        if (e.file.empty()) {
          e.file = steps[i].file;
          e.line = steps[i].line;
        }
        return fail(e);
      }
      if (!(*p > 0)) {
        return fail("the training model predicts a step of " + g4(*p) + " s", steps[i].file,
                    steps[i].line);
      }
      t.push_back(*p);
    }
    return t;
  };
  auto r = fit(out.parameters, out.observations, model, options);
  if (!r) return fail(r.error());
  out.result = std::move(*r);
  out.compute_scale = out.result.parameters[0].value;
  out.host_time_s = out.result.parameters[1].value;
  const auto values = values_of([&] {
    std::vector<double> v;
    for (const auto& p : out.result.parameters) v.push_back(p.value);
    return v;
  }());
  out.fp8_overhead = values.fp8_overhead;
  out.host_per_expert_gemm_s = values.host_per_expert_gemm_s;
  return out;
}

std::string step_fit_summary(const StepFit& fit, std::span<const StepTime> steps) {
  std::ostringstream o;
  const auto& r = fit.result;
  o << "Training step times on " << fit.gpu << ": " << steps.size() << " run"
    << (steps.size() == 1 ? "" : "s") << "\n\n";
  o << "  run                                      layout                measured s  before s   "
       "after s     error\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    char line[256];
    std::snprintf(line, sizeof line, "  %-40s %-20s %10.4g %9.4g %9.4g %+8.1f%%\n",
                  (where(s) + (s.model.empty() ? "" : " " + s.model)).c_str(), layout_of(s).c_str(),
                  s.step_time_s, r.before[i], r.after[i], 100 * (r.after[i] / s.step_time_s - 1));
    o << line;
  }
  write_fit_quality(o, r, "runs");
  return o.str();
}

std::string training_profile_yaml(const StepFit& fit, std::span<const StepTime> steps) {
  std::ostringstream y;
  const auto& r = fit.result;
  y << "training:\n";
  y << "  gpu: " << fit.gpu << "\n";
  y << "  compute_scale: " << g4(fit.compute_scale) << "\n";
  y << "  host_time_s: " << g4(fit.host_time_s) << "\n";
  // The step model's constants the runs constrained, each with its source; one they did not
  // constrain is left to training.yaml (the fit record below says why).
  auto constant = [&](const ParameterResult* p, size_t spec) {
    if (!p || !p->constrained) return;
    const auto& k = training_constant_specs()[spec];
    std::string by;
    for (int i : p->constrained_by) {
      const auto& s = steps[static_cast<size_t>(i)];
      by += (by.empty() ? "" : ", ") + s.file + ":" + std::to_string(s.line);
    }
    y << "  " << k.key << ": {value: " << constant_text(k, p->value) << ", source: "
      << quote("the step times of " + by + " fitted with the compute-time scale (start " +
               constant_text(k, p->start) + ", " + fit.constants.path + "); 1-sigma " +
               g4(100 * p->sigma_rel) + "%")
      << "}\n";
  };
  constant(fit.fp8_result(), kFp8OverheadSpec);
  constant(fit.host_per_expert_result(), kHostPerExpertGemmSpec);
  y << "  fit:\n";
  write_fit_parameters_yaml(y, r);
  write_fit_errors_yaml(y, r, steps.size());
  y << "    runs:\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    y << "      - {file: " << quote(s.file) << ", line: " << s.line << ", model: " << quote(s.model)
      << ", gpus: " << s.gpus << ", layout: " << quote(layout_of(s))
      << ", step_time_s: " << g4(s.step_time_s) << ", predicted_s: " << g4(r.after[i]) << "}\n";
  }
  return y.str();
}

std::string step_profile_yaml(const StepFit& fit, std::span<const InputFile> inputs,
                              std::span<const StepTime> steps, const ProfileMeta& meta) {
  std::ostringstream y;
  y << "# Calibration profile: the training model's compute-time scale fitted to measured step\n"
    << "# times by `clustertwin calibrate` (docs/models/calibration.md). GENERATED; rerunning\n"
    << "# the same command on the same files gives the same bytes. Use it with\n"
    << "# `clustertwin train --calibration FILE` (or `calibration: FILE` in a scenario).\n"
    << "# The collective lines stay the catalog's (catalog/collectives/).\n";
  write_profile_head(y, "training", fit.gpu, meta);
  write_profile_inputs(y, inputs);
  y << "collectives:\n";
  y << "  name: " << quote(meta.name) << "\n";
  y << "  gpus: [" << fit.gpu << "]\n";
  y << training_profile_yaml(fit, steps);
  y << "sources:\n";
  write_fit_source(y, meta, inputs);
  return y.str();
}

namespace {

/// 4 significant digits for JSON (deterministic text).
double sig4(double v) {
  if (v == 0 || !std::isfinite(v)) return 0;
  return std::stod(g4(v));
}

}  // namespace

std::string step_fit_html_section(const StepFit& fit, std::span<const StepTime> steps) {
  const auto& r = fit.result;
  std::ostringstream h;
  h << "<h2>Training step times on " << base::escape_html(fit.gpu) << "</h2>\n<p>rms error of "
    << "log(predicted / measured): " << base::escape_html(g4(100 * r.rms_before))
    << "% with the catalog's compute model, <b>" << base::escape_html(g4(100 * r.rms_after))
    << "%</b> fitted";
  if (r.folds >= 2) {
    h << ", " << base::escape_html(g4(100 * r.cv_rms)) << "% in " << r.folds
      << "-fold cross-validation";
  } else {
    h << " (no cross-validation: fewer than 4 runs)";
  }
  h << ".</p>\n";
  // Measured vs predicted per run: one row of bars per layout (measured grey, before the fit
  // light, after the fit blue), scaled to the longest step.
  double top = 0;
  for (size_t i = 0; i < steps.size(); ++i)
    top = std::max({top, steps[i].step_time_s, r.before[i], r.after[i]});
  // One row per run, by layout: its label (file:line, model, layout) above three bars.
  const int W = 640, row = 50, L = 10, span = 560;
  const int H = 30 + row * static_cast<int>(steps.size());
  h << "<svg role=\"img\" aria-label=\"step time by layout\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\">";
  for (size_t i = 0; i < steps.size(); ++i) {
    const double y = 8 + row * static_cast<double>(i);
    auto bar = [&](double v, double dy, const char* colour, const char* what) {
      h << "<rect fill=\"" << colour << "\" x=\"" << L << "\" y=\"" << g4(y + dy) << "\" width=\""
        << g4(span * v / top) << "\" height=\"9\"><title>" << what << " " << g4(v)
        << " s</title></rect>";
    };
    const std::string file = steps[i].file.substr(steps[i].file.find_last_of('/') + 1);
    h << "<text x=\"" << L << "\" y=\"" << g4(y + 9) << "\" font-size=\"11\">"
      << base::escape_html(file + ":" + std::to_string(steps[i].line) + " " + steps[i].model + " " +
                           layout_of(steps[i]))
      << "</text>";
    bar(steps[i].step_time_s, 13, "#888", "measured");
    bar(r.before[i], 23, "#9bb8e8", "before the fit");
    bar(r.after[i], 33, "#1f5fbf", "fitted");
  }
  h << "<text x=\"" << L << "\" y=\"" << H - 6 << "\" font-size=\"11\">0 s</text><text x=\""
    << L + span << "\" y=\"" << H - 6 << "\" font-size=\"11\" text-anchor=\"end\">" << g4(top)
    << " s</text>";
  h << "</svg>\n<p>grey: measured; light: before the fit; blue: fitted.</p>\n";
  h << "<div "
       "class=scroll><table><tr><th>run</th><th>model</th><th>layout</th><th>GPUs</th><th>measured "
       "s</th>"
    << "<th>before s</th><th>fitted s</th><th>error</th></tr>\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    h << "<tr><td class=l>" << base::escape_html(s.file + ":" + std::to_string(s.line))
      << "</td><td class=l>" << base::escape_html(s.model) << "</td><td class=l>"
      << base::escape_html(layout_of(s)) << "</td><td>" << s.gpus << "</td><td>"
      << g4(s.step_time_s) << "</td><td>" << g4(r.before[i]) << "</td><td>" << g4(r.after[i])
      << "</td><td>" << g4(100 * (r.after[i] / s.step_time_s - 1)) << "%</td></tr>\n";
  }
  h << "</table></div>\n<h3>Residuals after the fit</h3>\n"
    << residual_histogram_svg(r, fit.observations) << "<h3>Parameters</h3>\n"
    << parameter_table_html(r, [&](const ParameterResult& p) {
         std::string by;
         for (int i : p.constrained_by) {
           const auto& s = steps[static_cast<size_t>(i)];
           by += (by.empty() ? "" : ", ") + s.file + ":" + std::to_string(s.line);
         }
         return by;
       });
  return h.str();
}

std::string step_fit_html(const StepFit& fit, std::span<const InputFile> inputs,
                          std::span<const StepTime> steps, const ProfileMeta& meta) {
  return report_page("Calibration of the " + fit.gpu + " training model on " + meta.cluster, inputs,
                     meta, step_fit_html_section(fit, steps));
}

nlohmann::json step_fit_json(const StepFit& fit, std::span<const StepTime> steps) {
  const auto& r = fit.result;
  const auto& p = r.parameters.front();
  const auto& host = r.parameters[1];
  nlohmann::json j = {{"gpu", fit.gpu},
                      {"compute_scale", sig4(fit.compute_scale)},
                      {"host_time_s", sig4(fit.host_time_s)},
                      {"host_time_constrained", host.constrained},
                      {"host_time_sigma_rel", sig4(host.sigma_rel)},
                      {"constrained", p.constrained},
                      {"sigma_rel", sig4(p.sigma_rel)},
                      {"at_bound", p.at_bound},
                      {"rms_log_error_before", sig4(r.rms_before)},
                      {"rms_log_error_after", sig4(r.rms_after)},
                      {"cross_validation_folds", r.folds},
                      {"cross_validation_rms_log_error", sig4(r.cv_rms)}};
  if (!p.constrained) j["why_not"] = p.why_not;
  if (!host.constrained) j["host_time_why_not"] = host.why_not;
  // The offered step-model constants: value (fitted, else the catalog's), whether constrained.
  auto constant = [&](const ParameterResult* q, const char* key, double value) {
    if (!q) return;
    nlohmann::json c = {{"value", sig4(value)},
                        {"catalog_value", sig4(q->start)},
                        {"constrained", q->constrained},
                        {"sigma_rel", sig4(q->sigma_rel)}};
    if (!q->constrained) c["why_not"] = q->why_not;
    j[key] = c;
  };
  constant(fit.fp8_result(), "fp8_overhead", fit.fp8_overhead);
  constant(fit.host_per_expert_result(), "host_per_expert_gemm_s", fit.host_per_expert_gemm_s);
  nlohmann::json runs = nlohmann::json::array();
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    runs.push_back({{"file", s.file},
                    {"line", s.line},
                    {"model", s.model},
                    {"gpus", s.gpus},
                    {"layout", layout_of(s)},
                    {"measured_s", sig4(s.step_time_s)},
                    {"before_s", sig4(r.before[i])},
                    {"fitted_s", sig4(r.after[i])}});
  }
  j["runs"] = runs;
  return j;
}

base::Result<std::optional<TrainingCalibration>> read_training_calibration(
    const hardware::CatalogFile& file) {
  auto doc = config::parse_document(file.text, file.path);
  if (!doc) return fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  config::Reader top(doc->root, ctx);
  if (!top.is_map() || !top.has("training")) return std::optional<TrainingCalibration>{};
  auto t = top.child("training");
  if (!t) return fail(ctx.errors.combined());
  TrainingCalibration out;
  out.path = file.path;
  out.gpu = t->string("gpu").value_or("");
  out.compute_scale = t->number("compute_scale", config::Reader::Need::kRequired, kMinComputeScale,
                                kMaxComputeScale)
                          .value_or(1.0);
  out.host_time_s =
      t->number("host_time_s", config::Reader::Need::kOptional, 0.0, kMaxHostTime).value_or(0.0);
  // The step model's constants the fit constrained (step_fit.h), within the fit's bounds.
  auto constant = [&](size_t spec, std::optional<double>& value, std::string& source) {
    const auto& k = training_constant_specs()[spec];
    if (!t->has(k.key)) return;
    auto e = t->child(k.key);
    if (!e) return;
    if (std::string(k.unit) == "us") {
      if (auto q = e->quantity<base::Seconds>("value", config::Reader::Need::kRequired, true)) {
        if (q->base() < k.lower || q->base() > k.upper) {
          e->error(std::string(k.key) + ": expected " + g4(k.lower * 1e6) + " us to " +
                       g4(k.upper * 1e6) + " us, got " + g4(q->base() * 1e6) + " us",
                   "value");
        } else {
          value = q->base();
        }
      }
    } else {
      value = e->number("value", config::Reader::Need::kRequired, k.lower, k.upper);
    }
    source = e->string("source").value_or("");
    e->finish();
  };
  constant(kFp8OverheadSpec, out.fp8_overhead, out.fp8_overhead_source);
  constant(kHostPerExpertGemmSpec, out.host_per_expert_gemm_s, out.host_per_expert_gemm_source);
  t->allow("fit");  // the record of the fit, for people
  t->finish();
  if (!ctx.errors.empty()) return fail(ctx.errors.combined());
  return std::optional<TrainingCalibration>{out};
}

base::Result<std::optional<TrainingCalibration>> training_calibration_of(
    const collective::ProfileSource& source, std::string_view gpu, const std::string& where) {
  if (!source.text) return std::optional<TrainingCalibration>{};
  const std::string& name_or_path = source.name;
  auto tc = read_training_calibration({name_or_path, *source.text});
  if (!tc) return fail(tc.error());
  if (*tc && (*tc)->gpu != gpu) {
    return fail(where + " " + base::verbatim(name_or_path) + " fitted the training model on " +
                (*tc)->gpu + "; this cluster's GPU is " + std::string(gpu));
  }
  return tc;
}

}  // namespace clustertwin::calibration
