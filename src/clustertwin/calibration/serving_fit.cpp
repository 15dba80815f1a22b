#include "clustertwin/calibration/serving_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "clustertwin/base/file.h"
#include "clustertwin/base/text.h"
#include "clustertwin/calibration/kernel_fit.h"
#include "clustertwin/calibration/profile_text.h"
#include "clustertwin/collective/sweep.h"
#include "clustertwin/config/reader.h"

namespace clustertwin::calibration {
using base::fail;

namespace {

double sig4(double v) {
  if (v == 0 || !std::isfinite(v)) return 0;
  return std::stod(g4(v));
}

std::string where(const ServingResult& r) { return r.file + ":" + std::to_string(r.line); }

bool offline(const ServingResult& r) {
  return r.scenario == "Offline" || (r.scenario == "online" && r.request_rate <= 0);
}

/// A latency statistic of the result in ms: the mean, else the median (serving_fit.h says why).
std::optional<std::pair<std::string, double>> latency(const ServingResult& r,
                                                      const std::string& metric) {
  for (const char* stat : {"mean", "p50"}) {
    auto it = r.latency_ms.find(metric + "_" + stat);
    if (it != r.latency_ms.end() && it->second > 0 && std::isfinite(it->second)) {
      return std::pair{metric + "_" + stat + "_ms", it->second};
    }
  }
  return std::nullopt;
}

double measured(const ServingResult& r, const std::string& metric) {
  if (metric == "output_tokens_per_s") return r.output_tokens_per_s;
  if (metric == "requests_per_s") return r.requests_per_s;
  // "<metric>_<stat>_ms" -> latency_ms["<metric>_<stat>"]
  const std::string key = metric.substr(0, metric.size() - 3);
  auto it = r.latency_ms.find(key);
  return it == r.latency_ms.end() ? 0.0 : it->second;
}

double predicted(const ServingPrediction& p, const std::string& metric) {
  if (metric == "output_tokens_per_s") return p.output_tokens_per_s;
  if (metric == "requests_per_s") return p.requests_per_s;
  if (metric == "ttft_p50_ms") return p.ttft_p50_ms;
  if (metric == "ttft_mean_ms") return p.ttft_mean_ms;
  if (metric == "tpot_p50_ms" || metric == "itl_p50_ms") return p.tpot_p50_ms;
  if (metric == "tpot_mean_ms" || metric == "itl_mean_ms") return p.tpot_mean_ms;
  if (metric == "latency_p50_ms" || metric == "e2el_p50_ms") return p.e2e_p50_ms;
  if (metric == "latency_mean_ms" || metric == "e2el_mean_ms") return p.e2e_mean_ms;
  return 0;
}

std::string rate_of(const ServingResult& r) {
  return offline(r) ? std::string("offline") : g4(r.request_rate) + " req/s";
}

}  // namespace

base::Result<std::vector<ServingObservation>> serving_observations(
    std::span<const ServingResult> results) {
  std::vector<ServingObservation> out;
  base::Errors errors;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const size_t before = out.size();
    if (offline(r)) {
      if (r.output_tokens_per_s > 0) {
        out.push_back({i, "output_tokens_per_s"});
      } else if (r.requests_per_s > 0) {
        out.push_back({i, "requests_per_s"});
      }
    } else {
      if (!(r.request_rate > 0)) {
        errors.add({"a " + r.scenario +
                        " result without its request rate (LoadGen target_qps, "
                        "benchmark_serving request_rate): the model cannot replay its arrivals",
                    r.file, r.line});
        continue;
      }
      if (auto t = latency(r, "tpot")) {
        out.push_back({i, t->first});
      } else if (auto l = latency(r, "itl")) {
        out.push_back({i, l->first});
      }
      if (auto t = latency(r, "ttft")) out.push_back({i, t->first});
      if (out.size() == before) {
        if (auto e = latency(r, "latency")) {
          out.push_back({i, e->first});
        } else if (auto e2 = latency(r, "e2el")) {
          out.push_back({i, e2->first});
        }
      }
      // Saturated: the achieved rate fell short of the requested one.
      if (r.requests_per_s > 0 && r.requests_per_s < 0.95 * r.request_rate &&
          r.output_tokens_per_s > 0) {
        out.push_back({i, "output_tokens_per_s"});
      }
    }
    if (out.size() == before) {
      errors.add(
          {"a serving result with nothing the model can be compared on (expected output "
           "tokens/s of an offline run, or TTFT / TPOT medians or means of a run at a "
           "request rate)",
           r.file, r.line});
    }
  }
  if (!errors.empty()) return fail(errors.combined());
  return out;
}

