#include "clustertwin/calibration/profile_text.h"

#include <cstdio>

namespace clustertwin::calibration {

std::string yaml_quote(std::string_view s) {
  std::string o = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      o += buf;
    } else {
      o += c;
    }
  }
  return o + "\"";
}

void write_profile_head(std::ostream& y, std::string_view kind, const std::string& gpu,
                        const ProfileMeta& meta) {
  y << "profile:\n";
  y << "  kind: " << kind << "\n";
  y << "  gpu: " << gpu << "\n";
  y << "  cluster: " << yaml_quote(meta.cluster) << "\n";
  y << "  stack: " << yaml_quote(meta.stack) << "\n";
}

void write_profile_inputs(std::ostream& y, std::span<const InputFile> inputs) {
  y << "  inputs:\n";
  for (const auto& in : inputs) {
    y << "    - {file: " << yaml_quote(in.path) << ", sha256: " << in.sha256
      << ", format: " << format_name(in.format) << ", records: " << in.records << "}\n";
  }
}

void write_fit_source(std::ostream& y, const ProfileMeta& meta, std::span<const InputFile> inputs) {
  std::string files;
  for (const auto& in : inputs)
    files += (files.empty() ? "" : ", ") + in.path + " (sha256 " + in.sha256.substr(0, 12) + ")";
  y << "  fit: "
    << yaml_quote("clustertwin calibrate on " + meta.cluster +
                  (meta.stack.empty() ? "" : " (stack " + meta.stack + ")") + " from " + files)
    << "\n";
}

std::string g4(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

void write_fit_quality(std::ostream& o, const FitResult& r, std::string_view what) {
  o << "\n  rms log error: before " << g4(100 * r.rms_before) << "%, after "
    << g4(100 * r.rms_after) << "%";
  if (r.folds >= 2) {
    o << ", " << r.folds << "-fold cross-validated " << g4(100 * r.cv_rms) << "%";
  } else {
    o << " (no cross-validation: fewer than 4 " << what << ")";
  }
  o << "\n";
  for (const auto& p : r.parameters) {
    o << "  " << p.name << " = " << g4(p.value) << " (start " << g4(p.start) << ")";
    if (p.constrained) {
      o << " +- " << g4(100 * p.sigma_rel) << "%" << (p.at_bound ? " (at a bound)" : "");
    } else {
      o << ": not constrained (" << p.why_not << ")"
        << (p.kept_at_start ? ", kept at the start" : "");
    }
    o << "\n";
  }
}

void write_fit_parameters_yaml(std::ostream& y, const FitResult& r) {
  y << "    parameters:\n";
  for (const auto& p : r.parameters) {
    y << "      - {name: " << p.name << ", value: " << g4(p.value) << ", start: " << g4(p.start);
    if (p.constrained) {
      y << ", sigma: " << g4(100 * p.sigma_rel) << "%";
      if (p.at_bound) y << ", at_bound: true";
    } else {
      y << ", constrained: false, why: "
        << yaml_quote(p.why_not + (p.kept_at_start ? "; kept at the start value" : ""));
    }
    y << "}\n";
  }
}

void write_fit_errors_yaml(std::ostream& y, const FitResult& r, size_t measurements) {
  y << "    measurements: " << measurements << "\n";
  y << "    rms_log_error_before: " << g4(r.rms_before) << "\n";
  y << "    rms_log_error_after: " << g4(r.rms_after) << "\n";
  if (r.folds >= 2) {
    y << "    cross_validation_folds: " << r.folds << "\n";
    y << "    cross_validation_rms_log_error: " << g4(r.cv_rms) << "\n";
  }
}

}  // namespace clustertwin::calibration
