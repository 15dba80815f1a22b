#include "clustertwin/base/text.h"

#include <algorithm>

namespace clustertwin::base {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> closest_names(std::string_view name, std::span<const std::string> known,
                                       size_t max) {
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& k : known) {
    const size_t d = edit_distance(name, k);
    const size_t limit = std::max<size_t>(2, std::max(name.size(), k.size()) / 2);
    // A known name that contains the typed one ("gb300" in "gb300-nvl72") is also a good hint.
    const bool contains = !name.empty() && k.find(name) != std::string::npos;
    if (d <= limit || contains) scored.emplace_back(contains ? std::min(d, size_t{1}) : d, k);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < max; ++i) out.push_back(scored[i].second);
  return out;
}

std::string verbatim(std::string_view user_text) {
  std::string out;
  out.reserve(user_text.size());
  for (char c : user_text) {
    out += c;
    if (c == '{') out += '{';
  }
  return out;
}

std::string join(std::span<const std::string> items, std::string_view sep) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string did_you_mean(std::string_view name, std::span<const std::string> known) {
  auto near = closest_names(name, known);
  if (near.empty()) {
    if (known.empty()) return "";
    return " (known: " + join(known) + ")";
  }
  std::string out = " (did you mean ";
  for (size_t i = 0; i < near.size(); ++i) {
    if (i > 0) out += (i + 1 == near.size()) ? " or " : ", ";
    out += "'" + near[i] + "'";
  }
  return out + "?)";
}

std::string escape_html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace clustertwin::base
