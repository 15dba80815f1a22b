#include "clustertwin/sweep/design.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <set>

#include "clustertwin/base/number.h"
#include "clustertwin/base/text.h"
#include "clustertwin/config/reader.h"

namespace clustertwin::sweep {
namespace {

using config::line_of;

/// The points of one block: per point, one value per axis of the block.
struct Block {
  std::vector<Axis> axes;
  std::vector<std::vector<YAML::Node>> rows;
};

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

/// Words of [A-Za-z0-9_-] joined by single dots (no regex: std::regex recurses per character
/// and a long key would overflow the stack).
bool is_path(const std::string& s) {
  if (s.empty() || s.size() > 1000 || s.front() == '.' || s.back() == '.') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      if (s[i + 1] == '.') return false;
    } else if (!word_char(s[i])) {
      return false;
    }
  }
  return true;
}

/// A column name: [A-Za-z_][A-Za-z0-9_]*.
bool is_name(const std::string& s) {
  if (s.empty() || s.size() > 200 || (s.front() >= '0' && s.front() <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c != '-' && word_char(c); });
}

const char* kind_of(const YAML::Node& n) {
  if (n.IsMap()) return "mapping";
  if (n.IsSequence()) return "list";
  if (n.IsScalar()) return "single value";
  return "nothing";
}

class Parser {
 public:
  Parser(std::string file, int64_t max_points) : file_(std::move(file)), max_points_(max_points) {}

  void error(const std::string& message, const YAML::Node& at) {
    errors_.add(base::Error{message, file_, line_of(at)});
  }
  base::Errors& errors() { return errors_; }

  /// Checks that a mapping has only `known` keys.
  void only(const YAML::Node& map, const std::vector<std::string>& known,
            const std::string& where) {
    for (const auto& kv : map) {
      const std::string k = kv.first.Scalar();
      if (std::find(known.begin(), known.end(), k) == known.end()) {
        error(fmt::format("{}: unknown key '{}'{} (expected one of: {})", where, k,
                          base::did_you_mean(k, known), base::join(known)),
              kv.first);
      }
    }
  }

  /// A dotted scenario path: words of [A-Za-z0-9_-] joined by single dots.
  bool check_path(const std::string& path, const YAML::Node& at) {
    if (!is_path(path)) {
      error(fmt::format("design key '{}': expected a dotted scenario key such as "
                        "workload.training.tp",
                        path),
            at);
      return false;
    }
    return true;
  }

  std::optional<Block> product(const YAML::Node& body) {
    if (!body.IsMap() || body.size() == 0) {
      error(fmt::format("product: expected a mapping of scenario keys to lists of values, got a {}",
                        kind_of(body)),
            body);
      return std::nullopt;
    }
    Block b;
    std::vector<std::vector<YAML::Node>> lists;
    for (const auto& kv : body) {
      const std::string path = kv.first.Scalar();
      if (!check_path(path, kv.first)) return std::nullopt;
      auto values = value_list(kv.second, "product", path);
      if (!values) return std::nullopt;
      b.axes.push_back({path, line_of(kv.first)});
      lists.push_back(std::move(*values));
    }
    int64_t n = 1;
    for (const auto& l : lists) {
      n *= static_cast<int64_t>(l.size());
      if (n > max_points_) {
        error(fmt::format("product: more than {} points (the limit of a sweep)", max_points_),
              body);
        return std::nullopt;
      }
    }
    // Row-major: the first key varies slowest.
    for (int64_t i = 0; i < n; ++i) {
      std::vector<YAML::Node> row(lists.size());
      int64_t rest = i;
      for (size_t a = lists.size(); a-- > 0;) {
        const auto size = static_cast<int64_t>(lists[a].size());
        row[a] = lists[a][static_cast<size_t>(rest % size)];
        rest /= size;
      }
      b.rows.push_back(std::move(row));
    }
    return b;
  }

