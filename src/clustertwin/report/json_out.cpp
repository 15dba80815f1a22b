#include "clustertwin/report/json_out.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

namespace clustertwin::report {

double round_sig(double v, int digits) {
  if (v == 0.0 || !std::isfinite(v)) return v;
  if (std::fabs(v) < 9e15 && v == std::floor(v)) return v;
  const double mag = std::floor(std::log10(std::fabs(v)));
  const double scale = std::pow(10.0, static_cast<double>(digits) - 1.0 - mag);
  return std::round(v * scale) / scale;
}

std::string dump(const Json& j) { return j.dump(2) + "\n"; }

base::Status write_text(const std::string& text, const std::string& path) {
  if (path == "-") {
    std::cout << text;
    std::cout.flush();
    return {};
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) return base::fail("cannot write file (does the directory exist?)", path);
  out << text;
  if (!out) return base::fail("write failed", path);
  return {};
}

base::Status write_json(const Json& j, const std::string& path) {
  return write_text(dump(j), path);
}

}  // namespace clustertwin::report
