#pragma once
/// Deterministic JSON output: sorted keys (nlohmann::json's default std::map), numbers rounded
/// to a fixed count of significant digits so goldens do not flap on the last bit, written to a
/// file or to stdout ("-").

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "clustertwin/base/result.h"

namespace clustertwin::report {

using Json = nlohmann::json;

/// v rounded to `digits` significant digits (integers stay exact).
double round_sig(double v, int digits = 6);

/// The version of the results-document layout that this build writes and reads. Every JSON
/// object clustertwin writes carries it as `schema_version` at the top level, so `report --from`
/// can tell its own output (of a layout it understands) from any other JSON. Raise it when a
/// section is renamed or changes type; the reader then refuses older files with a clear message.
inline constexpr int kSchemaVersion = 1;

/// Pretty JSON text (2-space indent) with a trailing newline; a top-level object gains
/// `schema_version` (kSchemaVersion) unless it has one.
std::string dump(const Json& j);

/// Writes JSON to `path` (atomically: base/file.h), or to stdout when path is "-". A failed
/// write is an error of kind kSystem (exit 1) with the path and the system's message.
base::Status write_json(const Json& j, const std::string& path);

/// Whether `results` is a clustertwin results document (what `--json` writes): an object with
/// `schema_version` equal to kSchemaVersion and at least one of the report's sections (cluster,
/// collectives, training, inference, power, schedule, goodput, search, sweep) or a `describe` /
/// `model show` page, each section of the type the report expects. `report --from` refuses
/// anything else (issue 19: `{"foo":1}` once rendered an empty page with exit 0).
base::Status check_results_document(const Json& results);

/// Reads a results document from JSON text (`report --from`): no duplicate keys, no absurd
/// nesting (base/json_scan.h), valid JSON, then check_results_document. Errors name `file`.
base::Result<Json> read_results(std::string_view text, const std::string& file);

/// Writes text to `path` (atomically), or to stdout when path is "-".
base::Status write_text(const std::string& text, const std::string& path);

}  // namespace clustertwin::report
