#include "clustertwin/collective/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "clustertwin/base/file.h"
#include "clustertwin/base/text.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::collective {
using base::fail;

namespace {

/// A reason with its `{key}` field names (which each door writes as its own word, DESIGN.md §2)
/// written as the bare keys, for the JSON.
std::string keys_plain(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const size_t close = text[i] == '{' ? text.find('}', i) : std::string::npos;
    const bool key = close != std::string::npos && close > i + 1 &&
                     std::all_of(text.begin() + static_cast<long>(i) + 1,
                                 text.begin() + static_cast<long>(close),
                                 [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
    if (key) {
      out.append(text, i + 1, close - i - 1);
      i = close;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

base::Result<std::vector<int64_t>> sweep_sizes(int64_t min_bytes, int64_t max_bytes, double factor,
                                               int64_t step_bytes) {
  if (min_bytes < 0) return fail("{min_bytes}: expected a size >= 0");
  if (max_bytes < min_bytes) {
    return fail("{max_bytes} (" + std::to_string(max_bytes) + ") is below {min_bytes} (" +
                std::to_string(min_bytes) + ")");
  }
  if (step_bytes < 0) return fail("{step_bytes}: expected a size >= 0");
  if (step_bytes == 0 && !(factor > 1.0)) {
    return fail("{step_factor}: expected a factor > 1 (or {step_bytes} > 0), got " +
                std::to_string(factor));
  }
  std::vector<int64_t> out;
  for (double s = static_cast<double>(min_bytes); s <= static_cast<double>(max_bytes);) {
    out.push_back(static_cast<int64_t>(s));
    if (out.size() > 100000) return fail("the sweep has more than 100000 sizes");
    const double next =
        step_bytes > 0 ? s + static_cast<double>(step_bytes) : (s == 0 ? 1 : s * factor);
    s = std::floor(next);
  }
  return out;
}

bool is_line_file(const hardware::CatalogFile& f) {
  // Lines files start their mapping with `collectives:`; at-scale.yaml (at_scale:) and
  // moe-a2a.yaml (moe_all_to_all:) hold other parameters and are not profiles.
  return f.path.rfind("collectives/", 0) == 0 &&
         (f.text.rfind("collectives:", 0) == 0 ||
          f.text.find("\ncollectives:") != std::string::npos);
}

namespace {
/// The built-in profiles' names (catalog/collectives/*.yaml line files but defaults).
std::vector<std::pair<std::string, const hardware::CatalogFile*>> builtin_profiles(
    const hardware::Catalog& catalog) {
  std::vector<std::pair<std::string, const hardware::CatalogFile*>> out;
  for (const auto& f : catalog.other_files()) {
    if (!is_line_file(f)) continue;
    std::string name = f.path.substr(12, f.path.size() - 12 - 5);
    if (name != "defaults") out.emplace_back(std::move(name), &f);
  }
  return out;
}
}  // namespace

base::Result<ProfileSource> read_profile_source(const hardware::Catalog& catalog,
                                                const std::string& name_or_path,
                                                const std::string& where) {
  ProfileSource s{.name = name_or_path};
  for (const auto& [name, file] : builtin_profiles(catalog)) {
    if (name == name_or_path) {
      s.builtin = true;
      return s;
    }
  }
  std::ifstream in(name_or_path, std::ios::binary);
  if (!in) return s;               // neither: each reader says what it takes
  auto text = base::read_all(in);  // at most base::kMaxInputBytes: /dev/zero stops
  if (!text) return fail(where + " " + base::verbatim(name_or_path) + ": " + text.error().message);
  s.text = std::move(*text);
  return s;
}

base::Result<CalibrationFile> load_profile(const hardware::Catalog& catalog,
                                           const ProfileSource& source, const std::string& where) {
  std::vector<std::string> names;
  for (const auto& [name, file] : builtin_profiles(catalog)) {
    if (source.builtin && name == source.name) {
      return Calibration::read_profile({"catalog/" + file->path, file->text});
    }
    names.push_back(name);
  }
  if (!source.text) {
    return fail(where + ": '" + base::verbatim(source.name) +
                "' is neither a readable profile file nor a built-in profile (" +
                base::join(names) + ")");
  }
  return Calibration::read_profile({source.name, *source.text});
}

base::Result<CalibrationFile> load_profile(const hardware::Catalog& catalog,
                                           const std::string& name_or_path,
                                           const std::string& where) {
  auto source = read_profile_source(catalog, name_or_path, where);
  if (!source) return fail(source.error());
  return load_profile(catalog, *source, where);
}

base::Result<Calibration> calibration_with_profile(const hardware::Catalog& catalog,
                                                   std::string_view gpu,
                                                   const ProfileSource& source,
                                                   const std::string& where) {
  auto cal = Calibration::load(catalog);
  if (!cal) return fail(cal.error());
  auto prof = load_profile(catalog, source, where);
  if (!prof) return fail(prof.error());
  if (std::find(prof->gpus.begin(), prof->gpus.end(), gpu) == prof->gpus.end()) {
    return fail(where + " " + base::verbatim(source.name) + " is for GPUs " +
                base::join(prof->gpus) + "; this cluster's GPU is " + std::string(gpu));
  }
  return cal->with_profile(std::move(*prof));
}

base::Result<SweepResult> run_sweep(const hardware::Catalog& catalog, const SweepSpec& spec) {
  auto cluster = hardware::resolve_cluster(catalog, spec.cluster);
  if (!cluster) return fail(cluster.error());
  auto topo = topology::Topology::build(catalog, *cluster);
  if (!topo) return fail(topo.error());
  auto cal = [&]() -> base::Result<Calibration> {
    if (spec.calibration.empty()) return Calibration::load(catalog);
    auto source = read_profile_source(catalog, spec.calibration);
    if (!source) return fail(source.error());
    return calibration_with_profile(catalog, (*catalog.system(cluster->system))->gpu, *source);
  }();
  if (!cal) return fail(cal.error());
  const std::string& profile = spec.calibration;
  auto sizes = sweep_sizes(spec.min_bytes, spec.max_bytes, spec.step_factor, spec.step_bytes);
  if (!sizes) return fail(sizes.error());
  const int n = spec.gpus > 0 ? spec.gpus : topo->gpus();
  auto group = place_first(*topo, n, spec.gpus_per_domain);
  if (!group) return fail(group.error());
  if (group->ranks() < 2)
    return fail("{gpus}: a collective needs at least 2 GPUs, got " +
                std::to_string(group->ranks()));
  ModelOptions mo{.network = spec.model,
                  .routing = spec.routing,
                  .channels = spec.channels,
                  .sharp = spec.sharp,
                  .tuner = spec.tuner};
  CollectiveModel model(catalog, *topo, *cal, mo);
  if (spec.sharp.value_or(false) && !model.sharp_supported()) {
    return fail("sharp: on needs SHARP in the scale-out switches; " +
                cluster->scale_out.switch_name + " has none");
  }

  SweepResult out;
  out.spec = spec;
  out.cluster_name = cluster->name;
  out.system = cluster->system;
  out.gpu = model.gpu_name();
  out.ranks = group->ranks();
  out.domains = group->domains();
  out.per_domain = group->per_domain();
  out.domain_size = topo->domain_size();
  out.profile = profile;
  out.tuner = model.tuner();
  out.calibrated = cal->for_gpu(out.gpu) != nullptr;
  out.sharp = model.sharp_enabled();
  out.availability = model.availability(*group, spec.op, spec.dtype);
  Request req{
      .op = spec.op, .dtype = spec.dtype, .algorithm = spec.algorithm, .protocol = spec.protocol};
  double bus_sum = 0;
  for (int64_t want : *sizes) {
    const int64_t size = nccl_size(spec.op, want, spec.dtype.bytes, out.ranks);
    req.bytes = size;
    auto e = model.estimate(*group, req);
    if (!e) return fail(e.error());
    out.rows.push_back({size, nccl_count(spec.op, size, spec.dtype.bytes, out.ranks), *e});
    bus_sum += e->busbw.base() / 1e9;
  }
  out.avg_busbw_GBps = out.rows.empty() ? 0 : bus_sum / static_cast<double>(out.rows.size());
  out.flow_stats = model.last_flow_stats();
  out.flow_solves = model.flow_solves();
  return out;
}

namespace {

/// A number in `width` columns the way nccl-tests prints times and bandwidths: two decimals
/// while they fit, then fewer, then an exponent.
std::string nccl_float(double v, int width) {
  int digits = 0;
  for (double p = 1; v >= p && digits < 30; p *= 10) ++digits;
  char buf[64];
  if (digits < width - 2)
    std::snprintf(buf, sizeof buf, "%*.2f", width, v);
  else if (digits < width - 1)
    std::snprintf(buf, sizeof buf, "%*.1f", width, v);
  else if (digits < width + 1)
    std::snprintf(buf, sizeof buf, "%*.0f", width, v);
  else
    std::snprintf(buf, sizeof buf, "%*.1e", width, v);
  return buf;
}

const char* model_name(NetworkModelKind k) {
  return k == NetworkModelKind::kFlow ? "flow" : "analytical";
}

std::string describe(const SweepResult& r) {
  std::ostringstream os;
  os << op_name(r.spec.op) << " on " << r.ranks << " GPUs of " << r.cluster_name << " (" << r.gpu
     << "; " << r.domains << " NVLink domain" << (r.domains == 1 ? "" : "s") << " of "
     << r.domain_size << ", " << r.per_domain << " GPUs used per domain)";
  return os.str();
}

}  // namespace

std::string render_table(const SweepResult& r) {
  std::ostringstream os;
  char line[512];
  os << "# clustertwin collective: " << describe(r) << "\n";
  os << "# model: " << model_name(r.spec.model) << " network, "
     << (!r.profile.empty() ? "calibration profile " + r.profile
         : r.calibrated     ? std::string("calibrated on measured nccl-tests tables")
                            : std::string("NCCL default constants (no measured calibration for "
                                              "this GPU)"))
     << "; algorithm " << algorithm_name(r.spec.algorithm) << ", protocol "
     << protocol_name(r.spec.protocol)
     << (r.domains > 1 && r.spec.algorithm == Algorithm::kAuto
             ? (r.tuner == TunerKind::kNccl ? " (NCCL's tuner)" : " (fastest line)")
             : "")
     << (r.domains > 1 ? (r.sharp ? "; SHARP on" : "; SHARP off") : "") << "; GB/s = 1e9 B/s\n";
  os << "#\n";
  std::snprintf(line, sizeof line, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %-12s  %s\n",
                "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "algorithm",
                "protocol");
  os << line;
  std::snprintf(line, sizeof line, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)");
  os << line;
  for (const auto& row : r.rows) {
    const auto& e = row.estimate;
    std::snprintf(line, sizeof line, "%12lld  %12lld  %8s  %6s  %6d  %7s  %6s  %6s  %-12s  %s\n",
                  static_cast<long long>(row.size), static_cast<long long>(row.count),
                  r.spec.dtype.name.c_str(), nccl_redop(r.spec.op), nccl_root(r.spec.op),
                  nccl_float(e.time.base() * 1e6, 7).c_str(),
                  nccl_float(e.algbw.base() / 1e9, 6).c_str(),
                  nccl_float(e.busbw.base() / 1e9, 6).c_str(), algorithm_name(e.algorithm),
                  protocol_name(e.protocol));
    os << line;
  }
  std::snprintf(line, sizeof line, "# Avg bus bandwidth    : %g\n",
                std::round(r.avg_busbw_GBps * 1000) / 1000);
  os << line;
  return os.str();
}

std::string render_csv(const SweepResult& r) {
  std::ostringstream os;
  os << "size_bytes,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,algorithm,protocol,latency_"
        "us,bottleneck\n";
  char line[512];
  for (const auto& row : r.rows) {
    const auto& e = row.estimate;
    std::snprintf(line, sizeof line, "%lld,%lld,%s,%s,%d,%.6g,%.6g,%.6g,%s,%s,%.6g,%s\n",
                  static_cast<long long>(row.size), static_cast<long long>(row.count),
                  r.spec.dtype.name.c_str(), nccl_redop(r.spec.op), nccl_root(r.spec.op),
                  e.time.base() * 1e6, e.algbw.base() / 1e9, e.busbw.base() / 1e9,
                  algorithm_name(e.algorithm), protocol_name(e.protocol), e.latency.base() * 1e6,
                  e.bottleneck.c_str());
    os << line;
  }
  return os.str();
}

namespace {
double sig(double v, int digits = 6) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale =
      std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  return std::round(v * scale) / scale;
}
}  // namespace

nlohmann::json to_json(const SweepResult& r) {
  nlohmann::json j;
  j["cluster"] = r.cluster_name;
  j["system"] = r.system;
  j["gpu"] = r.gpu;
  j["op"] = op_name(r.spec.op);
  j["dtype"] = r.spec.dtype.name;
  j["ranks"] = r.ranks;
  j["nvlink_domains"] = r.domains;
  j["gpus_per_domain"] = r.per_domain;
  j["network_model"] = model_name(r.spec.model);
  j["algorithm_requested"] = algorithm_name(r.spec.algorithm);
  j["protocol_requested"] = protocol_name(r.spec.protocol);
  j["calibrated"] = r.calibrated;
  if (!r.profile.empty()) j["calibration_profile"] = r.profile;
  j["sharp"] = r.sharp;
  j["tuner"] = tuner_name(r.tuner);
  j["avg_busbw_GBps"] = sig(r.avg_busbw_GBps);
  nlohmann::json avail = nlohmann::json::object();
  for (const auto& a : r.availability) {
    avail[algorithm_name(a.algorithm)] = a.ok ? std::string("available") : keys_plain(a.reason);
  }
  j["algorithms"] = avail;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    const auto& e = row.estimate;
    rows.push_back({{"size_bytes", row.size},
                    {"count", row.count},
                    {"time_us", sig(e.time.base() * 1e6)},
                    {"latency_us", sig(e.latency.base() * 1e6)},
                    {"algbw_GBps", sig(e.algbw.base() / 1e9)},
                    {"busbw_GBps", sig(e.busbw.base() / 1e9)},
                    {"algorithm", algorithm_name(e.algorithm)},
                    {"protocol", protocol_name(e.protocol)},
                    {"bottleneck", e.bottleneck}});
  }
  j["results"] = rows;
  return j;
}

}  // namespace clustertwin::collective
