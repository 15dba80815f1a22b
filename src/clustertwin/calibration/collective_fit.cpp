#include "clustertwin/calibration/collective_fit.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "clustertwin/calibration/profile_text.h"
#include "clustertwin/collective/group.h"

namespace clustertwin::calibration {
using base::fail;
using collective::Algorithm;
using collective::Op;
using collective::Protocol;

namespace {

/// Line fields a parameter can set.
enum class Field { kBase, kHop, kEfficiency, kSmallN, kRamp, kFill, kNetEfficiency, kNetHop };

const char* field_name(Field f) {
  switch (f) {
    case Field::kBase:
      return "base";
    case Field::kHop:
      return "hop";
    case Field::kEfficiency:
      return "efficiency";
    case Field::kSmallN:
      return "small_n";
    case Field::kRamp:
      return "ramp";
    case Field::kFill:
      return "fill";
    case Field::kNetEfficiency:
      return "efficiency_scale";
    case Field::kNetHop:
      return "hop_scale";
  }
  return "?";
}

/// Where a parameter goes: one line's field, or (line empty) a field of every line.
struct Slot {
  std::vector<std::string> lines;  ///< {"all_reduce/ring/simple"}; empty for the net.* ones
  Field field;
};

double field_value(const collective::Line& l, Field f) {
  switch (f) {
    case Field::kBase:
      return l.base_us;
    case Field::kHop:
      return l.hop_us;
    case Field::kEfficiency:
      return l.efficiency;
    case Field::kSmallN:
      return l.small_n;
    case Field::kRamp:
      return l.ramp;
    case Field::kFill:
      return l.fill_us;
    case Field::kNetEfficiency:
      return l.net_efficiency;
    case Field::kNetHop:
      return l.net_hop_us;
  }
  return 0;
}

void set_field(collective::LinePatch& p, Field f, double v) {
  switch (f) {
    case Field::kBase:
      p.base_us = v;
      break;
    case Field::kHop:
      p.hop_us = v;
      break;
    case Field::kEfficiency:
      p.efficiency = v;
      break;
    case Field::kSmallN:
      p.small_n = v;
      break;
    case Field::kRamp:
      p.ramp = v;
      break;
    case Field::kFill:
      p.fill_us = v;
      break;
    case Field::kNetEfficiency:
      p.net_efficiency = v;
      break;
    case Field::kNetHop:
      p.net_hop_us = v;
      break;
  }
}

/// Bounds of each field: physical limits, wide enough never to decide a fit. Efficiencies stop
/// at what the protocol's wire format carries (LL: 4 data bytes per 8; LL128: 120 per 128).
std::pair<double, double> bounds(Field f, Protocol p) {
  const double cap = p == Protocol::kLL ? 0.5 : p == Protocol::kLL128 ? 120.0 / 128 : 1.0;
  switch (f) {
    case Field::kBase:
      return {0.1, 500};
    case Field::kHop:
      return {0.01, 100};
    case Field::kEfficiency:
      return {0.01, cap};
    case Field::kSmallN:
      return {0.001, 1.9};
    case Field::kRamp:
      return {0.001, 100};
    case Field::kFill:
      return {0.1, 5000};
    case Field::kNetEfficiency:
      return {0.02, 2.0};
    case Field::kNetHop:
      return {0.02, 50};
  }
  return {0.01, 100};
}

/// A start inside the bounds: a catalog value of 0 (no small-ring penalty, no fill) starts at
/// a small positive value, since the fit works on log(parameter).
double start_value(double v, Field f, Protocol p) {
  auto [lo, hi] = bounds(f, p);
  const double floor = f == Field::kSmallN ? 0.01 : f == Field::kRamp ? 0.05 : lo * 4;
  return std::clamp(std::max(v, floor), lo, hi);
}

std::vector<std::string> tokens(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += c;
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

}  // namespace

bool parameter_matches(std::string_view pattern, std::string_view name) {
  if (pattern == name) return true;
  if (pattern.substr(0, 2) != "*/") return false;
  const auto s = name.find('/');
  return s != std::string_view::npos && name.substr(s + 1) == pattern.substr(2);
}

base::Result<CollectiveFit> fit_collectives(const hardware::Catalog& catalog,
                                            const hardware::ClusterSpec& cluster,
                                            const topology::Topology& topo,
                                            const collective::Calibration& base,
                                            std::span<const CollectiveRun> runs,
                                            const CollectiveFitOptions& o) {
  if (runs.empty()) return fail("no nccl-tests runs to fit");
  auto sys = catalog.system(cluster.system);
  if (!sys) return fail(sys.error());
  const auto& system = **sys;
  CollectiveFit out;
  out.gpu = system.gpu;
  const int cluster_gpus = topo.gpus();
  const int cluster_nodes = cluster_gpus / std::max(1, system.gpus_per_node);

  // Every run against the cluster, all errors at once.
  base::Errors errors;
  std::vector<collective::Group> groups;
  std::vector<collective::Dtype> dtypes;
  for (const auto& r : runs) {
    const std::string where = std::to_string(r.ranks) + " ranks" +
                              (r.nodes > 0 ? " on " + std::to_string(r.nodes) + " hosts" : "");
    if (r.ranks > cluster_gpus) {
      errors.add({"the log has " + where + " but cluster " + cluster.name + " has " +
                      std::to_string(cluster_gpus) + " GPUs: give the cluster it ran on (e.g. " +
                      system.name + "*" +
                      std::to_string((r.ranks + system.gpus() - 1) / system.gpus()) + ")",
                  r.file, r.line});
      continue;
    }
    if (r.per_node > system.gpus_per_node) {
      errors.add({"the log has " + std::to_string(r.per_node) + " ranks on one host but a " +
                      system.name + " node has " + std::to_string(system.gpus_per_node) + " GPUs",
                  r.file, r.line});
      continue;
    }
    if (r.nodes > cluster_nodes) {
      errors.add({"the log has " + where + " but cluster " + cluster.name + " has " +
                      std::to_string(cluster_nodes) + " nodes",
                  r.file, r.line});
      continue;
    }
    if (!r.device.empty()) {
      auto t = tokens(r.device);
      if (std::find(t.begin(), t.end(), system.gpu) == t.end()) {
        errors.add({"the log ran on '" + r.device + "' but the cluster's GPU is " + system.gpu +
                        " (calibrate on a cluster of the GPU that was measured)",
                    r.file, r.line});
        continue;
      }
      if (out.device.empty()) out.device = r.device;
    }
    // Hosts are NVLink domains on HGX-style nodes; on rack systems (NVL72) the hosts are the
    // rack's trays and NCCL (MNNVL) treats the rack as one domain, so the domains are filled.
    const int per_domain = system.nodes == 1 && r.nodes > 0 ? r.per_node : 0;
    auto g = collective::place_first(topo, r.ranks, per_domain);
    if (!g) {
      errors.add({g.error().message, r.file, r.line});
      continue;
    }
    auto dt = collective::parse_dtype(r.dtype);
    if (!dt) {
      errors.add({dt.error().message, r.file, r.line});
      continue;
    }
    groups.push_back(*g);
    dtypes.push_back(*dt);
  }
  if (!errors.empty()) return fail(errors.combined());

  // The candidate lines of every run, as `auto` considers them, and the parameters.
  collective::CollectiveModel probe(
      catalog, topo, base, {.network = o.network, .tuner = collective::TunerKind::kFastest});
  struct LineUse {
    Op family;
    Algorithm a;
    Protocol p;
    std::set<int> per_domain;  // p > 1 values of the groups that can run it
    bool multi_domain = false;
  };
  std::map<std::string, LineUse> lines;
  bool multi = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& g = groups[i];
    const Op op = runs[i].op;
    multi = multi || g.domains() > 1;
    for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kNvls, Algorithm::kNvlsTree,
                        Algorithm::kCollNet, Algorithm::kPat, Algorithm::kDirect}) {
      if (a == Algorithm::kTree && g.domains() == 1) continue;
      bool ok = false;
      for (const auto& av : probe.availability(g, op, dtypes[i]))
        if (av.algorithm == a) ok = av.ok;
      if (!ok) continue;
      for (Protocol p : collective::CollectiveModel::protocols(a, op)) {
        const std::string key = collective::line_key(collective::line_family(op), a, p);
        auto& u = lines[key];
        u.family = collective::line_family(op);
        u.a = a;
        u.p = p;
        if (g.per_domain() > 1) u.per_domain.insert(g.per_domain());
        u.multi_domain = u.multi_domain || g.domains() > 1;
      }
    }
  }
  std::vector<Slot> slots;
  const std::string src = base.for_gpu(out.gpu) ? base.for_gpu(out.gpu)->path
                                                : std::string("catalog/collectives/defaults.yaml");
  auto add = [&](const std::string& key, const collective::Line& l, Field f, Protocol p,
                 bool rescale) {
    auto [lo, hi] = bounds(f, p);
    Parameter par;
    par.name = key.empty() ? std::string("net.") + field_name(f) : key + "." + field_name(f);
    for (const auto& h : o.held)
      if (parameter_matches(h, par.name)) return;
    for (const auto& sh : o.shared) {
      if (!parameter_matches(sh, par.name)) continue;
      // One parameter for every op family's line: the first line met starts it.
      for (size_t j = 0; j < out.parameters.size(); ++j) {
        if (out.parameters[j].name == sh) {
          slots[j].lines.push_back(key);
          return;
        }
      }
      par.name = sh;
    }
    par.start = start_value(field_value(l, f), f, p);
    for (const auto& [pattern, v] : o.starts)
      if (parameter_matches(pattern, par.name)) par.start = std::clamp(v, lo * 1.01, hi / 1.01);
    par.lower = lo;
    par.upper = hi;
    par.source = src;
    par.rescale = rescale;
    out.parameters.push_back(par);
    slots.push_back({key.empty() ? std::vector<std::string>{} : std::vector<std::string>{key}, f});
  };
  if (multi) {
    // Across domains, one factor on every line's NIC/fabric efficiency and one on its network
    // step latency (NCCL's per-algorithm values, catalog/collectives/defaults.yaml, keep their
    // ratios): every algorithm crosses the same NICs and switches, and a few multi-node runs
    // cannot separate nine lines' network terms. Issue 13's per-NIC/fabric parameters replace
    // these two when they land.
    collective::Line unit;
    unit.net_efficiency = 1;
    unit.net_hop_us = 1;
    add("", unit, Field::kNetEfficiency, Protocol::kSimple, true);
    add("", unit, Field::kNetHop, Protocol::kSimple, false);
    // The network can be far from the catalog's (another NIC, RoCE or TCP instead of
    // InfiniBand): both factors start from a grid search. They come first, so that a line's own
    // latency is reported as constrained only together with them when the data cannot tell.
    out.parameters[out.parameters.size() - 2].grid = true;
    out.parameters.back().grid = true;
  }
  for (const auto& [key, u] : lines) {
    const collective::Line l = base.line(out.gpu, u.family, u.a, u.p);
    add(key, l, Field::kBase, u.p, false);
    if (u.a == Algorithm::kRing || u.a == Algorithm::kTree || u.a == Algorithm::kDirect ||
        u.a == Algorithm::kPat)
      add(key, l, Field::kHop, u.p, false);
    if (!u.per_domain.empty()) add(key, l, Field::kEfficiency, u.p, true);
    if (u.per_domain.size() >= 2 && u.a != Algorithm::kDirect)
      add(key, l, Field::kSmallN, u.p, false);
    if (u.p == Protocol::kSimple && u.a != Algorithm::kPat) {
      add(key, l, Field::kRamp, u.p, false);
      add(key, l, Field::kFill, u.p, false);
    }
  }
  if (out.parameters.empty()) return fail("no collective line can run on the measured groups");

  // Observations: every measured size, weighted by n - 1 as the built-in calibration is (the
  // model serves groups of 8 to thousands; small rings behave least like large ones).
  for (size_t i = 0; i < runs.size(); ++i) {
    for (size_t j = 0; j < runs[i].rows.size(); ++j) {
      const auto& row = runs[i].rows[j];
      out.observations.push_back({row.time_us, static_cast<double>(runs[i].ranks - 1),
                                  runs[i].file + ":" + std::to_string(row.line)});
      out.where.push_back({i, j});
    }
  }

  // Every line of the catalog with its catalog values (the net.* factors scale them).
  struct KnownLine {
    std::string key;
    collective::Line line;
    Protocol p;
  };
  std::vector<KnownLine> known;
  for (const auto& [k, v] : base.defaults().lines) {
    const auto s1 = k.find('/'), s2 = k.rfind('/');
    auto op = collective::parse_op(k.substr(0, s1));
    auto a = collective::parse_algorithm(k.substr(s1 + 1, s2 - s1 - 1));
    auto p = collective::parse_protocol(k.substr(s2 + 1));
    if (!op || !a || !p) continue;
    known.push_back({k, base.line(out.gpu, *op, *a, *p), *p});
  }
  auto make_profile = [&, known](std::span<const double> v,
                                 const std::vector<bool>* keep) -> collective::CalibrationFile {
    collective::CalibrationFile f;
    f.name = "profile";
    f.gpus = {out.gpu};
    for (size_t j = 0; j < slots.size(); ++j) {
      if (keep && !(*keep)[j]) continue;
      if (!slots[j].lines.empty()) {
        for (const auto& line : slots[j].lines) set_field(f.lines[line], slots[j].field, v[j]);
        continue;
      }
      for (const auto& kl : known) {
        const double cap = kl.p == Protocol::kLL      ? 0.5
                           : kl.p == Protocol::kLL128 ? 120.0 / 128
                                                      : 1.0;
        if (slots[j].field == Field::kNetEfficiency) {
          f.lines[kl.key].net_efficiency = std::min(cap, v[j] * kl.line.net_efficiency);
        } else {
          f.lines[kl.key].net_hop_us = v[j] * kl.line.net_hop_us;
        }
      }
    }
    return f;
  };
  // The model: NCCL's tuner runs the fastest candidate line (CollectiveModel::best), so a
  // prediction is the min over the candidates' explicit estimates. Each candidate's times are
  // cached with the values of the parameters that move it (its own fields and the net.*
  // factors): a Jacobian column then recomputes one line, not all of them.
  struct Candidate {
    Algorithm a;
    Protocol p;
    std::vector<size_t> slots;  // parameters that move this line
  };
  std::vector<std::vector<Candidate>> cands(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const auto& [key, u] : lines) {
      if (u.family != collective::line_family(runs[i].op)) continue;
      bool ok = false;
      for (const auto& av : probe.availability(groups[i], runs[i].op, dtypes[i]))
        if (av.algorithm == u.a) ok = av.ok;
      if (!ok || (u.a == Algorithm::kTree && groups[i].domains() == 1)) continue;
      Candidate c{u.a, u.p, {}};
      for (size_t j = 0; j < slots.size(); ++j)
        if (slots[j].lines.empty() ||
            std::find(slots[j].lines.begin(), slots[j].lines.end(), key) != slots[j].lines.end())
          c.slots.push_back(j);
      cands[i].push_back(c);
    }
  }
  struct Cached {
    std::vector<double> key;
    std::vector<double> times;  // per row; +inf where the line does not run that size
  };
  // Two entries per line: a Jacobian column moves one line away from the base point and the
  // next column needs it back.
  auto cache = std::make_shared<std::map<std::pair<size_t, size_t>, std::array<Cached, 2>>>();
  const auto model = [&, cache](std::span<const double> v) -> base::Result<std::vector<double>> {
    std::optional<collective::Calibration> cal;
    std::optional<collective::CollectiveModel> m;
    std::vector<double> pred;
    pred.reserve(out.observations.size());
    for (size_t i = 0; i < runs.size(); ++i) {
      std::vector<double> best(runs[i].rows.size(), std::numeric_limits<double>::infinity());
      for (size_t c = 0; c < cands[i].size(); ++c) {
        const auto& cand = cands[i][c];
        std::vector<double> key;
        for (size_t j : cand.slots) key.push_back(v[j]);
        auto& slot = (*cache)[{i, c}];
        Cached* hit = nullptr;
        for (auto& e : slot)
          if (!e.times.empty() && e.key == key) hit = &e;
        if (!hit) {
          // Replace the entry not used last.
          std::swap(slot[0], slot[1]);
          hit = &slot[0];
        } else if (hit == &slot[1]) {
          std::swap(slot[0], slot[1]);
          hit = &slot[0];
        }
        auto& entry = *hit;
        if (entry.times.empty() || entry.key != key) {
          if (!m) {
            cal.emplace(base.with_profile(make_profile(v, nullptr)));
            m.emplace(catalog, topo, *cal,
                      collective::ModelOptions{.network = o.network,
                                               .tuner = collective::TunerKind::kFastest});
          }
          entry.key = key;
          entry.times.assign(runs[i].rows.size(), std::numeric_limits<double>::infinity());
          for (size_t r = 0; r < runs[i].rows.size(); ++r) {
            const int64_t bytes = runs[i].rows[r].size_bytes;
            if (cand.a == Algorithm::kDirect) {
              // NCCL's fixed point-to-point rule, as CollectiveModel::best applies it.
              const int64_t per_peer =
                  runs[i].op == Op::kSendRecv ? bytes : bytes / std::max(1, groups[i].ranks());
              if ((per_peer <= 16384) != (cand.p == Protocol::kLL)) continue;
            }
            collective::Request req{.op = runs[i].op,
                                    .bytes = bytes,
                                    .dtype = dtypes[i],
                                    .algorithm = cand.a,
                                    .protocol = cand.p};
            auto e = m->estimate(groups[i], req);
            if (!e) return fail(e.error());
            entry.times[r] = e->time.base() * 1e6;
          }
        }
        for (size_t r = 0; r < best.size(); ++r) best[r] = std::min(best[r], entry.times[r]);
      }
      for (double t : best) pred.push_back(t);
    }
    return pred;
  };
  auto r = fit(out.parameters, out.observations, model, o.fit);
  if (!r) return fail(r.error());
  out.result = std::move(*r);
  // The profile holds every parameter's value, fitted or held at its start (the profile record
  // says which), so that it reproduces exactly the model that was fitted: a line left without
  // fields would otherwise inherit its NVLink side from another line (Calibration::line).
  std::vector<double> values;
  for (const auto& p : out.result.parameters) values.push_back(p.value);
  out.profile = make_profile(values, nullptr);
  return out;
}

