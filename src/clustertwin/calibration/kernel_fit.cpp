#include "clustertwin/calibration/kernel_fit.h"

// The fit of the compute model's efficiency grids (kernel_fit.h, docs/models/compute.md). The
// arithmetic follows the order of the former tools/fit_compute.py step by step (medians of log r,
// neighbour means, the same sums), so the catalog's compute files regenerate to the same bytes.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "clustertwin/base/file.h"
#include "clustertwin/base/text.h"
#include "clustertwin/calibration/parse.h"
#include "clustertwin/calibration/profile_text.h"
#include "clustertwin/compute/compute_model.h"
#include "clustertwin/config/reader.h"

namespace clustertwin::calibration {
using base::fail;

namespace {

constexpr double kActBytes = 2.0;  // bf16 activations in and out of every measured call

// Grids (log-spaced). GEMM: fit on power-of-two n, k; the others (768, 1536, 2560, 3072, ...,
// the shapes real models use) are held out.
const std::vector<double> kGemmM = {1,    16,   32,   64,   128,   256,  512,
                                    1024, 2048, 4096, 8192, 16384, 32768};
const std::vector<double> kGemmNK = {32, 128, 512, 1024, 2048, 4096, 8192, 16384, 65536};
const std::vector<double> kPrefillIsl = {1, 16, 64, 256, 1024, 2048, 4096, 8192, 16384};
const std::vector<double> kPrefillBH = {1, 4, 16, 64, 256, 1024, 4096};
const std::vector<double> kDecodeCtx = {2, 16, 128, 1024, 4096, 16384, 65536, 131072};
const std::vector<double> kDecodeBKV = {1, 4, 16, 64, 256, 1024, 4096};
const std::vector<double> kDecodeGqa = {1, 2, 4, 8, 16, 64};
const std::vector<double> kMlaPrefillIsl = {1, 16, 64, 256, 1024, 4096, 16384, 32768};
const std::vector<double> kMlaPrefillBH = {1, 8, 64, 512, 4096};
const std::vector<double> kMlaDecodeCtx = {2, 16, 128, 1024, 8192, 32768, 131072};
const std::vector<double> kMlaDecodeBatch = {1, 4, 16, 64, 256, 1024};
const std::vector<double> kMlaDecodeHeads = {1, 4, 16, 64, 128};
const std::vector<double> kMoePer = {1, 4, 16, 64, 256, 1024, 4096, 16384};
const std::vector<double> kMoeExpertParams = {262144,   1048576,  4194304,
                                              16777216, 67108864, 268435456};

// DeepSeek MLA dimensions (qk_nope 128 + rope 64; v 128; latent = kv_lora 512 + rope 64).
constexpr double kMlaQk = 192, kMlaV = 128, kMlaLatent = 576, kMlaKvLora = 512;

bool pow2(int64_t x) { return x >= 1 && x < (int64_t{1} << 20) && (x & (x - 1)) == 0; }
bool on(const std::vector<double>& axis, double x) {
  return std::find(axis.begin(), axis.end(), x) != axis.end();
}

/// A table's dtype as the compute file names it, the peak it runs at and the weight bytes per
/// element (block-scaled formats carry their scales).
struct DTypeInfo {
  const char* csv;
  const char* name;
  const char* peak;
  double weight_bytes;
};
const std::vector<DTypeInfo>& dtypes() {
  static const std::vector<DTypeInfo> d = {
      {"bfloat16", "bf16", "bf16", 2.0},
      {"fp8", "fp8", "fp8", 1.0},
      {"fp8_block", "fp8_block", "fp8", 1.0 + 4.0 / (128 * 128)},
      {"nvfp4", "nvfp4", "fp4", 0.5 + 1.0 / 16},
  };
  return d;
}
double peak_of(const KernelRoofline& r, std::string_view key) {
  if (key == "bf16") return r.bf16_flops;
  if (key == "fp8") return r.fp8_flops;
  if (key == "fp4") return r.fp4_flops;
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n % 2 == 1) return v[n / 2];
  return (v[n / 2 - 1] + v[n / 2]) / 2;
}

double clamp_r(double ideal, double t, double t0) {
  return std::min(std::max(ideal / std::max(t - t0, 0.02 * t0), 1e-5), 2.0);
}

double t0_of(const std::vector<double>& latencies) {
  return 0.9 * *std::min_element(latencies.begin(), latencies.end());
}

ErrorStats summarize(const std::vector<double>& errs) {
  ErrorStats s;
  std::vector<double> a;
  a.reserve(errs.size());
  for (double e : errs) a.push_back(std::abs(e));
  std::sort(a.begin(), a.end());
  s.n = a.size();
  if (a.empty()) return s;
  auto q = [&](double p) {
    const auto i = static_cast<size_t>(p * static_cast<double>(a.size() - 1) + 0.5);
    return a[std::min(a.size() - 1, i)];
  };
  s.median = q(0.5);
  s.p90 = q(0.9);
  s.max = a.back();
  return s;
}

/// A deterministic subset of about n rows.
template <class T>
std::vector<T> every(const std::vector<T>& rows, size_t n) {
  if (rows.size() <= n) return rows;
  const double step = static_cast<double>(rows.size()) / static_cast<double>(n);
  std::vector<T> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(rows[static_cast<size_t>(static_cast<double>(i) * step)]);
  return out;
}

/// Grid points keyed by their flat index; filled from samples, then by neighbour means.
class GridBuilder {
 public:
  GridBuilder(std::vector<std::string> names, std::vector<std::vector<double>> axes) {
    grid_.axis_names = std::move(names);
    grid_.axes = std::move(axes);
    size_t n = 1;
    for (const auto& a : grid_.axes) n *= a.size();
    grid_.values.assign(n, 0.0);
    have_.assign(n, false);
    samples_.resize(n);
  }
  void add(std::span<const double> key, double r) {
    size_t flat = 0;
    for (size_t a = 0; a < grid_.axes.size(); ++a) {
      const auto& ax = grid_.axes[a];
      flat = flat * ax.size() +
             static_cast<size_t>(std::find(ax.begin(), ax.end(), key[a]) - ax.begin());
    }
    samples_[flat].push_back(std::log(r));
  }
  /// The median of log r per point, then neighbour means for the rest; false when some point
  /// is unreachable from any measurement.
  bool build() {
    for (size_t i = 0; i < samples_.size(); ++i) {
      if (samples_[i].empty()) continue;
      grid_.values[i] = std::exp(median(samples_[i]));
      have_[i] = true;
    }
    const size_t dims = grid_.axes.size();
    std::vector<size_t> stride(dims, 1);
    for (size_t a = dims - 1; a-- > 0;) stride[a] = stride[a + 1] * grid_.axes[a + 1].size();
    for (int pass = 0; pass < 64; ++pass) {
      std::vector<std::pair<size_t, double>> update;
      bool missing = false;
      for (size_t i = 0; i < have_.size(); ++i) {
        if (have_[i]) continue;
        missing = true;
        std::vector<double> nb;
        for (size_t a = 0; a < dims; ++a) {
          const size_t n = grid_.axes[a].size();
          const size_t pos = (i / stride[a]) % n;
          if (pos > 0 && have_[i - stride[a]]) nb.push_back(std::log(grid_.values[i - stride[a]]));
          if (pos + 1 < n && have_[i + stride[a]])
            nb.push_back(std::log(grid_.values[i + stride[a]]));
        }
        if (!nb.empty()) {
          double sum = 0;
          for (double x : nb) sum += x;
          update.emplace_back(i, std::exp(sum / static_cast<double>(nb.size())));
        }
      }
      if (!missing) return true;
      for (const auto& [i, v] : update) {
        grid_.values[i] = v;
        have_[i] = true;
      }
    }
    return std::all_of(have_.begin(), have_.end(), [](bool b) { return b; });
  }
  [[nodiscard]] const KernelGrid& grid() const { return grid_; }

