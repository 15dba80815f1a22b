#include "clustertwin/collective/calibration.h"

#include <fmt/format.h>

#include <algorithm>

#include "clustertwin/base/check.h"
#include "clustertwin/base/text.h"
#include "clustertwin/config/reader.h"

namespace clustertwin::collective {
using base::fail;
using config::Reader;
using Need = Reader::Need;

double Line::nvlink_efficiency(int p) const {
  return efficiency * std::max(0.05, 1.0 - small_n / std::max(1, p));
}

Op line_family(Op op) {
  switch (op) {
    case Op::kBroadcast:
      return Op::kAllGather;
    case Op::kReduce:
      return Op::kReduceScatter;
    case Op::kSendRecv:
      return Op::kAllToAll;
    default:
      return op;
  }
}

std::string line_key(Op family, Algorithm a, Protocol p) {
  return std::string(op_name(family)) + "/" + algorithm_name(a) + "/" + protocol_name(p);
}

namespace {

constexpr const char* kDir = "collectives/";
constexpr base::Seconds kMaxLineTerm = base::Seconds::from_base(1.0);

void read_line(Reader& algo_r, const std::string& proto_key, const std::string& key,
               CalibrationFile& out) {
  auto entry = algo_r.figure_entry(proto_key);
  if (!entry) return;
  LinePatch p;
  auto src = entry->string("source", Need::kOptional);
  if (src) {
    auto it = entry->context().sources.find(*src);
    if (it != entry->context().sources.end()) p.source = it->second;
  }
  auto time_us = [&](const char* k) -> std::optional<double> {
    auto v = entry->quantity<base::Seconds>(k, Need::kOptional, /*allow_zero=*/true);
    if (!v) return std::nullopt;
    // A collective's latency terms are microseconds (NCCL's baseLat/hwLat; the fitter's bounds
    // stop at 5 ms): a term above a second is a unit slip, and 1e300 us once ran as a time.
    if (v->base() > kMaxLineTerm.base()) {
      entry->error(fmt::format("expected at most {:g} s (a collective latency term), got {:g} s",
                               kMaxLineTerm.base(), v->base()),
                   k);
      return std::nullopt;
    }
    return v->base() * 1e6;
  };
  p.base_us = time_us("base");
  p.hop_us = time_us("hop");
  p.net_hop_us = time_us("net_hop");
  p.fill_us = time_us("fill");
  p.efficiency = entry->number("efficiency", Need::kOptional, 1e-3, 1.0);
  p.net_efficiency = entry->number("net_efficiency", Need::kOptional, 1e-3, 1.0);
  p.small_n = entry->number("small_n", Need::kOptional, 0.0, 1.9);
  p.ramp = entry->number("ramp", Need::kOptional, 0.0, 100.0);
  entry->allow("fit");
  entry->finish();
  out.lines[key] = std::move(p);
}

/// catalog/collectives/at-scale.yaml: `at_scale:` a list of {gpus, nic_efficiency,
/// nvls_channel_bw, cross_domain_fill, cross_domain_ramp}, each figure with its source.
void read_scale_file(Reader& top, std::vector<ScaleParams>& out) {
  for (auto& r : top.children("at_scale")) {
    ScaleParams s;
    s.path = r.path();
    s.gpus = r.strings("gpus").value_or(std::vector<std::string>{});
    auto cite = [&](const char* key) { return r.cited_figure_entry(key, s.source); };
    if (auto e = cite("nic_efficiency")) {
      s.nic_efficiency = e->number("value", Reader::Need::kRequired, 0.05, 1.0).value_or(0);
      e->finish();
    }
    if (auto e = cite("sharp_efficiency")) {
      s.sharp_efficiency = e->number("value", Reader::Need::kRequired, 0.05, 1.0).value_or(0);
      e->finish();
    }
    if (auto e = cite("nvls_channel_bw")) {
      s.nvls_channel_bw =
          e->quantity<BytesPerSecond>("value", Reader::Need::kRequired).value_or(BytesPerSecond{});
      e->finish();
    }
    if (auto e = cite("cross_domain_fill")) {
      auto v = e->quantity<base::Seconds>("value", Reader::Need::kRequired, true);
      s.cross_fill_us = v ? v->base() * 1e6 : 0.0;
      e->finish();
    }
    if (auto e = cite("cross_domain_ramp")) {
      s.cross_ramp = e->number("value", Reader::Need::kRequired, 0.0, 100.0).value_or(0);
      e->finish();
    }
    r.allow("note");
    r.finish();
    out.push_back(std::move(s));
  }
}

std::optional<CalibrationFile> read_file(const hardware::CatalogFile& f, base::Errors& errors,
                                         std::vector<ScaleParams>& scale,
                                         const std::string& prefix = "catalog/") {
  auto doc = config::parse_document(f.text, prefix + f.path);
  if (!doc) {
    errors.add(doc.error());
    return std::nullopt;
  }
  config::ReadContext ctx{.file = doc->file};
  Reader top(doc->root, ctx);
  top.read_sources();
  CalibrationFile out;
  // The MoE all-to-all kernels' parameters live beside the lines; A2aParams reads them.
  if (top.has("moe_all_to_all")) return std::nullopt;
  if (top.has("at_scale")) {
    read_scale_file(top, scale);
    top.finish();
    if (!ctx.errors.empty()) {
      for (auto& e : ctx.errors.items) errors.add(e);
    }
    return std::nullopt;
  }
  out.path = doc->file;
  auto r = top.child("collectives");
  if (r) {
    out.name = r->string("name").value_or("");
    out.gpus = r->strings("gpus", Need::kOptional).value_or(std::vector<std::string>{});
    out.measured_device = r->string("measured_device", Need::kOptional).value_or("");
    r->allow("fit");
    r->allow("note");
    if (auto ch = r->child("channels", Need::kOptional)) {
      if (auto v = ch->integer("ring", Need::kOptional, 1, 64))
        out.ring_channels = static_cast<int>(*v);
      if (auto v = ch->integer("nvls", Need::kOptional, 1, 64))
        out.nvls_channels = static_cast<int>(*v);
      ch->finish();
    }
    std::vector<std::string> ops;
    for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter, Op::kAllToAll}) {
      ops.emplace_back(op_name(op));
      auto op_r = r->child(op_name(op), Need::kOptional);
      if (!op_r) continue;
      for (const auto& akey : op_r->keys()) {
        auto a = parse_algorithm(akey);
        if (!a || *a == Algorithm::kAuto) {
          op_r->error("unknown algorithm '" + akey + "'", akey);
          op_r->allow(akey);
          continue;
        }
        auto algo_r = op_r->child(akey);
        if (!algo_r) continue;
        for (const auto& pkey : algo_r->keys()) {
          auto p = parse_protocol(pkey);
          if (!p || *p == Protocol::kAuto) {
            algo_r->error("unknown protocol '" + pkey + "' (expected ll, ll128 or simple)", pkey);
            algo_r->allow(pkey);
            continue;
          }
          read_line(*algo_r, pkey, line_key(op, *a, *p), out);
          // A protocol cannot reach more of a link than its wire format carries (LL: 4 data
          // bytes per 8; LL128: 120 per 128).
          const auto& patch = out.lines[line_key(op, *a, *p)];
          const double cap = *p == Protocol::kLL ? 0.5 : *p == Protocol::kLL128 ? 120.0 / 128 : 1.0;
          for (const auto& e : {patch.efficiency, patch.net_efficiency}) {
            if (e && *e > cap + 1e-9) {
              algo_r->error("efficiency " + std::to_string(*e) + " is above what " + pkey +
                                " can carry (" + std::to_string(cap) + ")",
                            pkey);
            }
          }
        }
        algo_r->finish();
      }
      op_r->finish();
    }
    r->finish();
  }
  top.allow("profile");   // a calibration profile's record of its fit (read by the calibrate layer)
  top.allow("training");  // a profile's training-model scale (calibration/step_fit.h reads it)
  top.allow("serving");   // a profile's serving step-model constants (calibration/serving_fit.h)
  top.allow("compute");   // a profile's kernel efficiencies (compute::ComputeModel::parse_profile)
  top.finish();
  if (!ctx.errors.empty()) {
    for (auto& e : ctx.errors.items) errors.add(e);
    return std::nullopt;
  }
  return out;
}

