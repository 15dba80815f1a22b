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
    if (!o.path.empty() && o.path != "-") given.push_back(&o);
  }
  for (size_t i = 0; i < given.size(); ++i) {
    for (size_t j = i + 1; j < given.size(); ++j) {
      const auto a = resolved(given[i]->path), b = resolved(given[j]->path);
      const bool same = a && b ? *a == *b : given[i]->path == given[j]->path;
      if (same) {
        return base::fail(given[i]->name + " and " + given[j]->name + " name the same file '" +
                          given[j]->path + "': give each output its own path");
      }
    }
  }
  return {};
}

}  // namespace clustertwin::scenario
