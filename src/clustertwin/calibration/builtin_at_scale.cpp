#include "clustertwin/calibration/builtin_at_scale.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "clustertwin/calibration/fitter.h"
#include "clustertwin/calibration/sha256.h"
#include "clustertwin/collective/moe_a2a.h"
#include "clustertwin/collective/sweep.h"
#include "clustertwin/config/reader.h"

namespace clustertwin::calibration {
using base::fail;

namespace {

using config::Reader;
using Need = Reader::Need;

constexpr const char* kRecipePath = "calibration/at-scale.yaml";

struct Figure {
  std::string file;                  ///< "at-scale.yaml" (under catalog/collectives/)
  std::vector<std::string> entries;  ///< "gpus: [h100, h200, h800]"
  std::string field, unit;           ///< "cross_domain_fill", "us"
  double start = 0, lower = 0, upper = 0;
  std::vector<std::string> sources;
  /// The entries' names joined, for the summary ("gpus: [h100, h200, h800] | gpus: [b200, ...").
  [[nodiscard]] std::string label() const {
    std::string s;
    for (const auto& e : entries) s += (s.empty() ? "" : " | ") + e;
    return field + " [" + s + "]";
  }
};

struct Recipe {
  std::string collectives_cases, a2a_cases;
  FitOptions fit;
  std::vector<Figure> figures;
};

base::Result<Recipe> read_recipe(const hardware::Catalog& catalog) {
  const hardware::CatalogFile* file = nullptr;
  for (const auto& f : catalog.other_files())
    if (f.path == kRecipePath) file = &f;
  if (file == nullptr)
    return fail(std::string("the catalog has no ") + kRecipePath +
                " (the built-in at-scale recipe)");
  auto doc = config::parse_document(file->text, std::string("catalog/") + file->path);
  if (!doc) return fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  Reader top(doc->root, ctx);
  Recipe r;
  r.fit.folds = 0;
  r.fit.profile_hold = true;
  if (auto body = top.child("at_scale_calibration")) {
    if (auto c = body->child("cases")) {
      r.collectives_cases = c->string("collectives").value_or("");
      r.a2a_cases = c->string("moe_all_to_all").value_or("");
      c->finish();
    }
    if (auto f = body->child("fit")) {
      r.fit.loss_scale = f->number("loss_scale", Need::kRequired, 1e-3, 10).value_or(0.15);
      r.fit.prior_weight = f->number("prior_weight", Need::kRequired, 0, 10).value_or(0);
      r.fit.simplex_iterations = static_cast<int>(
          f->integer("simplex_iterations", Need::kRequired, 0, 100000).value_or(0));
      r.fit.simplex_tolerance = f->number("simplex_tolerance", Need::kOptional, 0, 1).value_or(0);
      f->finish();
    }
    for (auto& p : body->children("parameters")) {
      Figure g;
      g.file = p.choice("in", {"at-scale.yaml", "moe-a2a.yaml"}).value_or("");
      g.entries = p.strings("entries").value_or(std::vector<std::string>{});
      g.field = p.string("field").value_or("");
      g.unit = p.choice("unit", {"us", "GB/s"}, Need::kOptional).value_or("");
      g.start = p.number("start", Need::kRequired, 1e-9, 1e9).value_or(1);
      g.lower = p.number("lower", Need::kRequired, 1e-9, 1e9).value_or(1);
      g.upper = p.number("upper", Need::kRequired, 1e-9, 1e9).value_or(1);
      g.sources = p.strings("sources").value_or(std::vector<std::string>{});
      if (!(g.lower <= g.start && g.start <= g.upper))
        p.error("expected lower <= start <= upper", "start");
      if (g.entries.empty()) p.error("expected at least one entry", "entries");
      if (g.sources.empty()) p.error("expected at least one source", "sources");
      p.finish();
      r.figures.push_back(std::move(g));
    }
    body->finish();
  }
  top.finish();
  if (!ctx.errors.empty()) return fail(ctx.errors.combined());
  return r;
}

// ---- The cases --------------------------------------------------------------------------------

struct Case {
  std::string file;
  int line = 0;
  std::map<std::string, std::string> cell;
  bool a2a = false;
  double measured = 0;
  [[nodiscard]] const std::string& at(const std::string& k) const { return cell.at(k); }
};

/// A CSV of cases: '#' lines are comments, the first other line the header; every row must
/// have every column in `need`.
void read_cases(const std::string& path, bool a2a, const std::vector<std::string>& need,
                std::vector<Case>& out, base::Errors& errors) {
  std::ifstream in(path);
  if (!in) {
    errors.add({"cannot read file", path, 0});
    return;
  }
  std::vector<std::string> header;
  int line = 0;
  for (std::string text; std::getline(in, text);) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.empty() || text[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream ss(text);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    if (header.empty()) {
      header = cells;
      for (const auto& n : need) {
        if (std::find(header.begin(), header.end(), n) == header.end())
          errors.add({"expected a column '" + n + "' in the header", path, line});
      }
      continue;
    }
    if (cells.size() != header.size()) {
      errors.add({"expected " + std::to_string(header.size()) + " cells, got " +
                      std::to_string(cells.size()),
                  path, line});
      continue;
    }
    Case c{.file = path, .line = line, .a2a = a2a};
    for (size_t i = 0; i < header.size(); ++i) c.cell[header[i]] = cells[i];
    bool ok = true;
    for (const auto& n : need) ok = ok && c.cell.count(n);
    if (!ok) continue;
    const std::string& m = c.cell.at(a2a ? "measured" : "measured_GBps");
    char* end = nullptr;
    c.measured = std::strtod(m.c_str(), &end);
    if (m.empty() || *end != '\0' || !(c.measured > 0) || !std::isfinite(c.measured)) {
      errors.add({"expected a positive measured value, got '" + m + "'", path, line});
      continue;
    }
    const std::string& role = c.cell.at("role");
    if (role != "fit" && role != "check" && role != "degraded") {
      errors.add({"role: expected fit, check or degraded, got '" + role + "'", path, line});
      continue;
    }
    out.push_back(std::move(c));
  }
  if (header.empty()) errors.add({"expected a header line", path, 0});
}

std::optional<int64_t> parse_size(const std::string& s) {
  if (s.empty()) return std::nullopt;
  size_t pos = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &pos);
  } catch (...) {
    return std::nullopt;
  }
  const std::string unit = s.substr(pos);
  if (v <= 0) return std::nullopt;
  if (unit.empty()) return v;
  if (unit == "K") return v << 10;
  if (unit == "M") return v << 20;
  if (unit == "G") return v << 30;
  return std::nullopt;
}