base::Result<ServingFit> fit_serving(std::string gpu, std::span<const ServingResult> results,
                                     const ServingPredictor& predict, FitOptions options) {
  if (results.empty()) return fail("calibrate: no serving results to fit");
  ServingFit out;
  out.gpu = std::move(gpu);
  out.parameters.push_back(
      {.name = "serving.gpu_factor",
       .start = 1.0,
       .lower = kMinGpuFactor,
       .upper = kMaxGpuFactor,
       .source = "the serving step model's kernel times as they are (catalog/compute/" + out.gpu +
                 ".yaml), factor 1",
       .grid = true});
  out.parameters.push_back({.name = "serving.host_s",
                            .start = kServingHostStart,
                            .lower = kMinServingHost,
                            .upper = kMaxServingHost,
                            .source = "none: 100 us, negligible against an iteration, to begin "
                                      "from",
                            .grid = true,
                            .prior = false});
  auto obs = serving_observations(results);
  if (!obs) return fail(obs.error());
  out.where = std::move(*obs);
  for (const auto& w : out.where) {
    const auto& r = results[w.result];
    out.observations.push_back(
        {.value = measured(r, w.metric), .weight = 1.0, .label = where(r) + " " + w.metric});
  }
  const int m = static_cast<int>(out.observations.size());
  options.folds = m >= 4 ? std::min(std::max(options.folds, 2), m / 2) : 0;
  // The simulator's outputs move in small steps where an iteration boundary crosses an arrival
  // or a batch gains a sequence (at 0.1% of f a median can move either way), so the forward
  // difference spans 2% in log space; and from the grid's start (f alone first, h at 100 us)
  // the solver creeps along the valley where f x kernel + h stays the same, so a
  // derivative-free simplex stage (Nelder-Mead, fitter.h) walks it first.
  options.diff_step = std::max(options.diff_step, kServingDiffStep);
  options.simplex_iterations = std::max(options.simplex_iterations, kServingSimplexIterations);
  // That valley has more than one basin (the simulator's steps make local minima along it),
  // and which one the local stages reach depends on small changes to the model's other
  // constants, so a Latin hypercube over the whole box first (global stage, fitter.h) picks
  // the starts.
  options.global_samples = std::max(options.global_samples, kServingGlobalSamples);
  options.global_span = std::max(options.global_span, kServingGlobalSpan);
  // The fitter asks for the same point more than once (its grid, objective and Jacobian base
  // points, the simplex's vertices; 573 distinct of 1,470 on the round trip): every simulation
  // is deterministic, so a point's predictions are kept by its exact values.
  std::map<std::pair<double, double>, std::vector<double>> memo;
  ModelFn model = [&](std::span<const double> v) -> base::Result<std::vector<double>> {
    if (auto hit = memo.find({v[0], v[1]}); hit != memo.end()) return hit->second;
    std::vector<std::optional<ServingPrediction>> cache(results.size());
    std::vector<double> t;
    t.reserve(out.where.size());
    for (const auto& w : out.where) {
      const auto& r = results[w.result];
      if (!cache[w.result]) {
        auto p = predict(w.result, v[0], v[1]);
        if (!p) {
          auto e = p.error();
          if (e.file.empty()) {
            e.file = r.file;
            e.line = r.line;
          }
          return fail(e);
        }
        cache[w.result] = *p;
      }
      const double x = predicted(*cache[w.result], w.metric);
      if (!(x > 0) || !std::isfinite(x)) {
        return fail("the serving model predicts " + w.metric + " = " + g4(x), r.file, r.line);
      }
      t.push_back(x);
    }
    memo.emplace(std::pair{v[0], v[1]}, t);
    return t;
  };
  auto r = fit(out.parameters, out.observations, model, options);
  if (!r) return fail(r.error());
  out.result = std::move(*r);
  out.gpu_factor = out.result.parameters[0].value;
  out.host_s = out.result.parameters[1].value;
  return out;
}

