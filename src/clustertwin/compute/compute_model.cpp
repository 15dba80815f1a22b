// Roofline-with-fitted-efficiency compute model; equations and sources in compute_model.h and
// docs/models/compute.md. Keep the formulas here identical to calibration/kernel_fit.cpp
// (`clustertwin calibrate`), which fits the grids with them.

#include "clustertwin/compute/compute_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "clustertwin/base/text.h"

namespace clustertwin::compute {
namespace {

using base::fail;
using config::Reader;
using Need = config::Reader::Need;

constexpr double kActBytes = 2.0;
// FlashAttention-2 backward: 5 matmuls against the forward's 2 (2.5x FLOPs), reaching 63% of
// A100 peak against 73% forward (Dao 2023, arXiv:2307.08691 §4.1).
constexpr double kAttentionBackwardFlopsRatio = 2.5;
constexpr double kAttentionBackwardEfficiency = 0.63 / 0.73;
// Grouped-GEMM backward = dgrad + wgrad, each the forward's FLOPs.
constexpr double kMoeBackwardRatio = 2.0;
// Queries per sequence below which the decode (generation) kernel is used (speculative decoding
// verifies a few tokens per step with it).
constexpr int64_t kDecodeMaxQueries = 16;

size_t idx(DType d) { return static_cast<size_t>(d); }

struct FamilySpec {
  const char* key;
  std::vector<std::string> axes;
  std::vector<std::string> dtypes;
};

const std::vector<FamilySpec>& family_specs() {
  static const std::vector<FamilySpec> specs = {
      {"gemm", {"m", "n", "k"}, {"bf16", "fp8", "fp8_block", "nvfp4"}},
      {"attention_prefill", {"isl", "batch_heads"}, {"bf16", "fp8"}},
      {"attention_decode", {"context", "batch_kv_heads", "heads_per_kv_head"}, {"bf16", "fp8"}},
      {"mla_prefill", {"isl", "batch_heads"}, {"bf16", "fp8"}},
      {"mla_decode", {"context", "batch", "heads"}, {"bf16", "fp8"}},
      {"moe", {"tokens_per_expert", "expert_params"}, {"bf16", "fp8", "fp8_block", "nvfp4"}},
  };
  return specs;
}

std::optional<double> parse_number(std::string_view s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// Reads `axes:` and `efficiency:` rows ("m=1 n=32 | r r r ...", last axis along the row).
std::optional<KernelTable> read_table(Reader& t, const FamilySpec& spec, bool gemm) {
  KernelTable out;
  out.launch_overhead = t.quantity<Seconds>("launch_overhead").value_or(Seconds{});
  if (gemm) {
    out.unaligned_m_penalty =
        t.number("unaligned_m_penalty", Need::kRequired, 1.0, 10.0).value_or(1.0);
  }
  std::vector<std::vector<double>> axes;
  // Grid coordinates are whole numbers (tokens, features, heads), as the row labels print them.
  if (auto a = t.child("axes")) {
    const auto keys = a->keys();
    if (keys != spec.axes) {
      a->error("expected the axes " + base::join(spec.axes) + " in this order, got " +
               base::join(keys));
      for (const auto& k : keys) a->allow(k);
    } else {
      for (const auto& k : keys) {
        auto list = a->strings(k);
        if (!list) return std::nullopt;
        std::vector<double> axis;
        for (const auto& s : *list) {
          auto v = parse_number(s);
          if (!v || *v < 1 || *v != std::floor(*v) || (!axis.empty() && *v <= axis.back())) {
            a->error("expected increasing positive whole numbers, got '" + s + "'", k);
            return std::nullopt;
          }
          axis.push_back(*v);
        }
        axes.push_back(std::move(axis));
      }
    }
    a->finish();
  }
  auto rows = t.strings("efficiency");
  if (axes.size() != spec.axes.size() || !rows) return std::nullopt;
  size_t expect_rows = 1;
  for (size_t i = 0; i + 1 < axes.size(); ++i) expect_rows *= axes[i].size();
  if (rows->size() != expect_rows) {
    t.error("expected " + std::to_string(expect_rows) +
                " rows (one per combination of the axes "
                "before the last), got " +
                std::to_string(rows->size()),
            "efficiency");
    return std::nullopt;
  }
  std::vector<double> values;
  values.reserve(expect_rows * axes.back().size());
  for (size_t r = 0; r < rows->size(); ++r) {
    const std::string& row = (*rows)[r];
    const auto bar = row.find('|');
    // The label names the row's coordinates; check them against the axes.
    std::string expected_label;
    size_t rest = r;
    std::vector<std::string> parts(axes.size() - 1);
    for (size_t i = axes.size() - 1; i-- > 0;) {
      const size_t n = axes[i].size();
      std::ostringstream os;
      os << spec.axes[i] << "=" << static_cast<int64_t>(std::llround(axes[i][rest % n]));
      parts[i] = os.str();
      rest /= n;
    }
    expected_label = base::join(parts, " ");
    const std::string_view label =
        bar == std::string::npos ? std::string_view{} : std::string_view(row).substr(0, bar);
    std::string got_label;
    for (auto w : split_ws(label)) got_label += (got_label.empty() ? "" : " ") + std::string(w);
    if (bar == std::string::npos || got_label != expected_label) {
      t.error("row " + std::to_string(r + 1) + ": expected the label '" + expected_label +
                  " | ...', got '" + row + "'",
              "efficiency");
      return std::nullopt;
    }
    auto cells = split_ws(std::string_view(row).substr(bar + 1));
    if (cells.size() != axes.back().size()) {
      t.error("row '" + expected_label + "': expected " + std::to_string(axes.back().size()) +
                  " values, got " + std::to_string(cells.size()),
              "efficiency");
      return std::nullopt;
    }
    for (auto c : cells) {
      auto v = parse_number(c);
      if (!v || !(*v >= kMinEfficiency && *v <= kMaxEfficiency)) {
        t.error("row '" + expected_label + "': expected efficiencies in [1e-05, 2] (fractions of " +
                    "the roofline, as calibrate fits them), got '" + std::string(c) + "'",
                "efficiency");
        return std::nullopt;
      }
      values.push_back(*v);
    }
  }
  out.efficiency = EfficiencyGrid(std::move(axes), values);
  return out;
}

std::string_view file_stem(std::string_view path) {
  auto slash = path.rfind('/');
  if (slash != std::string_view::npos) path.remove_prefix(slash + 1);
  auto dot = path.rfind('.');
  if (dot != std::string_view::npos) path = path.substr(0, dot);
  return path;
}

const hardware::CatalogFile* find_file(const hardware::Catalog& catalog, std::string_view gpu) {
  for (const auto& f : catalog.other_files()) {
    if (f.path.rfind("compute/", 0) == 0 && file_stem(f.path) == gpu) return &f;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> ComputeModel::calibrated_gpus(const hardware::Catalog& catalog) {
  std::vector<std::string> out;
  for (const auto& f : catalog.other_files()) {
    if (f.path.rfind("compute/", 0) == 0) out.emplace_back(file_stem(f.path));
  }
  std::sort(out.begin(), out.end());
  return out;
}

base::Result<ComputeModel> ComputeModel::for_gpu(const hardware::GpuSpec& gpu,
                                                 const hardware::Catalog& catalog) {
  const auto* f = find_file(catalog, gpu.name);
  if (!f) {
    const auto known = calibrated_gpus(catalog);
    return fail("no compute calibration for gpu '" + gpu.name + "' (catalog/compute/" + gpu.name +
                ".yaml)" + base::did_you_mean(gpu.name, known) +
                "; calibrated gpus: " + base::join(known));
  }
  return parse(f->text, "catalog/" + f->path, &gpu);
}

base::Result<ComputeModel> ComputeModel::reference(const hardware::Catalog& catalog,
                                                   std::string_view gpu) {
  const auto* f = find_file(catalog, gpu);
  if (!f) {
    const auto known = calibrated_gpus(catalog);
    return fail("no compute calibration for gpu '" + std::string(gpu) + "'" +
                base::did_you_mean(gpu, known));
  }
  return parse(f->text, "catalog/" + f->path, nullptr);
}

base::Result<ComputeModel> ComputeModel::parse(std::string_view text, const std::string& file,
                                               const hardware::GpuSpec* gpu) {
  return read(text, file, gpu, false);
}

base::Result<std::optional<ComputeModel>> ComputeModel::parse_profile(
    std::string_view text, const std::string& file, const hardware::GpuSpec& gpu) {
  auto doc = config::parse_document(text, file);
  if (!doc) return fail(doc.error());
  if (!doc->root.IsMap() || !doc->root["compute"]) return std::optional<ComputeModel>{};
  auto m = read(text, file, &gpu, true);
  if (!m) return fail(m.error());
  return std::optional<ComputeModel>{std::move(*m)};
}

ComputeModel ComputeModel::with_profile(const ComputeModel& profile) const {
  ComputeModel out = *this;
  for (size_t f = 0; f < kFamilies; ++f) {
    for (DType d : kAllDTypes) {
      if (profile.tables_[f][idx(d)].present()) out.tables_[f][idx(d)] = profile.tables_[f][idx(d)];
    }
  }
  out.launch_overhead_ = profile.launch_overhead_;
  out.hbm_efficiency_ = profile.hbm_efficiency_;
  out.provenance_.insert(out.provenance_.end(), profile.provenance_.begin(),
                         profile.provenance_.end());
  return out;
}

std::vector<std::string> ComputeModel::table_names() const {
  std::vector<std::string> out;
  const auto& specs = family_specs();
  for (size_t f = 0; f < specs.size(); ++f) {
    for (const auto& key : specs[f].dtypes) {
      auto d = parse_dtype(key);
      if (d && tables_[f][idx(*d)].present()) out.push_back(std::string(specs[f].key) + " " + key);
    }
  }
  return out;
}

base::Result<ComputeModel> ComputeModel::read(std::string_view text, const std::string& file,
                                              const hardware::GpuSpec* gpu, bool profile) {
  auto doc = config::parse_document(text, file);
  if (!doc) return fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  Reader top(doc->root, ctx);
  top.read_sources();
  ComputeModel m;
  auto body = top.child("compute");
  if (!body) return fail(ctx.errors.combined());
  m.gpu_ = body->string("gpu").value_or("");
  // A catalog file is named after its GPU; a profile names it (the reader checks it against
  // the cluster's).
  if (!profile && !m.gpu_.empty() && m.gpu_ != file_stem(file)) {
    body->error(
        "gpu '" + m.gpu_ + "' does not match the file name '" + std::string(file_stem(file)) + "'",
        "gpu");
  }
  body->string("measured_device");
  m.derived_from_ = body->string("derived_from", Need::kOptional).value_or("");
  std::array<FlopsPerSecond, 4> reference_peak{};
  if (auto rp = body->child("reference_peak")) {
    for (const auto& key : rp->keys()) {
      auto p = hardware::parse_precision(key);
      auto v = rp->figure<FlopsPerSecond>(key);
      if (!p || !v) {
        if (!p) rp->error("unknown precision '" + key + "'", key);
        continue;
      }
      for (DType d : kAllDTypes) {
        if (peak_precision(d) == *p) reference_peak[idx(d)] = *v;
      }
    }
    rp->finish();
  }
  const auto ref_bw =
      body->figure<BytesPerSecond>("reference_hbm_bandwidth").value_or(BytesPerSecond{});
  m.hbm_efficiency_ =
      body->number_figure("hbm_efficiency", Need::kRequired, 0.05, 1.0).value_or(0.85);
  m.launch_overhead_ = body->figure<Seconds>("launch_overhead").value_or(Seconds{});

  const auto& specs = family_specs();
  for (size_t f = 0; f < specs.size(); ++f) {
    const auto& spec = specs[f];
    auto fam = body->child(spec.key, Need::kOptional);
    if (!fam) continue;
    for (const auto& key : fam->keys()) {
      auto d = parse_dtype(key);
      if (!d || std::find(spec.dtypes.begin(), spec.dtypes.end(), key) == spec.dtypes.end()) {
        fam->error("unknown table '" + key + "' (expected " + base::join(spec.dtypes) + ")", key);
        fam->allow(key);
        continue;
      }
      auto t = fam->figure_entry(key);
      if (!t) continue;
      auto table = read_table(*t, spec, f == kGemmF);
      t->finish();
      if (table) m.tables_[f][idx(*d)] = std::move(*table);
    }
    fam->finish();
  }
  body->finish();
  if (profile) {
    // A calibration profile's other mappings, read by the collective, training and serving
    // layers.
    for (const char* key : {"profile", "collectives", "training", "serving"}) top.allow(key);
  }
  top.finish();
  if (!m.tables_[kGemmF][idx(DType::kBf16)].present() && ctx.errors.empty()) {
    body->error("a compute calibration needs at least the gemm bf16 table");
  }
  if (!ctx.errors.empty()) return fail(ctx.errors.combined());

  if (gpu) {
    for (DType d : kAllDTypes) {
      const auto& p = gpu->peak_for(peak_precision(d));
      m.peak_[idx(d)] = p ? p->dense : FlopsPerSecond{};
    }
    m.hbm_bandwidth_ = gpu->hbm_bandwidth;
    if (m.peak_[idx(DType::kBf16)].base() <= 0 || m.hbm_bandwidth_.base() <= 0) {
      return fail("gpu '" + gpu->name + "' has no bf16 peak or HBM bandwidth", file);
    }
  } else {
    m.peak_ = reference_peak;
    m.hbm_bandwidth_ = ref_bw;
  }
  m.provenance_ = std::move(ctx.provenance);
  return m;
}

const KernelTable* ComputeModel::table(Family f, DType d) const {
  // Fall back to the next wider format that has a table (e.g. no fp8_block MoE table).
  static constexpr DType kChain[] = {DType::kNvfp4, DType::kFp8Block, DType::kFp8, DType::kBf16};
  bool started = false;
  for (DType c : kChain) {
    if (c == d) started = true;
    if (started && tables_[f][idx(c)].present()) return &tables_[f][idx(c)];
  }
  return nullptr;
}

bool ComputeModel::supports(DType d) const {
  return peak_[idx(d)].base() > 0 && tables_[kGemmF][idx(d)].present();
}

DType ComputeModel::effective(DType d) const {
  static constexpr DType kChain[] = {DType::kNvfp4, DType::kFp8Block, DType::kFp8, DType::kBf16};
  bool started = false;
  for (DType c : kChain) {
    if (c == d) started = true;
    if (started && supports(c)) return c;
  }
  return DType::kBf16;
}

FlopsPerSecond ComputeModel::peak(DType d) const { return peak_[idx(effective(d))]; }

Seconds ComputeModel::gemm(GemmShape s, DType d) const {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return Seconds{};
  const DType e = effective(d);
  const KernelTable& t = tables_[kGemmF][idx(e)];
  const double m = static_cast<double>(s.m);
  const double n = static_cast<double>(s.n);
  const double k = static_cast<double>(s.k);
  const double bytes = weight_bytes(e) * n * k + kActBytes * m * k + kActBytes * m * n;
  const double ideal = std::max(s.flops() / peak_[idx(e)].base(), bytes / hbm_bandwidth_.base());
  double time = t.launch_overhead.base() + ideal / t.efficiency.at({m, n, k});
  if (s.m > 16 && s.m % 16 != 0) time *= t.unaligned_m_penalty;
  return base::seconds(time);
}

Seconds ComputeModel::gemm_backward(GemmShape forward, DType d) const {
  return gemm(dgrad_shape(forward), d) + gemm(wgrad_shape(forward), d);
}

Seconds ComputeModel::attention_time(const AttentionShape& a) const {
  if (a.batch <= 0 || a.q_len <= 0 || a.heads <= 0) return Seconds{};
  const bool fp8_kv = a.kv_bytes <= 1.0;
  const DType kv_table = fp8_kv ? DType::kFp8 : DType::kBf16;
  const double b = static_cast<double>(a.batch);
  const double h = static_cast<double>(a.heads);
  const double q = static_cast<double>(a.q_len);
  // A local layer's kernel touches only the keys in its window (AttentionShape::window).
  const double kv_len = static_cast<double>(a.touched_kv_len());
  const double isl = std::sqrt(q * kv_len);  // = q_len in plain prefill
  const KernelTable* t = nullptr;
  std::array<double, EfficiencyGrid::kMaxAxes> key{};
  double peak = peak_[idx(DType::kBf16)].base();
  switch (a.variant) {
    case AttentionVariant::kGqa:
      if (a.q_len < kDecodeMaxQueries && a.kv_len > a.q_len) {
        t = table(kDecodeF, kv_table);
        const double kv = static_cast<double>(std::max<int64_t>(a.kv_heads, 1));
        key = {kv_len, b * kv, h * q / kv};
      } else {
        const bool fp8 = a.fp8_math && supports(DType::kFp8);
        t = table(kPrefillF, fp8 ? DType::kFp8 : DType::kBf16);
        if (fp8) peak = peak_[idx(DType::kFp8)].base();
        key = {isl, b * h, 0};
      }
      break;
    case AttentionVariant::kMlaPrefill:
      t = table(kMlaPrefillF, kv_table);
      key = {isl, b * h, 0};
      break;
    case AttentionVariant::kMlaDecode:
      t = table(kMlaDecodeF, kv_table);
      key = {kv_len, b * q, h};
      break;
  }
  const double ideal = std::max(a.flops() / peak, a.bytes() / hbm_bandwidth_.base());
  if (!t) {
    // No fitted table (a calibration without MLA, say): the bf16 GEMM launch cost and a fixed
    // 50% of the roofline, stated in docs/models/compute.md.
    return launch_overhead_ + base::seconds(ideal / 0.5);
  }
  return base::seconds(t->launch_overhead.base() + ideal / t->efficiency.at(key));
}

Seconds ComputeModel::attention(const AttentionShape& a) const { return attention_time(a); }

Seconds ComputeModel::attention_backward(const AttentionShape& a) const {
  const Seconds fwd = attention_time(a);
  if (fwd.base() <= 0) return fwd;
  const Seconds t0 = std::min(launch_overhead_, fwd);
  return t0 + (fwd - t0) * (kAttentionBackwardFlopsRatio / kAttentionBackwardEfficiency);
}

Seconds ComputeModel::moe(const MoeShape& s, DType d) const {
  if (s.tokens <= 0 || s.hidden <= 0 || s.inter <= 0) return Seconds{};
  const DType e = effective(d);
  const double ideal =
      std::max(s.flops() / peak_[idx(e)].base(), s.bytes(e) / hbm_bandwidth_.base());
  const KernelTable* t = table(kMoeF, e);
  if (!t) {
    // No MoE table: the grouped GEMMs as plain GEMMs of the average expert
    // (docs/models/compute.md).
    const double per = s.pairs() / s.active_experts();
    const double i_local = static_cast<double>(s.inter) / std::max(s.tp, 1);
    const auto m = static_cast<int64_t>(std::ceil(per));
    const Seconds one = gemm({m, static_cast<int64_t>(2 * i_local), s.hidden}, e) +
                        gemm({m, s.hidden, static_cast<int64_t>(i_local)}, e);
    return one * s.active_experts();
  }
  const double per = s.pairs() / s.active_experts();
  return base::seconds(t->launch_overhead.base() +
                       ideal / t->efficiency.at({per, s.expert_params(), 0}));
}

Seconds ComputeModel::moe_backward(const MoeShape& s, DType d) const {
  const Seconds fwd = moe(s, d);
  if (fwd.base() <= 0) return fwd;
  const Seconds t0 = std::min(launch_overhead_, fwd);
  return t0 + (fwd - t0) * kMoeBackwardRatio;
}

Seconds ComputeModel::memory_bound(Bytes b) const {
  if (b.base() <= 0) return Seconds{};
  return launch_overhead_ + b / (hbm_bandwidth_ * hbm_efficiency_);
}

Seconds ComputeModel::op(const Op& o) const {
  switch (o.kind) {
    case OpKind::kGemm: {
      const Seconds one = gemm(o.gemm, o.dtype);
      if (o.count <= 1 || one.base() <= 0) return one;
      const Seconds t0 = std::min(tables_[kGemmF][idx(effective(o.dtype))].launch_overhead, one);
      return t0 + (one - t0) * static_cast<double>(o.count);
    }
    case OpKind::kAttention:
      return attention(o.attention);
    case OpKind::kAttentionBackward:
      return attention_backward(o.attention);
    case OpKind::kMoe:
      return moe(o.moe, o.dtype);
    case OpKind::kMoeBackward:
      return moe_backward(o.moe, o.dtype);
    case OpKind::kMemory:
      return memory_bound(o.bytes);
  }
  return Seconds{};
}

Seconds ComputeModel::roofline(const Op& o) const {
  const double f = o.flops.base() / peak(o.dtype).base();
  const double b = o.bytes.base() / hbm_bandwidth_.base();
  return base::seconds(std::max(f, b));
}

}  // namespace clustertwin::compute