void apply(Line& l, const LinePatch& p, bool calibrated) {
  if (p.base_us) l.base_us = *p.base_us;
  if (p.hop_us) l.hop_us = *p.hop_us;
  if (p.net_hop_us) l.net_hop_us = *p.net_hop_us;
  if (p.efficiency) l.efficiency = *p.efficiency;
  if (p.small_n) l.small_n = *p.small_n;
  if (p.net_efficiency) l.net_efficiency = *p.net_efficiency;
  if (p.ramp) l.ramp = *p.ramp;
  if (p.fill_us) l.fill_us = *p.fill_us;
  if (!p.source.empty()) l.source = p.source;
  l.calibrated = l.calibrated || calibrated;
}

/// The intra-domain line an algorithm measured only across domains inherits its NVLink side from:
/// tree's chains are ring steps, NVLS-tree's domains run NVLS, CollNet's reduce-scatter and
/// all-gather inside a domain are the ring's.
std::optional<std::pair<Algorithm, Protocol>> nvlink_parent(Algorithm a, Protocol p) {
  switch (a) {
    case Algorithm::kTree:
      return std::pair{Algorithm::kRing, p};
    case Algorithm::kNvlsTree:
      return std::pair{Algorithm::kNvls, Protocol::kSimple};
    case Algorithm::kCollNet:
      return std::pair{Algorithm::kRing, Protocol::kSimple};
    default:
      return std::nullopt;
  }
}

}  // namespace