std::string serving_fit_summary(const ServingFit& fit, std::span<const ServingResult> results) {
  std::ostringstream o;
  const auto& r = fit.result;
  o << "Serving results on " << fit.gpu << ": " << results.size() << " result"
    << (results.size() == 1 ? "" : "s") << ", " << fit.observations.size() << " measurements\n\n";
  o << "  result                                   rate          metric                "
       "measured    before     after     error\n";
  for (size_t i = 0; i < fit.where.size(); ++i) {
    const auto& s = results[fit.where[i].result];
    const double v = fit.observations[i].value;
    char line[320];
    std::snprintf(line, sizeof line, "  %-40s %-13s %-20s %10.4g %9.4g %9.4g %+8.1f%%\n",
                  where(s).c_str(), rate_of(s).c_str(), fit.where[i].metric.c_str(), v, r.before[i],
                  r.after[i], 100 * (r.after[i] / v - 1));
    o << line;
  }
  write_fit_quality(o, r, "measurements");
  return o.str();
}

std::string serving_profile_yaml(const ServingFit& fit, std::span<const ServingResult> results) {
  std::ostringstream y;
  const auto& r = fit.result;
  y << "serving:\n";
  y << "  gpu: " << fit.gpu << "\n";
  y << "  gpu_factor: " << g4(fit.gpu_factor) << "\n";
  y << "  host_s: " << g4(fit.host_s) << "\n";
  y << "  fit:\n";
  write_fit_parameters_yaml(y, r);
  y << "    setups: [";
  for (size_t i = 0; i < fit.setups.size(); ++i) y << (i ? ", " : "") << yaml_quote(fit.setups[i]);
  y << "]\n";
  write_fit_errors_yaml(y, r, fit.observations.size());
  y << "    results:\n";
  for (size_t i = 0; i < fit.where.size(); ++i) {
    const auto& s = results[fit.where[i].result];
    y << "      - {file: " << yaml_quote(s.file) << ", line: " << s.line << ", tool: " << s.tool
      << ", rate: " << yaml_quote(rate_of(s)) << ", metric: " << fit.where[i].metric
      << ", measured: " << g4(fit.observations[i].value) << ", predicted: " << g4(r.after[i])
      << "}\n";
  }
  return y.str();
}

std::string serving_only_profile_yaml(const ServingFit& fit, std::span<const InputFile> inputs,
                                      std::span<const ServingResult> results,
                                      const ProfileMeta& meta) {
  std::ostringstream y;
  y << "# Calibration profile: the serving step model's kernel-time factor and host time per\n"
    << "# iteration fitted to measured serving results by `clustertwin calibrate`\n"
    << "# (docs/models/calibration.md). GENERATED; rerunning the same command on the same files\n"
    << "# gives the same bytes. Use it with `clustertwin serve --calibration FILE` (or\n"
    << "# `calibration: FILE` under a scenario's workload.inference).\n"
    << "# The collective lines stay the catalog's (catalog/collectives/).\n";
  write_profile_head(y, "serving", fit.gpu, meta);
  write_profile_inputs(y, inputs);
  y << "collectives:\n";
  y << "  name: " << yaml_quote(meta.name) << "\n";
  y << "  gpus: [" << fit.gpu << "]\n";
  y << serving_profile_yaml(fit, results);
  y << "sources:\n";
  write_fit_source(y, meta, inputs);
  return y.str();
}

nlohmann::json serving_fit_json(const ServingFit& fit, std::span<const ServingResult> results) {
  const auto& r = fit.result;
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : r.parameters) {
    nlohmann::json j = {{"name", p.name},
                        {"value", sig4(p.value)},
                        {"start", sig4(p.start)},
                        {"constrained", p.constrained},
                        {"sigma_rel", sig4(p.sigma_rel)},
                        {"at_bound", p.at_bound}};
    if (!p.constrained) j["why_not"] = p.why_not;
    params.push_back(j);
  }
  nlohmann::json obs = nlohmann::json::array();
  for (size_t i = 0; i < fit.where.size(); ++i) {
    const auto& s = results[fit.where[i].result];
    obs.push_back({{"file", s.file},
                   {"line", s.line},
                   {"tool", s.tool},
                   {"scenario", s.scenario},
                   {"request_rate_per_s", sig4(s.request_rate)},
                   {"metric", fit.where[i].metric},
                   {"measured", sig4(fit.observations[i].value)},
                   {"before", sig4(r.before[i])},
                   {"fitted", sig4(r.after[i])}});
  }
  return {{"gpu", fit.gpu},
          {"gpu_factor", sig4(fit.gpu_factor)},
          {"host_s", sig4(fit.host_s)},
          {"parameters", params},
          {"rms_log_error_before", sig4(r.rms_before)},
          {"rms_log_error_after", sig4(r.rms_after)},
          {"cross_validation_folds", r.folds},
          {"cross_validation_rms_log_error", sig4(r.cv_rms)},
          {"measurements", obs}};
}