 private:
  KernelGrid grid_;
  std::vector<bool> have_;
  std::vector<std::vector<double>> samples_;
};

/// Integer shape columns of a table, by name; errors name file:line.
class Shapes {
 public:
  Shapes(const KernelTable& t, base::Errors& errors) : t_(t), errors_(errors) {}
  std::optional<int64_t> integer(const KernelTable::Row& row, std::string_view column) {
    const auto it = std::find(t_.columns.begin(), t_.columns.end(), column);
    if (it == t_.columns.end()) {
      errors_.add({"no column '" + std::string(column) + "'", t_.file, 1});
      return std::nullopt;
    }
    const std::string& s = row.shape[static_cast<size_t>(it - t_.columns.begin())];
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < 0) {
      errors_.add(
          {std::string(column) + ": expected a whole number, got '" + s + "'", t_.file, row.line});
      return std::nullopt;
    }
    return v;
  }
  std::string text(const KernelTable::Row& row, std::string_view column) {
    const auto it = std::find(t_.columns.begin(), t_.columns.end(), column);
    if (it == t_.columns.end()) return {};
    return row.shape[static_cast<size_t>(it - t_.columns.begin())];
  }

 private:
  const KernelTable& t_;
  base::Errors& errors_;
};

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string g5_ms(double t_s) { return format_g(t_s * 1e3, 5); }
std::string str(int64_t v) { return std::to_string(v); }

/// A compared row for the report: `e` = predicted / measured - 1.
KernelPoint point(std::string shape, double measured_s, double e, bool held_out) {
  return {std::move(shape), measured_s, measured_s * (1 + e), held_out};
}

/// A fitted grid or an error naming the table.
bool finish_grid(GridBuilder& b, const KernelTable& t, base::Errors& errors) {
  if (b.build()) return true;
  errors.add(
      {"the measured shapes leave points of the efficiency grid that no measurement "
       "reaches (too few shapes on the grid's lines)",
       t.file, 1});
  return false;
}

// ---------------------------------------------------------------------------------------------
// Families. Each appends its fitted tables, its summary lines and its held-out rows.

struct Ctx {
  const KernelRoofline& roof;
  KernelFit& out;
  base::Errors& errors;
  KernelFamilyFit& family;
  HoldoutTable& holdout;
};

double gemm_ideal(double m, double n, double k, double wbytes, double peak, double bw) {
  const double flops = 2.0 * m * n * k;
  const double bytes = wbytes * n * k + kActBytes * m * k + kActBytes * m * n;
  return std::max(flops / peak, bytes / bw);
}

void fit_gemm(const std::vector<const KernelTable*>& tables, Ctx c) {
  for (const auto& dt : dtypes()) {
    const KernelTable* t = nullptr;
    for (const auto* k : tables)
      if (k->dtype == dt.csv) t = k;
    const double peak = peak_of(c.roof, dt.peak);
    if (t == nullptr || peak <= 0) continue;
    const double bw = c.roof.hbm_Bps;
    struct Row {
      int64_t m, n, k;
      double t;
    };
    std::vector<Row> rows;
    Shapes sh(*t, c.errors);
    for (const auto& r : t->rows) {
      auto m = sh.integer(r, "m"), n = sh.integer(r, "n"), k = sh.integer(r, "k");
      if (!m || !n || !k) return;
      rows.push_back({*m, *n, *k, r.latency_ms * 1e-3});
    }
    std::vector<double> lat;
    for (const auto& r : rows) lat.push_back(r.t);
    const double t0 = t0_of(lat);
    int64_t min_n = rows.front().n;
    for (const auto& r : rows) min_n = std::min(min_n, r.n);
    std::vector<double> nk;
    for (double x : kGemmNK)
      if (x >= static_cast<double>(min_n)) nk.push_back(x);
    std::map<std::array<int64_t, 3>, double> table;
    for (const auto& r : rows) table[{r.m, r.n, r.k}] = r.t;
    GridBuilder b({"m", "n", "k"}, {kGemmM, nk, nk});
    std::vector<double> ratios;
    for (const auto& [key, tt] : table) {
      const auto [m, n, k] = key;
      const double md = static_cast<double>(m), nd = static_cast<double>(n),
                   kd = static_cast<double>(k);
      if (on(kGemmM, md) && on(nk, nd) && on(nk, kd)) {
        const double pt[3] = {md, nd, kd};
        b.add(pt, clamp_r(gemm_ideal(md, nd, kd, dt.weight_bytes, peak, bw), tt, t0));
      }
      // Unaligned m (not a multiple of 16): padded tiles; the median slowdown of t(m + 1) over
      // t(m) at the measured pairs (m >= 32) whose n and k are on the grid.
      if (m >= 32 && m % 16 == 0 && on(nk, nd) && on(nk, kd)) {
        auto it = table.find({m + 1, n, k});
        if (it != table.end()) ratios.push_back(it->second / tt);
      }
    }
    if (!finish_grid(b, *t, c.errors)) return;
    const double penalty = ratios.empty() ? 1.0 : std::max(1.0, median(ratios));
    const KernelGrid& grid = b.grid();
    auto predict = [&](const Row& r) {
      const double md = static_cast<double>(r.m), nd = static_cast<double>(r.n),
                   kd = static_cast<double>(r.k);
      const double pt[3] = {md, nd, kd};
      const double tt = t0 + gemm_ideal(md, nd, kd, dt.weight_bytes, peak, bw) / grid.at(pt);
      return tt * ((r.m > 16 && r.m % 16 != 0) ? penalty : 1.0);
    };
    std::vector<double> fit_err, test_err, test_aligned, test_large;
    std::vector<Row> small, big;
    std::vector<KernelPoint> points;
    for (const auto& r : rows) {
      const double e = predict(r) / r.t - 1.0;
      points.push_back(point("m=" + str(r.m) + " n=" + str(r.n) + " k=" + str(r.k), r.t, e,
                             !(pow2(r.n) && pow2(r.k))));
      if (pow2(r.n) && pow2(r.k)) {
        fit_err.push_back(e);
        continue;
      }
      test_err.push_back(e);
      const bool large =
          2.0 * static_cast<double>(r.m) * static_cast<double>(r.n) * static_cast<double>(r.k) >=
          1e11;
      if (r.m <= 16 || r.m % 16 == 0) test_aligned.push_back(e);
      if (large) test_large.push_back(e);
      (large ? big : small).push_back(r);
    }
    KernelTableFit f{.dtype = dt.name,
                     .grid = grid,
                     .t0_s = t0,
                     .unaligned_m_penalty = penalty,
                     .table = t->file,
                     .fit_error = summarize(fit_err),
                     .held_out_error = summarize(test_err),
                     .measured = rows.size(),
                     .points = std::move(points)};
    char head[128];
    std::snprintf(head, sizeof head, "  gemm %-9s t0 %.2f us, unaligned-m penalty %.2f; ", dt.name,
                  t0 * 1e6, penalty);
    c.out.summary.push_back(std::string(head) + "fit rows: " + f.fit_error.to_string() +
                            "; held out: " + f.held_out_error.to_string() +
                            "; held out aligned: " + summarize(test_aligned).to_string() +
                            "; held out >= 100 GFLOP: " + summarize(test_large).to_string());
    for (const auto* part : {&small, &big}) {
      for (const auto& r : every(*part, 60))
        c.holdout.rows.push_back({dt.name, str(r.m), str(r.n), str(r.k), g5_ms(r.t)});
    }
    c.family.tables.push_back(std::move(f));
  }
}

double prefill_ideal(double b, double s, double h, double kv, double d, double kvbytes, double peak,
                     double bw) {
  const double d_v = d;
  const double flops = 2.0 * b * h * (d + d_v) * s * (s + 1) / 2.0;
  const double bytes = b * s * (kActBytes * (h * d + 2 * kv * d + h * d_v) + kvbytes * 2 * kv * d);
  return std::max(flops / peak, bytes / bw);
}

