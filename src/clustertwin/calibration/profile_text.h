#pragma once
/// Text shared by the profiles `clustertwin calibrate` writes (collective_fit.cpp,
/// step_fit.cpp, kernel_fit.cpp): YAML double-quoted strings, the `profile:` head (kind, GPU,
/// cluster, stack), the `inputs:` record with content hashes and the `sources: fit:` line, so
/// the profiles of every kind say the same things the same way.

#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "clustertwin/calibration/collective_fit.h"
#include "clustertwin/calibration/fitter.h"
#include "clustertwin/calibration/measurements.h"

namespace clustertwin::calibration {

/// `s` as a YAML double-quoted scalar: `"` and `\` escaped, control characters as \xNN, so a
/// path or label with any bytes reads back as itself.
std::string yaml_quote(std::string_view s);

/// The head of the `profile:` record: kind, gpu, cluster and stack lines (two-space indent).
void write_profile_head(std::ostream& y, std::string_view kind, const std::string& gpu,
                        const ProfileMeta& meta);

/// The `  inputs:` list: every file with its SHA-256, format and record count.
void write_profile_inputs(std::ostream& y, std::span<const InputFile> inputs);

/// 4 significant digits: profile and summary figures (deterministic text).
std::string g4(double v);

/// The summary's fit quality: rms log error before and after, k-fold cross-validation (or why
/// there is none: fewer than 4 `what`), then each parameter with its uncertainty or why nothing
/// constrains it (step and serving fits alike).
void write_fit_quality(std::ostream& o, const FitResult& r, std::string_view what);
/// The profile's `    parameters:` list of a fit (value, start, sigma or why unconstrained).
void write_fit_parameters_yaml(std::ostream& y, const FitResult& r);
/// The profile's measurement count, rms log errors and cross-validation lines of a fit.
void write_fit_errors_yaml(std::ostream& y, const FitResult& r, size_t measurements);

/// The `  fit:` line of `sources:`: the command's cluster, stack and inputs (short hashes).
void write_fit_source(std::ostream& y, const ProfileMeta& meta, std::span<const InputFile> inputs);

}  // namespace clustertwin::calibration