std::string profile_yaml(const CollectiveFit& fit, std::span<const InputFile> inputs,
                         std::span<const CollectiveRun> runs, const FitOptions& options,
                         const ProfileMeta& meta) {
  std::ostringstream y;
  auto quote = [](const std::string& s) { return yaml_quote(s); };
  y << "# Calibration profile: the collective model fitted to measured nccl-tests runs by\n"
    << "# `clustertwin calibrate` (docs/models/calibration.md). GENERATED; rerunning the same\n"
    << "# command on the same files gives the same bytes. Use it with\n"
    << "# `clustertwin collective --calibration FILE` (or `calibration: FILE` in a scenario).\n"
    << "# Lines and fields not given here stay the catalog's (catalog/collectives/).\n";
  write_profile_head(y, "collectives", fit.gpu, meta);
  y << "  network_model: "
    << (meta.network == collective::NetworkModelKind::kFlow ? "flow" : "analytical") << "\n";
  y << "  solver: "
    << quote(
           "Ceres Solver, Levenberg-Marquardt; soft-L1 loss of log(predicted / "
           "measured), scale " +
           fmt(options.loss_scale) + "; rows weighted by ranks - 1; prior weight " +
           fmt(options.prior_weight) + " toward the catalog's values")
    << "\n";
  write_profile_inputs(y, inputs);
  y << "  runs:\n";
  for (const auto& r : runs) {
    y << "    - {file: " << quote(r.file) << ", line: " << r.line
      << ", op: " << collective::op_name(r.op) << ", dtype: " << r.dtype << ", ranks: " << r.ranks
      << ", hosts: " << r.nodes << ", sizes: " << r.rows.size();
    if (!r.nccl_version.empty()) y << ", nccl: " << quote(r.nccl_version);
    y << "}\n";
  }
  const auto& res = fit.result;
  y << "  fit:\n";
  y << "    measurements: " << fit.observations.size() << "\n";
  y << "    rms_log_error_before: " << fmt(res.rms_before) << "\n";
  y << "    rms_log_error_after: " << fmt(res.rms_after) << "\n";
  if (res.folds >= 2) {
    y << "    cross_validation_folds: " << res.folds << "\n";
    y << "    cross_validation_rms_log_error: " << fmt(res.cv_rms) << "\n";
  }
  y << "  parameters:\n";
  for (const auto& p : res.parameters) {
    y << "    - {name: " << p.name << ", value: " << fmt(p.value) << ", start: " << fmt(p.start);
    if (p.constrained) {
      y << ", sigma: " << fmt(100 * p.sigma_rel) << "%";
      if (p.at_bound) y << ", at_bound: true";
      // Which measurements: per file, the line range and the count.
      std::map<std::string, std::pair<int, int>> range;
      std::map<std::string, int> count;
      for (int i : p.constrained_by) {
        const auto& w = fit.where[i];
        const auto& f = runs[w.run].file;
        const int ln = runs[w.run].rows[w.row].line;
        auto it = range.find(f);
        if (it == range.end()) {
          range[f] = {ln, ln};
        } else {
          it->second.first = std::min(it->second.first, ln);
          it->second.second = std::max(it->second.second, ln);
        }
        count[f]++;
      }
      std::string by;
      for (const auto& [f, rg] : range) {
        by += (by.empty() ? "" : "; ") + f + ":" + std::to_string(rg.first) + "-" +
              std::to_string(rg.second) + " (" + std::to_string(count[f]) + " rows)";
      }
      y << ", constrained_by: " << quote(by) << "}\n";
    } else {
      y << ", constrained: false, why: "
        << quote(p.why_not + (p.kept_at_start ? "; kept at the start value" : "")) << "}\n";
    }
  }
  y << "collectives:\n";
  y << "  name: " << quote(meta.name) << "\n";
  y << "  gpus: [" << fit.gpu << "]\n";
  if (!fit.device.empty()) y << "  measured_device: " << quote(fit.device) << "\n";
  // Lines grouped as the catalog files group them: op, algorithm, protocol.
  std::map<std::string, std::map<std::string, std::map<std::string, const collective::LinePatch*>>>
      tree;
  for (const auto& [key, patch] : fit.profile.lines) {
    const auto s1 = key.find('/'), s2 = key.rfind('/');
    tree[key.substr(0, s1)][key.substr(s1 + 1, s2 - s1 - 1)][key.substr(s2 + 1)] = &patch;
  }
  for (const auto& [op, algos] : tree) {
    y << "  " << op << ":\n";
    for (const auto& [a, protos] : algos) {
      y << "    " << a << ":\n";
      for (const auto& [p, patch] : protos) {
        std::string fields;
        auto add = [&](const char* k, const std::optional<double>& v, bool time) {
          if (!v) return;
          fields += std::string(k) + ": " + fmt(*v) + (time ? " us" : "") + ", ";
        };
        add("base", patch->base_us, true);
        add("hop", patch->hop_us, true);
        add("net_hop", patch->net_hop_us, true);
        add("efficiency", patch->efficiency, false);
        add("small_n", patch->small_n, false);
        add("net_efficiency", patch->net_efficiency, false);
        add("ramp", patch->ramp, false);
        add("fill", patch->fill_us, true);
        y << "      " << p << ": {" << fields << "source: fit}\n";
      }
    }
  }
  y << "sources:\n";
  write_fit_source(y, meta, inputs);
  return y.str();
}

}  // namespace clustertwin::calibration
