#include "clustertwin/calibration/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "clustertwin/base/text.h"
#include "clustertwin/calibration/builtin_at_scale.h"
#include "clustertwin/calibration/builtin_training.h"

namespace clustertwin::calibration {
namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

/// 3 significant digits for JSON (deterministic text, no float noise in goldens).
double sig(double v) {
  if (v == 0 || !std::isfinite(v)) return 0;
  return std::stod(fmt("%.4g", v));
}

/// "file:first-last (n rows)" per file of the observations that constrain a parameter.
std::string constrained_by(const CollectiveFit& fit, std::span<const CollectiveRun> runs,
                           const ParameterResult& p) {
  std::map<std::string, std::pair<int, int>> range;
  std::map<std::string, int> count;
  for (int i : p.constrained_by) {
    const auto& w = fit.where[i];
    const auto& f = runs[w.run].file;
    const int ln = runs[w.run].rows[w.row].line;
    auto it = range.find(f);
    if (it == range.end()) {
      range[f] = {ln, ln};
    } else {
      it->second.first = std::min(it->second.first, ln);
      it->second.second = std::max(it->second.second, ln);
    }
    count[f]++;
  }
  std::string by;
  for (const auto& [f, rg] : range) {
    by += (by.empty() ? "" : "; ") + f + ":" + std::to_string(rg.first) + "-" +
          std::to_string(rg.second) + " (" + std::to_string(count[f]) + " rows)";
  }
  return by;
}

/// A path's last component (the inputs table at the top of the page gives the whole path).
std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

double busbw(const CollectiveRun& r, int64_t size, double time_us) {
  return static_cast<double>(size) / (time_us * 1e3) * collective::busbw_factor(r.op, r.ranks);
}

}  // namespace

std::string fit_summary(const CollectiveFit& fit, std::span<const CollectiveRun> runs,
                        const ProfileMeta& meta) {
  std::ostringstream os;
  const auto& r = fit.result;
  os << "# clustertwin calibrate: " << runs.size() << " nccl-tests run"
     << (runs.size() == 1 ? "" : "s") << ", " << fit.observations.size() << " sizes, on "
     << meta.cluster << " (" << fit.gpu << "); "
     << (meta.network == collective::NetworkModelKind::kFlow ? "flow" : "analytical")
     << " network model\n";
  os << "# rms error of log(predicted / measured): " << fmt("%.1f%%", 100 * r.rms_before)
     << " with the catalog's calibration, " << fmt("%.1f%%", 100 * r.rms_after) << " fitted";
  if (r.folds >= 2)
    os << ", " << fmt("%.1f%%", 100 * r.cv_rms) << " in " << r.folds << "-fold cross-validation";
  os << "\n#\n";
  char line[512];
  std::snprintf(line, sizeof line, "# %-40s %10s %10s %8s  %s\n", "parameter", "start", "fitted",
                "sigma", "constrained by");
  os << line;
  for (const auto& p : r.parameters) {
    if (!p.constrained) continue;
    std::snprintf(line, sizeof line, "  %-40s %10.4g %10.4g %7.1f%%  %s%s\n", p.name.c_str(),
                  p.start, p.value, 100 * p.sigma_rel, constrained_by(fit, runs, p).c_str(),
                  p.at_bound ? " [at bound]" : "");
    os << line;
  }
  int unconstrained = 0;
  for (const auto& p : r.parameters) unconstrained += p.constrained ? 0 : 1;
  if (unconstrained > 0) {
    os << "# not constrained by these measurements (kept at the catalog's value unless said):\n";
    for (const auto& p : r.parameters) {
      if (p.constrained) continue;
      std::snprintf(line, sizeof line, "  %-40s %10.4g  %s\n", p.name.c_str(), p.value,
                    p.why_not.c_str());
      os << line;
    }
  }
  os << "#\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& run = runs[i];
    os << "# " << run.file << ":" << run.line << ": " << collective::op_name(run.op) << ", "
       << run.dtype << ", " << run.ranks << " ranks"
       << (run.nodes > 0 ? " on " + std::to_string(run.nodes) + " hosts" : "") << "\n";
    std::snprintf(line, sizeof line, "# %12s %12s %12s %12s %12s %8s\n", "size (B)", "measured us",
                  "fitted us", "busbw GB/s", "fitted GB/s", "error");
    os << line;
    for (size_t j = 0; j < fit.observations.size(); ++j) {
      if (fit.where[j].run != i) continue;
      const auto& row = run.rows[fit.where[j].row];
      const double t = r.after[j];
      std::snprintf(line, sizeof line, "  %12lld %12.4g %12.4g %12.2f %12.2f %+7.1f%%\n",
                    static_cast<long long>(row.size_bytes), row.time_us, t,
                    busbw(run, row.size_bytes, row.time_us), busbw(run, row.size_bytes, t),
                    100 * (t / row.time_us - 1));
      os << line;
    }
  }
  return os.str();
}