void ServingCalibration::apply(execution::ServingStepCalibration& c) const {
  if (tp_overlap) c.tp_overlap = *tp_overlap;
  if (stream_host_per_response_s)
    c.stream_host_per_response = base::seconds(*stream_host_per_response_s);
  if (eager_host_per_layer_s) c.eager_host_per_layer = base::seconds(*eager_host_per_layer_s);
  if (engine_host_per_iteration_s)
    c.engine_host_per_iteration = base::seconds(*engine_host_per_iteration_s);
}

base::Result<std::optional<ServingCalibration>> read_serving_calibration(
    const hardware::CatalogFile& file) {
  using Need = config::Reader::Need;
  auto doc = config::parse_document(file.text, file.path);
  if (!doc) return fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  config::Reader top(doc->root, ctx);
  if (!top.is_map() || !top.has("serving")) return std::optional<ServingCalibration>{};
  auto t = top.child("serving");
  if (!t) return fail(ctx.errors.combined());
  ServingCalibration out;
  out.path = file.path;
  out.gpu = t->string("gpu").value_or("");
  // A fit of serving results gives the factor and the host time together.
  const bool factor = t->has("gpu_factor"), host = t->has("host_s");
  if (factor != host) {
    t->error(std::string("expected gpu_factor and host_s together (a fit of serving results), "
                         "got only ") +
                 (factor ? "gpu_factor" : "host_s"),
             factor ? "gpu_factor" : "host_s");
  }
  out.fitted = factor && host;
  out.gpu_factor = t->number("gpu_factor", Need::kOptional, kMinGpuFactor, kMaxGpuFactor)
                       .value_or(out.gpu_factor);
  out.host_s = t->number("host_s", Need::kOptional, 0.0, kMaxServingHost).value_or(out.host_s);
  out.tp_overlap = t->number("tp_overlap", Need::kOptional, 0.0, 1.0);
  out.stream_host_per_response_s =
      t->number("stream_host_per_response_s", Need::kOptional, 0.0, kMaxServingConstantHost);
  out.eager_host_per_layer_s =
      t->number("eager_host_per_layer_s", Need::kOptional, 0.0, kMaxServingConstantHost);
  out.engine_host_per_iteration_s =
      t->number("engine_host_per_iteration_s", Need::kOptional, 0.0, kMaxServingConstantHost);
  if (!factor && !host && !t->has("tp_overlap") && !t->has("stream_host_per_response_s") &&
      !t->has("eager_host_per_layer_s") && !t->has("engine_host_per_iteration_s")) {
    t->error(
        "expected gpu_factor and host_s (a fit of serving results) or at least one of "
        "tp_overlap, stream_host_per_response_s, eager_host_per_layer_s, "
        "engine_host_per_iteration_s (the serving step model's constants), got none",
        "");
  }
  t->allow("fit");  // the record of the fit, for people
  t->finish();
  if (!ctx.errors.empty()) return fail(ctx.errors.combined());
  return std::optional<ServingCalibration>{out};
}

base::Result<std::optional<ServingCalibration>> builtin_serving_calibration(
    const hardware::Catalog& catalog, const std::string& name) {
  if (name == "defaults") return std::optional<ServingCalibration>{};  // no profile: the starts
  for (const auto& f : catalog.other_files()) {
    if (!collective::is_line_file(f) || f.path != "collectives/" + name + ".yaml") continue;
    auto prof = collective::load_profile(catalog, name);
    if (!prof) return fail(prof.error());
    auto sc = execution::serving_step_calibration(catalog);
    if (!sc) return fail(sc.error());
    ServingCalibration out;
    out.gpu = base::join(prof->gpus);
    out.tp_overlap = sc->tp_overlap;
    out.stream_host_per_response_s = sc->stream_host_per_response.base();
    out.eager_host_per_layer_s = sc->eager_host_per_layer.base();
    out.engine_host_per_iteration_s = sc->engine_host_per_iteration.base();
    out.path = sc->path;
    return std::optional<ServingCalibration>{out};
  }
  return std::optional<ServingCalibration>{};
}

