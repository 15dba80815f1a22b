#pragma once
/// What a JSON parser accepts but an input must not hold (issue 19), checked on the text so that
/// the message can name lines: a key given twice in one object (nlohmann::json keeps the last
/// silently; the user meant one of them) and nesting deeper than a limit (100,000 levels once
/// crashed `report --from` on the stack).

#include <string_view>

#include "clustertwin/base/result.h"

namespace clustertwin::base {

/// Nesting of JSON inputs, at most: results documents nest under 10 levels, traces under 5.
inline constexpr int kMaxJsonDepth = 64;

/// Scans JSON text for a duplicate key in one object ("duplicate key 'gpus' (first at line 3,
/// again at line 9)") and for nesting deeper than `max_depth`. Run it before parsing; text that
/// is not JSON at all passes and is left to the parser's own message. Keys are compared as
/// written (an escaped spelling of the same key is not recognised as a duplicate).
Status check_json_text(std::string_view text, std::string_view file, int max_depth = kMaxJsonDepth);

}  // namespace clustertwin::base