void fit_prefill(const KernelTable& t, Ctx c) {
  Shapes sh(t, c.errors);
  for (const char* attn : {"bfloat16", "fp8"}) {
    const bool fp8 = std::string_view(attn) == "fp8";
    struct P {
      int64_t b, s, h, kv, d;
      double t;
    };
    std::vector<P> pts;
    for (const auto& r : t.rows) {
      if (sh.text(r, "attn_dtype") != attn ||
          sh.text(r, "kv_cache_dtype") != (fp8 ? "fp8" : "bfloat16"))
        continue;
      auto b = sh.integer(r, "batch_size"), s = sh.integer(r, "isl"),
           h = sh.integer(r, "num_heads"), kv = sh.integer(r, "num_key_value_heads"),
           d = sh.integer(r, "head_dim");
      if (!b || !s || !h || !kv || !d) return;
      pts.push_back({*b, *s, *h, *kv, *d, r.latency_ms * 1e-3});
    }
    if (pts.empty()) continue;
    const double peak = fp8 ? c.roof.fp8_flops : c.roof.bf16_flops;
    const double kvb = fp8 ? 1.0 : 2.0;
    std::vector<double> lat;
    for (const auto& p : pts) lat.push_back(p.t);
    const double t0 = t0_of(lat);
    auto ideal = [&](const P& p) {
      return prefill_ideal(static_cast<double>(p.b), static_cast<double>(p.s),
                           static_cast<double>(p.h), static_cast<double>(p.kv),
                           static_cast<double>(p.d), kvb, peak, c.roof.hbm_Bps);
    };
    GridBuilder g({"isl", "batch_heads"}, {kPrefillIsl, kPrefillBH});
    for (const auto& p : pts) {
      const double key[2] = {static_cast<double>(p.s), static_cast<double>(p.b * p.h)};
      if (pow2(p.h) && on(kPrefillIsl, key[0]) && on(kPrefillBH, key[1]))
        g.add(key, clamp_r(ideal(p), p.t, t0));
    }
    if (!finish_grid(g, t, c.errors)) return;
    const KernelGrid& grid = g.grid();
    auto predict = [&](const P& p) {
      const double key[2] = {static_cast<double>(p.s), static_cast<double>(p.b * p.h)};
      return t0 + ideal(p) / grid.at(key);
    };
    std::vector<double> fit_err, errs, big;
    std::vector<P> test;
    std::vector<KernelPoint> points;
    for (const auto& p : pts) {
      points.push_back(point("batch=" + str(p.b) + " isl=" + str(p.s) + " heads=" + str(p.h) +
                                 " kv_heads=" + str(p.kv) + " head_dim=" + str(p.d),
                             p.t, predict(p) / p.t - 1, !pow2(p.h)));
      if (pow2(p.h)) {
        fit_err.push_back(predict(p) / p.t - 1);
      } else {
        test.push_back(p);
        errs.push_back(predict(p) / p.t - 1);
        if (p.t >= 1e-3) big.push_back(predict(p) / p.t - 1);
      }
    }
    const char* name = fp8 ? "fp8" : "bf16";
    KernelTableFit f{.dtype = name,
                     .grid = grid,
                     .t0_s = t0,
                     .table = t.file,
                     .fit_error = summarize(fit_err),
                     .held_out_error = summarize(errs),
                     .measured = pts.size(),
                     .points = std::move(points)};
    char head[96];
    std::snprintf(head, sizeof head, "  attention prefill %-4s t0 %.2f us; ", name, t0 * 1e6);
    c.out.summary.push_back(std::string(head) +
                            "fit rows (power-of-two heads): " + f.fit_error.to_string() +
                            "; held out (other head counts): " + f.held_out_error.to_string() +
                            "; held out >= 1 ms: " + summarize(big).to_string());
    for (const auto& p : every(test, 80))
      c.holdout.rows.push_back(
          {name, str(p.b), str(p.s), str(p.h), str(p.kv), str(p.d), g5_ms(p.t)});
    c.family.tables.push_back(std::move(f));
  }
}

double decode_ideal(double b, double ctx, double h, double kv, double d, double kvbytes,
                    double peak, double bw) {
  // One new token per sequence attending to ctx keys (itself included): Q, K, V of the new
  // token in, O out, the whole K and V cache read once.
  const double flops = 2.0 * b * h * 2 * d * ctx;
  const double bytes = b * (kActBytes * (h * d + 2 * kv * d + h * d) + kvbytes * 2 * kv * d * ctx);
  return std::max(flops / peak, bytes / bw);
}

void fit_decode(const KernelTable& t, Ctx c) {
  Shapes sh(t, c.errors);
  for (const char* kvd : {"bfloat16", "fp8"}) {
    const bool fp8 = std::string_view(kvd) == "fp8";
    struct P {
      int64_t b, ctx, h, kv, d;
      double t;
    };
    std::vector<P> pts;
    for (const auto& r : t.rows) {
      if (sh.text(r, "kv_cache_dtype") != kvd) continue;
      auto b = sh.integer(r, "batch_size"), step = sh.integer(r, "step"),
           h = sh.integer(r, "num_heads"), kv = sh.integer(r, "num_key_value_heads"),
           d = sh.integer(r, "head_dim");
      if (!b || !step || !h || !kv || !d) return;
      if (*kv == 0) {
        c.errors.add({"num_key_value_heads: expected at least 1, got 0", t.file, r.line});
        return;
      }
      pts.push_back({*b, *step + 1, *h, *kv, *d, r.latency_ms * 1e-3});
    }
    if (pts.empty()) continue;
    const double kvb = fp8 ? 1.0 : 2.0;
    std::vector<double> lat;
    for (const auto& p : pts) lat.push_back(p.t);
    const double t0 = t0_of(lat);
    auto ideal = [&](const P& p) {
      return decode_ideal(static_cast<double>(p.b), static_cast<double>(p.ctx),
                          static_cast<double>(p.h), static_cast<double>(p.kv),
                          static_cast<double>(p.d), kvb, c.roof.bf16_flops, c.roof.hbm_Bps);
    };
    GridBuilder g({"context", "batch_kv_heads", "heads_per_kv_head"},
                  {kDecodeCtx, kDecodeBKV, kDecodeGqa});
    auto fitted = [](const P& p) { return pow2(p.h) && pow2(p.kv); };
    for (const auto& p : pts) {
      const double key[3] = {static_cast<double>(p.ctx), static_cast<double>(p.b * p.kv),
                             static_cast<double>(p.h / p.kv)};
      if (fitted(p) && on(kDecodeCtx, key[0]) && on(kDecodeBKV, key[1]) && on(kDecodeGqa, key[2]))
        g.add(key, clamp_r(ideal(p), p.t, t0));
    }
    if (!finish_grid(g, t, c.errors)) return;
    const KernelGrid& grid = g.grid();
    auto predict = [&](const P& p) {
      const double key[3] = {static_cast<double>(p.ctx), static_cast<double>(p.b * p.kv),
                             static_cast<double>(p.h) / static_cast<double>(p.kv)};
      return t0 + ideal(p) / grid.at(key);
    };
    std::vector<double> fit_err, errs, big;
    std::vector<P> test;
    std::vector<KernelPoint> points;
    for (const auto& p : pts) {
      points.push_back(point("batch=" + str(p.b) + " context=" + str(p.ctx) + " heads=" + str(p.h) +
                                 " kv_heads=" + str(p.kv) + " head_dim=" + str(p.d),
                             p.t, predict(p) / p.t - 1, !fitted(p)));
      if (fitted(p)) {
        fit_err.push_back(predict(p) / p.t - 1);
      } else {
        test.push_back(p);
        errs.push_back(predict(p) / p.t - 1);
        if (p.t >= 1e-4) big.push_back(predict(p) / p.t - 1);
      }
    }
    const char* name = fp8 ? "fp8" : "bf16";
    KernelTableFit f{.dtype = name,
                     .grid = grid,
                     .t0_s = t0,
                     .table = t.file,
                     .fit_error = summarize(fit_err),
                     .held_out_error = summarize(errs),
                     .measured = pts.size(),
                     .points = std::move(points)};
    char head[96];
    std::snprintf(head, sizeof head, "  attention decode kv %-4s t0 %.2f us; ", name, t0 * 1e6);
    c.out.summary.push_back(std::string(head) + "fit rows: " + f.fit_error.to_string() +
                            "; held out (other head counts): " + f.held_out_error.to_string() +
                            "; held out >= 100 us: " + summarize(big).to_string());
    for (const auto& p : every(test, 80))
      c.holdout.rows.push_back(
          {name, str(p.b), str(p.ctx), str(p.h), str(p.kv), str(p.d), g5_ms(p.t)});
    c.family.tables.push_back(std::move(f));
  }
}

bool mla_fit_batch(int64_t b) {
  return b == 1 || b == 4 || b == 16 || b == 64 || b == 256 || b == 1024;
}