  std::optional<Block> zip(const YAML::Node& body) {
    if (!body.IsMap() || body.size() == 0) {
      error(fmt::format("zip: expected a mapping of scenario keys to lists of values, got a {}",
                        kind_of(body)),
            body);
      return std::nullopt;
    }
    Block b;
    std::vector<std::vector<YAML::Node>> lists;
    for (const auto& kv : body) {
      const std::string path = kv.first.Scalar();
      if (!check_path(path, kv.first)) return std::nullopt;
      auto values = value_list(kv.second, "zip", path);
      if (!values) return std::nullopt;
      if (!lists.empty() && values->size() != lists.front().size()) {
        error(fmt::format("zip: '{}' has {} values but '{}' has {} (zipped lists have equal "
                          "lengths)",
                          path, values->size(), b.axes.front().path, lists.front().size()),
              kv.second);
        return std::nullopt;
      }
      b.axes.push_back({path, line_of(kv.first)});
      lists.push_back(std::move(*values));
    }
    for (size_t i = 0; i < lists.front().size(); ++i) {
      std::vector<YAML::Node> row;
      for (const auto& l : lists) row.push_back(l[i]);
      b.rows.push_back(std::move(row));
    }
    return b;
  }

  /// Latin hypercube sampling (McKay, Beckman and Conover, Technometrics 21(2), 1979): axis a's
  /// range is cut into n equal strata; sample i takes stratum perm_a[i] with a uniform offset
  /// inside it, so every stratum of every axis holds exactly one sample. Integer ranges take
  /// floor over [min, max + 1); value lists take the index floor(k * (stratum + u) / n).
  std::optional<Block> latin_hypercube(const YAML::Node& body) {
    if (!body.IsMap()) {
      error(fmt::format("latin_hypercube: expected a mapping with samples, seed and axes, got a {}",
                        kind_of(body)),
            body);
      return std::nullopt;
    }
    only(body, {"samples", "seed", "axes"}, "latin_hypercube");
    auto samples = integer(body, "samples", "latin_hypercube", {.min = 1, .max = max_points_});
    auto seed = integer(body, "seed", "latin_hypercube", {.min = 0, .max = INT64_MAX});
    const YAML::Node axes = body["axes"];
    if (!axes || !axes.IsMap() || axes.size() == 0) {
      error(
          "latin_hypercube: expected 'axes', a mapping of scenario keys to {min, max} ranges or "
          "{values: [...]} lists",
          axes ? axes : body);
      return std::nullopt;
    }
    if (!samples || !seed) return std::nullopt;
    const auto n = static_cast<size_t>(*samples);
    std::mt19937_64 rng(static_cast<uint64_t>(*seed));
    // Our own draws over the engine's raw 64-bit output (libstdc++'s distributions are
    // implementation-defined): u in [0, 1) from the top 53 bits; permutations by Fisher-Yates.
    auto uniform = [&rng] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
    Block b;
    b.rows.assign(n, {});
    for (const auto& kv : axes) {
      const std::string path = kv.first.Scalar();
      if (!check_path(path, kv.first)) return std::nullopt;
      const YAML::Node spec = kv.second;
      const std::string where = "latin_hypercube: '" + path + "'";
      if (!spec.IsMap()) {
        error(
            where + ": expected {min: .., max: ..[, integer: true][, unit: ..]} or {values: [..]}",
            spec);
        return std::nullopt;
      }
      only(spec, {"min", "max", "integer", "unit", "values"}, where);
      std::vector<size_t> perm(n);
      for (size_t i = 0; i < n; ++i) perm[i] = i;
      for (size_t i = n; i-- > 1;) std::swap(perm[i], perm[rng() % (i + 1)]);
      std::vector<double> offset(n);
      for (size_t i = 0; i < n; ++i) offset[i] = uniform();
      b.axes.push_back({path, line_of(kv.first)});
      if (spec["values"]) {
        auto values = value_list(spec["values"], "latin_hypercube", path);
        if (!values) return std::nullopt;
        const double k = static_cast<double>(values->size());
        for (size_t i = 0; i < n; ++i) {
          const double x = (static_cast<double>(perm[i]) + offset[i]) / static_cast<double>(n);
          const auto idx = std::min(values->size() - 1, static_cast<size_t>(std::floor(x * k)));
          b.rows[i].push_back((*values)[idx]);
        }
        continue;
      }
      auto lo = real(spec, "min", where);
      auto hi = real(spec, "max", where);
      if (!lo || !hi) return std::nullopt;
      if (*hi < *lo) {
        error(fmt::format("{}: expected min <= max, got min {} and max {}", where, *lo, *hi), spec);
        return std::nullopt;
      }
      bool as_integer = false;
      if (spec["integer"]) {
        const std::string t = spec["integer"].Scalar();
        if (t != "true" && t != "false") {
          error(where + ": integer: expected true or false, got '" + t + "'", spec["integer"]);
          return std::nullopt;
        }
        as_integer = t == "true";
      }
      std::string unit;
      if (spec["unit"]) unit = spec["unit"].Scalar();
      if (as_integer && (std::floor(*lo) != *lo || std::floor(*hi) != *hi)) {
        error(
            fmt::format("{}: an integer range needs integer bounds, got [{}, {}]", where, *lo, *hi),
            spec);
        return std::nullopt;
      }
      // A draw is lo + x * (hi - lo): the width must stay finite, and an integer draw must be a
      // double's exact integer (|v| <= 2^53) before it becomes an int64 ({max: 1e300} once
      // came out as -9223372036854775808).
      const double limit = as_integer ? 9007199254740992.0 : 1e307;
      if (std::fabs(*lo) > limit || std::fabs(*hi) > limit) {
        error(fmt::format("{}: expected bounds within [-{:.16g}, {:.16g}]{}, got [{}, {}]", where,
                          limit, limit, as_integer ? " (2^53, a double's exact integers)" : "", *lo,
                          *hi),
              spec);
        return std::nullopt;
      }
      for (size_t i = 0; i < n; ++i) {
        const double x = (static_cast<double>(perm[i]) + offset[i]) / static_cast<double>(n);
        std::string text;
        if (as_integer) {
          const double v = std::min(*hi, std::floor(*lo + x * (*hi - *lo + 1)));
          text = fmt::format("{}", static_cast<int64_t>(v));
        } else {
          text = fmt::format("{:.6g}", *lo + x * (*hi - *lo));
        }
        if (!unit.empty()) text += " " + unit;
        YAML::Node v(text);
        b.rows[i].push_back(v);
      }
    }
    return b;
  }