std::optional<int64_t> parse_int(const std::string& s) {
  size_t pos = 0;
  try {
    const int64_t v = std::stoll(s, &pos);
    if (pos != s.size()) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

/// What the model runs for one case, checked once before any fit (errors at the case's line).
struct Run {
  bool a2a = false;
  collective::SweepSpec sweep;
  bool max_busbw = false;
  collective::MoeSweepSpec moe;
  std::string metric;
};

base::Result<Run> run_of(const Case& c, const std::string& cases_dir) {
  Run r;
  r.a2a = c.a2a;
  r.metric = c.at("metric");
  auto bad = [&](const std::string& what) { return fail(what, c.file, c.line); };
  const auto gpus = parse_int(c.at("gpus"));
  if (!gpus || *gpus < 2) return bad("gpus: expected an integer >= 2, got '" + c.at("gpus") + "'");
  std::string cluster = c.at("cluster");
  if (cluster.size() > 5 && cluster.substr(cluster.size() - 5) == ".yaml")
    cluster = cases_dir + "/" + cluster;
  if (c.a2a) {
    auto impl = collective::parse_a2a_impl(c.at("impl"));
    if (!impl) return bad("impl: " + impl.error().message);
    const auto tokens = parse_int(c.at("tokens")), bytes = parse_int(c.at("token_bytes"));
    if (!tokens || *tokens < 1) return bad("tokens: expected a positive integer");
    if (!bytes || *bytes < 1) return bad("token_bytes: expected a positive integer");
    if (c.at("phase") != "dispatch" && c.at("phase") != "combine")
      return bad("phase: expected dispatch or combine, got '" + c.at("phase") + "'");
    if (r.metric != "time_us" && r.metric != "logical_bw" && r.metric != "rdma_bw" &&
        r.metric != "nvl_bw")
      return bad("metric: expected time_us, logical_bw, rdma_bw or nvl_bw, got '" + r.metric + "'");
    r.moe.cluster = cluster;
    r.moe.gpus = static_cast<int>(*gpus);
    r.moe.request.impl = *impl;
    r.moe.request.combine = c.at("phase") == "combine";
    r.moe.request.token_bytes = *bytes;
    // DeepSeek-V3's routing (catalog/models/deepseek-v3.yaml: 256 experts, top-8, 4 of 8
    // groups), the shape every MoE source measured.
    r.moe.request.routing = {.experts = 256,
                             .topk = 8,
                             .groups = 8,
                             .topk_groups = 4,
                             .balanced = c.at("balanced") == "yes"};
    r.moe.tokens = {*tokens};
    return r;
  }
  auto op = collective::parse_op(c.at("op"));
  if (!op) return bad("op: " + op.error().message);
  auto algo = collective::parse_algorithm(c.at("algo"));
  if (!algo) return bad("algo: " + algo.error().message);
  const auto size = parse_size(c.at("size"));
  if (!size)
    return bad("size: expected bytes with an optional K, M or G, got '" + c.at("size") + "'");
  const auto per_domain = parse_int(c.at("per_domain")), channels = parse_int(c.at("channels"));
  if (!per_domain || *per_domain < 0) return bad("per_domain: expected an integer >= 0");
  if (!channels || *channels < 0) return bad("channels: expected an integer >= 0");
  if (c.at("sharp") != "on" && c.at("sharp") != "off")
    return bad("sharp: expected on or off, got '" + c.at("sharp") + "'");
  if (r.metric != "busbw" && r.metric != "max_busbw")
    return bad("metric: expected busbw or max_busbw, got '" + r.metric + "'");
  auto& s = r.sweep;
  s.cluster = cluster;
  s.gpus = static_cast<int>(*gpus);
  s.gpus_per_domain = static_cast<int>(*per_domain);
  s.op = *op;
  s.max_bytes = *size;
  r.max_busbw = r.metric == "max_busbw";
  s.min_bytes = r.max_busbw ? 8 : *size;  // max busbw: over nccl-tests' sizes from 8 B
  s.algorithm = *algo;
  s.model = collective::NetworkModelKind::kFlow;
  s.channels = static_cast<int>(*channels);
  s.sharp = c.at("sharp") == "on";
  return r;
}

struct Prediction {
  double value = 0;
  std::string ran;
};

base::Result<Prediction> predict(const hardware::Catalog& cat, const Run& r) {
  Prediction p;
  if (r.a2a) {
    auto res = collective::run_moe_sweep(cat, r.moe);
    if (!res) return fail(res.error());
    const auto& e = res->rows.front().second;
    p.value = r.metric == "time_us"      ? e.time.base() * 1e6
              : r.metric == "logical_bw" ? e.logical_bw.base() / 1e9
              : r.metric == "rdma_bw"    ? e.rdma_bw.base() / 1e9
                                         : e.nvl_bw.base() / 1e9;
    p.ran = e.bottleneck.empty() ? "latency" : e.bottleneck;
    return p;
  }
  auto res = collective::run_sweep(cat, r.sweep);
  if (!res) return fail(res.error());
  const collective::SweepRow* row = &res->rows.back();
  if (r.max_busbw) {
    for (const auto& x : res->rows)
      if (x.estimate.busbw.base() > row->estimate.busbw.base()) row = &x;
  }
  p.value = row->estimate.busbw.base() / 1e9;
  p.ran = std::string(collective::algorithm_name(row->estimate.algorithm)) + "/" +
          collective::protocol_name(row->estimate.protocol);
  return p;
}

// ---- The files' text --------------------------------------------------------------------------

std::string format_value(double v, const std::string& unit, int digits) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return std::string(b) + (unit.empty() ? "" : " " + unit);
}

/// The [begin, end) of the list entry whose first line is "  - <entry>" in `text`.
base::Result<std::pair<size_t, size_t>> entry_span(const std::string& text,
                                                   const std::string& entry,
                                                   const std::string& path) {
  const std::string head = "\n  - " + entry + "\n";
  const size_t at = text.find(head);
  if (at == std::string::npos || text.find(head, at + 1) != std::string::npos) {
    return fail("expected exactly one list entry '- " + entry + "' (the recipe " + kRecipePath +
                    " names it)",
                path, 0);
  }
  size_t end = at + head.size();
  // The entry's lines are indented deeper than its "- ".
  while (end < text.size() && text.compare(end, 4, "    ") == 0) {
    const size_t nl = text.find('\n', end);
    end = nl == std::string::npos ? text.size() : nl + 1;
  }
  return std::pair{at + 1, end};
}

/// The line "    <field>: {value: V, ..." inside [b, e): the offsets of V.
std::optional<std::pair<size_t, size_t>> value_span(const std::string& text, size_t b, size_t e,
                                                    const std::string& field) {
  const std::string key = "\n    " + field + ": {value: ";
  const size_t at = text.find(key, b - 1);
  if (at == std::string::npos || at >= e) return std::nullopt;
  const size_t v = at + key.size();
  const size_t comma = text.find(',', v);
  if (comma == std::string::npos || comma >= e) return std::nullopt;
  return std::pair{v, comma};
}

/// Sets a figure's value in every entry it names (or drops its line, `value` unset: the model
/// runs without it).
base::Status set_figure(std::string& text, const Figure& g, std::optional<double> value, int digits,
                        const std::string& path) {
  for (const auto& entry : g.entries) {
    auto span = entry_span(text, entry, path);
    if (!span) return fail(span.error());
    auto v = value_span(text, span->first, span->second, g.field);
    if (!v) {
      return fail("entry '- " + entry + "' has no line '" + g.field +
                      ": {value: ...}' (the recipe " + kRecipePath + " names it)",
                  path, 0);
    }
    if (value) {
      double x = *value;
      // The part of a floor that overlaps data cannot exceed the floor.
      const auto under = g.field.find("_overlap");
      if (under != std::string::npos) {
        if (auto f =
                value_span(text, span->first, span->second, g.field.substr(0, under) + "_floor")) {
          x = std::min(x,
                       std::strtod(text.substr(f->first, f->second - f->first).c_str(), nullptr));
        }
      }
      text.replace(v->first, v->second - v->first, format_value(x, g.unit, digits));
    } else {
      const size_t line_start = text.rfind('\n', v->first) + 1;
      const size_t line_end = text.find('\n', v->first);
      text.erase(line_start,
                 line_end == std::string::npos ? std::string::npos : line_end + 1 - line_start);
    }
  }
  return {};
}

/// The two files' texts (catalog/collectives/<file>) by file name.
using Texts = std::map<std::string, std::string>;

/// Every file of a catalog (its hardware entries' files and the files of other layers), so
/// that a copy with some files rewritten loads as the catalog itself does.
std::vector<hardware::CatalogFile> all_files(const hardware::Catalog& cat) {
  std::vector<hardware::CatalogFile> files;
  std::set<std::string> seen;
  auto add = [&](const char* kind, const auto& map) {
    for (const auto& [name, spec] : map) {
      const auto* f = cat.source_file(kind, name);
      if (f == nullptr) continue;
      // Entries record their file as "catalog/<path>".
      const std::string path = f->path.rfind("catalog/", 0) == 0 ? f->path.substr(8) : f->path;
      if (seen.insert(path).second) files.push_back({path, f->text});
    }
  };
  add("gpu", cat.gpus());
  add("cpu", cat.cpus());
  add("nic", cat.nics());
  add("switch", cat.switches());
  add("transceiver", cat.transceivers());
  add("system", cat.systems());
  add("cluster", cat.clusters());
  for (const auto& f : cat.other_files()) files.push_back(f);
  return files;
}

/// The catalog with the two files' texts in place of its own.
base::Result<hardware::Catalog> with_texts(std::span<const hardware::CatalogFile> files,
                                           const Texts& t) {
  std::vector<hardware::CatalogFile> out(files.begin(), files.end());
  for (auto& f : out) {
    for (const auto& [name, text] : t)
      if (f.path == "collectives/" + name) f.text = text;
  }
  return hardware::Catalog::load_files(out);
}

/// The fit of one group of figures (those with the same sources).
struct Group {
  std::vector<size_t> figures;
  std::vector<std::string> sources;
};

std::vector<Group> groups_of(const std::vector<Figure>& figs,
                             const std::set<std::string>& excluded) {
  std::vector<Group> out;
  for (size_t i = 0; i < figs.size(); ++i) {
    std::vector<std::string> use;
    for (const auto& s : figs[i].sources)
      if (!excluded.count(s)) use.push_back(s);
    if (use.empty()) continue;
    std::sort(use.begin(), use.end());
    auto it =
        std::find_if(out.begin(), out.end(), [&](const Group& g) { return g.sources == use; });
    if (it == out.end()) {
      out.push_back({{i}, use});
    } else {
      it->figures.push_back(i);
    }
  }
  return out;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

struct Fitter {
  std::span<const hardware::CatalogFile> files;  ///< every file of the catalog
  const Recipe& recipe;
  const std::vector<Case>& cases;
  const std::vector<Run>& runs;

  /// Fits one group on the `fit` rows of its sources; its figures are set in `texts` at the
  /// file's 4 digits. Lines of the summary go to `summary` when given.
  base::Status fit_group(const Group& g, Texts& texts, std::vector<std::string>* summary) const {
    std::vector<size_t> rows;
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto& c = cases[i];
      if (c.at("role") == "fit" &&
          std::find(g.sources.begin(), g.sources.end(), c.at("source")) != g.sources.end())
        rows.push_back(i);
    }
    std::string names;
    for (const auto& s : g.sources) names += (names.empty() ? "" : ", ") + s;
    if (rows.empty()) return fail("no case of role fit from " + names + " to fit");
    std::vector<Parameter> params;
    for (size_t f : g.figures) {
      const auto& fig = recipe.figures[f];
      params.push_back({.name = fig.label(),
                        .start = fig.start,
                        .lower = fig.lower,
                        .upper = fig.upper,
                        .source = std::string("catalog/") + kRecipePath,
                        .prior = recipe.fit.prior_weight > 0});
    }
    std::vector<Observation> obs;
    for (size_t i : rows) obs.push_back({cases[i].measured, 1, cases[i].at("id")});
    auto set_all = [&](Texts& t, std::span<const double> p, int digits) -> base::Status {
      for (size_t j = 0; j < g.figures.size(); ++j) {
        const auto& fig = recipe.figures[g.figures[j]];
        if (auto st = set_figure(t[fig.file], fig, p[j], digits, "catalog/collectives/" + fig.file);
            !st)
          return st;
      }
      return {};
    };
    // Values outside a figure's bounds (the solver's difference steps at a bound) are evaluated
    // at the bound, as the simplex stage does; a point evaluated before is not run again.
    std::map<std::vector<double>, std::vector<double>> seen;
    ModelFn model = [&](std::span<const double> p) -> base::Result<std::vector<double>> {
      std::vector<double> x(p.begin(), p.end());
      for (size_t j = 0; j < x.size(); ++j)
        x[j] = std::clamp(x[j], params[j].lower, params[j].upper);
      if (auto it = seen.find(x); it != seen.end()) return it->second;
      Texts t = texts;
      if (auto st = set_all(t, x, 12); !st) return fail(st.error());
      auto c = with_texts(files, t);
      if (!c) return fail(c.error());
      std::vector<double> out;
      for (size_t i : rows) {
        auto pr = predict(*c, runs[i]);
        if (!pr) return fail(pr.error());
        out.push_back(pr->value);
      }
      seen.emplace(std::move(x), out);
      return out;
    };
    auto r = fit(params, obs, model, recipe.fit);
    if (!r) return fail("the fit of " + names + ": " + r.error().to_string());
    std::vector<double> values;
    for (const auto& p : r->parameters) values.push_back(p.value);
    if (auto st = set_all(texts, values, 4); !st) return st;
    if (summary) {
      summary->push_back(names + " (" + std::to_string(rows.size()) + " row" +
                         (rows.size() == 1 ? "" : "s") + "): rms log error " +
                         fmt("%.4f", r->rms_before) + " at the starts, " +
                         fmt("%.4f", r->rms_after) + " fitted");
      for (size_t j = 0; j < r->parameters.size(); ++j) {
        const auto& p = r->parameters[j];
        const auto& fig = recipe.figures[g.figures[j]];
        std::string line = "  " + p.name + " = " + format_value(p.value, fig.unit, 4);
        if (p.constrained) {
          line += " +- " + fmt("%.1f", 100 * p.sigma_rel) + "%";
          if (p.at_bound) line += " (at its bound)";
        } else {
          line += " (not constrained: " + p.why_not + ")";
        }
        summary->push_back(line);
      }
    }
    return {};
  }
};

}  // namespace