nlohmann::json fit_json(const CollectiveFit& fit, std::span<const InputFile> inputs,
                        std::span<const CollectiveRun> runs, const ProfileMeta& meta) {
  nlohmann::json j;
  const auto& r = fit.result;
  j["cluster"] = meta.cluster;
  j["gpu"] = fit.gpu;
  j["stack"] = meta.stack;
  j["network_model"] = meta.network == collective::NetworkModelKind::kFlow ? "flow" : "analytical";
  nlohmann::json in = nlohmann::json::array();
  for (const auto& f : inputs)
    in.push_back({{"file", f.path},
                  {"sha256", f.sha256},
                  {"format", format_name(f.format)},
                  {"records", f.records}});
  j["inputs"] = in;
  j["measurements"] = fit.observations.size();
  j["rms_log_error_before"] = sig(r.rms_before);
  j["rms_log_error_after"] = sig(r.rms_after);
  j["cross_validation_folds"] = r.folds;
  j["cross_validation_rms_log_error"] = sig(r.cv_rms);
  nlohmann::json ps = nlohmann::json::array();
  for (const auto& p : r.parameters) {
    nlohmann::json q = {{"name", p.name},
                        {"start", sig(p.start)},
                        {"value", sig(p.value)},
                        {"constrained", p.constrained},
                        {"source_of_start", p.source}};
    if (p.constrained) {
      q["sigma_rel"] = sig(p.sigma_rel);
      q["constrained_by"] = constrained_by(fit, runs, p);
      q["at_bound"] = p.at_bound;
    } else {
      q["why_not"] = p.why_not;
    }
    ps.push_back(q);
  }
  j["parameters"] = ps;
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < fit.observations.size(); ++i) {
    const auto& run = runs[fit.where[i].run];
    const auto& row = run.rows[fit.where[i].row];
    nlohmann::json x = {{"file", run.file},
                        {"line", row.line},
                        {"op", collective::op_name(run.op)},
                        {"ranks", run.ranks},
                        {"size_bytes", row.size_bytes},
                        {"measured_us", sig(row.time_us)},
                        {"before_us", sig(r.before[i])},
                        {"after_us", sig(r.after[i])}};
    if (!r.cv_predicted.empty()) x["cross_validation_us"] = sig(r.cv_predicted[i]);
    rows.push_back(x);
  }
  j["rows"] = rows;
  return j;
}

std::string report_page(const std::string& title, std::span<const InputFile> inputs,
                        const ProfileMeta& meta, const std::string& sections) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
       "'unsafe-inline'\">"
    << "<title>clustertwin calibrate: " << base::escape_html(meta.cluster) << "</title><style>"
    << "body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}"
    << "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}"
    << "td.l{text-align:left}svg{border:1px solid #ddd;margin:4px;max-width:100%;height:auto}"
    << ".charts{display:flex;flex-wrap:wrap;gap:8px}.scroll{overflow-x:auto}"
    << "figure{margin:4px;max-width:440px}figcaption{font-size:.9em;overflow-wrap:anywhere}"
    << "code{word-break:break-all}</style></head><body>\n";
  h << "<h1>" << base::escape_html(title) << "</h1>\n";
  h << "<p>Stack: " << base::escape_html(meta.stack.empty() ? "(not given)" : meta.stack)
    << ".</p>\n<h2>Inputs</h2><div class=scroll><table><tr><th>file</th><th>format</th>"
    << "<th>records</th><th>sha256</th></tr>\n";
  for (const auto& f : inputs) {
    h << "<tr><td class=l>" << base::escape_html(f.path) << "</td><td class=l>"
      << format_name(f.format) << "</td><td>" << f.records << "</td><td class=l><code>" << f.sha256
      << "</code></td></tr>\n";
  }
  h << "</table></div>\n" << sections << "</body></html>\n";
  return h.str();
}

std::string residual_histogram_svg(const FitResult& r, std::span<const Observation> obs) {
  std::vector<double> e;
  for (size_t j = 0; j < obs.size() && j < r.after.size(); ++j) {
    e.push_back(std::log(r.after[j] / obs[j].value));
  }
  return log_error_histogram_svg(e);
}

