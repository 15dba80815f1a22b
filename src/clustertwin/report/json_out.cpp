#include "clustertwin/report/json_out.h"

#include <cmath>

#include "clustertwin/base/file.h"
#include "clustertwin/base/json_scan.h"

namespace clustertwin::report {

double round_sig(double v, int digits) {
  if (v == 0.0 || !std::isfinite(v)) return v;
  if (std::fabs(v) < 9e15 && v == std::floor(v)) return v;
  const double mag = std::floor(std::log10(std::fabs(v)));
  const double scale = std::pow(10.0, static_cast<double>(digits) - 1.0 - mag);
  return std::round(v * scale) / scale;
}

std::string dump(const Json& j) {
  if (j.is_object() && !j.contains("schema_version")) {
    Json versioned = j;
    versioned["schema_version"] = kSchemaVersion;
    return versioned.dump(2) + "\n";
  }
  return j.dump(2) + "\n";
}

base::Status check_results_document(const Json& results) {
  if (!results.is_object()) return base::fail("expected a JSON object at the top level");
  static constexpr std::string_view kSections[] = {"cluster",   "collectives", "training",
                                                   "inference", "power",       "schedule",
                                                   "goodput",   "search",      "sweep"};
  bool any = false;
  for (auto key : kSections) {
    auto it = results.find(std::string(key));
    if (it == results.end()) continue;
    // A scenario run lists its collective sweeps, so `collectives` may be a list of them.
    const bool list_ok = key == "collectives" && it->is_array();
    if (!it->is_object() && !list_ok) {
      return base::fail("section '" + std::string(key) + "' is a " + it->type_name() +
                        ", expected an object (a clustertwin results JSON)");
    }
    any = true;
  }
  if (auto w = results.find("warnings"); w != results.end() && !w->is_array()) {
    return base::fail("section 'warnings' is a " + std::string(w->type_name()) +
                      ", expected a list");
  }
  const bool describe_page = results.contains("counts") && results.contains("compute");
  const bool model_page = results.contains("layer_structure");
  if (!any && !describe_page && !model_page) {
    std::string keys;
    for (const auto& [k, v] : results.items()) {
      if (keys.size() > 60) {
        keys += ", ...";
        break;
      }
      keys += (keys.empty() ? "'" : ", '") + k + "'";
    }
    return base::fail(
        "not a clustertwin results document: expected one of the sections cluster, collectives, "
        "training, inference, power, schedule, goodput or search at the top level (a clustertwin "
        "results JSON), got " +
        (keys.empty() ? std::string("an empty object") : "keys " + keys));
  }
  const auto version = results.find("schema_version");
  if (version == results.end()) {
    return base::fail(
        "no 'schema_version' at the top level: expected a clustertwin results JSON "
        "(schema_version " +
        std::to_string(kSchemaVersion) + ")");
  }
  if (!version->is_number_integer() || version->get<int64_t>() != kSchemaVersion) {
    return base::fail("schema_version is " + version->dump() + ", this clustertwin reads " +
                      std::to_string(kSchemaVersion) +
                      " (rerun the command that wrote the file with this build)");
  }
  return {};
}

base::Result<Json> read_results(std::string_view text, const std::string& file) {
  // Duplicate keys and absurd nesting first: the parser would keep the last key silently and
  // recurse 100,000 levels deep (issue 19).
  if (auto st = base::check_json_text(text, file); !st) return base::fail(st.error());
  Json results;
  try {  // nlohmann throws on bad JSON; the error stops here, at the edge (STYLE.md)
    results = Json::parse(text);
  } catch (const Json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 6: ..." -> from "line";
    // a number beyond a double ("1e999") is out_of_range.406, not a parse_error, and has no line.
    const std::string what = e.what();
    size_t at = what.find("line ");
    if (at == std::string::npos) {
      at = what.find("] ");
      at = at == std::string::npos ? 0 : at + 2;
    }
    return base::fail("not valid JSON (expected a clustertwin results JSON): " + what.substr(at),
                      file);
  }
  if (auto st = check_results_document(results); !st) {
    return base::fail(st.error().message, file);
  }
  return results;
}

base::Status write_text(const std::string& text, const std::string& path) {
  if (path == "-") return base::write_stdout(text);
  return base::write_file_atomic(path, text);
}

base::Status write_json(const Json& j, const std::string& path) {
  return write_text(dump(j), path);
}

}  // namespace clustertwin::report