base::Result<BuiltinAtScale> builtin_at_scale(const hardware::Catalog& catalog,
                                              const std::string& cases_dir) {
  auto recipe = read_recipe(catalog);
  if (!recipe) return fail(recipe.error());
  base::Errors errors;
  std::vector<Case> cases;
  read_cases(cases_dir + "/" + recipe->collectives_cases, false,
             {"id", "source", "role", "cluster", "gpus", "per_domain", "op", "size", "algo",
              "sharp", "channels", "metric", "measured_GBps"},
             cases, errors);
  read_cases(cases_dir + "/" + recipe->a2a_cases, true,
             {"id", "source", "role", "impl", "cluster", "gpus", "phase", "tokens", "token_bytes",
              "balanced", "metric", "measured"},
             cases, errors);
  BuiltinAtScale out;
  for (const auto& name : {recipe->collectives_cases, recipe->a2a_cases}) {
    const std::string path = cases_dir + "/" + name;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    const auto records =
        std::count_if(cases.begin(), cases.end(), [&](const Case& c) { return c.file == path; });
    out.inputs.push_back({.path = path,
                          .sha256 = sha256_hex(text.str()),
                          .format = Format::kAtScaleCases,
                          .records = static_cast<int>(records)});
  }
  std::vector<Run> runs;
  for (const auto& c : cases) {
    auto r = run_of(c, cases_dir);
    if (!r) {
      errors.add(r.error());
      continue;
    }
    runs.push_back(std::move(*r));
  }
  if (!errors.empty()) return fail(errors.combined());

  Texts texts;
  for (const auto& f : catalog.other_files()) {
    for (const char* name : {"at-scale.yaml", "moe-a2a.yaml"})
      if (f.path == std::string("collectives/") + name) texts[name] = f.text;
  }
  for (const char* name : {"at-scale.yaml", "moe-a2a.yaml"}) {
    if (!texts.count(name)) return fail(std::string("the catalog has no collectives/") + name);
  }
  // Every figure at its start, whatever the file holds: the fit depends on the recipe alone.
  for (const auto& g : recipe->figures) {
    if (auto st = set_figure(texts[g.file], g, g.start, 12, "catalog/collectives/" + g.file); !st)
      return fail(st.error());
  }
  const auto files = all_files(catalog);
  const Fitter fitter{files, *recipe, cases, runs};
  for (const auto& g : groups_of(recipe->figures, {})) {
    if (auto st = fitter.fit_group(g, texts, &out.summary); !st) return fail(st.error());
  }
  // The written files must read back as the collective layer reads the catalog.
  auto fitted_or = with_texts(files, texts);
  if (!fitted_or) {
    return fail("internal error: the fitted files do not load: " + fitted_or.error().to_string());
  }
  const hardware::Catalog& fitted = *fitted_or;
  if (auto cal = collective::Calibration::load(fitted); !cal) {
    return fail("internal error: the fitted at-scale.yaml does not read back: " +
                cal.error().to_string());
  }
  if (auto a2a = collective::A2aParams::load(fitted); !a2a) {
    return fail("internal error: the fitted moe-a2a.yaml does not read back: " +
                a2a.error().to_string());
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    auto p = predict(fitted, runs[i]);
    if (!p) return fail(base::Error{p.error().message, c.file, c.line});
    AtScaleCaseResult r{.id = c.at("id"),
                        .source = c.at("source"),
                        .role = c.at("role"),
                        .ran = p->ran,
                        .measured = c.measured,
                        .predicted = p->value};
    if (c.a2a) {
      r.what = c.at("impl") + " " + c.at("phase") + " " + c.at("metric");
      r.size = c.at("tokens") + " tok x " + c.at("token_bytes") + " B";
      r.unit = c.at("metric") == "time_us" ? " us" : " GB/s";
    } else {
      r.what = c.at("op") + " busbw" + (c.at("metric") == "max_busbw" ? " (max)" : "");
      r.size = c.at("size");
      r.unit = " GB/s";
    }
    out.cases.push_back(r);
  }
  // Leave one source out: the figures only it sets are dropped, the ones it shares refitted.
  std::set<std::string> fitting;
  for (const auto& g : recipe->figures) fitting.insert(g.sources.begin(), g.sources.end());
  for (const auto& src : fitting) {
    Texts t = texts;
    for (const auto& g : recipe->figures) {
      bool other = false;
      for (const auto& s : g.sources) other = other || s != src;
      if (!other) {
        if (auto st = set_figure(t[g.file], g, std::nullopt, 4, "catalog/collectives/" + g.file);
            !st)
          return fail(st.error());
      }
    }
    for (const auto& g : groups_of(recipe->figures, {src})) {
      const auto all = groups_of(recipe->figures, {});
      const bool unchanged = std::any_of(all.begin(), all.end(), [&](const Group& a) {
        return a.sources == g.sources && a.figures == g.figures;
      });
      if (unchanged) continue;  // untouched by leaving `src` out: the values fitted above
      if (auto st = fitter.fit_group(g, t, nullptr); !st) return fail(st.error());
    }
    auto without = with_texts(files, t);
    if (!without) return fail(without.error());
    for (size_t i = 0; i < cases.size(); ++i) {
      if (cases[i].at("source") != src) continue;
      auto p = predict(*without, runs[i]);
      if (!p) return fail(base::Error{p.error().message, cases[i].file, cases[i].line});
      out.cases[i].has_loso = true;
      out.cases[i].loso_predicted = p->value;
    }
  }
  for (const auto& [name, text] : texts) out.files.push_back({"catalog/collectives/" + name, text});
  return out;
}

