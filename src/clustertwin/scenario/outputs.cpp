#include "clustertwin/scenario/outputs.h"

#include <filesystem>
#include <optional>

namespace clustertwin::scenario {

namespace {

/// The path made absolute first: weakly_canonical leaves a relative path whose first part does
/// not exist as it is, so "out.json" and "$PWD/out.json" would not compare equal.
std::optional<std::filesystem::path> resolved(const std::string& path) {
  std::error_code ec;
  const auto abs = std::filesystem::absolute(path, ec);
  if (ec) return std::nullopt;
  auto p = std::filesystem::weakly_canonical(abs, ec);
  if (ec) return std::nullopt;
  return p;
}

}  // namespace

base::Status check_distinct_outputs(const std::vector<OutputPath>& outputs) {
  std::vector<const OutputPath*> given;
  for (const auto& o : outputs) {
    if (!o.path.empty()) given.push_back(&o);
  }
  // "-" is standard output, the stream /dev/stdout names: two documents there would run together
  // (a JSON and a trace, unparseable as either).
  auto where = [](const std::string& path) { return path == "-" ? "/dev/stdout" : path; };
  for (size_t i = 0; i < given.size(); ++i) {
    for (size_t j = i + 1; j < given.size(); ++j) {
      const std::string pi = where(given[i]->path), pj = where(given[j]->path);
      if (pi == "/dev/stdout" && pj == "/dev/stdout") {
        return base::fail(given[i]->name + " and " + given[j]->name +
                          " both write to standard output ('" + given[i]->path + "', '" +
                          given[j]->path + "'): give each output its own path");
      }
      const auto a = resolved(pi), b = resolved(pj);
      const bool same = a && b ? *a == *b : pi == pj;
      if (same) {
        return base::fail(given[i]->name + " and " + given[j]->name + " name the same file '" +
                          given[j]->path + "': give each output its own path");
      }
    }
  }
  return {};
}

}  // namespace clustertwin::scenario