std::string log_error_histogram_svg(std::span<const double> log_errors) {
  std::ostringstream h;
  std::vector<int> bins(31, 0);
  for (double e : log_errors) {
    if (!std::isfinite(e)) continue;
    const int b = std::clamp(static_cast<int>(std::floor(e / 0.02 + 0.5)) + 15, 0, 30);
    bins[static_cast<size_t>(b)]++;
  }
  const int top = std::max(1, *std::max_element(bins.begin(), bins.end()));
  const int W = 520;
  h << "<svg role=\"img\" aria-label=\"residual histogram\" width=\"" << W
    << "\" height=\"170\" viewBox=\"0 0 " << W << " 170\">";
  for (int b = 0; b < 31; ++b) {
    const double bh = 120.0 * bins[static_cast<size_t>(b)] / top;
    h << "<rect fill=\"#1f5fbf\" x=\"" << 10 + b * 16 << "\" y=\"" << fmt("%.1f", 130 - bh)
      << "\" width=\"14\" height=\"" << fmt("%.1f", bh) << "\"><title>"
      << bins[static_cast<size_t>(b)] << " at " << (b - 15) * 2 << "%</title></rect>";
  }
  h << "<line x1=\"257\" x2=\"257\" y1=\"6\" y2=\"132\" stroke=\"#999\" "
       "stroke-dasharray=\"3,3\"/>"
    << "<text x=\"10\" y=\"148\" font-size=\"11\">&lt;= -30%</text><text x=\"250\" "
       "y=\"148\" font-size=\"11\">0</text><text x=\"462\" y=\"148\" "
       "font-size=\"11\">&gt;= +30%</text>"
    << "<text x=\"10\" y=\"164\" font-size=\"11\">" << log_errors.size()
    << (log_errors.size() == 1 ? " measurement" : " measurements") << "; tallest bin " << top
    << "</text></svg>\n";
  return h.str();
}

std::string parameter_table_html(
    const FitResult& r, const std::function<std::string(const ParameterResult&)>& constrained_by) {
  std::ostringstream h;
  h << "<div class=scroll><table><tr><th>parameter</th><th>start</th><th>fitted</th>"
    << "<th>&plusmn;1&sigma;</th><th>constrained by</th></tr>\n";
  for (const auto& p : r.parameters) {
    h << "<tr><td class=l>" << base::escape_html(p.name) << "</td><td>" << fmt("%.4g", p.start)
      << "</td><td>" << (p.constrained || !p.kept_at_start ? fmt("%.4g", p.value) : "&mdash;")
      << "</td><td>" << (p.constrained ? fmt("%.1f%%", 100 * p.sigma_rel) : "")
      << "</td><td class=l>"
      << base::escape_html(p.constrained ? constrained_by(p) + (p.at_bound ? " [at a bound]" : "")
                                         : "not constrained: " + p.why_not +
                                               (p.kept_at_start ? "; kept at the start" : ""))
      << "</td></tr>\n";
  }
  h << "</table></div>\n";
  return h.str();
}

std::string collective_fit_html_section(const CollectiveFit& fit,
                                        std::span<const CollectiveRun> runs) {
  const auto& r = fit.result;
  std::ostringstream h;
  h << "<h2>Collectives on " << base::escape_html(fit.gpu) << "</h2>\n";
  h << "<p>rms error of log(predicted / measured): " << fmt("%.1f%%", 100 * r.rms_before)
    << " with the catalog's calibration, <b>" << fmt("%.1f%%", 100 * r.rms_after) << "</b> fitted";
  if (r.folds >= 2)
    h << ", " << fmt("%.1f%%", 100 * r.cv_rms) << " in " << r.folds << "-fold cross-validation";
  h << ".</p>\n<h3>Measured vs predicted</h3>\n"
    << "<p>Bus bandwidth by size (log-log): measured (dots), catalog calibration (grey), "
       "fitted (blue).</p>\n<div class=charts>";
  // One chart per run.
  const double W = 520, H = 300, L = 50, B = 30;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& run = runs[i];
    std::vector<size_t> idx;
    for (size_t j = 0; j < fit.observations.size(); ++j)
      if (fit.where[j].run == i) idx.push_back(j);
    if (idx.empty()) continue;
    double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
    auto bw = [&](size_t j, double t) {
      return busbw(run, run.rows[fit.where[j].row].size_bytes, t);
    };
    for (size_t j : idx) {
      const double x = static_cast<double>(run.rows[fit.where[j].row].size_bytes);
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      for (double t : {fit.observations[j].value, r.before[j], r.after[j]}) {
        const double y = std::max(bw(j, t), 1e-3);
        ymin = std::min(ymin, y);
        ymax = std::max(ymax, y);
      }
    }
    const double lx0 = std::log10(xmin), lx1 = std::log10(xmax) + 1e-9;
    const double ly0 = std::log10(ymin), ly1 = std::log10(ymax) + 1e-9;
    auto px = [&](double x) { return L + (std::log10(x) - lx0) / (lx1 - lx0) * (W - L - 10); };
    auto py = [&](double y) {
      return H - B - (std::log10(std::max(y, 1e-3)) - ly0) / (ly1 - ly0) * (H - B - 10);
    };
    h << "<figure><figcaption>" << base::escape_html(run.file) << ":" << run.line << " — "
      << collective::op_name(run.op) << ", " << run.ranks << " ranks</figcaption><svg width=\"" << W
      << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " " << H << "\">";
    h << "<text x=\"" << L << "\" y=\"" << H - 8 << "\" font-size=\"11\">size " << fmt("%.0f", xmin)
      << " B to " << fmt("%.3g", xmax) << " B</text>";
    h << "<text x=\"4\" y=\"12\" font-size=\"11\">busbw " << fmt("%.3g", ymin) << " to "
      << fmt("%.3g", ymax) << " GB/s</text>";
    for (int pass = 0; pass < 2; ++pass) {
      h << "<polyline fill=\"none\" stroke=\"" << (pass == 0 ? "#999" : "#1f5fbf")
        << "\" stroke-width=\"" << (pass == 0 ? 1 : 2) << "\" points=\"";
      for (size_t j : idx) {
        const double x = static_cast<double>(run.rows[fit.where[j].row].size_bytes);
        h << fmt("%.1f", px(x)) << ","
          << fmt("%.1f", py(bw(j, pass == 0 ? r.before[j] : r.after[j]))) << " ";
      }
      h << "\"/>";
    }
    for (size_t j : idx) {
      const double x = static_cast<double>(run.rows[fit.where[j].row].size_bytes);
      h << "<circle r=\"3\" fill=\"#d33\" cx=\"" << fmt("%.1f", px(x)) << "\" cy=\""
        << fmt("%.1f", py(bw(j, fit.observations[j].value))) << "\"/>";
    }
    h << "</svg></figure>\n";
  }
  h << "</div>\n<h3>Residuals after the fit</h3>\n<p>log(predicted / measured), 2% bins; outside "
       "&plusmn;30% counted in the end bins.</p>\n"
    << residual_histogram_svg(r, fit.observations);
  h << "<h3>Parameters</h3>\n"
    << parameter_table_html(r,
                            [&](const ParameterResult& p) { return constrained_by(fit, runs, p); });
  return h.str();
}

