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

}  // namespace clustertwin::calibration
