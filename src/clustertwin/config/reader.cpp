#include "clustertwin/config/reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "clustertwin/base/file.h"
#include "clustertwin/base/text.h"

namespace clustertwin::config {
using base::Error;
using base::fail;

int line_of(const YAML::Node& n) {
  const auto m = n.Mark();
  return m.line >= 0 ? m.line + 1 : 0;
}

namespace {

/// Every key that appears twice in one mapping, as "key 'x' appears twice (lines 3 and 7)".
/// yaml-cpp keeps both pairs and lookups find the first, so a repeated key once meant the
/// second value was silently ignored (issue 19). Nodes reached again through an alias are
/// walked once (by their position), so an alias bomb costs no more than its text.
void find_duplicate_keys(const YAML::Node& root, const std::string& file, base::Errors& errors) {
  std::vector<YAML::Node> stack{root};
  std::set<std::pair<int, int>> visited;
  while (!stack.empty() && errors.items.size() < 20) {
    YAML::Node n = stack.back();
    stack.pop_back();
    const auto m = n.Mark();
    if (!visited.insert({m.line, m.column}).second) continue;
    if (n.IsMap()) {
      std::map<std::string, int> first_line;
      for (const auto& kv : n) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
        if (kv.first.IsScalar()) {
          auto [it, fresh] = first_line.emplace(key, line_of(kv.first));
          if (!fresh) {
            errors.add(Error{"duplicate key '" + key + "' (first at line " +
                                 std::to_string(it->second) + ", again at line " +
                                 std::to_string(line_of(kv.first)) + ")",
                             file, line_of(kv.first)});
          }
        }
        stack.push_back(kv.second);
      }
    } else if (n.IsSequence()) {
      for (const auto& item : n) stack.push_back(item);
    }
  }
}

}  // namespace

base::Result<Document> parse_document(std::string_view text, std::string file) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsDefined() || root.IsNull()) {
      return fail("the document is empty (expected a mapping of keys)", file, 1);
    }
    if (!root.IsMap()) {
      return fail("expected a mapping of keys at the top level, got a " +
                      std::string(root.IsSequence() ? "list" : "single value"),
                  file, line_of(root));
    }
    base::Errors dups;
    find_duplicate_keys(root, file, dups);
    if (!dups.empty()) return fail(dups.combined());
    return Document{root, std::move(file)};
  } catch (const YAML::Exception& e) {
    return fail("syntax error: " + e.msg, file, e.mark.line >= 0 ? e.mark.line + 1 : 0);
  } catch (const std::exception& e) {
    return fail(std::string("cannot parse: ") + e.what(), file, 0);
  }
}

base::Result<Document> load_document(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return fail("is a directory (expected a YAML or JSON file)", path, 0);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot open file (does it exist and is it readable?)", path, 0);
  auto text = base::read_all(in);
  if (!text) return fail(text.error().message, path, 0);
  return parse_document(*text, path);
}

Reader::Reader(YAML::Node node, ReadContext& ctx, std::string path)
    : node_(std::move(node)), ctx_(&ctx), path_(std::move(path)) {}

bool Reader::has(std::string_view key) const {
  if (!node_.IsMap()) return false;
  for (const auto& kv : node_) {
    if (kv.first.Scalar() == key) return true;
  }
  return false;
}

int Reader::line(std::string_view key) const {
  if (!key.empty() && node_.IsMap()) {
    for (const auto& kv : node_) {
      if (kv.first.Scalar() == key) return line_of(kv.first);
    }
  }
  return line_of(node_);
}

std::string Reader::where(std::string_view key) const {
  std::string p = path_;
  if (!key.empty()) p += (p.empty() ? "" : ".") + std::string(key);
  return p;
}

void Reader::error(std::string message, std::string_view key) const {
  const std::string w = where(key);
  ctx_->errors.add(Error{(w.empty() ? "" : w + ": ") + std::move(message), ctx_->file, line(key)});
}

