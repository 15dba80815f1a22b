#pragma once
/// What `clustertwin calibrate` shows of a fit: a text summary (stdout), JSON (`--json`, stable
/// keys with units) and a self-contained HTML page (`--report`: measured vs predicted per run,
/// residual histogram, parameter table; inline SVG, no scripts, no network). All deterministic.

#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "clustertwin/calibration/collective_fit.h"
#include "clustertwin/calibration/kernel_fit.h"
#include "clustertwin/calibration/serving_fit.h"

namespace clustertwin::calibration {

/// The page around the sections of every fit of one calibrate run: title, stack, the inputs
/// with their hashes, then `sections` (HTML fragments, each from a *_html_section below or the
/// step fit's). Self-contained (no scripts, no network; a Content-Security-Policy forbids them).
std::string report_page(const std::string& title, std::span<const InputFile> inputs,
                        const ProfileMeta& meta, const std::string& sections);

/// Residual histogram of a fit (log(predicted / measured) after the fit, 2% bins, the ends
/// catch everything beyond +-30%), inline SVG.
std::string residual_histogram_svg(const FitResult& r, std::span<const Observation> obs);

/// The same histogram of log errors given directly (fits without a FitResult: kernel tables).
std::string log_error_histogram_svg(std::span<const double> log_errors);

/// The parameter table of a fit: start, fitted, 1-sigma, and what constrains each parameter (as
/// `constrained_by` words it) or why nothing does.
std::string parameter_table_html(
    const FitResult& r, const std::function<std::string(const ParameterResult&)>& constrained_by);

/// One point of a measured-vs-predicted chart: where it sits on x, the measured value, the
/// prediction before the fit (the catalog's model; 0: none) and after it, and its tooltip.
struct ChartPoint {
  double x = 0;
  double measured = 0, before = 0, after = 0;
  std::string label;
};
/// Measured (dots) vs before (grey line) and after the fit (blue line) over x, inline SVG with
/// the axes' ranges written on them; log axes where asked. Points are drawn in x order.
std::string measured_vs_predicted_svg(const std::string& title, const std::string& x_label,
                                      const std::string& y_label, std::vector<ChartPoint> points,
                                      bool log_x, bool log_y);

/// The collective fit's section (bus bandwidth by size per run, residuals, parameters).
std::string collective_fit_html_section(const CollectiveFit& fit,
                                        std::span<const CollectiveRun> runs);

/// The kernel tables' section: per table, measured vs predicted time of every shape (log-log,
/// fitted shapes and held-out shapes apart, the diagonal where they agree), the histogram of
/// log(predicted / measured) over all shapes, and the table of fitted grids with their errors
/// (each grid point is a median inversion, so the held-out error stands for the uncertainty).
std::string kernel_fit_html_section(const KernelFit& fit, const std::string& gpu);
/// The kernel fit for `--json`: per table its family, dtype, rows, t0 and errors.
nlohmann::json kernel_fit_json(const KernelFit& fit, const std::string& gpu);

/// The serving fit's section: measured vs predicted by request rate (one chart per metric),
/// residual histogram, parameter table, and the table of every measurement.
std::string serving_fit_html_section(const ServingFit& fit, std::span<const ServingResult> results);

std::string fit_summary(const CollectiveFit& fit, std::span<const CollectiveRun> runs,
                        const ProfileMeta& meta);
nlohmann::json fit_json(const CollectiveFit& fit, std::span<const InputFile> inputs,
                        std::span<const CollectiveRun> runs, const ProfileMeta& meta);
std::string fit_html(const CollectiveFit& fit, std::span<const InputFile> inputs,
                     std::span<const CollectiveRun> runs, const ProfileMeta& meta);

}  // namespace clustertwin::calibration
