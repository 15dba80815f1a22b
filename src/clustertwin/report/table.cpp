#include "clustertwin/report/table.h"

#include <algorithm>

namespace clustertwin::report {

Table::Table(std::vector<std::string> headers, std::vector<bool> left_align)
    : headers_(std::move(headers)), left_(std::move(left_align)) {
  left_.resize(headers_.size(), false);
}

void Table::add(std::vector<std::string> row) {
  row.resize(headers_.size());
  rows_.push_back(std::move(row));
}

std::string Table::render(int indent) const {
  std::vector<size_t> w(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    w[c] = headers_[c].size();
    for (const auto& r : rows_) w[c] = std::max(w[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string s(static_cast<size_t>(indent), ' ');
    for (size_t c = 0; c < r.size(); ++c) {
      const size_t pad = w[c] - r[c].size();
      if (c > 0) s += "  ";
      if (left_[c]) {
        s += r[c];
        if (c + 1 < r.size()) s += std::string(pad, ' ');
      } else {
        s += std::string(pad, ' ') + r[c];
      }
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(headers_);
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string Table::csv() const {
  auto cell = [](const std::string& v) {
    if (v.find_first_of(",\"\n") == std::string::npos) return v;
    std::string q = "\"";
    for (char ch : v) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t c = 0; c < r.size(); ++c) s += (c ? "," : "") + cell(r[c]);
    return s + "\n";
  };
  std::string out = line(headers_);
  for (const auto& r : rows_) out += line(r);
  return out;
}

}  // namespace clustertwin::report