std::vector<std::string> at_scale_table(const BuiltinAtScale& b) {
  std::vector<std::string> out;
  out.push_back(
      "| case | source | role | what | size | algorithm / bottleneck | measured | predicted | "
      "error | LOSO error |");
  out.push_back("|---|---|---|---|---|---|---|---|---|---|");
  std::vector<double> all, fitted, checks, loso;
  bool degraded_below = true;
  for (const auto& c : b.cases) {
    const double err = c.predicted / c.measured - 1;
    if (c.role == "degraded") {
      degraded_below = degraded_below && err > 0;
    } else {
      all.push_back(std::abs(err));
    }
    if (c.role == "check") checks.push_back(std::abs(err));
    if (c.role == "fit") fitted.push_back(std::abs(err));
    std::string l;
    if (c.has_loso) {
      const double e = c.loso_predicted / c.measured - 1;
      loso.push_back(std::abs(e));
      l = fmt("%+.1f%%", 100 * e);
    }
    char m[32];
    std::snprintf(m, sizeof m, "%g", c.measured);
    out.push_back("| " + c.id + " | " + c.source + " | " + c.role + " | " + c.what + " | " +
                  c.size + " | " + c.ran + " | " + m + c.unit + " | " + fmt("%.1f", c.predicted) +
                  " | " + fmt("%+.1f%%", 100 * err) + " | " + l + " |");
  }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  auto worst = [](const std::vector<double>& v) {
    return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
  };
  out.push_back("");
  out.push_back("all " + std::to_string(all.size()) + " rows (degraded excluded): median |error| " +
                fmt("%.1f%%", 100 * median(all)) + ", worst " + fmt("%.1f%%", 100 * worst(all)) +
                "; fitted rows (" + std::to_string(fitted.size()) + "): median " +
                fmt("%.1f%%", 100 * median(fitted)) + ", worst " +
                fmt("%.1f%%", 100 * worst(fitted)) + "; held-out rows (" +
                std::to_string(checks.size()) + "): median " + fmt("%.1f%%", 100 * median(checks)) +
                ", worst " + fmt("%.1f%%", 100 * worst(checks)) +
                "; rows of the fitting sources with their " + "source left out (" +
                std::to_string(loso.size()) + "): median " + fmt("%.1f%%", 100 * median(loso)) +
                "; degraded rows all below the prediction: " + (degraded_below ? "yes" : "NO"));
  return out;
}

}  // namespace clustertwin::calibration
