#pragma once
/// Aligned human tables: columns right-aligned for numbers, left for text; units in headers.

#include <string>
#include <vector>

namespace clustertwin::report {

class Table {
 public:
  explicit Table(std::vector<std::string> headers, std::vector<bool> left_align = {});
  void add(std::vector<std::string> row);
  /// Rendered table; `indent` spaces before every line.
  [[nodiscard]] std::string render(int indent = 0) const;
  /// The same rows as CSV (RFC 4180 quoting).
  [[nodiscard]] std::string csv() const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> left_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace clustertwin::report