std::string fit_html(const CollectiveFit& fit, std::span<const InputFile> inputs,
                     std::span<const CollectiveRun> runs, const ProfileMeta& meta) {
  return report_page("Calibration of " + fit.gpu + " collectives on " + meta.cluster, inputs, meta,
                     collective_fit_html_section(fit, runs));
}

std::string measured_vs_predicted_svg(const std::string& title, const std::string& x_label,
                                      const std::string& y_label, std::vector<ChartPoint> points,
                                      bool log_x, bool log_y) {
  std::stable_sort(points.begin(), points.end(),
                   [](const ChartPoint& a, const ChartPoint& b) { return a.x < b.x; });
  const double W = 420, H = 260, L = 56, R = 12, T = 24, B = 40;
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  auto tx = [&](double v) { return log_x ? std::log10(std::max(v, 1e-300)) : v; };
  auto ty = [&](double v) { return log_y ? std::log10(std::max(v, 1e-300)) : v; };
  for (const auto& p : points) {
    x0 = std::min(x0, tx(p.x));
    x1 = std::max(x1, tx(p.x));
    for (double v : {p.measured, p.before, p.after}) {
      if (!(v > 0)) continue;
      y0 = std::min(y0, ty(v));
      y1 = std::max(y1, ty(v));
    }
  }
  if (points.empty()) x0 = x1 = y0 = y1 = 0;
  if (!log_y) y0 = std::min(y0, 0.0);
  const double xs = x1 - x0 > 0 ? x1 - x0 : 1, ys = y1 - y0 > 0 ? y1 - y0 : 1;
  auto px = [&](double v) {
    return points.size() == 1 ? (L + W - R) / 2 : L + (tx(v) - x0) / xs * (W - L - R);
  };
  auto py = [&](double v) { return H - B - (ty(v) - y0) / ys * (H - B - T); };
  auto axis = [&](double v, bool log) { return fmt("%.4g", log ? std::pow(10, v) : v); };
  std::ostringstream h;
  h << "<figure><figcaption>" << base::escape_html(title) << "</figcaption><svg role=\"img\" "
    << "aria-label=\"" << base::escape_html(title) << "\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\">";
  h << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" stroke=\"#444\"/><line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\""
    << H - B << "\" stroke=\"#444\"/>";
  h << "<text x=\"" << L << "\" y=\"" << H - B + 14 << "\" font-size=\"11\">" << axis(x0, log_x)
    << "</text><text x=\"" << W - R << "\" y=\"" << H - B + 14
    << "\" font-size=\"11\" text-anchor=\"end\">" << axis(x1, log_x) << "</text>"
    << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8
    << "\" font-size=\"11\" text-anchor=\"middle\">" << base::escape_html(x_label)
    << (log_x ? " (log)" : "") << "</text>";
  h << "<text x=\"" << L - 4 << "\" y=\"" << H - B << "\" font-size=\"11\" text-anchor=\"end\">"
    << axis(y0, log_y) << "</text><text x=\"" << L - 4 << "\" y=\"" << T + 4
    << "\" font-size=\"11\" text-anchor=\"end\">" << axis(y1, log_y) << "</text>"
    << "<text x=\"" << L << "\" y=\"14\" font-size=\"11\">" << base::escape_html(y_label)
    << (log_y ? " (log)" : "") << "</text>";
  for (int pass = 0; pass < 2; ++pass) {
    std::string pts;
    for (const auto& p : points) {
      const double v = pass == 0 ? p.before : p.after;
      if (!(v > 0)) continue;
      pts += fmt("%.1f", px(p.x)) + "," + fmt("%.1f", py(v)) + " ";
    }
    if (pts.empty()) continue;
    h << "<polyline fill=\"none\" stroke=\"" << (pass == 0 ? "#999" : "#1f5fbf")
      << "\" stroke-width=\"" << (pass == 0 ? 1 : 2) << "\" points=\"" << pts << "\"/>";
    if (points.size() == 1) {  // one point: a tick instead of a line
      const auto& p = points.front();
      const double v = pass == 0 ? p.before : p.after;
      h << "<line x1=\"" << fmt("%.1f", px(p.x) - 12) << "\" x2=\"" << fmt("%.1f", px(p.x) + 12)
        << "\" y1=\"" << fmt("%.1f", py(v)) << "\" y2=\"" << fmt("%.1f", py(v)) << "\" stroke=\""
        << (pass == 0 ? "#999" : "#1f5fbf") << "\" stroke-width=\"2\"/>";
    }
  }
  for (const auto& p : points) {
    h << "<circle r=\"3.5\" fill=\"#d33\" cx=\"" << fmt("%.1f", px(p.x)) << "\" cy=\""
      << fmt("%.1f", py(p.measured)) << "\"><title>" << base::escape_html(p.label) << ": measured "
      << fmt("%.4g", p.measured) << ", fitted " << fmt("%.4g", p.after) << "</title></circle>";
  }
  h << "</svg></figure>\n";
  return h.str();
}

