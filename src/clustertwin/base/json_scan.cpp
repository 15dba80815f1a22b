#include "clustertwin/base/json_scan.h"

#include <map>
#include <string>
#include <vector>

namespace clustertwin::base {

Status check_json_text(std::string_view text, std::string_view file, int max_depth) {
  struct Frame {
    bool object = false;
    bool expect_key = false;  // in an object, right after '{' or ','
    std::map<std::string, int, std::less<>> keys;
  };
  std::vector<Frame> stack;
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '"') {
      const size_t start = i + 1;
      const int start_line = line;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n')
          ++line;
      }
      if (i >= text.size()) return {};  // unterminated: the parser says so
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        Frame& f = stack.back();
        f.expect_key = false;
        std::string key(text.substr(start, i - start));
        auto [it, fresh] = f.keys.emplace(key, start_line);
        if (!fresh) {
          if (key.size() > 60) key = key.substr(0, 60) + "...";
          return fail("duplicate key '" + key + "' (first at line " + std::to_string(it->second) +
                          ", again at line " + std::to_string(start_line) + ")",
                      std::string(file), start_line);
        }
      }
    } else if (c == '{' || c == '[') {
      if (static_cast<int>(stack.size()) >= max_depth) {
        return fail("nested deeper than " + std::to_string(max_depth) +
                        " levels (expected a clustertwin document)",
                    std::string(file), line);
      }
      stack.push_back(Frame{.object = c == '{', .expect_key = c == '{', .keys = {}});
    } else if (c == '}' || c == ']') {
      if (stack.empty()) return {};
      stack.pop_back();
    } else if (c == ',') {
      if (!stack.empty() && stack.back().object) stack.back().expect_key = true;
    }
  }
  return {};
}

}  // namespace clustertwin::base