void fit_mla_prefill(const KernelTable& t, Ctx c) {
  Shapes sh(t, c.errors);
  for (const char* kvd : {"bfloat16", "fp8"}) {
    const bool fp8 = std::string_view(kvd) == "fp8";
    struct P {
      int64_t b, s, h;
      double t;
    };
    std::vector<P> pts;
    for (const auto& r : t.rows) {
      if (sh.text(r, "kv_cache_dtype") != kvd) continue;
      auto b = sh.integer(r, "batch_size"), s = sh.integer(r, "isl"),
           h = sh.integer(r, "num_heads");
      if (!b || !s || !h) return;
      pts.push_back({*b, *s, *h, r.latency_ms * 1e-3});
    }
    if (pts.empty()) continue;
    const double kvb = fp8 ? 1.0 : 2.0;
    std::vector<double> lat;
    for (const auto& p : pts) lat.push_back(p.t);
    const double t0 = t0_of(lat);
    auto ideal = [&](const P& p) {
      const double b = static_cast<double>(p.b), s = static_cast<double>(p.s),
                   h = static_cast<double>(p.h);
      const double flops = 2.0 * b * h * (kMlaQk + kMlaV) * s * (s + 1) / 2.0;
      const double bytes = b * s * (kActBytes * h * (2 * kMlaQk + 2 * kMlaV) + kvb * kMlaLatent);
      return std::max(flops / c.roof.bf16_flops, bytes / c.roof.hbm_Bps);
    };
    GridBuilder g({"isl", "batch_heads"}, {kMlaPrefillIsl, kMlaPrefillBH});
    for (const auto& p : pts) {
      const double key[2] = {static_cast<double>(p.s), static_cast<double>(p.b * p.h)};
      if (mla_fit_batch(p.b) && on(kMlaPrefillIsl, key[0]) && on(kMlaPrefillBH, key[1]))
        g.add(key, clamp_r(ideal(p), p.t, t0));
    }
    if (!finish_grid(g, t, c.errors)) return;
    const KernelGrid& grid = g.grid();
    std::vector<double> fit_err, errs;
    std::vector<P> test;
    std::vector<KernelPoint> points;
    for (const auto& p : pts) {
      const double key[2] = {static_cast<double>(p.s), static_cast<double>(p.b * p.h)};
      const double e = (t0 + ideal(p) / grid.at(key)) / p.t - 1;
      points.push_back(point("batch=" + str(p.b) + " isl=" + str(p.s) + " heads=" + str(p.h), p.t,
                             e, !mla_fit_batch(p.b)));
      if (mla_fit_batch(p.b)) {
        fit_err.push_back(e);
      } else {
        test.push_back(p);
        errs.push_back(e);
      }
    }
    const char* name = fp8 ? "fp8" : "bf16";
    KernelTableFit f{.dtype = name,
                     .grid = grid,
                     .t0_s = t0,
                     .table = t.file,
                     .fit_error = summarize(fit_err),
                     .held_out_error = summarize(errs),
                     .measured = pts.size(),
                     .points = std::move(points)};
    char head[96];
    std::snprintf(head, sizeof head, "  mla prefill kv %-4s t0 %.2f us; ", name, t0 * 1e6);
    c.out.summary.push_back(std::string(head) +
                            "held out (batch 2, 8, 32, 128): " + f.held_out_error.to_string());
    for (const auto& p : every(test, 40))
      c.holdout.rows.push_back({name, str(p.b), str(p.s), str(p.h), g5_ms(p.t)});
    c.family.tables.push_back(std::move(f));
  }
}

void fit_mla_decode(const KernelTable& t, Ctx c) {
  Shapes sh(t, c.errors);
  for (const char* kvd : {"bfloat16", "fp8"}) {
    const bool fp8 = std::string_view(kvd) == "fp8";
    struct P {
      int64_t b, ctx, h;
      double t;
    };
    std::vector<P> pts;
    std::set<std::array<int64_t, 3>> seen;  // first row of a shape measured twice
    for (const auto& r : t.rows) {
      if (sh.text(r, "kv_cache_dtype") != kvd) continue;
      auto b = sh.integer(r, "batch_size"), step = sh.integer(r, "step"),
           h = sh.integer(r, "num_heads");
      if (!b || !step || !h) return;
      if (!seen.insert({*b, *step + 1, *h}).second) continue;
      pts.push_back({*b, *step + 1, *h, r.latency_ms * 1e-3});
    }
    if (pts.empty()) continue;
    const double kvb = fp8 ? 1.0 : 2.0;
    std::vector<double> lat;
    for (const auto& p : pts) lat.push_back(p.t);
    const double t0 = t0_of(lat);
    auto ideal = [&](const P& p) {
      const double b = static_cast<double>(p.b), ctx = static_cast<double>(p.ctx),
                   h = static_cast<double>(p.h);
      const double flops = 2.0 * b * h * (kMlaLatent + kMlaKvLora) * ctx;
      const double bytes =
          b * ctx * kMlaLatent * kvb + kActBytes * b * h * (kMlaLatent + kMlaKvLora);
      return std::max(flops / c.roof.bf16_flops, bytes / c.roof.hbm_Bps);
    };
    GridBuilder g({"context", "batch", "heads"}, {kMlaDecodeCtx, kMlaDecodeBatch, kMlaDecodeHeads});
    for (const auto& p : pts) {
      const double key[3] = {static_cast<double>(p.ctx), static_cast<double>(p.b),
                             static_cast<double>(p.h)};
      if (mla_fit_batch(p.b) && on(kMlaDecodeCtx, key[0]) && on(kMlaDecodeHeads, key[2]))
        g.add(key, clamp_r(ideal(p), p.t, t0));
    }
    if (!finish_grid(g, t, c.errors)) return;
    const KernelGrid& grid = g.grid();
    std::vector<double> fit_err, errs;
    std::vector<P> test;
    std::vector<KernelPoint> points;
    for (const auto& p : pts) {
      const double key[3] = {static_cast<double>(p.ctx), static_cast<double>(p.b),
                             static_cast<double>(p.h)};
      const double e = (t0 + ideal(p) / grid.at(key)) / p.t - 1;
      points.push_back(point("batch=" + str(p.b) + " context=" + str(p.ctx) + " heads=" + str(p.h),
                             p.t, e, !mla_fit_batch(p.b)));
      if (mla_fit_batch(p.b)) {
        fit_err.push_back(e);
      } else {
        test.push_back(p);
        errs.push_back(e);
      }
    }
    const char* name = fp8 ? "fp8" : "bf16";
    KernelTableFit f{.dtype = name,
                     .grid = grid,
                     .t0_s = t0,
                     .table = t.file,
                     .fit_error = summarize(fit_err),
                     .held_out_error = summarize(errs),
                     .measured = pts.size(),
                     .points = std::move(points)};
    char head[96];
    std::snprintf(head, sizeof head, "  mla decode kv %-4s t0 %.2f us; ", name, t0 * 1e6);
    c.out.summary.push_back(std::string(head) +
                            "held out (batch 2, 8, 32, ...): " + f.held_out_error.to_string());
    for (const auto& p : every(test, 40))
      c.holdout.rows.push_back({name, str(p.b), str(p.ctx), str(p.h), g5_ms(p.t)});
    c.family.tables.push_back(std::move(f));
  }
}