base::Result<Calibration> Calibration::from_files(std::span<const hardware::CatalogFile> files) {
  Calibration cal;
  base::Errors errors;
  bool have_defaults = false;
  for (const auto& f : files) {
    if (f.path.rfind(kDir, 0) != 0) continue;
    auto file = read_file(f, errors, cal.scale_);
    if (!file) continue;
    if (file->name == "defaults") {
      cal.defaults_ = std::move(*file);
      have_defaults = true;
    } else {
      if (file->gpus.empty()) {
        errors.add(
            {"collectives '" + file->name + "': expected a non-empty 'gpus' list", file->path, 0});
        continue;
      }
      cal.files_.push_back(std::move(*file));
    }
  }
  if (!have_defaults) {
    errors.add({"catalog/collectives/defaults.yaml is missing (NCCL's default constants)", {}, 0});
  }
  // A GPU must not be claimed by two files.
  for (size_t i = 0; i < cal.files_.size(); ++i) {
    for (size_t j = i + 1; j < cal.files_.size(); ++j) {
      for (const auto& g : cal.files_[i].gpus) {
        if (std::find(cal.files_[j].gpus.begin(), cal.files_[j].gpus.end(), g) !=
            cal.files_[j].gpus.end()) {
          errors.add({"GPU '" + g + "' is calibrated twice (" + cal.files_[i].path + " and " +
                          cal.files_[j].path + ")",
                      cal.files_[j].path, 0});
        }
      }
    }
  }
  for (size_t i = 0; i < cal.scale_.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      for (const auto& g : cal.scale_[i].gpus) {
        const auto& o = cal.scale_[j].gpus;
        if (std::find(o.begin(), o.end(), g) != o.end()) {
          errors.add({"GPU '" + g + "' has two at_scale entries", cal.scale_[i].path, 0});
        }
      }
    }
  }
  if (!errors.empty()) return fail(errors.combined());
  return cal;
}

const ScaleParams& Calibration::scale(std::string_view gpu) const {
  for (const auto& s : scale_) {
    if (std::find(s.gpus.begin(), s.gpus.end(), gpu) != s.gpus.end()) return s;
  }
  return no_scale_;
}

base::Result<Calibration> Calibration::load(const hardware::Catalog& catalog) {
  return from_files(catalog.other_files());
}

const CalibrationFile* Calibration::for_gpu(std::string_view gpu) const {
  for (const auto& f : files_) {
    if (std::find(f.gpus.begin(), f.gpus.end(), gpu) != f.gpus.end()) return &f;
  }
  return nullptr;
}

bool Calibration::has_line(Op op, Algorithm a, Protocol p) const {
  return defaults_.lines.count(line_key(line_family(op), a, p)) > 0;
}

namespace {

/// Applies what `f` says about a line: the line itself, or for lines measured only across
/// domains (tree, NVLS-tree, CollNet) the NVLink-side fields of the intra-domain primitive they
/// run inside each domain.
void apply_file(Line& l, const CalibrationFile& f, Op op, Algorithm a, Protocol p) {
  auto g = f.lines.find(line_key(line_family(op), a, p));
  if (g != f.lines.end()) {
    apply(l, g->second, true);
  } else if (auto parent = nvlink_parent(a, p); parent) {
    auto pg = f.lines.find(line_key(line_family(op), parent->first, parent->second));
    if (pg != f.lines.end()) {
      LinePatch nv;
      nv.efficiency = pg->second.efficiency;
      nv.small_n = pg->second.small_n;
      nv.ramp = pg->second.ramp;
      nv.fill_us = pg->second.fill_us;
      if (a != Algorithm::kCollNet) nv.base_us = pg->second.base_us;
      if (a == Algorithm::kTree) nv.hop_us = pg->second.hop_us;
      nv.source = pg->second.source;
      apply(l, nv, true);
    }
  }
}

}  // namespace

