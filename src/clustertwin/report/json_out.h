#pragma once
/// Deterministic JSON output: sorted keys (nlohmann::json's default std::map), numbers rounded
/// to a fixed count of significant digits so goldens do not flap on the last bit, written to a
/// file or to stdout ("-").

#include <nlohmann/json.hpp>
#include <string>

#include "clustertwin/base/result.h"

namespace clustertwin::report {

using Json = nlohmann::json;

/// v rounded to `digits` significant digits (integers stay exact).
double round_sig(double v, int digits = 6);

/// Pretty JSON text (2-space indent) with a trailing newline.
std::string dump(const Json& j);

/// Writes JSON to `path`, or to stdout when path is "-".
base::Status write_json(const Json& j, const std::string& path);

/// Writes text to `path`, or to stdout when path is "-".
base::Status write_text(const std::string& text, const std::string& path);

}  // namespace clustertwin::report