void fit_moe(const KernelTable& t, Ctx c) {
  Shapes sh(t, c.errors);
  // Where two kernel families were measured for a point (fp8_block: CUTLASS and DeepGEMM), keep
  // the faster one, as a framework's kernel selection would.
  static const std::vector<std::string> key_cols = {"moe_dtype",   "num_tokens", "hidden_size",
                                                    "inter_size",  "topk",       "num_experts",
                                                    "moe_tp_size", "moe_ep_size"};
  std::map<std::vector<std::string>, size_t> index;
  std::vector<const KernelTable::Row*> best;
  for (const auto& r : t.rows) {
    if (sh.text(r, "distribution") != "balanced") continue;
    std::vector<std::string> key;
    for (const auto& col : key_cols) key.push_back(sh.text(r, col));
    auto [it, fresh] = index.emplace(key, best.size());
    if (fresh) {
      best.push_back(&r);
    } else if (r.latency_ms < best[it->second]->latency_ms) {
      best[it->second] = &r;
    }
  }
  for (const auto& dt : dtypes()) {
    const double peak = peak_of(c.roof, dt.peak);
    struct P {
      int64_t tokens, hidden, inter, topk, experts, tp, ep;
      double t;
    };
    std::vector<P> pts;
    for (const auto* r : best) {
      if (sh.text(*r, "moe_dtype") != dt.csv) continue;
      auto a = sh.integer(*r, "num_tokens"), b = sh.integer(*r, "hidden_size"),
           i = sh.integer(*r, "inter_size"), k = sh.integer(*r, "topk"),
           e = sh.integer(*r, "num_experts"), tp = sh.integer(*r, "moe_tp_size"),
           ep = sh.integer(*r, "moe_ep_size");
      if (!a || !b || !i || !k || !e || !tp || !ep) return;
      if (*e == 0 || *tp == 0 || *ep == 0) {
        c.errors.add(
            {"num_experts, moe_tp_size and moe_ep_size must be at least 1", t.file, r->line});
        return;
      }
      pts.push_back({*a, *b, *i, *k, *e, *tp, *ep, r->latency_ms * 1e-3});
    }
    if (pts.empty() || peak <= 0) continue;
    const double bw = c.roof.hbm_Bps;
    // Token-expert pairs, active experts, FLOPs and bytes of one GPU's share of the layer with
    // uniform routing (no all-to-all); the same as compute::moe_work().
    struct Terms {
      double per, params, ideal;
    };
    auto terms = [&](const P& p) {
      const double experts = static_cast<double>(p.experts);
      const double local = experts / static_cast<double>(p.ep);
      const double pairs = static_cast<double>(p.tokens * p.topk) * local / experts;
      const double active = std::max(std::min(local, pairs), 1e-9);
      const double i_local = static_cast<double>(p.inter) / static_cast<double>(p.tp);
      const double hidden = static_cast<double>(p.hidden);
      const double params = 3.0 * hidden * i_local;
      const double flops = 2.0 * pairs * params;
      const double bytes = active * params * dt.weight_bytes +
                           kActBytes * (pairs * (static_cast<double>(2 * p.hidden) + 3 * i_local) +
                                        static_cast<double>(2 * p.tokens * p.hidden));
      return Terms{pairs / active, params, std::max(flops / peak, bytes / bw)};
    };
    auto nearest = [](const std::vector<double>& axis, double x) {
      double best_a = axis.front(), best_d = std::abs(std::log(axis.front()) - std::log(x));
      for (double a : axis) {
        const double d = std::abs(std::log(a) - std::log(x));
        if (d < best_d) {
          best_d = d;
          best_a = a;
        }
      }
      return best_a;
    };
    std::vector<double> lat;
    for (const auto& p : pts) lat.push_back(p.t);
    const double t0 = t0_of(lat);
    GridBuilder g({"tokens_per_expert", "expert_params"}, {kMoePer, kMoeExpertParams});
    for (const auto& p : pts) {
      if (!pow2(p.tokens)) continue;
      const auto tm = terms(p);
      const double key[2] = {nearest(kMoePer, tm.per), nearest(kMoeExpertParams, tm.params)};
      g.add(key, clamp_r(tm.ideal, p.t, t0));
    }
    if (!finish_grid(g, t, c.errors)) return;
    const KernelGrid& grid = g.grid();
    auto predict = [&](const P& p) {
      const auto tm = terms(p);
      const double key[2] = {tm.per, tm.params};
      return t0 + tm.ideal / grid.at(key);
    };
    std::vector<double> fit_err, errs, big;
    std::vector<P> test;
    std::vector<KernelPoint> points;
    for (const auto& p : pts) {
      points.push_back(point("tokens=" + str(p.tokens) + " hidden=" + str(p.hidden) +
                                 " inter=" + str(p.inter) + " topk=" + str(p.topk) + " experts=" +
                                 str(p.experts) + " tp=" + str(p.tp) + " ep=" + str(p.ep),
                             p.t, predict(p) / p.t - 1, !pow2(p.tokens)));
      if (pow2(p.tokens)) {
        fit_err.push_back(predict(p) / p.t - 1);
      } else {
        test.push_back(p);
        errs.push_back(predict(p) / p.t - 1);
        if (p.t >= 1e-3) big.push_back(predict(p) / p.t - 1);
      }
    }
    KernelTableFit f{.dtype = dt.name,
                     .grid = grid,
                     .t0_s = t0,
                     .table = t.file,
                     .fit_error = summarize(fit_err),
                     .held_out_error = summarize(errs),
                     .measured = pts.size(),
                     .points = std::move(points)};
    char head[96];
    std::snprintf(head, sizeof head, "  moe %-9s t0 %.1f us; ", dt.name, t0 * 1e6);
    c.out.summary.push_back(std::string(head) +
                            "fit rows (power-of-two tokens): " + f.fit_error.to_string() +
                            "; held out (other token counts): " + f.held_out_error.to_string() +
                            "; >= 1 ms: " + summarize(big).to_string());
    for (const auto& p : every(test, 40))
      c.holdout.rows.push_back({dt.name, str(p.tokens), str(p.hidden), str(p.inter), str(p.topk),
                                str(p.experts), str(p.tp), str(p.ep), g5_ms(p.t)});
    c.family.tables.push_back(std::move(f));
  }
}

struct FamilyInfo {
  const char* family;
  const char* kind;  ///< the measured table's kind (parse.cpp)
  const char* doc;
  const char* holdout_file;
  const char* holdout_source;
  std::vector<std::string> holdout_header;
};
const std::vector<FamilyInfo>& families() {
  static const std::vector<FamilyInfo> f = {
      {"gemm",
       "gemm",
       "m x n x k GEMM (bf16 activations; weights in the table's dtype); fit at power-of-two m, "
       "n, k; unaligned-m penalty from the x / x+1 pairs",
       "compute_gemm_holdout.csv",
       "gemm_<dtype>.csv",
       {"dtype", "m", "n", "k", "latency_ms"}},
      {"attention_prefill",
       "attention_context",
       "causal context attention, head_dim 128, by isl and batch x heads; fit on power-of-two "
       "head counts",
       "compute_attention_prefill_holdout.csv",
       "attention_context.csv",
       {"dtype", "batch", "isl", "heads", "kv_heads", "head_dim", "latency_ms"}},
      {"attention_decode",
       "attention_generation",
       "decode attention, head_dim 128, by context, batch x kv heads and heads per kv head; fit "
       "on power-of-two head counts",
       "compute_attention_decode_holdout.csv",
       "attention_generation.csv (context = step + 1)",
       {"kv_dtype", "batch", "context", "heads", "kv_heads", "head_dim", "latency_ms"}},
      {"mla_prefill",
       "mla_context",
       "DeepSeek MLA context attention core by isl and batch x heads; fit on batch 1, 4, 16, 64, "
       "256",
       "compute_mla_prefill_holdout.csv",
       "mla_context.csv",
       {"kv_dtype", "batch", "isl", "heads", "latency_ms"}},
      {"mla_decode",
       "mla_generation",
       "DeepSeek MLA decode (absorbed) core by context, batch and heads; fit on batch 1, 4, 16, "
       "64, 256, 1024",
       "compute_mla_decode_holdout.csv",
       "mla_generation.csv (context = step + 1)",
       {"kv_dtype", "batch", "context", "heads", "latency_ms"}},
      {"moe",
       "moe",
       "fused MoE layer (routing, grouped GEMMs, activation, finalize; balanced routing, no "
       "all-to-all) by tokens per active expert and parameters per expert; fit on power-of-two "
       "token counts",
       "compute_moe_holdout.csv",
       "moe.csv (balanced routing)",
       {"dtype", "tokens", "hidden", "inter", "topk", "experts", "tp", "ep", "latency_ms"}},
  };
  return f;
}

}  // namespace

