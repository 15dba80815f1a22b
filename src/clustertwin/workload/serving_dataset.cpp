// Request-length datasets and seeded sampling; model and sources in serving_dataset.h and
// docs/models/inference.md.

#include "clustertwin/workload/serving_dataset.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>

#include "clustertwin/base/text.h"

namespace clustertwin::workload {
namespace {

using base::fail;
using config::Reader;
using Need = config::Reader::Need;

std::optional<double> to_number(const std::string& s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<LengthDistribution> read_lengths(Reader& r, int64_t max) {
  LengthDistribution d;
  d.max = max;
  d.mean = r.number_figure("mean", Need::kRequired, 1.0).value_or(0);
  auto pct = r.strings("percentiles");
  auto tok = r.strings("tokens");
  if (auto src = r.string("source")) {
    const auto& sources = r.context().sources;
    if (auto it = sources.find(*src); it == sources.end()) {
      r.error("unknown source '" + *src + "': add it to the file's 'sources:' table", "source");
    } else {
      r.context().provenance.emplace_back(r.path() + ".percentiles", it->second);
    }
  }
  r.allow("note");
  if (!pct || !tok) return std::nullopt;
  if (pct->size() != tok->size() || pct->size() < 2) {
    r.error("expected as many percentiles as tokens (at least 2), got " +
                std::to_string(pct->size()) + " and " + std::to_string(tok->size()),
            "tokens");
    return std::nullopt;
  }
  bool ok = true;
  for (size_t i = 0; i < pct->size(); ++i) {
    auto p = to_number((*pct)[i]);
    auto t = to_number((*tok)[i]);
    if (!p || *p < 0 || *p > 100 || (!d.cdf.empty() && *p / 100.0 <= d.cdf.back())) {
      r.error("expected increasing percentiles from 0 to 100, got '" + (*pct)[i] + "'",
              "percentiles");
      ok = false;
      break;
    }
    if (!t || *t < 1 || (!d.tokens.empty() && *t < d.tokens.back())) {
      r.error("expected non-decreasing token counts >= 1, got '" + (*tok)[i] + "'", "tokens");
      ok = false;
      break;
    }
    d.cdf.push_back(*p / 100.0);
    d.tokens.push_back(*t);
  }
  if (ok && (d.cdf.front() != 0.0 || d.cdf.back() != 1.0)) {
    r.error("expected the percentiles to start at 0 and end at 100", "percentiles");
    ok = false;
  }
  if (ok && max > 0 && d.tokens.front() > static_cast<double>(max)) {
    r.error("the smallest length " + std::to_string(static_cast<int64_t>(d.tokens.front())) +
                " is above the maximum " + std::to_string(max),
            "tokens");
    ok = false;
  }
  if (!ok) return std::nullopt;
  return d;
}

std::optional<LatencyLimits> read_limits(Reader& r) {
  LatencyLimits l;
  auto ttft = r.figure<base::Seconds>("ttft");
  auto tpot = r.figure<base::Seconds>("tpot");
  r.finish();
  if (!ttft || !tpot) return std::nullopt;
  l.ttft = *ttft;
  l.tpot = *tpot;
  return l;
}

// Standard normal CDF.
double phi(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

}  // namespace

const char* scenario_name(ServingScenario s) {
  switch (s) {
    case ServingScenario::kOffline:
      return "offline";
    case ServingScenario::kServer:
      return "server";
    case ServingScenario::kInteractive:
      return "interactive";
  }
  return "?";
}

std::optional<ServingScenario> parse_scenario(std::string_view s) {
  for (auto x :
       {ServingScenario::kOffline, ServingScenario::kServer, ServingScenario::kInteractive}) {
    if (s == scenario_name(x)) return x;
  }
  return std::nullopt;
}

double LengthDistribution::knot_mean() const {
  double m = 0;
  for (size_t i = 1; i < cdf.size(); ++i) {
    m += (cdf[i] - cdf[i - 1]) * 0.5 * (tokens[i] + tokens[i - 1]);
  }
  return m;
}

double LengthDistribution::scale() const {
  const double k = knot_mean();
  return mean > 0 && k > 0 ? mean / k : 1.0;
}

int64_t LengthDistribution::quantile(double u) const {
  if (cdf.empty()) return 1;
  u = std::clamp(u, 0.0, 1.0);
  const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
  double v = tokens.back();
  if (it != cdf.end()) {
    const size_t i = static_cast<size_t>(it - cdf.begin());
    const double f = (u - cdf[i - 1]) / (cdf[i] - cdf[i - 1]);
    v = tokens[i - 1] + f * (tokens[i] - tokens[i - 1]);
  }
  const auto t = static_cast<int64_t>(std::llround(v * scale()));
  return std::clamp<int64_t>(t, 1, max > 0 ? max : INT64_MAX);
}

std::optional<LatencyLimits> Dataset::limits(ServingScenario s) const {
  switch (s) {
    case ServingScenario::kOffline:
      return std::nullopt;
    case ServingScenario::kServer:
      return server;
    case ServingScenario::kInteractive:
      return interactive;
  }
  return std::nullopt;
}

base::Result<Dataset> parse_dataset_yaml(std::string_view text, const std::string& file) {
  auto doc = config::parse_document(text, file);
  if (!doc) return fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  Reader top(doc->root, ctx);
  top.read_sources();
  Dataset d;
  auto r = top.child("dataset");
  if (!r) return fail(ctx.errors.combined());
  d.name = r->string("name").value_or("");
  d.display_name = r->string("display_name", Need::kOptional).value_or(d.name);
  d.model = r->string("model").value_or("");
  r->allow("description");
  d.samples = r->integer_figure("samples", Need::kRequired, 1).value_or(0);
  const int64_t max_in = r->integer_figure("max_input", Need::kRequired, 1).value_or(0);
  const int64_t max_out = r->integer_figure("max_output", Need::kRequired, 1).value_or(0);
  if (auto in = r->child("input")) {
    if (auto x = read_lengths(*in, max_in)) d.input = *x;
    in->finish();
  }
  if (auto out = r->child("output")) {
    if (auto x = read_lengths(*out, max_out)) d.output = *x;
    out->finish();
  }
  d.correlation = r->number_figure("correlation", Need::kOptional, -1.0, 1.0).value_or(0.0);
  if (auto lim = r->child("limits", Need::kOptional)) {
    if (auto s = lim->child("server", Need::kOptional)) d.server = read_limits(*s);
    if (auto s = lim->child("interactive", Need::kOptional)) d.interactive = read_limits(*s);
    lim->finish();
  }
  r->finish();
  top.finish();
  if (!ctx.errors.empty()) return fail(ctx.errors.combined());
  d.provenance = std::move(ctx.provenance);
  return d;
}

base::Result<std::vector<Dataset>> catalog_datasets(const hardware::Catalog& catalog) {
  std::vector<Dataset> out;
  base::Errors errors;
  for (const auto& f : catalog.other_files()) {
    if (f.path.rfind("datasets/", 0) != 0) continue;
    auto d = parse_dataset_yaml(f.text, "catalog/" + f.path);
    if (!d) {
      errors.add(d.error());
      continue;
    }
    out.push_back(std::move(*d));
  }
  std::sort(out.begin(), out.end(),
            [](const Dataset& a, const Dataset& b) { return a.name < b.name; });
  if (!errors.empty()) return fail(errors.combined());
  return out;
}

base::Result<Dataset> find_dataset(const hardware::Catalog& catalog, std::string_view name) {
  auto all = catalog_datasets(catalog);
  if (!all) return fail(all.error());
  std::vector<std::string> names;
  for (const auto& d : *all) {
    if (d.name == name) return d;
    names.push_back(d.name);
  }
  return fail("unknown dataset '" + std::string(name) + "'" + base::did_you_mean(name, names) +
              " (or give fixed lengths with {isl} and {osl})");
}

base::Result<Dataset> dataset_for_model(const hardware::Catalog& catalog, std::string_view model) {
  auto all = catalog_datasets(catalog);
  if (!all) return fail(all.error());
  std::vector<std::string> names;
  for (const auto& d : *all) {
    if (d.model == model) return d;
    names.push_back(d.name);
  }
  return fail("no dataset for model '" + std::string(model) +
              "': give one with {dataset} (known: " + base::join(names) +
              ") or fixed lengths with {isl} and {osl}");
}

Dataset fixed_dataset(int64_t isl, int64_t osl) {
  Dataset d;
  d.name = "fixed";
  d.display_name = "fixed lengths: " + std::to_string(isl) + " in, " + std::to_string(osl) + " out";
  d.samples = 1;
  const auto x = static_cast<double>(isl);
  const auto y = static_cast<double>(osl);
  d.input = {.cdf = {0.0, 1.0}, .tokens = {x, x}, .mean = x, .max = isl};
  d.output = {.cdf = {0.0, 1.0}, .tokens = {y, y}, .mean = y, .max = osl};
  return d;
}

double Rng::normal() {
  double u1 = uniform();
  while (u1 <= 0.0) u1 = uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double Rng::exponential(double rate) {
  double u = uniform();
  return -std::log1p(-u) / rate;
}

std::vector<RequestLengths> sample_requests(const Dataset& d, int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<RequestLengths> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(n, 0)));
  const double rho = std::clamp(d.correlation, -0.999, 0.999);
  const double rest = std::sqrt(1.0 - rho * rho);
  for (int64_t i = 0; i < n; ++i) {
    const double z1 = rng.normal();
    const double z2 = rho * z1 + rest * rng.normal();
    out.push_back({.input = static_cast<int32_t>(d.input.quantile(phi(z1))),
                   .output = static_cast<int32_t>(d.output.quantile(phi(z2)))});
  }
  return out;
}

}  // namespace clustertwin::workload