void Reader::allow(std::string_view key) { seen_.emplace_back(key); }

std::optional<YAML::Node> Reader::value_node(std::string_view key, Need need) {
  seen_.emplace_back(key);
  if (!node_.IsMap()) return std::nullopt;
  for (const auto& kv : node_) {
    if (kv.first.Scalar() == key) {
      if (kv.second.IsNull()) {
        if (need == Need::kRequired) error("a value is required", key);
        return std::nullopt;
      }
      return kv.second;
    }
  }
  if (need == Need::kRequired) error("missing required key '" + std::string(key) + "'");
  return std::nullopt;
}

namespace {
std::string describe_node(const YAML::Node& n) {
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  return "'" + n.Scalar() + "'";
}
}  // namespace

std::optional<std::string> Reader::string(std::string_view key, Need need) {
  auto n = value_node(key, need);
  if (!n) return std::nullopt;
  if (!n->IsScalar()) {
    error("expected a string, got " + describe_node(*n), key);
    return std::nullopt;
  }
  return n->Scalar();
}

std::optional<std::string> Reader::choice(std::string_view key,
                                          const std::vector<std::string>& allowed, Need need) {
  auto s = string(key, need);
  if (!s) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), *s) == allowed.end()) {
    error("expected one of " + base::join(allowed) + ", got '" + *s + "'" +
              base::did_you_mean(*s, allowed),
          key);
    return std::nullopt;
  }
  return s;
}

std::optional<int64_t> Reader::integer(std::string_view key, Need need, int64_t min, int64_t max) {
  auto n = value_node(key, need);
  if (!n) return std::nullopt;
  if (!n->IsScalar()) {
    error("expected an integer, got " + describe_node(*n), key);
    return std::nullopt;
  }
  const std::string& s = n->Scalar();
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    error("expected an integer, got '" + s + "'", key);
    return std::nullopt;
  }
  if (v < min || v > max) {
    std::string range = max == INT64_MAX
                            ? ">= " + std::to_string(min)
                            : "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    error("expected an integer " + range + ", got " + s, key);
    return std::nullopt;
  }
  return v;
}

std::optional<double> Reader::number(std::string_view key, Need need, double min, double max) {
  auto n = value_node(key, need);
  if (!n) return std::nullopt;
  if (!n->IsScalar()) {
    error("expected a number, got " + describe_node(*n), key);
    return std::nullopt;
  }
  const std::string& s = n->Scalar();
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) {
    error("expected a number, got '" + s + "'", key);
    return std::nullopt;
  }
  if (v < min || v > max) {
    error("expected a number in [" + base::format_sig(min, 6) + ", " + base::format_sig(max, 6) +
              "], got " + s,
          key);
    return std::nullopt;
  }
  return v;
}

std::optional<bool> Reader::boolean(std::string_view key, Need need) {
  auto n = value_node(key, need);
  if (!n) return std::nullopt;
  if (n->IsScalar()) {
    const std::string& s = n->Scalar();
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
  }
  error("expected true or false, got " + describe_node(*n), key);
  return std::nullopt;
}

std::optional<double> Reader::quantity_base(std::string_view key, base::Dimension dim, Need need,
                                            bool allow_zero) {
  auto n = value_node(key, need);
  if (!n) return std::nullopt;
  if (!n->IsScalar()) {
    error("expected a " + std::string(base::dimension_name(dim)) + " like '" +
              std::string(base::dimension_example(dim)) + "', got " + describe_node(*n),
          key);
    return std::nullopt;
  }
  auto r = base::parse_quantity(n->Scalar(), dim);
  if (!r) {
    error(r.error().message, key);
    return std::nullopt;
  }
  if (*r == 0.0 && !allow_zero) {
    error(
        "expected a " + std::string(base::dimension_name(dim)) + " > 0, got '" + n->Scalar() + "'",
        key);
    return std::nullopt;
  }
  return *r;
}