std::string format_g(double x, int digits) {
  if (x == 0) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

std::string ErrorStats::to_string() const {
  if (n == 0) return "n=0";
  char buf[128];
  std::snprintf(buf, sizeof buf, "n=%zu median %.1f%% p90 %.1f%% max %.0f%%", n, 100 * median,
                100 * p90, 100 * max);
  return buf;
}

double KernelGrid::at(std::span<const double> point) const {
  // Brackets per axis: (index, weight) pairs; one at or beyond an edge.
  const size_t dims = axes.size();
  std::vector<std::array<std::pair<size_t, double>, 2>> br(dims);
  std::vector<int> count(dims);
  for (size_t a = 0; a < dims; ++a) {
    const double lx = std::log(std::max(point[a], 1e-30));
    const auto& ax = axes[a];
    if (lx <= std::log(ax.front())) {
      br[a][0] = {0, 1.0};
      count[a] = 1;
    } else if (lx >= std::log(ax.back())) {
      br[a][0] = {ax.size() - 1, 1.0};
      count[a] = 1;
    } else {
      size_t i = 0;
      while (i + 1 < ax.size() && std::log(ax[i + 1]) <= lx) ++i;
      const double li = std::log(ax[i]), lj = std::log(ax[i + 1]);
      const double w = (lx - li) / (lj - li);
      br[a][0] = {i, 1.0 - w};
      br[a][1] = {i + 1, w};
      count[a] = 2;
    }
  }
  double acc = 0;
  // Depth-first over the corners, first axis outermost, as the weights multiply in axis order.
  std::vector<size_t> strides(dims, 1);
  for (size_t a = dims - 1; a-- > 0;) strides[a] = strides[a + 1] * axes[a + 1].size();
  auto rec = [&](auto&& self, size_t a, size_t flat, double w) -> void {
    if (a == dims) {
      acc += w * std::log(values[flat]);
      return;
    }
    for (int j = 0; j < count[a]; ++j) {
      const auto [i, wi] = br[a][static_cast<size_t>(j)];
      if (wi > 0) self(self, a + 1, flat + i * strides[a], w * wi);
    }
  };
  rec(rec, 0, 0, 1.0);
  return std::min(1.0, std::exp(acc));
}

base::Result<KernelFit> fit_kernels(std::span<const KernelTable> tables,
                                    const KernelRoofline& roofline) {
  if (roofline.bf16_flops <= 0 || roofline.hbm_Bps <= 0)
    return fail("the kernel fit needs the GPU's bf16 peak and HBM bandwidth");
  KernelFit out;
  base::Errors errors;
  for (const auto& info : families()) {
    out.families.push_back({.family = info.family, .tables = {}});
    out.holdouts.push_back({.file = info.holdout_file,
                            .source_table = info.holdout_source,
                            .header = info.holdout_header,
                            .rows = {}});
  }
  std::vector<const KernelTable*> gemms;
  std::map<std::string, const KernelTable*> by_kind;
  for (const auto& t : tables) {
    if (t.kind == "gemm") {
      for (const auto* g : gemms) {
        if (g->dtype == t.dtype)
          errors.add(
              {"a second " + t.dtype + " GEMM table (the first is " + g->file + ")", t.file, 1});
      }
      gemms.push_back(&t);
    } else if (auto [it, fresh] = by_kind.emplace(t.kind, &t); !fresh) {
      errors.add(
          {"a second " + t.kind + " table (the first is " + it->second->file + ")", t.file, 1});
    }
  }
  if (!errors.empty()) return fail(errors.combined());
  for (size_t i = 0; i < families().size(); ++i) {
    const auto& info = families()[i];
    Ctx c{roofline, out, errors, out.families[i], out.holdouts[i]};
    const std::string kind = info.kind;
    if (kind == "gemm") {
      fit_gemm(gemms, c);
      continue;
    }
    auto it = by_kind.find(kind);
    if (it == by_kind.end()) continue;
    if (kind == "attention_context") fit_prefill(*it->second, c);
    if (kind == "attention_generation") fit_decode(*it->second, c);
    if (kind == "mla_context") fit_mla_prefill(*it->second, c);
    if (kind == "mla_generation") fit_mla_decode(*it->second, c);
    if (kind == "moe") fit_moe(*it->second, c);
  }
  if (!errors.empty()) return fail(errors.combined());
  const bool has_bf16_gemm =
      !out.families[0].tables.empty() && out.families[0].tables.front().dtype == "bf16";
  if (!has_bf16_gemm) {
    return fail(
        "no bf16 GEMM table (gemm_bfloat16.csv) was fitted: the compute model's launch overhead "
        "and its fallback precision come from it; nothing was fitted or written");
  }
  return out;
}

namespace {

void grid_rows(const KernelGrid& g, std::vector<std::string>& out) {
  const size_t dims = g.axes.size();
  size_t rows = 1;
  for (size_t a = 0; a + 1 < dims; ++a) rows *= g.axes[a].size();
  const size_t last = g.axes.back().size();
  for (size_t r = 0; r < rows; ++r) {
    std::vector<size_t> idx(dims - 1);
    size_t rest = r;
    for (size_t a = dims - 1; a-- > 0;) {
      idx[a] = rest % g.axes[a].size();
      rest /= g.axes[a].size();
    }
    std::string line;
    for (size_t a = 0; a + 1 < dims; ++a) {
      line += (a ? " " : "") + g.axis_names[a] + "=" +
              std::to_string(static_cast<int64_t>(g.axes[a][idx[a]]));
    }
    line += " |";
    for (size_t j = 0; j < last; ++j) line += " " + format_g(g.values[r * last + j], 3);
    out.push_back(line);
  }
}

std::string ylist(const std::vector<double>& xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i)
    s += (i ? ", " : "") + std::to_string(static_cast<int64_t>(xs[i]));
  return s + "]";
}

}  // namespace

namespace {

/// A table's citation in `sources:` (its tag is family-dtype, as figures name it).
struct TableCite {
  std::string tag, table, what;
};

/// Comment lines carry user text (cluster, stack): one line each, whatever it holds.
ComputeProfileMeta one_line(const ComputeProfileMeta& meta_in) {
  ComputeProfileMeta meta = meta_in;
  for (auto* s : {&meta.tables_dir, &meta.tables_origin, &meta.derived_why, &meta.generated_by})
    for (char& ch : *s)
      if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';
  return meta;
}

/// The `compute:` mapping (catalog/compute/<gpu>.yaml format); returns the tables to cite.
std::vector<TableCite> write_compute_mapping(std::ostream& o, const KernelFit& fit,
                                             const KernelRoofline& roofline,
                                             const ComputeProfileMeta& meta) {
  const bool derived = !meta.derived_from.empty();
  const bool bf16_only = roofline.fp8_flops <= 0;
  o << "compute:\n";
  o << "  gpu: " << meta.gpu << "\n";
  o << "  measured_device: " << yaml_quote(meta.device) << "\n";
  if (derived) o << "  derived_from: " << meta.derived_from << "\n";
  o << "  reference_peak:\n";
  for (const auto& [key, v] : {std::pair<const char*, double>{"bf16", roofline.bf16_flops},
                               {"fp8", roofline.fp8_flops},
                               {"fp4", roofline.fp4_flops}}) {
    if (v > 0)
      o << "    " << key << ": {value: " << format_g(v / 1e12, 6) << " TFLOP/s, source: spec}\n";
  }
  o << "  reference_hbm_bandwidth: {value: " << format_g(roofline.hbm_Bps / 1e12, 6)
    << " TB/s, source: spec}\n";
  o << "  hbm_efficiency: {value: " << format_g(meta.hbm_efficiency, 3) << ", source: hbm}\n";
  const auto& gemm_bf16 = fit.families[0].tables.front();
  o << "  launch_overhead: {value: " << format_g(gemm_bf16.t0_s * 1e6, 3)
    << " us, source: gemm-bf16, note: \"0.9 x the fastest bf16 GEMM call (CUDA graph replay)\"}\n";
  std::vector<TableCite> cites;
  for (size_t i = 0; i < fit.families.size(); ++i) {
    const auto& fam = fit.families[i];
    const auto& info = families()[i];
    std::vector<const KernelTableFit*> tables;
    for (const auto& t : fam.tables)
      if (!bf16_only || t.dtype == "bf16") tables.push_back(&t);
    if (tables.empty()) continue;
    o << "  " << fam.family << ":  # " << info.doc << "\n";
    std::string tag_family = fam.family;
    std::replace(tag_family.begin(), tag_family.end(), '_', '-');
    for (const auto* t : tables) {
      const std::string tag = tag_family + "-" + t->dtype;
      o << "    " << t->dtype << ":\n";
      o << "      source: " << tag << "\n";
      o << "      launch_overhead: " << format_g(t->t0_s * 1e6, 3) << " us\n";
      if (t->unaligned_m_penalty > 0)
        o << "      unaligned_m_penalty: " << format_g(t->unaligned_m_penalty, 3) << "\n";
      o << "      axes:\n";
      for (size_t a = 0; a < t->grid.axes.size(); ++a)
        o << "        " << t->grid.axis_names[a] << ": " << ylist(t->grid.axes[a]) << "\n";
      o << "      efficiency:\n";
      std::vector<std::string> rows;
      grid_rows(t->grid, rows);
      for (const auto& r : rows) o << "        - \"" << r << "\"\n";
      cites.push_back({tag, t->table, info.doc});
    }
  }
  return cites;
}

/// The entries of `sources:` the compute mapping refers to (spec, hbm, one per table).
void write_compute_sources(std::ostream& o, const std::vector<TableCite>& cites,
                           const ComputeProfileMeta& meta) {
  const bool derived = !meta.derived_from.empty();
  o << "  spec: " << yaml_quote(meta.spec_source) << "\n";
  o << "  hbm: " << yaml_quote(meta.hbm_source) << "\n";
  const std::string extra = derived
                                ? " Measured on " + meta.derived_from +
                                      ", applied to this GPU's own peaks: " + meta.derived_why + "."
                                : "";
  for (const auto& c : cites) {
    const auto it = meta.table_cite.find(c.table);
    const std::string table =
        it != meta.table_cite.end() ? it->second : meta.tables_dir + base_name(c.table);
    o << "  " << c.tag << ": "
      << yaml_quote(table + " (" + meta.tables_origin + "), converted and fitted by clustertwin (" +
                    meta.generated_by + "): roofline efficiency of the " + c.what + "." + extra)
      << "\n";
  }
}

/// An error statistic as a flow mapping of 4-digit fractions.
std::string stats_yaml(const ErrorStats& e) {
  return "{n: " + std::to_string(e.n) + ", median: " + g4(e.median) + ", p90: " + g4(e.p90) +
         ", max: " + g4(e.max) + "}";
}

}  // namespace