std::string serving_fit_html_section(const ServingFit& fit,
                                     std::span<const ServingResult> results) {
  const auto& r = fit.result;
  std::ostringstream h;
  h << "<h2>Serving results on " << base::escape_html(fit.gpu) << "</h2>\n<p>" << results.size()
    << " results, " << fit.observations.size() << " measurements. rms error of log(predicted / "
    << "measured): " << fmt("%.1f%%", 100 * r.rms_before) << " with the catalog's step model, <b>"
    << fmt("%.1f%%", 100 * r.rms_after) << "</b> fitted";
  if (r.folds >= 2) {
    h << ", " << fmt("%.1f%%", 100 * r.cv_rms) << " in " << r.folds << "-fold cross-validation";
  } else {
    h << " (no cross-validation: fewer than 4 measurements)";
  }
  h << ".</p>\n<h3>Measured vs predicted by request rate</h3>\n<p>Measured (dots), the catalog's "
       "step model (grey), fitted (blue); one chart per metric and serving setup. Offline runs "
       "(every request at once) are in the table below.</p>\n<div class=charts>";
  // One chart per (setup, metric) over the runs at a request rate.
  std::map<std::pair<int, std::string>, std::vector<ChartPoint>> charts;
  for (size_t i = 0; i < fit.where.size(); ++i) {
    const auto& res = results[fit.where[i].result];
    if (!(res.request_rate > 0)) continue;
    charts[{std::max(res.setup, 0), fit.where[i].metric}].push_back(
        {.x = res.request_rate,
         .measured = fit.observations[i].value,
         .before = r.before[i],
         .after = r.after[i],
         .label = res.file + ":" + std::to_string(res.line) + " at " +
                  fmt("%.4g", res.request_rate) + " req/s"});
  }
  for (auto& [key, pts] : charts) {
    std::string setup = static_cast<size_t>(key.first) < fit.setups.size()
                            ? fit.setups[static_cast<size_t>(key.first)]
                            : std::string("setup");
    setup = setup.substr(setup.find_last_of('/') + 1);  // the file's name; the inputs say where
    h << measured_vs_predicted_svg(key.second + " (" + setup + ")", "request rate, req/s",
                                   key.second, std::move(pts), false, false);
  }
  h << "</div>\n<div class=scroll><table><tr><th>result</th><th>tool</th><th>rate</th>"
    << "<th>metric</th><th>measured</th><th>before</th><th>fitted</th><th>error</th></tr>\n";
  for (size_t i = 0; i < fit.where.size(); ++i) {
    const auto& res = results[fit.where[i].result];
    const double v = fit.observations[i].value;
    h << "<tr><td class=l>"
      << base::escape_html(base_name(res.file) + ":" + std::to_string(res.line))
      << "</td><td class=l>" << base::escape_html(res.tool) << "</td><td>"
      << (res.request_rate > 0 ? fmt("%.4g", res.request_rate) + " req/s" : "offline")
      << "</td><td class=l>" << base::escape_html(fit.where[i].metric) << "</td><td>"
      << fmt("%.4g", v) << "</td><td>" << fmt("%.4g", r.before[i]) << "</td><td>"
      << fmt("%.4g", r.after[i]) << "</td><td>" << fmt("%+.1f%%", 100 * (r.after[i] / v - 1))
      << "</td></tr>\n";
  }
  h << "</table></div>\n<h3>Residuals after the fit</h3>\n"
    << residual_histogram_svg(r, fit.observations) << "<h3>Parameters</h3>\n"
    << parameter_table_html(r, [&](const ParameterResult& p) {
         // Per file: the lines of the results and how many measurements of which metrics.
         std::map<std::string, std::pair<int, int>> lines;
         std::map<std::string, std::map<std::string, int>> metrics;
         for (int i : p.constrained_by) {
           const auto& w = fit.where[static_cast<size_t>(i)];
           const auto& res = results[w.result];
           auto [it, fresh] = lines.try_emplace(res.file, res.line, res.line);
           if (!fresh) {
             it->second.first = std::min(it->second.first, res.line);
             it->second.second = std::max(it->second.second, res.line);
           }
           metrics[res.file][w.metric]++;
         }
         std::string by;
         for (const auto& [file, rg] : lines) {
           by += (by.empty() ? "" : "; ") + file + ":" + std::to_string(rg.first) +
                 (rg.second > rg.first ? "-" + std::to_string(rg.second) : "") + " (";
           std::string m;
           for (const auto& [metric, n] : metrics[file]) {
             m += (m.empty() ? "" : ", ") + std::to_string(n) + " " + metric;
           }
           by += m + ")";
         }
         return by;
       });
  return h.str();
}