Line Calibration::line(std::string_view gpu, Op op, Algorithm a, Protocol p) const {
  const std::string key = line_key(line_family(op), a, p);
  auto it = defaults_.lines.find(key);
  CT_CHECK(it != defaults_.lines.end(),
           "catalog/collectives/defaults.yaml lacks a line the model needs");
  Line l;
  apply(l, it->second, false);
  if (const auto* f = for_gpu(gpu)) apply_file(l, *f, op, a, p);
  // The platform's achievable NIC rate (GPUDirect RDMA through its GPU-NIC path), fitted on
  // measurements across nodes, replaces the NIC fraction NCCL's defaults assume (the ring/Simple
  // line's net_efficiency); each line keeps its own factor on top of it (tree 0.92, PAT 0.75,
  // CollNet 0.9: tuning.cc).
  if (const auto& s = scale(gpu); s.nic_efficiency > 0 && p == Protocol::kSimple) {
    const auto ref =
        defaults_.lines.find(line_key(Op::kAllReduce, Algorithm::kRing, Protocol::kSimple));
    const double nic_default = ref != defaults_.lines.end() && ref->second.net_efficiency
                                   ? *ref->second.net_efficiency
                                   : 0.94;
    l.net_efficiency = std::min(1.0, l.net_efficiency * s.nic_efficiency / nic_default);
  }
  // CollNet and NVLS across domains stream through SHARP's aggregation trees (NVLS inside one
  // domain does not touch the NIC, so the field is unused there).
  if (const auto& s = scale(gpu);
      s.sharp_efficiency > 0 && (a == Algorithm::kCollNet || a == Algorithm::kNvls)) {
    l.net_efficiency = s.sharp_efficiency;
  }
  // The user's profiles (clustertwin calibrate) are laid over everything above, in the order
  // they were laid: a later profile's fields override an earlier one's, field by field.
  for (const auto& pr : profiles_)
    if (std::find(pr.gpus.begin(), pr.gpus.end(), gpu) != pr.gpus.end())
      apply_file(l, pr, op, a, p);
  return l;
}

base::Result<CalibrationFile> Calibration::read_profile(const hardware::CatalogFile& file) {
  base::Errors errors;
  std::vector<ScaleParams> no_scale;  // a profile holds lines, not at-scale parameters
  auto f = read_file(file, errors, no_scale, "");
  if (!f) return fail(errors.combined());
  if (f->gpus.empty())
    return fail("calibration profile: expected a non-empty 'gpus' list under 'collectives'",
                f->path, 0);
  return *f;
}

Calibration Calibration::with_profile(CalibrationFile profile) const {
  Calibration out = *this;
  out.profiles_.push_back(std::move(profile));
  return out;
}

const CalibrationFile* Calibration::profile_for(std::string_view gpu) const {
  for (auto it = profiles_.rbegin(); it != profiles_.rend(); ++it) {
    if (std::find(it->gpus.begin(), it->gpus.end(), gpu) != it->gpus.end()) return &*it;
  }
  return nullptr;
}

namespace {

/// The channel count of the last profile laid over `gpu` that sets one, else the GPU's file's,
/// else the defaults'.
int channels_of(std::span<const CalibrationFile> profiles, const CalibrationFile* file,
                const CalibrationFile& defaults, std::string_view gpu,
                std::optional<int> CalibrationFile::*field) {
  for (auto it = profiles.rbegin(); it != profiles.rend(); ++it) {
    if (std::find(it->gpus.begin(), it->gpus.end(), gpu) != it->gpus.end() && (*it).*field)
      return *((*it).*field);
  }
  if (file != nullptr && file->*field) return *(file->*field);
  return (defaults.*field).value_or(16);
}

}  // namespace

int Calibration::ring_channels(std::string_view gpu) const {
  return channels_of(profiles_, for_gpu(gpu), defaults_, gpu, &CalibrationFile::ring_channels);
}

int Calibration::nvls_channels(std::string_view gpu) const {
  return channels_of(profiles_, for_gpu(gpu), defaults_, gpu, &CalibrationFile::nvls_channels);
}

}  // namespace clustertwin::collective
