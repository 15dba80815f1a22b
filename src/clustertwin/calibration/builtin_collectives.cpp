#include "clustertwin/calibration/builtin_collectives.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "clustertwin/calibration/collective_fit.h"
#include "clustertwin/calibration/parse.h"
#include "clustertwin/calibration/profile_text.h"
#include "clustertwin/collective/calibration.h"
#include "clustertwin/config/reader.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::calibration {
using base::fail;
using collective::Algorithm;
using collective::Op;
using collective::Protocol;

namespace {

using config::Reader;
using Need = Reader::Need;

struct System {
  std::string name;    ///< catalog/collectives/<name>.yaml
  std::string folder;  ///< <reference>/<tables>/<folder>/nccl.csv
  std::string cluster;
  std::vector<std::string> gpus;
  std::string device;
  int ring_channels = 0, nvls_channels = 0;
  std::vector<std::string> notes;  ///< comment lines of the file
};

struct Recipe {
  std::string tables, tables_label, tables_origin, nccl;
  collective::NetworkModelKind network = collective::NetworkModelKind::kAnalytical;
  std::vector<std::string> held, shared;
  std::vector<std::pair<std::string, double>> starts;
  int global_samples = 0, global_keep = 0, coordinate_passes = 0, simplex_iterations = 0;
  bool profile_hold = false;
  double global_span = 1;
  std::vector<System> systems;
};

constexpr const char* kRecipePath = "calibration/collectives.yaml";

base::Result<Recipe> read_recipe(const hardware::Catalog& catalog) {
  const hardware::CatalogFile* file = nullptr;
  for (const auto& f : catalog.other_files())
    if (f.path == kRecipePath) file = &f;
  if (file == nullptr) {
    return fail(std::string("the catalog has no ") + kRecipePath +
                " (the built-in collective recipe)");
  }
  auto doc = config::parse_document(file->text, std::string("catalog/") + file->path);
  if (!doc) return fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  Reader top(doc->root, ctx);
  Recipe r;
  if (auto body = top.child("collective_calibration")) {
    r.tables = body->string("tables").value_or("");
    r.tables_label = body->string("tables_label").value_or("");
    r.tables_origin = body->string("tables_origin").value_or("");
    r.nccl = body->string("nccl").value_or("");
    const auto net = body->choice("network_model", {"analytical", "flow"}).value_or("analytical");
    r.network = net == "flow" ? collective::NetworkModelKind::kFlow
                              : collective::NetworkModelKind::kAnalytical;
    r.held = body->strings("held", Need::kOptional).value_or(std::vector<std::string>{});
    r.shared = body->strings("shared", Need::kOptional).value_or(std::vector<std::string>{});
    if (auto st = body->child("starts", Need::kOptional)) {
      for (const auto& k : st->keys())
        if (auto v = st->number(k, Need::kRequired, 1e-6, 1e6)) r.starts.emplace_back(k, *v);
      st->finish();
    }
    if (auto g = body->child("global_stage", Need::kOptional)) {
      r.global_samples =
          static_cast<int>(g->integer("samples", Need::kRequired, 1, 100000).value_or(0));
      r.global_keep = static_cast<int>(g->integer("keep", Need::kRequired, 1, 100).value_or(0));
      r.global_span = g->number("span", Need::kRequired, 1, 1000).value_or(1);
      r.coordinate_passes =
          static_cast<int>(g->integer("coordinate_passes", Need::kOptional, 0, 100).value_or(0));
      r.simplex_iterations = static_cast<int>(
          g->integer("simplex_iterations", Need::kOptional, 0, 1000000).value_or(0));
      r.profile_hold = g->boolean("profile_hold", Need::kOptional).value_or(false);
      g->finish();
    }
    if (auto systems = body->child("systems")) {
      for (const auto& name : systems->keys()) {
        auto s = systems->child(name);
        if (!s) continue;
        System sys{.name = name};
        sys.folder = s->string("folder").value_or("");
        sys.cluster = s->string("cluster").value_or("");
        sys.gpus = s->strings("gpus").value_or(std::vector<std::string>{});
        sys.device = s->string("device").value_or("");
        if (auto ch = s->child("channels")) {
          sys.ring_channels =
              static_cast<int>(ch->integer("ring", Need::kRequired, 1, 64).value_or(0));
          sys.nvls_channels =
              static_cast<int>(ch->integer("nvls", Need::kRequired, 1, 64).value_or(0));
          ch->finish();
        }
        sys.notes = s->strings("notes", Need::kOptional).value_or(std::vector<std::string>{});
        s->finish();
        r.systems.push_back(std::move(sys));
      }
      systems->finish();
    }
    body->finish();
  }
  top.finish();
  if (!ctx.errors.empty()) return fail(ctx.errors.combined());
  return r;
}

std::string fmt4(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

std::string fmt1(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string fmt5(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.5g", v);
  return b;
}

/// A catalog file of one GPU's channel counts and line fields (those set), as the collective
/// layer reads catalog/collectives/<gpu>.yaml.
std::string start_file_text(const collective::CalibrationFile& f) {
  std::ostringstream y;
  y << "collectives:\n  name: " << f.name << "\n  gpus: [";
  for (size_t i = 0; i < f.gpus.size(); ++i) y << (i ? ", " : "") << f.gpus[i];
  y << "]\n";
  if (f.ring_channels && f.nvls_channels)
    y << "  channels: {ring: " << *f.ring_channels << ", nvls: " << *f.nvls_channels << "}\n";
  std::string op, algo;
  for (const auto& [key, p] : f.lines) {
    const auto s1 = key.find('/'), s2 = key.rfind('/');
    const std::string o = key.substr(0, s1), a = key.substr(s1 + 1, s2 - s1 - 1);
    if (o != op) {
      y << "  " << o << ":\n";
      op = o;
      algo.clear();
    }
    if (a != algo) {
      y << "    " << a << ":\n";
      algo = a;
    }
    std::string fields;
    auto add = [&](const char* name, const std::optional<double>& v, const char* unit) {
      if (v) fields += std::string(fields.empty() ? "" : ", ") + name + ": " + fmt5(*v) + unit;
    };
    add("base", p.base_us, " us");
    add("hop", p.hop_us, " us");
    add("efficiency", p.efficiency, "");
    add("small_n", p.small_n, "");
    add("ramp", p.ramp, "");
    add("fill", p.fill_us, " us");
    y << "      " << key.substr(s2 + 1) << ": {" << fields << ", source: fit}\n";
  }
  y << "sources:\n  fit: \"the fit of this file so far (clustertwin calibrate --builtin "
       "collectives)\"\n";
  return y.str();
}

/// "2/4/8" of the ranks, "half and int8" of the dtypes.
std::string joined(const std::set<std::string>& s, const char* sep, const char* last_sep) {
  std::string out;
  size_t i = 0;
  for (const auto& v : s) {
    out += (i == 0 ? "" : i + 1 == s.size() ? last_sep : sep) + v;
    ++i;
  }
  return out;
}

const std::vector<Op>& file_ops() {
  static const std::vector<Op> ops = {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter,
                                      Op::kAllToAll};
  return ops;
}

/// One system: parse, fit, write. Errors go to `errors`.
void build_system(const hardware::Catalog& catalog, const Recipe& r, const System& sys,
                  const std::string& reference_dir, BuiltinCollectives& out, base::Errors& errors) {
  const std::string table = reference_dir + "/" + r.tables + "/" + sys.folder + "/nccl.csv";
  const std::string label = r.tables_label + "/" + sys.folder + "/nccl.csv";
  Measurements m;
  if (auto st = parse_path(table, m); !st) {
    errors.add(st.error());
    return;
  }
  if (m.collectives.empty()) {
    errors.add({"expected an AIConfigurator nccl.csv table", table, 1});
    return;
  }
  out.inputs.insert(out.inputs.end(), m.inputs.begin(), m.inputs.end());
  auto spec = hardware::resolve_cluster(catalog, sys.cluster);
  if (!spec) {
    errors.add({"cluster '" + sys.cluster + "' of " + sys.name + ": " + spec.error().message,
                std::string("catalog/") + kRecipePath, 0});
    return;
  }
  auto topo = topology::Topology::build(catalog, *spec);
  if (!topo) {
    errors.add(topo.error());
    return;
  }
  // Starts and prior: NCCL's tuning constants alone (defaults.yaml), never a file this
  // regenerates. The model is the one the catalog runs: the other collective files (the
  // at-scale parameters, at-scale.yaml, whose NVLS per-channel cap bounds NVLS inside a
  // GB200/GB300 rack too; the MoE kernels) stay in, the recipe's own files stay out.
  std::vector<hardware::CatalogFile> defaults, model_files;
  for (const auto& f : catalog.other_files()) {
    if (f.path == "collectives/defaults.yaml") defaults.push_back(f);
    if (f.path.rfind("collectives/", 0) != 0) continue;
    bool fitted_here = false;
    for (const auto& other : r.systems)
      fitted_here = fitted_here || f.path == "collectives/" + other.name + ".yaml";
    if (!fitted_here) model_files.push_back(f);
  }
  auto nccl = collective::Calibration::from_files(model_files);
  if (!nccl) {
    errors.add(nccl.error());
    return;
  }
  // One op family at a time, all_reduce first: each family's lines are its own (Calibration
  // keys lines by family), so the fits are separable except for the shared fields, which
  // all_reduce sets (its int8 rows see the ring alone) and the later families hold. Separate fits
  // let the solver's multi-start (efficiencies x0.7 and x1.3) pick the best start per family.
  collective::CalibrationFile merged;
  merged.name = sys.name;
  // The model the fits run is the catalog's with this GPU's file as the recipe makes it: the
  // measured runs' channel counts (NVLS's bandwidth cap is channels x the per-channel rate,
  // CollectiveModel::nvls_cap_unit) and the shared fields as the first family fitted them,
  // rounded as the file writes them, so that what each family fits is what the written file
  // runs. (A file, not a profile: the fit lays its own profile over the start calibration, and
  // the written file is a file, so the start is one too.)
  collective::CalibrationFile gpu_file;
  gpu_file.name = sys.name;
  if (auto cs = catalog.system(spec->system)) gpu_file.gpus = {(*cs)->gpu};
  gpu_file.ring_channels = sys.ring_channels;
  gpu_file.nvls_channels = sys.nvls_channels;
  auto start_of = [&]() -> base::Result<collective::Calibration> {
    auto files = model_files;
    files.push_back({"collectives/" + sys.name + ".yaml", start_file_text(gpu_file)});
    return collective::Calibration::from_files(files);
  };
  auto start0 = start_of();
  if (!start0) {
    errors.add(start0.error());
    return;
  }
  collective::Calibration start = *start0;
  struct OpStats {
    int rows = 0;
    double sq = 0, worst = 0, worst_big = 0;
  };
  std::map<Op, OpStats> stats;
  std::string gpu;
  double sq_before = 0, sq_after = 0;
  double observations = 0;
  std::vector<std::string> held = r.held;
  for (Op op : file_ops()) {
    std::vector<CollectiveRun> runs;
    for (const auto& run : m.collectives)
      if (collective::line_family(run.op) == op) runs.push_back(run);
    if (runs.empty()) continue;
    CollectiveFitOptions fo;
    fo.network = r.network;
    fo.fit.folds = 0;  // every row fits: these files are fit-quality checks (collectives.md)
    fo.held = held;
    fo.shared = r.shared;
    fo.starts = r.starts;
    fo.fit.global_samples = r.global_samples;
    fo.fit.global_keep = r.global_keep;
    fo.fit.global_span = r.global_span;
    fo.fit.coordinate_passes = r.coordinate_passes;
    fo.fit.simplex_iterations = r.simplex_iterations;
    fo.fit.profile_hold = r.profile_hold;
    auto fit = fit_collectives(catalog, *spec, *topo, start, runs, fo);
    if (!fit) {
      errors.add({sys.name + " " + collective::op_name(op) + ": " + fit.error().message, table, 0});
      return;
    }
    gpu = fit->gpu;
    merged.gpus = {gpu};
    out.fits.push_back({sys.name, *fit, runs});
    for (const auto& [key, patch] : fit->profile.lines) merged.lines[key] = patch;
    // The shared fields, as this family fitted them (to the file's 4 digits), for the
    // families after it.
    bool shared_set = false;
    for (const auto& p : fit->result.parameters) {
      for (const auto& sh : r.shared) {
        if (p.name != sh) continue;
        const auto dot = sh.rfind('.');
        const std::string line = sh.substr(2, dot - 2), field = sh.substr(dot + 1);
        for (Op later : file_ops()) {
          const std::string key = std::string(collective::op_name(later)) + "/" + line;
          if (later == op || !nccl->defaults().lines.count(key)) continue;
          auto& lp = gpu_file.lines[key];
          const double v = std::stod(fmt4(p.value));
          if (field == "efficiency")
            lp.efficiency = v;
          else if (field == "small_n")
            lp.small_n = v;
          else if (field == "base")
            lp.base_us = v;
          else if (field == "hop")
            lp.hop_us = v;
          else if (field == "ramp")
            lp.ramp = v;
          else if (field == "fill")
            lp.fill_us = v;
          shared_set = true;
        }
        held.push_back(sh);
      }
    }
    if (shared_set) {
      auto next = start_of();
      if (!next) {
        errors.add(next.error());
        return;
      }
      start = *next;
    }
    auto& s = stats[op];
    for (size_t i = 0; i < fit->observations.size(); ++i) {
      const auto& w = fit->where[i];
      const double meas = fit->observations[i].value;
      const double e = fit->result.after[i] / meas - 1;
      sq_before += std::pow(std::log(fit->result.before[i] / meas), 2);
      sq_after += std::pow(std::log(fit->result.after[i] / meas), 2);
      ++observations;
      s.rows++;
      s.sq += e * e;
      s.worst = std::max(s.worst, std::abs(e));
      if (runs[w.run].rows[w.row].size_bytes >= (int64_t{64} << 20))
        s.worst_big = std::max(s.worst_big, std::abs(e));
    }
  }
  // A shared field's value is in every family's line even where that family held it (the
  // profile of a fit holds only its parameters).
  for (auto& [key, patch] : merged.lines) {
    const auto l = start.line(gpu, *collective::parse_op(key.substr(0, key.find('/'))),
                              *collective::parse_algorithm(key.substr(
                                  key.find('/') + 1, key.rfind('/') - key.find('/') - 1)),
                              *collective::parse_protocol(key.substr(key.rfind('/') + 1)));
    if (!patch.efficiency) patch.efficiency = l.efficiency;
  }
  const collective::Calibration fitted = nccl->with_profile(merged);
  std::set<std::string> ranks, dtypes;
  for (const auto& run : m.collectives) {
    ranks.insert(std::to_string(run.ranks));
    dtypes.insert(run.dtype);
  }
  std::string gpus;
  for (const auto& g : sys.gpus) gpus += (gpus.empty() ? "" : ", ") + g;

  std::ostringstream y;
  y << "# Collective-model calibration for " << gpus
    << ": lines fitted to the measured nccl-tests\n"
    << "# tables of " << label << " (" << r.tables_origin << "; converted and fitted by\n"
    << "# clustertwin). GENERATED by `clustertwin calibrate --builtin collectives` (recipe\n"
    << "# catalog/" << kRecipePath << "). Do not edit by hand.\n"
    << "# Fields not given here (net_hop, net_efficiency, tree/collnet/pat lines) come from "
       "defaults.yaml.\n";
  for (const auto& n : sys.notes) y << "# " << n << "\n";
  y << "collectives:\n"
    << "  name: " << sys.name << "\n"
    << "  gpus: [" << gpus << "]\n"
    << "  measured_device: " << yaml_quote(sys.device) << "\n"
    << "  channels: {ring: " << sys.ring_channels << ", nvls: " << sys.nvls_channels << "}\n";
  std::vector<std::string> op_lines;
  for (Op op : file_ops()) {
    auto st = stats.find(op);
    if (st == stats.end()) continue;
    const auto& s = st->second;
    y << "  " << collective::op_name(op) << ":  # " << s.rows << " rows; rms error "
      << fmt1(100 * std::sqrt(s.sq / s.rows)) << "%, worst " << fmt1(100 * s.worst)
      << "%, worst >= 64 MiB " << fmt1(100 * s.worst_big) << "%\n";
    std::string summary = "  " + std::string(collective::op_name(op)) + ": " +
                          std::to_string(s.rows) + " rows, rms error " +
                          fmt1(100 * std::sqrt(s.sq / s.rows)) + "%, worst " + fmt1(100 * s.worst) +
                          "%";
    op_lines.push_back(summary);
    for (Algorithm a : {Algorithm::kRing, Algorithm::kNvls, Algorithm::kDirect}) {
      bool head = false;
      for (Protocol p : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
        const std::string key = collective::line_key(op, a, p);
        if (!merged.lines.count(key)) continue;
        if (!head) {
          y << "    " << collective::algorithm_name(a) << ":\n";
          head = true;
        }
        const collective::Line l = fitted.line(gpu, op, a, p);
        std::string fields = "base: " + fmt4(l.base_us) + " us";
        if (a == Algorithm::kRing || a == Algorithm::kDirect)
          fields += ", hop: " + fmt4(l.hop_us) + " us";
        fields += ", efficiency: " + fmt4(l.efficiency);
        if (l.small_n > 0) fields += ", small_n: " + fmt4(l.small_n);
        if (p == Protocol::kSimple) {
          fields += ", ramp: " + fmt4(l.ramp);
          fields += ", fill: " + fmt4(l.fill_us) + " us";
        }
        y << "      " << collective::protocol_name(p) << ": {" << fields << ", source: aic-nccl}\n";
      }
    }
  }
  y << "sources:\n"
    << "  aic-nccl: "
    << yaml_quote("fit of clustertwin's line model to " + label + " (nccl-tests" +
                  (r.nccl.empty() ? "" : ", NCCL " + r.nccl) + ", one node of " +
                  joined(ranks, "/", "/") + " GPUs, " + joined(dtypes, ", ", " and ") + "; " +
                  r.tables_origin + "; sha256 " + m.inputs.front().sha256.substr(0, 12) +
                  ") by clustertwin calibrate --builtin collectives, starts and prior NCCL's "
                  "tuning constants (defaults.yaml)")
    << "\n";
  const std::string path = "catalog/collectives/" + sys.name + ".yaml";
  const std::string text = y.str();
  // The file must read as the collective layer reads the catalog before anything is written.
  if (auto back = collective::Calibration::from_files(std::vector<hardware::CatalogFile>{
          defaults.front(), {"collectives/" + sys.name + ".yaml", text}});
      !back) {
    errors.add(
        {"internal error: the fitted file does not read back: " + back.error().message, path, 0});
    return;
  }
  out.files.push_back({path, text});

  // The measured rows, in the table's order, in bytes and microseconds.
  struct Row {
    int line;
    std::string text;
  };
  std::vector<Row> rows;
  for (const auto& run : m.collectives) {
    for (const auto& row : run.rows) {
      rows.push_back({row.line, std::string(collective::op_name(run.op)) + "," + run.dtype + "," +
                                    std::to_string(run.ranks) + "," +
                                    std::to_string(row.size_bytes) + "," + fmt5(row.time_us)});
    }
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.line < b.line; });
  std::string csv = "op,dtype,gpus,size_bytes,time_us\n";
  for (const auto& row : rows) csv += row.text + "\n";
  out.files.push_back({"tests/validation/data/collective/" + sys.name + "_nccl.csv", csv});
  out.summary.push_back(
      sys.name + " (" + label + ", " + std::to_string(static_cast<int>(observations)) +
      " rows on " + sys.cluster + "; rms log error " +
      fmt4(std::sqrt(sq_before / std::max(1.0, observations))) + " at NCCL's defaults, " +
      fmt4(std::sqrt(sq_after / std::max(1.0, observations))) + " fitted):");
  out.summary.insert(out.summary.end(), op_lines.begin(), op_lines.end());
}

}  // namespace

base::Result<BuiltinCollectives> builtin_collectives(const hardware::Catalog& catalog,
                                                     const std::string& reference_dir,
                                                     const std::vector<std::string>& only) {
  auto recipe = read_recipe(catalog);
  if (!recipe) return fail(recipe.error());
  for (const auto& o : only) {
    bool known = false;
    for (const auto& s : recipe->systems) known = known || s.name == o;
    if (!known) {
      std::string names;
      for (const auto& s : recipe->systems) names += (names.empty() ? "" : ", ") + s.name;
      return fail("{builtin} collectives: no file '" + o + "' in the recipe (expected one of " +
                  names + ")");
    }
  }
  BuiltinCollectives out;
  base::Errors errors;
  for (const auto& sys : recipe->systems) {
    if (!only.empty() && std::find(only.begin(), only.end(), sys.name) == only.end()) continue;
    build_system(catalog, *recipe, sys, reference_dir, out, errors);
  }
  if (!errors.empty()) return fail(errors.combined());
  return out;
}

}  // namespace clustertwin::calibration