namespace {

/// Predicted vs measured of every shape of one table, log-log, with the diagonal: fitted shapes
/// blue, held-out shapes orange. At most 1,500 dots (every k-th shape beyond that, said so).
/// Values are seconds shown in us unless `unit` (with `scale` from the values to it) and `what`
/// say otherwise.
std::string parity_svg(const std::string& title, const std::vector<KernelPoint>& pts,
                       const char* unit = "us", double scale = 1e6, const char* what = "time") {
  const double W = 420, H = 300, L = 56, R = 12, T = 24, B = 40;
  double lo = 1e300, hi = 0;
  for (const auto& p : pts) {
    for (double v : {p.measured_s, p.predicted_s}) {
      if (!(v > 0)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (!(hi > 0)) lo = hi = 1;
  const double l0 = std::log10(lo), l1 = std::log10(hi) + 1e-9;
  auto px = [&](double v) { return L + (std::log10(v) - l0) / (l1 - l0) * (W - L - R); };
  auto py = [&](double v) { return H - B - (std::log10(v) - l0) / (l1 - l0) * (H - B - T); };
  const size_t stride = pts.size() > 1500 ? (pts.size() + 1499) / 1500 : 1;
  std::ostringstream h;
  h << "<figure><figcaption>" << base::escape_html(title)
    << (stride > 1 ? " (every " + std::to_string(stride) + "th shape drawn)" : "")
    << "</figcaption><svg role=\"img\" aria-label=\"" << base::escape_html(title) << "\" width=\""
    << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " " << H << "\">";
  h << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << T
    << "\" stroke=\"#bbb\" stroke-dasharray=\"4,3\"/>";
  h << "<text x=\"" << L << "\" y=\"" << H - B + 14 << "\" font-size=\"11\">"
    << fmt("%.3g", lo * scale) << " " << unit << "</text><text x=\"" << W - R << "\" y=\""
    << H - B + 14 << "\" font-size=\"11\" text-anchor=\"end\">" << fmt("%.3g", hi * scale) << " "
    << unit << "</text>"
    << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8
    << "\" font-size=\"11\" text-anchor=\"middle\">measured " << what << " (log)</text>"
    << "<text x=\"" << L << "\" y=\"14\" font-size=\"11\">predicted " << what << " (log)</text>";
  for (size_t i = 0; i < pts.size(); i += stride) {
    const auto& p = pts[i];
    if (!(p.measured_s > 0) || !(p.predicted_s > 0)) continue;
    h << "<circle r=\"2.2\" fill=\"" << (p.held_out ? "#e8862a" : "#1f5fbf")
      << "\" fill-opacity=\"0.7\" cx=\"" << fmt("%.1f", px(p.measured_s)) << "\" cy=\""
      << fmt("%.1f", py(p.predicted_s)) << "\"><title>" << base::escape_html(p.shape) << ": "
      << fmt("%.4g", p.measured_s * scale) << " " << unit << " measured, "
      << fmt("%.4g", p.predicted_s * scale) << " " << unit << " predicted"
      << (p.held_out ? " (held out)" : "") << "</title></circle>";
  }
  h << "</svg></figure>\n";
  return h.str();
}

std::string error_cell(const ErrorStats& e) {
  if (e.n == 0) return "<td></td><td></td><td></td><td>0</td>";
  return "<td>" + fmt("%.1f%%", 100 * e.median) + "</td><td>" + fmt("%.1f%%", 100 * e.p90) +
         "</td><td>" + fmt("%.1f%%", 100 * e.max) + "</td><td>" + std::to_string(e.n) + "</td>";
}

nlohmann::json error_json(const ErrorStats& e) {
  return {{"rows", e.n}, {"median", sig(e.median)}, {"p90", sig(e.p90)}, {"max", sig(e.max)}};
}

}  // namespace

std::string kernel_fit_html_section(const KernelFit& fit, const std::string& gpu) {
  std::ostringstream h;
  size_t rows = 0;
  std::vector<double> log_errors;
  for (const auto& f : fit.families) {
    for (const auto& t : f.tables) {
      rows += t.points.size();
      for (const auto& p : t.points) log_errors.push_back(std::log(p.predicted_s / p.measured_s));
    }
  }
  h << "<h2>Kernel tables on " << base::escape_html(gpu) << "</h2>\n<p>" << rows
    << " shapes. Each family's roofline-efficiency grid is fitted on one subset of its shapes "
       "and judged on the others (held out): |predicted / measured - 1| below.</p>\n"
    << "<h3>Measured vs predicted by shape</h3>\n<p>One dot per shape: fitted shapes blue, "
       "held-out shapes orange; on the dashed diagonal the model and the measurement agree.</p>"
    << "\n<div class=charts>";
  for (const auto& f : fit.families) {
    for (const auto& t : f.tables) {
      h << parity_svg(f.family + " " + t.dtype + " (" + base_name(t.table) + ")", t.points);
    }
  }
  h << "</div>\n<h3>Residuals</h3>\n<p>log(predicted / measured) over every shape, fitted and "
       "held out, 2% bins.</p>\n"
    << log_error_histogram_svg(log_errors);
  h << "<h3>Fitted grids</h3>\n<p>Each grid point is the median inversion of the model at the "
       "shapes that map to it (docs/models/calibration.md, \"Kernel tables\"): there is no "
       "covariance, and the held-out error is the figure of its uncertainty.</p>\n"
    << "<div class=scroll><table><tr><th>family</th><th>dtype</th><th>table</th><th>grid</th>"
    << "<th>t0 us</th><th>fit median</th><th>p90</th><th>max</th><th>rows</th>"
    << "<th>held-out median</th><th>p90</th><th>max</th><th>rows</th></tr>\n";
  for (const auto& f : fit.families) {
    for (const auto& t : f.tables) {
      std::string grid;
      for (size_t a = 0; a < t.grid.axis_names.size(); ++a) {
        grid += (a ? " x " : "") + t.grid.axis_names[a] + " (" +
                std::to_string(t.grid.axes[a].size()) + ")";
      }
      h << "<tr><td class=l>" << base::escape_html(f.family) << "</td><td class=l>"
        << base::escape_html(t.dtype) << "</td><td class=l>"
        << base::escape_html(base_name(t.table)) << "</td><td class=l>" << base::escape_html(grid)
        << "</td><td>" << fmt("%.3g", t.t0_s * 1e6) << "</td>" << error_cell(t.fit_error)
        << error_cell(t.held_out_error) << "</tr>\n";
    }
  }
  h << "</table></div>\n";
  return h.str();
}

std::string at_scale_html_section(const BuiltinAtScale& b) {
  std::ostringstream h;
  std::vector<KernelPoint> bandwidth, time;
  std::vector<double> log_errors;
  for (const auto& c : b.cases) {
    KernelPoint p{.shape = c.id + " " + c.what + " " + c.size,
                  .measured_s = c.measured,
                  .predicted_s = c.predicted,
                  .held_out = c.role != "fit"};
    (c.unit == " us" ? time : bandwidth).push_back(p);
    if (c.role == "fit" && c.measured > 0 && c.predicted > 0)
      log_errors.push_back(std::log(c.predicted / c.measured));
  }
  h << "<h2>At-scale figures (catalog/collectives/at-scale.yaml, moe-a2a.yaml)</h2>\n<p>"
    << b.cases.size()
    << " measured cases; each figure is fitted on the rows of role <code>fit</code> of its "
       "sources (docs/models/calibration.md, \"The built-in at-scale figures\"); the others are "
       "held out.</p>\n<h3>Measured vs predicted by case</h3>\n<p>Fitted rows blue, held-out and "
       "degraded rows orange; on the dashed diagonal the model and the measurement agree.</p>"
    << "\n<div class=charts>";
  if (!bandwidth.empty())
    h << parity_svg("bus bandwidth and all-to-all bandwidth", bandwidth, "GB/s", 1.0, "GB/s");
  if (!time.empty()) h << parity_svg("MoE kernel times", time, "us", 1.0, "time");
  h << "</div>\n<h3>Residuals</h3>\n<p>log(predicted / measured) over the fitted rows, 2% "
       "bins.</p>\n"
    << log_error_histogram_svg(log_errors);
  h << "<h3>Figures</h3>\n<pre>";
  for (const auto& l : b.summary) h << base::escape_html(l) << "\n";
  h << "</pre>\n<h3>Every case</h3>\n<div class=scroll><table><tr><th>case</th><th>source</th>"
    << "<th>role</th><th>what</th><th>size</th><th>ran</th><th>measured</th><th>predicted</th>"
    << "<th>error</th><th>source left out</th></tr>\n";
  for (const auto& c : b.cases) {
    h << "<tr><td class=l>" << base::escape_html(c.id) << "</td><td class=l>"
      << base::escape_html(c.source) << "</td><td class=l>" << base::escape_html(c.role)
      << "</td><td class=l>" << base::escape_html(c.what) << "</td><td class=l>"
      << base::escape_html(c.size) << "</td><td class=l>" << base::escape_html(c.ran) << "</td><td>"
      << fmt("%.4g", c.measured) << base::escape_html(c.unit) << "</td><td>"
      << fmt("%.4g", c.predicted) << base::escape_html(c.unit) << "</td><td>"
      << (c.measured > 0 ? fmt("%+.1f%%", 100 * (c.predicted / c.measured - 1)) : "") << "</td><td>"
      << (c.has_loso ? fmt("%.4g", c.loso_predicted) + base::escape_html(c.unit) : "")
      << "</td></tr>\n";
  }
  h << "</table></div>\n";
  return h.str();
}

std::string training_html_section(const BuiltinTraining& b) {
  std::ostringstream h;
  h << "<h2>Training step constants (catalog/calibration/training.yaml)</h2>\n<p>" << b.cases.size()
    << " published runs (catalog/calibration/training-cases.yaml), each source weighted equally "
       "(docs/models/calibration.md, \"The built-in training constants\").</p>\n<h3>Measured vs "
       "predicted by case</h3>\n<p>Blue: cases whose prediction moves with a fitted constant; "
       "orange: the others (they check the model, not the fit). On the dashed diagonal the model "
       "and the measurement agree.</p>\n<div class=charts>";
  for (auto m :
       {TrainingMetric::kStepTime, TrainingMetric::kTokensPerGpu, TrainingMetric::kHardwareTflops,
        TrainingMetric::kModelTflops, TrainingMetric::kModelTflopsCausal}) {
    std::vector<KernelPoint> pts;
    for (const auto& c : b.cases) {
      if (c.metric != m) continue;
      pts.push_back({.shape = c.id + " (" + c.text + ")",
                     .measured_s = c.measured,
                     .predicted_s = c.predicted,
                     .held_out = !c.sees});
    }
    if (!pts.empty()) h << parity_svg(training_metric_name(m), pts, "", 1.0, "value");
  }
  std::vector<double> log_errors;
  for (const auto& c : b.cases) {
    if (c.sees && c.measured > 0 && c.predicted > 0)
      log_errors.push_back(std::log(c.predicted / c.measured));
  }
  h << "</div>\n<h3>Residuals</h3>\n<p>log(predicted / measured) over the cases that see a "
       "constant, 2% bins.</p>\n"
    << log_error_histogram_svg(log_errors);
  h << "<h3>Constants</h3>\n"
    << parameter_table_html(b.fit, [&](const ParameterResult& p) {
         for (size_t j = 0; j < b.fit.parameters.size(); ++j) {
           if (&b.fit.parameters[j] == &p)
             return std::to_string(p.constrained_by.size()) + " cases of " + b.fit_sources[j];
         }
         return std::string();
       });
  h << "<pre>";
  for (const auto& l : b.summary) h << base::escape_html(l) << "\n";
  h << "</pre>\n<h3>Every case</h3>\n<div class=scroll><table><tr><th>case</th><th>source</th>"
    << "<th>layout</th><th>metric</th><th>measured</th><th>predicted</th><th>error</th>"
    << "<th>source left out</th><th>error</th></tr>\n";
  for (const auto& c : b.cases) {
    h << "<tr><td class=l>" << base::escape_html(c.id) << "</td><td class=l>"
      << base::escape_html(c.source) << "</td><td class=l>" << base::escape_html(c.text)
      << "</td><td class=l>" << training_metric_name(c.metric) << "</td><td>"
      << fmt("%.4g", c.measured) << "</td><td>" << fmt("%.4g", c.predicted) << "</td><td>"
      << fmt("%+.1f%%", 100 * (c.predicted / c.measured - 1)) << "</td><td>"
      << (c.has_loso ? fmt("%.4g", c.loso_predicted) : "") << "</td><td>"
      << (c.has_loso ? fmt("%+.1f%%", 100 * (c.loso_predicted / c.measured - 1)) : "")
      << "</td></tr>\n";
  }
  h << "</table></div>\n";
  return h.str();
}

nlohmann::json kernel_fit_json(const KernelFit& fit, const std::string& gpu) {
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& f : fit.families) {
    for (const auto& t : f.tables) {
      tables.push_back({{"family", f.family},
                        {"dtype", t.dtype},
                        {"table", t.table},
                        {"rows", t.measured},
                        {"t0_s", sig(t.t0_s)},
                        {"fit_error", error_json(t.fit_error)},
                        {"held_out_error", error_json(t.held_out_error)}});
    }
  }
  return {{"gpu", gpu}, {"tables", tables}};
}

}  // namespace clustertwin::calibration
