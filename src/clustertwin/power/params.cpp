#include "clustertwin/power/params.h"

#include <algorithm>
#include <sstream>

#include "clustertwin/base/text.h"

namespace clustertwin::power {
namespace {

using config::Reader;
using Need = Reader::Need;

config::Provenance provenance_under(const config::ReadContext& ctx, const std::string& prefix) {
  config::Provenance out;
  for (const auto& [path, src] : ctx.provenance) {
    if (path.rfind(prefix, 0) == 0) out.emplace_back(path, src);
  }
  return out;
}

// "0.1:0.9 0.5:0.95 1:0.93" -> sorted (load, efficiency) points.
std::optional<EfficiencyCurve> parse_curve(const std::string& text, Reader& r,
                                           std::string_view key) {
  EfficiencyCurve c;
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    const auto colon = item.find(':');
    double load = -1, eff = -1;
    try {
      if (colon != std::string::npos) {
        load = std::stod(item.substr(0, colon));
        eff = std::stod(item.substr(colon + 1));
      }
    } catch (...) {
      load = -1;
    }
    if (!(load >= 0 && load <= 2 && eff > 0.3 && eff <= 1)) {
      r.error(
          "expected load:efficiency pairs such as '0.5:0.95' (load 0-2, efficiency 0.3-1), got '" +
              item + "'",
          key);
      return std::nullopt;
    }
    c.points.emplace_back(load, eff);
  }
  if (c.points.empty()) {
    r.error("expected at least one load:efficiency pair", key);
    return std::nullopt;
  }
  std::sort(c.points.begin(), c.points.end());
  return c;
}

// "GB300-High:5600W GB300-Med:3200W" -> (name, watts).
std::vector<std::pair<std::string, Watts>> parse_policies(const std::string& text, Reader& r,
                                                          std::string_view key) {
  std::vector<std::pair<std::string, Watts>> out;
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) {
      r.error("expected NAME:POWER pairs such as 'GB300-High:5600W', got '" + item + "'", key);
      continue;
    }
    auto w = base::parse<Watts>(item.substr(colon + 1));
    if (!w) {
      r.error("policy '" + item.substr(0, colon) + "': " + w.error().message, key);
      continue;
    }
    out.emplace_back(item.substr(0, colon), *w);
  }
  return out;
}

void read_gpus(Reader& top, config::ReadContext& ctx,
               std::map<std::string, GpuPowerParams, std::less<>>& out) {
  auto body = top.child("power_gpus");
  if (!body) return;
  for (const auto& name : body->keys()) {
    auto g = body->child(name);
    if (!g) continue;
    GpuPowerParams p;
    p.gpu = name;
    p.floor = g->figure<Watts>("floor").value_or(Watts{});
    p.limit_margin = g->number_figure("limit_margin", Need::kRequired, 0.8, 1.0).value_or(0.98);
    p.compute_saturation =
        g->number_figure("compute_saturation", Need::kRequired, 0.01, 1.0).value_or(0.4);
    p.exponent = g->number_figure("exponent", Need::kRequired, 0.1, 3.0).value_or(0.75);
    p.memory_anchor = g->figure<Watts>("memory_anchor").value_or(Watts{});
    p.link_power = g->figure<Watts>("link_power", Need::kRequired, true).value_or(Watts{});
    p.min_limit = g->figure<Watts>("min_limit").value_or(Watts{});
    p.max_limit = g->figure<Watts>("max_limit").value_or(Watts{});
    p.dvfs_exponent = g->number_figure("dvfs_exponent", Need::kRequired, 1.0, 6.0).value_or(3);
    p.max_clock_MHz = g->number_figure("max_clock_MHz", Need::kRequired, 100, 5000).value_or(0);
    p.sustained_clock_MHz =
        g->number_figure("sustained_clock_MHz", Need::kRequired, 100, 5000).value_or(0);
    if (p.sustained_clock_MHz > p.max_clock_MHz) {
      g->error("sustained_clock_MHz exceeds max_clock_MHz", "sustained_clock_MHz");
    }
    if (!(p.floor < p.memory_anchor)) g->error("memory_anchor must exceed floor", "memory_anchor");
    if (!(p.min_limit < p.max_limit)) g->error("min_limit must be below max_limit", "min_limit");
    g->finish();
    p.provenance = provenance_under(ctx, g->path());
    out[name] = std::move(p);
  }
  body->finish();
}

