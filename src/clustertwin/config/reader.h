#pragma once
/// Strict reading of YAML (and so JSON) documents into typed values, at the edge (DESIGN.md §4).
/// Every error names file:line and expected vs actual; a Reader collects all errors of a file
/// instead of stopping at the first, and finish() reports keys nobody asked for (with the
/// closest known key), so a typo is never silently ignored.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/base/units_parse.h"

namespace clustertwin::config {

/// A parsed document: its root node and the name used in messages.
struct Document {
  YAML::Node root;
  std::string file;
};

/// Parses YAML or JSON text. Syntax errors come back with file:line (never an exception).
base::Result<Document> parse_document(std::string_view text, std::string file);
/// Reads and parses a file from disk.
base::Result<Document> load_document(const std::string& path);

/// Where each figure of a catalog entry comes from: figure path ("flops_dense.fp8") -> citation.
using Provenance = std::vector<std::pair<std::string, std::string>>;

/// Shared state of one document being read: its file name, the error list, the file's
/// `sources:` table (ref -> citation) and the provenance gathered so far.
struct ReadContext {
  std::string file;
  base::Errors errors;
  std::map<std::string, std::string> sources;
  Provenance provenance;
};

/// Reads one YAML mapping strictly. Accessors return nullopt (and record an error) when a
/// required key is missing or a value is malformed; optional keys that are absent give nullopt
/// without an error.
class Reader {
 public:
  Reader(YAML::Node node, ReadContext& ctx, std::string path = {});

  [[nodiscard]] bool is_map() const { return node_.IsMap(); }
  [[nodiscard]] bool has(std::string_view key) const;
  /// 1-based line of a key's value (or of this mapping when the key is absent).
  [[nodiscard]] int line(std::string_view key = {}) const;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] ReadContext& context() const { return *ctx_; }

  enum class Need { kRequired, kOptional };

  std::optional<std::string> string(std::string_view key, Need need = Need::kRequired);
  /// One of `allowed`; the error lists them and suggests the closest.
  std::optional<std::string> choice(std::string_view key, const std::vector<std::string>& allowed,
                                    Need need = Need::kRequired);
  /// An integer in [min, max]. The default max is INT32_MAX: most fields end in an `int`, and a
  /// larger value must never wrap there (an HF config with 4294967304 experts once read 8).
  std::optional<int64_t> integer(std::string_view key, Need need = Need::kRequired, int64_t min = 1,
                                 int64_t max = INT32_MAX);
  /// A real number in [min, max].
  std::optional<double> number(std::string_view key, Need need = Need::kRequired, double min = 0.0,
                               double max = 1e300);
  std::optional<bool> boolean(std::string_view key, Need need = Need::kRequired);
  /// A quantity with its unit ("900 GB/s"); must be > 0 unless `allow_zero`.
  template <class Q>
  std::optional<Q> quantity(std::string_view key, Need need = Need::kRequired,
                            bool allow_zero = false) {
    auto v = quantity_base(key, base::DimensionOf<Q>::value, need, allow_zero);
    if (!v) return std::nullopt;
    return Q::from_base(*v);
  }
  std::optional<double> quantity_base(std::string_view key, base::Dimension dim, Need need,
                                      bool allow_zero);

  /// Catalog figures carry their source: `key: {value: <v>, source: <ref>}` where <ref> is a
  /// key of the file's `sources:` table. The value is read like quantity<Q>() / integer() and
  /// the citation is recorded in the context's provenance under "<path>.<key>".
  template <class Q>
  std::optional<Q> figure(std::string_view key, Need need = Need::kRequired,
                          bool allow_zero = false) {
    auto sub = figure_reader(key, need);
    if (!sub) return std::nullopt;
    auto v = sub->quantity<Q>("value", Need::kRequired, allow_zero);
    sub->finish();
    return v;
  }
  std::optional<int64_t> integer_figure(std::string_view key, Need need = Need::kRequired,
                                        int64_t min = 1, int64_t max = INT32_MAX);
  std::optional<double> number_figure(std::string_view key, Need need = Need::kRequired,
                                      double min = 0.0, double max = 1e300);

  /// A figure with extra fields (`{value: .., sparse: .., source: ..}`): the source is checked
  /// and recorded; the caller reads the other keys and calls finish().
  std::optional<Reader> figure_entry(std::string_view key, Need need = Need::kRequired) {
    return figure_reader(key, need);
  }
  /// figure_entry() that also appends the figure's citation to `cited` ("a; b", each citation
  /// once): how a parameter set read from several figures names all their sources.
  std::optional<Reader> cited_figure_entry(std::string_view key, std::string& cited,
                                           Need need = Need::kOptional) {
    auto e = figure_reader(key, need);
    if (!e) return e;
    if (auto src = e->string("source", Need::kOptional)) {
      auto it = e->context().sources.find(*src);
      if (it != e->context().sources.end() && cited.find(it->second) == std::string::npos)
        cited += (cited.empty() ? "" : "; ") + it->second;
    }
    return e;
  }

  /// A nested mapping; nullopt (with an error if required) when absent or not a mapping.
  std::optional<Reader> child(std::string_view key, Need need = Need::kRequired);
  /// A sequence of nested mappings.
  std::vector<Reader> children(std::string_view key, Need need = Need::kRequired);
  /// A sequence of strings.
  std::optional<std::vector<std::string>> strings(std::string_view key,
                                                  Need need = Need::kRequired);
  /// The keys of this mapping, in file order.
  [[nodiscard]] std::vector<std::string> keys() const;

  /// Marks a key as known without reading it (e.g. a comment field).
  void allow(std::string_view key);
  /// Reports every key that was never read as an unknown key, with a suggestion.
  void finish();
  /// Reads the optional `sources:` table (ref -> citation) of this mapping into the context, so
  /// that figures `{value, source: ref}` can name it.
  void read_sources();

  /// Records an error at this mapping (or at `key`'s line).
  void error(std::string message, std::string_view key = {}) const;

 private:
  std::optional<YAML::Node> value_node(std::string_view key, Need need);
  std::optional<Reader> figure_reader(std::string_view key, Need need);
  [[nodiscard]] std::string where(std::string_view key) const;

  YAML::Node node_;
  ReadContext* ctx_;
  std::string path_;
  std::vector<std::string> seen_;
};

/// Line of a node (1-based), 0 when yaml-cpp has no mark.
int line_of(const YAML::Node& n);

}  // namespace clustertwin::config
