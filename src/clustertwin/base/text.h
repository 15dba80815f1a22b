#pragma once
/// Small text helpers: edit distance and "did you mean" suggestions, joining, HTML escaping.

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace clustertwin::base {

/// Levenshtein distance (insert, delete, substitute each cost 1).
size_t edit_distance(std::string_view a, std::string_view b);

/// Up to `max` known names closest to `name`, nearest first (ties by name), only those within a
/// distance that still looks like a typo (at most half the length of the longer name).
std::vector<std::string> closest_names(std::string_view name, std::span<const std::string> known,
                                       size_t max = 3);

/// " (did you mean 'a' or 'b'?)" or "" when nothing is close; otherwise lists what is known.
std::string did_you_mean(std::string_view name, std::span<const std::string> known);

/// `s` with &, <, > and " replaced by their HTML entities (text and attribute values).
std::string escape_html(std::string_view s);

/// The user's own text (a path, a name) inside a library message: every `{` doubled, which the
/// doors' rendering (scenario::render) writes back as one, so a path such as `/data/{tp}/p.yaml`
/// reads as given instead of `{tp}` being taken for a field's name (`--tp`).
std::string verbatim(std::string_view user_text);

/// "a, b, c" joined with ", ".
std::string join(std::span<const std::string> items, std::string_view sep = ", ");

}  // namespace clustertwin::base