void read_systems(Reader& top, config::ReadContext& ctx,
                  std::map<std::string, SystemPowerParams, std::less<>>& out) {
  auto body = top.child("power_systems");
  if (!body) return;
  for (const auto& name : body->keys()) {
    auto s = body->child(name);
    if (!s) continue;
    SystemPowerParams p;
    p.system = name;
    p.systems_per_rack =
        static_cast<int>(s->integer_figure("systems_per_rack", Need::kRequired, 1, 64).value_or(1));
    p.liquid = s->choice("cooling", {"liquid", "air"}).value_or("air") == "liquid";
    p.liquid_fraction = s->number_figure("liquid_fraction", Need::kRequired, 0.0, 1.0).value_or(0);
    p.cpu_idle = s->figure<Watts>("cpu_idle").value_or(Watts{});
    p.cpu_training_load =
        s->number_figure("cpu_training_load", Need::kRequired, 0.0, 1.0).value_or(0.85);
    p.fans_max = s->figure<Watts>("fans_max", Need::kRequired, true).value_or(Watts{});
    p.fan_min = s->number_figure("fan_min", Need::kRequired, 0.0, 1.0).value_or(0.25);
    p.psu_loss = s->figure<Watts>("psu_loss", Need::kRequired, true).value_or(Watts{});
    p.rack_misc = s->figure<Watts>("rack_misc", Need::kRequired, true).value_or(Watts{});
    if (auto e = s->figure_entry("rated_node_power", Need::kOptional)) {
      p.rated_node_power = e->quantity<Watts>("value").value_or(Watts{});
      p.rated_at_input = e->choice("at", {"dc", "psu_input"}).value_or("dc") == "psu_input";
      e->finish();
    }
    if (auto psu = s->child("psu")) {
      p.psu.rating = psu->figure<Watts>("rating").value_or(Watts{});
      p.psu.units =
          static_cast<int>(psu->integer_figure("units", Need::kRequired, 1, 1000).value_or(1));
      p.psu.redundant_units = static_cast<int>(
          psu->integer_figure("redundant_units", Need::kRequired, 0, 1000).value_or(0));
      if (p.psu.redundant_units >= p.psu.units) {
        psu->error("redundant_units must be fewer than units", "redundant_units");
      }
      p.psu.constant_loss =
          psu->figure<Watts>("constant_loss", Need::kRequired, true).value_or(Watts{});
      if (auto e = psu->figure_entry("efficiency")) {
        if (auto text = e->string("value")) {
          if (auto c = parse_curve(*text, *e, "value")) p.psu.efficiency = *c;
        }
        e->finish();
      }
      psu->finish();
    }
    if (auto e = s->figure_entry("node_policies", Need::kOptional)) {
      if (auto text = e->string("value")) p.node_policies = parse_policies(*text, *e, "value");
      e->finish();
    }
    if (auto sm = s->child("smoothing", Need::kOptional)) {
      auto& d = p.smoothing;
      d.supported = sm->boolean("supported").value_or(false);
      d.storage_per_gpu =
          sm->figure<Joules>("storage_per_gpu", Need::kRequired, true).value_or(Joules{});
      d.storage_efficiency =
          sm->number_figure("storage_efficiency", Need::kRequired, 0.5, 1.0).value_or(0.95);
      d.floor = sm->number_figure("floor", Need::kRequired, 0.0, 0.9).value_or(0.6);
      d.ramp_up_W_per_s =
          sm->number_figure("ramp_up_W_per_s", Need::kRequired, 1e-3, 1e9).value_or(2000);
      d.ramp_down_W_per_s =
          sm->number_figure("ramp_down_W_per_s", Need::kRequired, 1e-3, 1e9).value_or(500);
      d.hysteresis = sm->figure<Seconds>("hysteresis", Need::kRequired, true).value_or(Seconds{});
      sm->finish();
    }
    s->finish();
    p.provenance = provenance_under(ctx, s->path());
    out[name] = std::move(p);
  }
  body->finish();
}