std::optional<Reader> Reader::figure_reader(std::string_view key, Need need) {
  auto n = value_node(key, need);
  if (!n) return std::nullopt;
  if (!n->IsMap()) {
    error("expected {value: ..., source: <ref>} (every catalog figure names its source), got " +
              describe_node(*n),
          key);
    return std::nullopt;
  }
  Reader sub(*n, *ctx_, where(key));
  auto ref = sub.string("source");
  if (ref) {
    auto it = ctx_->sources.find(*ref);
    if (it == ctx_->sources.end()) {
      std::vector<std::string> known;
      for (const auto& [k, v] : ctx_->sources) known.push_back(k);
      sub.error("unknown source '" + *ref + "': add it to the file's 'sources:' table" +
                    base::did_you_mean(*ref, known),
                "source");
    } else {
      ctx_->provenance.emplace_back(where(key), it->second);
    }
  }
  sub.allow("note");
  return sub;
}

std::optional<int64_t> Reader::integer_figure(std::string_view key, Need need, int64_t min,
                                              int64_t max) {
  auto sub = figure_reader(key, need);
  if (!sub) return std::nullopt;
  auto v = sub->integer("value", Need::kRequired, min, max);
  sub->finish();
  return v;
}

std::optional<double> Reader::number_figure(std::string_view key, Need need, double min,
                                            double max) {
  auto sub = figure_reader(key, need);
  if (!sub) return std::nullopt;
  auto v = sub->number("value", Need::kRequired, min, max);
  sub->finish();
  return v;
}

std::optional<Reader> Reader::child(std::string_view key, Need need) {
  auto n = value_node(key, need);
  if (!n) return std::nullopt;
  if (!n->IsMap()) {
    error("expected a mapping of keys, got " + describe_node(*n), key);
    return std::nullopt;
  }
  return Reader(*n, *ctx_, where(key));
}

std::vector<Reader> Reader::children(std::string_view key, Need need) {
  std::vector<Reader> out;
  auto n = value_node(key, need);
  if (!n) return out;
  if (!n->IsSequence()) {
    error("expected a list, got " + describe_node(*n), key);
    return out;
  }
  for (size_t i = 0; i < n->size(); ++i) {
    YAML::Node item = (*n)[i];
    const std::string p = where(key) + "[" + std::to_string(i) + "]";
    if (!item.IsMap()) {
      ctx_->errors.add(Error{p + ": expected a mapping of keys, got " + describe_node(item),
                             ctx_->file, line_of(item)});
      continue;
    }
    out.emplace_back(item, *ctx_, p);
  }
  return out;
}

std::optional<std::vector<std::string>> Reader::strings(std::string_view key, Need need) {
  auto n = value_node(key, need);
  if (!n) return std::nullopt;
  if (!n->IsSequence()) {
    error("expected a list of strings, got " + describe_node(*n), key);
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (const auto& item : *n) {
    if (!item.IsScalar()) {
      error("expected a list of strings, got an item that is " + describe_node(item), key);
      return std::nullopt;
    }
    out.push_back(item.Scalar());
  }
  return out;
}

std::vector<std::string> Reader::keys() const {
  std::vector<std::string> out;
  if (!node_.IsMap()) return out;
  for (const auto& kv : node_) out.push_back(kv.first.Scalar());
  return out;
}

void Reader::read_sources() {
  auto s = child("sources", Need::kOptional);
  if (!s) return;
  for (const auto& key : s->keys()) {
    if (auto text = s->string(key)) ctx_->sources[key] = *text;
  }
}

void Reader::finish() {
  if (!node_.IsMap()) return;
  std::vector<std::string> known = seen_;
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  for (const auto& kv : node_) {
    const std::string k = kv.first.Scalar();
    if (std::binary_search(known.begin(), known.end(), k)) continue;
    ctx_->errors.add(Error{(path_.empty() ? "" : path_ + ": ") + "unknown key '" + k + "'" +
                               base::did_you_mean(k, known),
                           ctx_->file, line_of(kv.first)});
  }
}

}  // namespace clustertwin::config