  std::optional<std::vector<YAML::Node>> value_list(const YAML::Node& n, const char* block,
                                                    const std::string& path) {
    if (!n.IsSequence() || n.size() == 0) {
      error(fmt::format("{}: '{}': expected a non-empty list of values, got a {}", block, path,
                        kind_of(n)),
            n);
      return std::nullopt;
    }
    std::vector<YAML::Node> out;
    for (const auto& v : n) out.push_back(v);
    return out;
  }

  std::optional<int64_t> integer(const YAML::Node& map, const char* key, const std::string& where,
                                 base::IntRange r) {
    const YAML::Node v = map[key];
    if (!v) {
      error(fmt::format("{}: missing required key '{}'", where, key), map);
      return std::nullopt;
    }
    auto x = v.IsScalar() ? base::parse_integer(v.Scalar(), r)
                          : base::Result<int64_t>(base::fail("expected an integer"));
    if (!x) {
      error(fmt::format("{}: {}: {}", where, key, x.error().message), v);
      return std::nullopt;
    }
    return *x;
  }

  std::optional<double> real(const YAML::Node& map, const char* key, const std::string& where) {
    const YAML::Node v = map[key];
    if (!v) {
      error(fmt::format("{}: missing required key '{}'", where, key), map);
      return std::nullopt;
    }
    auto x = v.IsScalar() ? base::parse_real(v.Scalar())
                          : base::Result<double>(base::fail("expected a number"));
    if (!x) {
      error(fmt::format("{}: {}: {}", where, key, x.error().message), v);
      return std::nullopt;
    }
    return *x;
  }

 private:
  std::string file_;
  int64_t max_points_;
  base::Errors errors_;

 public:
  [[nodiscard]] int64_t max_points() const { return max_points_; }
};

/// Sets a dotted path in a scenario mapping, creating mappings on the way.
base::Status set_path(YAML::Node root, const std::string& path, const YAML::Node& value) {
  YAML::Node cur;
  cur.reset(root);
  size_t start = 0;
  std::string walked;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!cur.IsMap()) {
      return base::fail(fmt::format("design key '{}': '{}' in the scenario is a {}, not a mapping",
                                    path, walked, kind_of(cur)));
    }
    if (dot == std::string::npos) {
      cur[key] = YAML::Clone(value);
      return {};
    }
    if (!cur[key]) cur[key] = YAML::Node(YAML::NodeType::Map);
    YAML::Node next = cur[key];
    cur.reset(next);
    walked += (walked.empty() ? "" : ".") + key;
    start = dot + 1;
  }
}

}  // namespace