void read_facility(Reader& top, config::ReadContext& ctx, FacilityParams& f) {
  auto body = top.child("power_facility");
  if (!body) return;
  if (auto cs = body->child("coolants")) {
    for (const auto& name : cs->keys()) {
      auto c = cs->child(name);
      if (!c) continue;
      CoolantParams p;
      p.name = name;
      p.density_kg_per_L =
          c->number_figure("density_kg_per_L", Need::kRequired, 0.5, 2.0).value_or(1.0);
      p.specific_heat_kJ_per_kgK =
          c->number_figure("specific_heat_kJ_per_kgK", Need::kRequired, 1.0, 5.0).value_or(4.18);
      p.min_supply_C = c->number_figure("min_supply_C", Need::kRequired, -20, 100).value_or(15);
      p.max_supply_C = c->number_figure("max_supply_C", Need::kRequired, -20, 100).value_or(45);
      c->finish();
      f.coolants[name] = p;
    }
    cs->finish();
  }
  f.coolant = body->string("coolant").value_or("pg25");
  if (!f.coolants.contains(f.coolant))
    body->error("coolant '" + f.coolant + "' is not in coolants", "coolant");
  f.supply_C = body->number_figure("supply_C", Need::kRequired, -20, 100).value_or(25);
  f.delta_T_K = body->number_figure("delta_T_K", Need::kRequired, 1, 40).value_or(10);
  f.cdu_capacity = body->figure<Watts>("cdu_capacity").value_or(Watts{});
  f.cdu_design_pump_power = body->figure<Watts>("cdu_design_pump_power").value_or(Watts{});
  f.distribution_efficiency =
      body->number_figure("distribution_efficiency", Need::kRequired, 0.5, 1).value_or(0.97);
  f.heat_rejection_per_W =
      body->number_figure("heat_rejection_per_W", Need::kRequired, 0, 1).value_or(0.04);
  f.free_cooling_min_supply_C =
      body->number_figure("free_cooling_min_supply_C", Need::kRequired, -20, 100).value_or(22);
  f.chiller_cop = body->number_figure("chiller_cop", Need::kRequired, 0.5, 20).value_or(5);
  f.air_cooling_per_W =
      body->number_figure("air_cooling_per_W", Need::kRequired, 0, 2).value_or(0.25);
  f.facility_pumps_per_W =
      body->number_figure("facility_pumps_per_W", Need::kRequired, 0, 1).value_or(0.01);
  f.auxiliary_fraction =
      body->number_figure("auxiliary_fraction", Need::kRequired, 0, 1).value_or(0.02);
  f.switch_psu_efficiency =
      body->number_figure("switch_psu_efficiency", Need::kRequired, 0.5, 1).value_or(0.94);
  body->finish();
  f.provenance = ctx.provenance;
}

}  // namespace

double EfficiencyCurve::at(double load) const {
  if (points.empty()) return 1.0;
  if (load <= points.front().first) return points.front().second;
  if (load >= points.back().first) return points.back().second;
  for (size_t i = 1; i < points.size(); ++i) {
    if (load <= points[i].first) {
      const auto [x0, y0] = points[i - 1];
      const auto [x1, y1] = points[i];
      return y0 + (y1 - y0) * (load - x0) / (x1 - x0);
    }
  }
  return points.back().second;
}

base::Result<PowerCatalog> PowerCatalog::parse(std::string_view gpus, std::string_view systems,
                                               std::string_view facility) {
  PowerCatalog cat;
  base::Errors errors;
  struct Part {
    std::string_view text;
    const char* file;
    int which;
  };
  const Part parts[] = {{gpus, "catalog/power/gpus.yaml", 0},
                        {systems, "catalog/power/systems.yaml", 1},
                        {facility, "catalog/power/facility.yaml", 2}};
  for (const auto& part : parts) {
    auto doc = config::parse_document(part.text, part.file);
    if (!doc) {
      errors.add(doc.error());
      continue;
    }
    config::ReadContext ctx{.file = doc->file};
    Reader top(doc->root, ctx);
    top.read_sources();
    if (part.which == 0) read_gpus(top, ctx, cat.gpus_);
    if (part.which == 1) read_systems(top, ctx, cat.systems_);
    if (part.which == 2) read_facility(top, ctx, cat.facility_);
    top.finish();
    for (auto& e : ctx.errors.items) errors.add(std::move(e));
  }
  if (!errors.empty()) return base::fail(errors.combined());
  return cat;
}

base::Result<PowerCatalog> PowerCatalog::load(const hardware::Catalog& catalog) {
  const std::string* texts[3] = {nullptr, nullptr, nullptr};
  const char* names[3] = {"power/gpus.yaml", "power/systems.yaml", "power/facility.yaml"};
  for (const auto& f : catalog.other_files()) {
    for (int i = 0; i < 3; ++i) {
      if (f.path == names[i]) texts[i] = &f.text;
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (!texts[i])
      return base::fail(std::string("the catalog has no ") + names[i] + " (power parameters)");
  }
  return parse(*texts[0], *texts[1], *texts[2]);
}

base::Result<const GpuPowerParams*> PowerCatalog::gpu(std::string_view name) const {
  if (auto it = gpus_.find(name); it != gpus_.end()) return &it->second;
  std::vector<std::string> known;
  for (const auto& [k, v] : gpus_) known.push_back(k);
  return base::fail("no power parameters for gpu '" + std::string(name) +
                    "' in catalog/power/gpus.yaml" + base::did_you_mean(name, known));
}

base::Result<const SystemPowerParams*> PowerCatalog::system(std::string_view name) const {
  if (auto it = systems_.find(name); it != systems_.end()) return &it->second;
  std::vector<std::string> known;
  for (const auto& [k, v] : systems_) known.push_back(k);
  return base::fail("no power parameters for system '" + std::string(name) +
                    "' in catalog/power/systems.yaml" + base::did_you_mean(name, known));
}

}  // namespace clustertwin::power