std::string compute_profile_yaml(const KernelFit& fit, const KernelRoofline& roofline,
                                 const ComputeProfileMeta& meta_in) {
  const ComputeProfileMeta meta = one_line(meta_in);
  std::ostringstream o;
  o << "# Compute-model calibration for " << meta.gpu
    << ": roofline efficiencies of GEMM, attention, MLA and MoE\n";
  o << "# kernels (docs/models/compute.md). GENERATED by " << meta.generated_by << " from "
    << meta.tables_dir << "\n";
  o << "# (" << meta.tables_origin
    << "; converted and fitted by clustertwin). Do not edit by hand.\n";
  if (!meta.derived_from.empty()) o << "# " << meta.derived_why << ".\n";
  const auto cites = write_compute_mapping(o, fit, roofline, meta);
  o << "sources:\n";
  write_compute_sources(o, cites, meta);
  return o.str();
}

std::string kernel_profile_yaml(const KernelFit& fit, const KernelRoofline& roofline,
                                const ComputeProfileMeta& compute_meta,
                                std::span<const InputFile> inputs, const ProfileMeta& meta) {
  const ComputeProfileMeta cm = one_line(compute_meta);
  std::ostringstream y;
  y << "# Calibration profile: the compute model's kernel efficiencies fitted to measured kernel\n"
    << "# tables by `clustertwin calibrate` (docs/models/calibration.md). GENERATED; rerunning\n"
    << "# the same command on the same files gives the same bytes. Use it with `clustertwin\n"
    << "# train|search|power|goodput|serve --calibration FILE` (or `calibration: FILE` in a\n"
    << "# scenario): each kernel table below replaces the catalog's of the same family and dtype\n"
    << "# (catalog/compute/" << cm.gpu << ".yaml); the others, and the collective lines, stay the\n"
    << "# catalog's.\n";
  write_profile_head(y, "compute", cm.gpu, meta);
  write_profile_inputs(y, inputs);
  y << "  tables:\n";
  for (const auto& fam : fit.families) {
    for (const auto& t : fam.tables) {
      if (roofline.fp8_flops <= 0 && t.dtype != "bf16") continue;
      y << "    - {family: " << fam.family << ", dtype: " << t.dtype
        << ", file: " << yaml_quote(t.table) << ", rows: " << t.measured
        << ", launch_overhead_us: " << g4(t.t0_s * 1e6)
        << ", fit_error: " << stats_yaml(t.fit_error)
        << ", held_out_error: " << stats_yaml(t.held_out_error) << "}\n";
    }
  }
  y << "collectives:\n";
  y << "  name: " << yaml_quote(meta.name) << "\n";
  y << "  gpus: [" << cm.gpu << "]\n";
  const auto cites = write_compute_mapping(y, fit, roofline, cm);
  y << "sources:\n";
  write_compute_sources(y, cites, cm);
  write_fit_source(y, meta, inputs);
  return y.str();
}

base::Result<std::optional<compute::ComputeModel>> compute_calibration_of(
    const collective::ProfileSource& source, const hardware::GpuSpec& gpu,
    const std::string& where) {
  if (!source.text) return std::optional<compute::ComputeModel>{};
  const std::string& name_or_path = source.name;
  auto m = compute::ComputeModel::parse_profile(*source.text, name_or_path, gpu);
  if (!m) return fail(m.error());
  if (*m && (*m)->gpu_name() != gpu.name) {
    return fail(where + " " + base::verbatim(name_or_path) + " fitted the compute model on " +
                (*m)->gpu_name() + "; this cluster's GPU is " + gpu.name);
  }
  return m;
}

std::string compute_calibration_note(const compute::ComputeModel& profile,
                                     const std::string& path) {
  return "kernel efficiencies (" + base::join(profile.table_names(), ", ") +
         ") fitted to measured kernel tables (calibration profile " + path + ")";
}

std::string holdout_csv(const std::string& note,
                        std::span<const std::pair<std::string, const HoldoutTable*>> per_gpu) {
  std::ostringstream o;
  o << "# " << note << "\n";
  if (per_gpu.empty()) return o.str();
  o << "gpu";
  for (const auto& h : per_gpu.front().second->header) o << "," << h;
  o << "\n";
  for (const auto& [gpu, table] : per_gpu) {
    for (const auto& row : table->rows) {
      o << gpu;
      for (const auto& cell : row) o << "," << cell;
      o << "\n";
    }
  }
  return o.str();
}

KernelRoofline roofline_of(const hardware::GpuSpec& gpu) {
  auto peak = [&](hardware::Precision p) {
    const auto& v = gpu.peak_for(p);
    return v ? v->dense.base() : 0.0;
  };
  return {.bf16_flops = peak(hardware::Precision::kBf16),
          .fp8_flops = peak(hardware::Precision::kFp8),
          .fp4_flops = peak(hardware::Precision::kFp4),
          .hbm_Bps = gpu.hbm_bandwidth.base()};
}

namespace {

using config::Reader;
using Need = config::Reader::Need;

struct MeasuredGpu {
  std::string gpu, folder, spec, device, hbm_fraction_of;
  double achievable_hbm = 0;
  std::string hbm_ref;
};
struct DerivedGpu {
  std::string gpu, from, device, source_ref, hbm_fraction_of, why;
  KernelRoofline roofline;
};
struct Recipe {
  std::string tables, tables_label, tables_origin;
  std::vector<MeasuredGpu> gpus;
  std::vector<DerivedGpu> derived;
  std::map<std::string, std::string> sources;
};

base::Result<Recipe> read_recipe(const hardware::Catalog& catalog) {
  const hardware::CatalogFile* file = nullptr;
  for (const auto& f : catalog.other_files())
    if (f.path == "calibration/compute.yaml") file = &f;
  if (file == nullptr)
    return fail("the catalog has no calibration/compute.yaml (the built-in compute recipe)");
  auto doc = config::parse_document(file->text, "catalog/" + file->path);
  if (!doc) return fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  Reader top(doc->root, ctx);
  top.read_sources();
  Recipe r;
  if (auto body = top.child("compute_calibration")) {
    r.tables = body->string("tables").value_or("");
    r.tables_label = body->string("tables_label").value_or("");
    r.tables_origin = body->string("tables_origin").value_or("");
    auto cite = [&](Reader& g, std::string_view key) {
      auto ref = g.string(key).value_or("");
      if (!ref.empty() && !ctx.sources.count(ref))
        g.error("unknown source '" + ref + "': add it to the file's 'sources:' table", key);
      return ref;
    };
    if (auto gpus = body->child("gpus")) {
      for (const auto& name : gpus->keys()) {
        auto g = gpus->child(name);
        if (!g) continue;
        MeasuredGpu m{.gpu = name};
        m.folder = g->string("folder").value_or("");
        m.spec = g->string("spec").value_or("");
        m.device = g->string("device").value_or("");
        if (auto a = g->child("achievable_hbm", Need::kOptional)) {
          m.achievable_hbm =
              a->quantity<base::BytesPerSecond>("value").value_or(base::BytesPerSecond{}).base();
          m.hbm_ref = cite(*a, "source");
          a->finish();
        } else {
          m.hbm_fraction_of = g->string("hbm_fraction_of").value_or("");
        }
        g->finish();
        r.gpus.push_back(std::move(m));
      }
      gpus->finish();
    }
    if (auto derived = body->child("derived", Need::kOptional)) {
      for (const auto& name : derived->keys()) {
        auto g = derived->child(name);
        if (!g) continue;
        DerivedGpu d{.gpu = name};
        d.from = g->string("from").value_or("");
        d.device = g->string("device").value_or("");
        if (auto p = g->child("peaks")) {
          for (const auto& key : p->keys()) {
            const double v =
                p->quantity<base::FlopsPerSecond>(key).value_or(base::FlopsPerSecond{}).base();
            if (key == "bf16")
              d.roofline.bf16_flops = v;
            else if (key == "fp8")
              d.roofline.fp8_flops = v;
            else if (key == "fp4")
              d.roofline.fp4_flops = v;
            else
              p->error("expected bf16, fp8 or fp4, got '" + key + "'", key);
          }
          p->finish();
        }
        d.roofline.hbm_Bps = g->quantity<base::BytesPerSecond>("hbm_bandwidth")
                                 .value_or(base::BytesPerSecond{})
                                 .base();
        d.source_ref = cite(*g, "source");
        d.hbm_fraction_of = g->string("hbm_fraction_of").value_or("");
        d.why = g->string("why").value_or("");
        g->finish();
        r.derived.push_back(std::move(d));
      }
      derived->finish();
    }
    body->finish();
  }
  top.finish();
  r.sources = ctx.sources;
  if (!ctx.errors.empty()) return fail(ctx.errors.combined());
  return r;
}

}  // namespace