nlohmann::json to_json(const YAML::Node& n) {
  if (!n || n.IsNull()) return nullptr;
  if (n.IsSequence()) {
    auto a = nlohmann::json::array();
    for (const auto& v : n) a.push_back(to_json(v));
    return a;
  }
  if (n.IsMap()) {
    auto o = nlohmann::json::object();
    for (const auto& kv : n) o[kv.first.Scalar()] = to_json(kv.second);
    return o;
  }
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: a string whatever it looks like
  // The strict parsers accept exactly [+-]digits and [+-]digits[.digits][e[+-]digits].
  if (auto i = base::parse_integer(s)) return *i;
  if (auto d = base::parse_real(s)) return *d;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return s;
}

std::string value_text(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  return to_json(n).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<Output> default_outputs(const YAML::Node& scenario) {
  std::vector<Output> out;
  const YAML::Node w = scenario["workload"];
  auto has = [&w](const char* k) { return w && w.IsMap() && w[k]; };
  auto power = [](const YAML::Node& n) {
    return n.IsMap() && n["power"] && n["power"].IsScalar() && n["power"].Scalar() == "true";
  };
  if (has("training")) {
    out.push_back({"step_time_s", "training.step_time_s"});
    out.push_back({"tokens_per_s_per_gpu", "training.tokens_per_s_per_gpu"});
    out.push_back({"mfu", "training.mfu"});
    out.push_back({"memory_per_gpu_B", "training.memory_per_gpu.total_B"});
    if (power(w["training"])) {
      out.push_back({"gpu_power_avg_W", "power.gpu_avg_W"});
      out.push_back({"facility_W", "power.facility_W"});
      out.push_back({"energy_per_token_J", "power.energy_per_token_J"});
    }
    if (w["training"].IsMap() && w["training"]["search"]) {
      // The search's winner (the columns above are its step); last, so that the report's
      // default Pareto and tornado outputs stay figures.
      out.push_back({"best_layout", "search.best.0.layout"});
    }
  }
  if (has("inference")) {
    out.push_back({"serving_tokens_per_s_per_gpu", "inference.tokens_per_s_per_gpu"});
    out.push_back({"ttft_p99_s", "inference.ttft_p99_s"});
    out.push_back({"tpot_p99_s", "inference.tpot_p99_s"});
    if (power(w["inference"])) {
      out.push_back({"serving_gpu_power_avg_W", "inference.power.gpu_avg_W"});
    }
  }
  return out;
}

static base::Result<Design> from_document(const config::Document& doc_value, ParseOptions options) {
  const std::string& file = doc_value.file;
  const config::Document* doc = &doc_value;
  try {
    Parser p(file, options.max_points);
    const YAML::Node root = doc->root;
    p.only(root, {"name", "description", "scenario", "design", "outputs", "report"}, "sweep");
    Design d;
    d.file = file;
    d.name = root["name"] && root["name"].IsScalar() ? root["name"].Scalar()
                                                     : std::filesystem::path(file).stem().string();
    // The base scenario: inline, or a scenario file relative to the sweep file.
    const YAML::Node sc = root["scenario"];
    if (!sc) {
      p.error(
          "missing required key 'scenario' (a scenario mapping as in a scenario file, or the "
          "path of one)",
          root);
    } else if (sc.IsScalar()) {
      std::filesystem::path path = sc.Scalar();
      if (path.is_relative()) path = std::filesystem::path(file).parent_path() / path;
      auto base_doc = config::load_document(path.string());
      if (!base_doc) {
        auto e = base_doc.error();
        if (e.file.empty()) {
          e.file = file;
          e.line = line_of(sc);
        }
        p.errors().add(e);
      } else {
        d.base = base_doc->root;
      }
    } else if (sc.IsMap()) {
      d.base = YAML::Clone(sc);
    } else {
      p.error(fmt::format("scenario: expected a mapping or a file name, got a {}", kind_of(sc)),
              sc);
    }
    // The design blocks.
    std::vector<Block> blocks;
    const YAML::Node design = root["design"];
    if (!design) {
      p.error("missing required key 'design' (a list of product, zip or latin_hypercube blocks)",
              root);
    } else if (!design.IsSequence() || design.size() == 0) {
      p.error(fmt::format("design: expected a non-empty list of product, zip or latin_hypercube "
                          "blocks, got a {}",
                          kind_of(design)),
              design);
    } else {
      for (const auto& block : design) {
        if (!block.IsMap() || block.size() != 1) {
          p.error(
              "design: each block is a mapping with exactly one of product, zip or "
              "latin_hypercube",
              block);
          continue;
        }
        const auto kv = *block.begin();
        const std::string kind = kv.first.Scalar();
        std::optional<Block> b;
        if (kind == "product") {
          b = p.product(kv.second);
        } else if (kind == "zip") {
          b = p.zip(kv.second);
        } else if (kind == "latin_hypercube") {
          b = p.latin_hypercube(kv.second);
        } else {
          const std::vector<std::string> kinds = {"product", "zip", "latin_hypercube"};
          p.error(fmt::format("design: unknown block '{}'{} (expected product, zip or "
                              "latin_hypercube)",
                              kind, base::did_you_mean(kind, kinds)),
                  kv.first);
        }
        if (b) blocks.push_back(std::move(*b));
      }
    }
    // Outputs: name -> results JSON path.
    if (const YAML::Node outs = root["outputs"]) {
      if (!outs.IsMap()) {
        p.error(fmt::format("outputs: expected a mapping of column names to results paths "
                            "(step_time_s: training.step_time_s), got a {}",
                            kind_of(outs)),
                outs);
      } else {
        for (const auto& kv : outs) {
          const std::string name = kv.first.Scalar();
          if (!is_name(name)) {
            p.error("outputs: '" + name + "': expected a column name of letters, digits and _",
                    kv.first);
            continue;
          }
          if (!kv.second.IsScalar() || kv.second.Scalar().empty()) {
            p.error("outputs: '" + name + "': expected a dotted path in the results JSON",
                    kv.second);
            continue;
          }
          d.outputs.push_back({name, kv.second.Scalar()});
        }
      }
    }
    if (!p.errors().empty()) return base::fail(p.errors().combined());
    if (!root["outputs"]) {
      d.outputs = default_outputs(d.base);
      // More is better for throughput and utilisation; less for everything else we default to.
      for (const auto& o : d.outputs) {
        if (o.name.find("tokens_per_s") != std::string::npos || o.name == "mfu") {
          d.report.maximize.push_back(o.name);
        }
      }
    }
    // report: {pareto: [x, y], tornado: output, maximize: [outputs]}
    if (const YAML::Node rep = root["report"]) {
      std::vector<std::string> names;
      for (const auto& o : d.outputs) names.push_back(o.name);
      auto known = [&](const YAML::Node& n, const std::string& what) -> std::optional<std::string> {
        if (!n.IsScalar() || std::find(names.begin(), names.end(), n.Scalar()) == names.end()) {
          const std::string got = n.IsScalar() ? n.Scalar() : kind_of(n);
          p.error(fmt::format("report: {}: expected an output ({}), got '{}'{}", what,
                              base::join(names), got, base::did_you_mean(got, names)),
                  n);
          return std::nullopt;
        }
        return n.Scalar();
      };
      if (!rep.IsMap()) {
        p.error("report: expected a mapping with pareto, tornado and maximize", rep);
      } else {
        p.only(rep, {"pareto", "tornado", "maximize"}, "report");
        if (const YAML::Node par = rep["pareto"]) {
          if (!par.IsSequence() || par.size() != 2) {
            p.error("report: pareto: expected two outputs, [x, y]", par);
          } else {
            d.report.pareto_x = known(par[0], "pareto").value_or("");
            d.report.pareto_y = known(par[1], "pareto").value_or("");
          }
        }
        if (const YAML::Node t = rep["tornado"])
          d.report.tornado = known(t, "tornado").value_or("");
        if (const YAML::Node m = rep["maximize"]) {
          if (!m.IsSequence()) {
            p.error("report: maximize: expected a list of outputs", m);
          } else {
            d.report.maximize.clear();
            for (const auto& v : m) {
              if (auto n = known(v, "maximize")) d.report.maximize.push_back(*n);
            }
          }
        }
      }
      if (!p.errors().empty()) return base::fail(p.errors().combined());
    }

    // Axes: every key once over all blocks.
    std::set<std::string> seen;
    for (const auto& b : blocks) {
      for (const auto& a : b.axes) {
        if (!seen.insert(a.path).second) {
          p.errors().add(
              base::Error{"design key '" + a.path + "' is varied by two blocks", file, a.line});
        }
        d.axes.push_back(a);
      }
    }
    static const std::set<std::string> kReserved = {"id", "status", "error", "result_json"};
    for (const auto& o : d.outputs) {
      if (kReserved.contains(o.name) || seen.contains(o.name)) {
        p.errors().add(base::Error{"outputs: '" + o.name +
                                       "' names a column that already exists (id, status, error, "
                                       "result_json and the design keys are taken)",
                                   file, 0});
      }
    }
    int64_t total = 1;
    for (const auto& b : blocks) {
      total *= static_cast<int64_t>(b.rows.size());
      if (total > options.max_points) {
        p.errors().add(base::Error{
            fmt::format("design: more than {} points (the limit of a sweep)", options.max_points),
            file, line_of(design)});
        break;
      }
    }
    if (!p.errors().empty()) return base::fail(p.errors().combined());

    // Points: the cartesian product of the blocks, the first block varying slowest. Each
    // point's scenario is built once here to find keys set under a value that is no mapping,
    // then dropped (Design::scenario builds it again when the point runs).
    for (int64_t i = 0; i < total; ++i) {
      Point pt;
      pt.id = i;
      int64_t rest = i;
      std::vector<const std::vector<YAML::Node>*> rows(blocks.size());
      for (size_t bi = blocks.size(); bi-- > 0;) {
        const auto size = static_cast<int64_t>(blocks[bi].rows.size());
        rows[bi] = &blocks[bi].rows[static_cast<size_t>(rest % size)];
        rest /= size;
      }
      for (const auto* r : rows) {
        for (const auto& v : *r) pt.values.push_back(v);
      }
      YAML::Node scenario = YAML::Clone(d.base);
      for (size_t a = 0; a < d.axes.size(); ++a) {
        if (auto st = set_path(scenario, d.axes[a].path, pt.values[a]); !st) {
          return base::fail(fmt::format("point {}: {}", i, st.error().message), file,
                            d.axes[a].line);
        }
      }
      d.points.push_back(std::move(pt));
    }
    // The spec: what decides the points. The expansion is a function of the blocks (and of
    // this code: "version" changes when it does).
    nlohmann::json spec = {
        {"version", 1}, {"scenario", to_json(d.base)}, {"design", to_json(design)}};
    for (const auto& o : d.outputs) spec["outputs"].push_back({o.name, o.path});
    d.spec = spec.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return d;
  } catch (const YAML::Exception& e) {
    return base::fail("cannot read the sweep: " + e.msg, file,
                      e.mark.line >= 0 ? e.mark.line + 1 : 0);
  } catch (const std::exception& e) {
    return base::fail(std::string("cannot read the sweep: ") + e.what(), file, 0);
  }
}

base::Result<Design> parse_design(std::string_view text, const std::string& file,
                                  ParseOptions options) {
  auto doc = config::parse_document(text, file);
  if (!doc) return base::fail(doc.error());
  return from_document(*doc, options);
}

base::Result<Design> load_design(const std::string& path) {
  auto doc = config::load_document(path);
  if (!doc) return base::fail(doc.error());
  return from_document(*doc, {});
}

YAML::Node Design::scenario(const Point& p) const {
  YAML::Node s = YAML::Clone(base);
  for (size_t a = 0; a < axes.size(); ++a) {
    // Checked for every point when the design was read.
    [[maybe_unused]] auto st = set_path(s, axes[a].path, p.values[a]);
  }
  return s;
}

base::Status check_points(const Design& design,
                          const std::function<base::Status(const YAML::Node&)>& check) {
  base::Errors errors;
  std::set<std::string> seen;  // one line per distinct problem, at its first point
  for (const auto& p : design.points) {
    auto st = check(design.scenario(p));
    if (st || !seen.insert(st.error().message).second) continue;
    std::string values;
    auto e = st.error();
    for (size_t a = 0; a < design.axes.size(); ++a) {
      const auto& path = design.axes[a].path;
      values += fmt::format("{}{}={}", a ? ", " : "", path, value_text(p.values[a]));
      // A key the design added has no line of its own: the design's line of that key.
      const std::string last = "'" + path.substr(path.rfind('.') + 1) + "'";
      if (e.line == 0 && e.message.find(last) != std::string::npos) e.line = design.axes[a].line;
    }
    e.message = fmt::format("point {} ({}): {}", p.id, values, e.message);
    errors.add(e);
    if (errors.items.size() >= 10) break;
  }
  if (!errors.empty()) return base::fail(errors.combined());
  return {};
}

}  // namespace clustertwin::sweep