base::Result<std::optional<ServingCalibration>> serving_calibration_of(
    const hardware::Catalog& catalog, const collective::ProfileSource& source, std::string_view gpu,
    const std::string& where, bool compute_given) {
  const std::string& name_or_path = source.name;
  auto b = source.builtin ? builtin_serving_calibration(catalog, name_or_path)
                          : std::optional<ServingCalibration>{};
  if (!b) return fail(b.error());
  if (*b) {
    auto prof = collective::load_profile(catalog, source);
    if (!prof) return fail(prof.error());
    if (std::find(prof->gpus.begin(), prof->gpus.end(), gpu) == prof->gpus.end()) {
      return fail(where + " " + base::verbatim(name_or_path) + " is for GPUs " +
                  base::join(prof->gpus) + "; this cluster's GPU is " + std::string(gpu));
    }
    (*b)->gpu = std::string(gpu);
    return b;
  }
  if (!source.text) {
    return fail(where + ": cannot read '" + base::verbatim(name_or_path) +
                "' (serving takes the name of a built-in profile, which `clustertwin calibrate` "
                "lists, or a "
                "profile file written by `clustertwin calibrate` from serving results or kernel "
                "tables, or one with a serving: mapping of the step model's constants)");
  }
  auto sc = read_serving_calibration({name_or_path, *source.text});
  if (!sc) return fail(sc.error());
  if (!*sc) {
    if (compute_given) return std::optional<ServingCalibration>{};
    return fail(where + ": " + base::verbatim(name_or_path) +
                " has no serving: or compute: mapping (it was fitted from collective or "
                "training measurements, which the serving step model does not read; calibrate "
                "serving results or kernel tables to make one)");
  }
  if ((*sc)->gpu != gpu) {
    return fail(where + ": " + base::verbatim(name_or_path) + " fitted the serving model on " +
                (*sc)->gpu + "; this cluster's GPU is " + std::string(gpu));
  }
  return sc;
}

base::Result<ServingConstantFit> fit_serving_constant(const Parameter& param, double resolution,
                                                      double measured,
                                                      const ServingConstantPredictor& predict) {
  if (!(resolution > 0) || !(param.lower < param.upper) || !(measured > 0)) {
    return fail(param.name + ": expected lower < upper, a positive resolution and measurement");
  }
  const auto points =
      static_cast<int64_t>(std::llround((param.upper - param.lower) / resolution)) + 1;
  if (points < 2 || points > 1'000'000) {
    return fail(param.name + ": expected 2 to 1,000,000 grid points between the bounds, got " +
                std::to_string(points));
  }
  // Grid values are whole multiples of the resolution (printed as such), never accumulated.
  auto value_at = [&](int64_t k) {
    return std::round((param.lower + static_cast<double>(k) * resolution) / resolution) *
           resolution;
  };
  ServingConstantFit out{.name = param.name, .measured = measured};
  std::map<int64_t, double> predicted;  // by grid index
  auto residual = [&](int64_t k) -> base::Result<double> {
    auto it = predicted.find(k);
    if (it == predicted.end()) {
      auto p = predict(value_at(k));
      if (!p) return fail(p.error());
      if (!(*p > 0)) {
        return fail(param.name + " " + format_g(value_at(k), 6) +
                    ": the replay predicted nothing (" + format_g(*p, 6) + ")");
      }
      it = predicted.emplace(k, *p).first;
      out.probes.emplace_back(value_at(k), *p);
    }
    return std::log(it->second / measured);
  };
  int64_t lo = 0, hi = points - 1;
  auto r_lo = residual(lo);
  if (!r_lo) return fail(r_lo.error());
  auto r_hi = residual(hi);
  if (!r_hi) return fail(r_hi.error());
  if ((*r_lo > 0) == (*r_hi > 0) && *r_lo != 0 && *r_hi != 0) {
    return fail(param.name + ": the measurement " + format_g(measured, 6) +
                " lies outside what the bounds predict (" + format_g(predicted[lo], 6) + " at " +
                format_g(value_at(lo), 6) + ", " + format_g(predicted[hi], 6) + " at " +
                format_g(value_at(hi), 6) + ")");
  }
  double rl = *r_lo;
  while (hi - lo > 1 && rl != 0) {
    const int64_t mid = lo + (hi - lo) / 2;
    auto r = residual(mid);
    if (!r) return fail(r.error());
    if (*r == 0) {
      lo = hi = mid;
      rl = 0;
    } else if ((*r > 0) == (rl > 0)) {
      lo = mid;
      rl = *r;
    } else {
      hi = mid;
    }
  }
  auto r_hi_end = residual(hi);
  if (!r_hi_end) return fail(r_hi_end.error());
  const bool take_lo = std::abs(rl) <= std::abs(*r_hi_end);
  const int64_t k = take_lo ? lo : hi, other = take_lo ? hi : lo;
  out.value = value_at(k);
  out.predicted = predicted[k];
  out.other = value_at(other);
  out.other_predicted = predicted[other];
  return out;
}

}  // namespace clustertwin::calibration