base::Result<BuiltinCompute> builtin_compute(const hardware::Catalog& catalog,
                                             const std::string& reference_dir,
                                             const std::string& generated_by) {
  auto recipe = read_recipe(catalog);
  if (!recipe) return fail(recipe.error());
  const Recipe& r = *recipe;
  struct Fitted {
    const MeasuredGpu* gpu;
    KernelRoofline roofline;
    KernelFit fit;
  };
  std::vector<Fitted> fitted;
  BuiltinCompute out;
  base::Errors errors;
  for (const auto& g : r.gpus) {
    const std::string dir = reference_dir + "/" + r.tables + "/" + g.folder + "/";
    Measurements m;
    // The tables the compute model fits, as the recipe's folder holds them.
    std::vector<std::string> names = {
        "gemm_bfloat16.csv", "gemm_fp8.csv",          "gemm_fp8_block.csv",
        "gemm_nvfp4.csv",    "attention_context.csv", "attention_generation.csv",
        "mla_context.csv",   "mla_generation.csv",    "moe.csv"};
    base::Errors gpu_errors;
    if (auto st = parse_path(dir + g.spec, m); !st) gpu_errors.add(st.error());
    for (const auto& n : names) {
      const std::string path = dir + n;
      const bool optional = n.rfind("gemm_", 0) == 0 && n != "gemm_bfloat16.csv";
      if (optional && !std::ifstream(path)) continue;
      if (auto st = parse_path(path, m); !st) gpu_errors.add(st.error());
    }
    if (!gpu_errors.empty()) {
      for (const auto& e : gpu_errors.items) errors.add(e);
      continue;
    }
    if (m.kernel_specs.size() != 1) {
      errors.add({"expected an AIConfigurator system spec", dir + g.spec, 1});
      continue;
    }
    const auto& spec = m.kernel_specs.front();
    KernelRoofline roof{.bf16_flops = spec.bf16_flops,
                        .fp8_flops = spec.fp8_flops,
                        .fp4_flops = spec.fp4_flops,
                        .hbm_Bps = spec.hbm_Bps};
    auto fit = fit_kernels(m.kernels, roof);
    if (!fit) {
      errors.add(fit.error());
      continue;
    }
    out.summary.push_back(g.gpu + " (" + g.device + "):");
    for (const auto& l : fit->summary) out.summary.push_back(l);
    out.fits.emplace_back(g.gpu, *fit);
    out.inputs.insert(out.inputs.end(), m.inputs.begin(), m.inputs.end());
    fitted.push_back({&g, roof, std::move(*fit)});
  }
  if (!errors.empty()) return fail(errors.combined());
  auto find = [&](const std::string& gpu) -> const Fitted* {
    for (const auto& f : fitted)
      if (f.gpu->gpu == gpu) return &f;
    return nullptr;
  };
  // Achievable HBM bandwidth over the spec's: measured, or another GPU's fraction.
  auto hbm_of =
      [&](const std::string& gpu,
          const std::string& fraction_of) -> base::Result<std::pair<double, std::string>> {
    const std::string base_gpu = fraction_of.empty() ? gpu : fraction_of;
    const Fitted* b = find(base_gpu);
    if (b == nullptr || b->gpu->achievable_hbm <= 0)
      return fail("hbm_fraction_of: '" + base_gpu + "' is no measured GPU with achievable_hbm",
                  "catalog/calibration/compute.yaml", 0);
    const double frac = b->gpu->achievable_hbm / b->roofline.hbm_Bps;
    std::string note = b->gpu->hbm_ref + ": " + r.sources.at(b->gpu->hbm_ref);
    if (base_gpu != gpu) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "; %s has no such measurement, so %s's fraction %.3f is used",
                    gpu.c_str(), base_gpu.c_str(), frac);
      note += buf;
    }
    return std::pair{frac, note};
  };
  auto emit = [&](const std::string& gpu, const std::string& text) -> base::Status {
    const std::string path = "catalog/compute/" + gpu + ".yaml";
    // Read back through the compute model before anything is written.
    if (auto back = compute::ComputeModel::parse(text, path, nullptr); !back)
      return fail("the fitted compute file does not read back: " + back.error().to_string());
    out.files.push_back({path, text});
    return {};
  };
  for (const auto& f : fitted) {
    auto hbm = hbm_of(f.gpu->gpu, f.gpu->hbm_fraction_of);
    if (!hbm) return fail(hbm.error());
    const std::string dir = r.tables_label + "/" + f.gpu->folder + "/";
    ComputeProfileMeta meta{
        .gpu = f.gpu->gpu,
        .device = f.gpu->device,
        .tables_dir = dir,
        .tables_origin = r.tables_origin,
        .spec_source = "AIConfigurator spec aic-core/src/aiconfigurator_core/systems/" +
                       f.gpu->spec + ", copied as " + dir + f.gpu->spec + " (" + r.tables_origin +
                       ")",
        .hbm_efficiency = hbm->first,
        .hbm_source = hbm->second,
        .generated_by = generated_by};
    if (auto st = emit(f.gpu->gpu, compute_profile_yaml(f.fit, f.roofline, meta)); !st)
      return fail(st.error());
  }
  for (const auto& d : r.derived) {
    const Fitted* from = find(d.from);
    if (from == nullptr)
      return fail("derived gpu '" + d.gpu + "': from: '" + d.from + "' is no measured GPU",
                  "catalog/calibration/compute.yaml", 0);
    auto hbm = hbm_of(d.gpu, d.hbm_fraction_of);
    if (!hbm) return fail(hbm.error());
    const std::string dir = r.tables_label + "/" + from->gpu->folder + "/";
    ComputeProfileMeta meta{.gpu = d.gpu,
                            .device = d.device,
                            .tables_dir = dir,
                            .tables_origin = r.tables_origin,
                            .spec_source = r.sources.at(d.source_ref),
                            .hbm_efficiency = hbm->first,
                            .hbm_source = hbm->second,
                            .derived_from = d.from,
                            .derived_why = d.why,
                            .generated_by = generated_by};
    if (auto st = emit(d.gpu, compute_profile_yaml(from->fit, d.roofline, meta)); !st)
      return fail(st.error());
  }
  for (size_t i = 0; i < families().size(); ++i) {
    std::vector<std::pair<std::string, const HoldoutTable*>> per_gpu;
    for (const auto& f : fitted) per_gpu.emplace_back(f.gpu->gpu, &f.fit.holdouts[i]);
    const std::string note = "held-out rows of " + r.tables_label + "/<gpu>/" +
                             families()[i].holdout_source + " (" + r.tables_origin +
                             "), converted and filtered by clustertwin (" + generated_by +
                             "); latency in ms; NOT used for fitting";
    out.files.push_back({"tests/validation/data/" + std::string(families()[i].holdout_file),
                         holdout_csv(note, per_gpu)});
  }
  return out;
}

}  // namespace clustertwin::calibration
