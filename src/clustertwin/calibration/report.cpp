#include "clustertwin/calibration/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "clustertwin/base/text.h"

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

std::string fit_html(const CollectiveFit& fit, std::span<const InputFile> inputs,
                     std::span<const CollectiveRun> runs, const ProfileMeta& meta) {
  const auto& r = fit.result;
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
       "'unsafe-inline'\">"
    << "<title>clustertwin calibrate: " << base::escape_html(meta.cluster) << "</title><style>"
    << "body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}"
    << "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}"
    << "td.l{text-align:left}svg{border:1px solid #ddd;margin:4px}</style></head><body>\n";
  h << "<h1>Calibration of " << base::escape_html(fit.gpu) << " collectives on "
    << base::escape_html(meta.cluster) << "</h1>\n";
  h << "<p>Stack: " << base::escape_html(meta.stack.empty() ? "(not given)" : meta.stack)
    << ". rms error of log(predicted / measured): " << fmt("%.1f%%", 100 * r.rms_before)
    << " with the catalog's calibration, <b>" << fmt("%.1f%%", 100 * r.rms_after) << "</b> fitted";
  if (r.folds >= 2)
    h << ", " << fmt("%.1f%%", 100 * r.cv_rms) << " in " << r.folds << "-fold cross-validation";
  h << ".</p>\n<h2>Inputs</h2><table><tr><th>file</th><th>format</th><th>records</th>"
    << "<th>sha256</th></tr>\n";
  for (const auto& f : inputs) {
    h << "<tr><td class=l>" << base::escape_html(f.path) << "</td><td class=l>"
      << format_name(f.format) << "</td><td>" << f.records << "</td><td class=l><code>" << f.sha256
      << "</code></td></tr>\n";
  }
  h << "</table>\n<h2>Measured vs predicted</h2>\n"
    << "<p>Bus bandwidth by size (log-log): measured (dots), catalog calibration (grey), "
       "fitted (blue).</p>\n";
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
    h << "<h3>" << base::escape_html(run.file) << ":" << run.line << " — "
      << collective::op_name(run.op) << ", " << run.ranks << " ranks</h3>\n<svg width=\"" << W
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
    h << "</svg>\n";
  }
  // Residual histogram of the fitted model, 2% bins from -30% to +30%.
  h << "<h2>Residuals after the fit</h2>\n<p>log(predicted / measured), 2% bins; outside "
       "&plusmn;30% counted in the end bins.</p>\n";
  std::vector<int> bins(31, 0);
  for (size_t j = 0; j < fit.observations.size(); ++j) {
    const double e = std::log(r.after[j] / fit.observations[j].value);
    const int b = std::clamp(static_cast<int>(std::floor(e / 0.02 + 0.5)) + 15, 0, 30);
    bins[b]++;
  }
  const int top = std::max(1, *std::max_element(bins.begin(), bins.end()));
  h << "<svg width=\"" << W << "\" height=\"160\" viewBox=\"0 0 " << W << " 160\">";
  for (int b = 0; b < 31; ++b) {
    const double bh = 120.0 * bins[b] / top;
    h << "<rect fill=\"#1f5fbf\" x=\"" << 10 + b * 16 << "\" y=\"" << fmt("%.1f", 130 - bh)
      << "\" width=\"14\" height=\"" << fmt("%.1f", bh) << "\"/>";
  }
  h << "<text x=\"10\" y=\"150\" font-size=\"11\">-30%</text><text x=\"250\" y=\"150\" "
       "font-size=\"11\">0</text><text x=\"480\" y=\"150\" font-size=\"11\">+30%</text></svg>\n";
  h << "<h2>Parameters</h2>\n<table><tr><th>parameter</th><th>start (catalog)</th>"
    << "<th>fitted</th><th>&plusmn;1&sigma;</th><th>constrained by</th></tr>\n";
  for (const auto& p : r.parameters) {
    h << "<tr><td class=l>" << base::escape_html(p.name) << "</td><td>" << fmt("%.4g", p.start)
      << "</td><td>" << (p.constrained || !p.kept_at_start ? fmt("%.4g", p.value) : "&mdash;")
      << "</td><td>" << (p.constrained ? fmt("%.1f%%", 100 * p.sigma_rel) : "")
      << "</td><td class=l>"
      << base::escape_html(p.constrained ? constrained_by(fit, runs, p)
                                         : "not constrained: " + p.why_not)
      << "</td></tr>\n";
  }
  h << "</table>\n</body></html>\n";
  return h.str();
}

}  // namespace clustertwin::calibration
