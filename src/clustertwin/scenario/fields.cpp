#include "clustertwin/scenario/fields.h"

namespace clustertwin::scenario {
namespace {

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/// The `{key}` at `text[i]` (i at '{'): the key, or empty when it is not one.
std::string_view key_at(std::string_view text, size_t i) {
  if (i >= text.size() || text[i] != '{' || i + 1 >= text.size()) return {};
  if (!(text[i + 1] >= 'a' && text[i + 1] <= 'z')) return {};
  size_t j = i + 1;
  while (j < text.size() && identifier_char(text[j])) ++j;
  if (j >= text.size() || text[j] != '}') return {};
  return text.substr(i + 1, j - i - 1);
}

std::string word_for(std::string_view key, const std::vector<FieldWord>& words, Door door) {
  for (const auto& w : words) {
    if (w.key != key) continue;
    switch (door) {
      case Door::kCli:
        return "--" + w.flag;
      case Door::kFile:
      case Door::kPython:
        return w.key;
      case Door::kLibrary:
        return w.name;
    }
  }
  std::string k(key);
  if (door == Door::kCli) {
    for (auto& c : k) {
      if (c == '_') c = '-';
    }
    return "--" + k;
  }
  return k;
}

}  // namespace

std::string render(std::string_view text, const std::vector<FieldWord>& words, Door door) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '{' && i + 1 < text.size() && text[i + 1] == '{') {
      out += '{';  // the user's own brace (base::verbatim)
      i += 2;
      continue;
    }
    const auto key = key_at(text, i);
    if (key.empty()) {
      out += text[i++];
      continue;
    }
    out += word_for(key, words, door);
    i += key.size() + 2;
  }
  return out;
}

std::string leading_key(std::string_view message) { return std::string(key_at(message, 0)); }

}  // namespace clustertwin::scenario
