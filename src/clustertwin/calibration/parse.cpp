#include "clustertwin/calibration/parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "clustertwin/base/file.h"
#include "clustertwin/base/number.h"
#include "clustertwin/base/text.h"
#include "clustertwin/calibration/sha256.h"

namespace clustertwin::calibration {
using base::fail;
using collective::Op;

const char* format_name(Format f) {
  switch (f) {
    case Format::kNcclTests:
      return "nccl-tests";
    case Format::kAicNccl:
      return "aiconfigurator-nccl";
    case Format::kAicKernel:
      return "aiconfigurator-kernel";
    case Format::kMegatronLog:
      return "megatron-log";
    case Format::kStepCsv:
      return "step-csv";
    case Format::kLoadgenSummary:
      return "mlperf-loadgen-summary";
    case Format::kServingJson:
      return "serving-benchmark-json";
    case Format::kAtScaleCases:
      return "at-scale-cases";
    case Format::kTrainingCases:
      return "training-cases";
    case Format::kServingCases:
      return "serving-cases";
    case Format::kServingSetup:
      return "serving-setup";
    case Format::kAicSystem:
      return "aiconfigurator-system";
  }
  return "?";
}

namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(start, end - start);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    out.push_back(l);
    start = end + 1;
  }
  return out;
}

std::vector<std::string> words(std::string_view l) {
  std::vector<std::string> out;
  std::istringstream in{std::string(l)};
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<double> to_double(std::string_view s) {
  std::string t = trim(s);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> to_int(std::string_view s) {
  std::string t = trim(s);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
  return v;
}

// What a tool can have measured (docs/limits.md). A time is at least one tick of the engine's
// clock (1 ns) and at most a day: no kernel, collective, training step or request these tools
// time takes longer (LoadGen's offline "Max latency" is the whole run, 18 minutes in
// tests/validation/data/calibration/loadgen_gptj_offline_summary.txt). A rate is at most 1e9
// requests/s (one arrival per tick, `serve --rate`'s bound) or 1e12 tokens/s (10^6 x a GB300
// NVL72 rack's), and below 1e-6/s (one in 11 days) only 0, which the tools print for none.
// Beyond these a figure is a unit slip or a corrupt file: fitted through, a 1e308 s step wrote
// a profile at its parameter bounds and a 1e-300 ms GEMM row printed 1e97% errors, both with
// exit 0, and a 1e308 ms nccl row failed the solver.
constexpr double kMinMeasuredS = 1e-9;
constexpr double kMaxMeasuredS = 86400;
constexpr double kMinMeasuredRate = 1e-6;
constexpr double kMaxMeasuredRequestsPerS = 1e9;
constexpr double kMaxMeasuredTokensPerS = 1e12;

/// A time unit of an input file: its name and its length in seconds.
struct TimeUnit {
  const char* name;
  double seconds;
};
constexpr TimeUnit kNs{"ns", 1e-9}, kUs{"us", 1e-6}, kMs{"ms", 1e-3}, kSeconds{"s", 1};

/// `v` (the figure written as `text`, in `unit`) as a time a tool can have measured, or an error
/// at file:line: "latency: expected a measured time in [1e-06, 8.64e+07] ms (1 ns to 1 day),
/// got '1e308'". With `zero_is_none`, 0 passes too: serving benchmarks print 0 for a statistic
/// with nothing to time (vLLM's TPOT when every output is one token), which the fit skips.
std::optional<double> measured_time(std::optional<double> v, std::string_view text,
                                    std::string_view what, TimeUnit unit, const std::string& file,
                                    int ln, base::Errors& errors, bool zero_is_none = false) {
  if (v && zero_is_none && *v == 0) return v;
  // Compared in seconds with a relative slack of 1e-12, so that 1e-6 ms (exactly 1 ns) is in.
  if (v && *v * unit.seconds >= kMinMeasuredS * (1 - 1e-12) &&
      *v * unit.seconds <= kMaxMeasuredS * (1 + 1e-12))
    return v;
  errors.add({fmt::format("{}: expected {}a measured time in [{:g}, {:g}] {} (1 ns to 1 day), "
                          "got '{}'",
                          what, zero_is_none ? "0 (none) or " : "", kMinMeasuredS / unit.seconds,
                          kMaxMeasuredS / unit.seconds, unit.name, trim(text)),
              file, ln});
  return std::nullopt;
}
std::optional<double> measured_time(std::string_view text, std::string_view what, TimeUnit unit,
                                    const std::string& file, int ln, base::Errors& errors) {
  return measured_time(to_double(text), text, what, unit, file, ln, errors);
}

/// `v` (written as `text`) as a rate a tool can have measured: 0, or in [1e-6, max] `unit`.
std::optional<double> measured_rate(std::optional<double> v, std::string_view text,
                                    std::string_view what, double max, std::string_view unit,
                                    const std::string& file, int ln, base::Errors& errors) {
  if (v && (*v == 0 || (*v >= kMinMeasuredRate && *v <= max))) return v;
  errors.add({fmt::format("{}: expected 0 or a measured rate in [{:g}, {:g}] {}, got '{}'", what,
                          kMinMeasuredRate, max, unit, trim(text)),
              file, ln});
  return std::nullopt;
}

std::string base_name(std::string_view path) {
  auto slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::vector<std::string> split_csv(std::string_view l) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t c = l.find(',', start);
    out.push_back(trim(l.substr(start, c == std::string_view::npos ? l.npos : c - start)));
    if (c == std::string_view::npos) break;
    start = c + 1;
  }
  return out;
}

/// AIConfigurator system spec (`aic-core/.../systems/h100_sxm.yaml`): flat `key: value # comment`
/// lines; the GPU's `mem_bw` and dense tensor-core peaks are read, the rest is left alone.
void parse_aic_system(std::string_view path, std::string_view text, base::Errors& errors,
                      Measurements& into) {
  const std::string file(path);
  KernelSpec spec;
  spec.file = file;
  const auto lines = split_lines(text);
  int records = 0;
  bool refused = false;  // a figure refused below: "needs mem_bw" would repeat it
  for (size_t i = 0; i < lines.size(); ++i) {
    const int ln = static_cast<int>(i + 1);
    std::string_view l = lines[i];
    if (auto hash = l.find('#'); hash != std::string_view::npos) l = l.substr(0, hash);
    const auto colon = l.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string key = trim(l.substr(0, colon));
    const std::string value = trim(l.substr(colon + 1));
    double* slot = key == "mem_bw"              ? &spec.hbm_Bps
                   : key == "bfloat16_tc_flops" ? &spec.bf16_flops
                   : key == "fp8_tc_flops"      ? &spec.fp8_flops
                   : key == "fp4_tc_flops"      ? &spec.fp4_flops
                                                : nullptr;
    if (slot == nullptr || value.empty()) continue;
    auto v = to_double(value);
    if (!v || *v <= 0) {
      errors.add({key + ": expected a positive number, got '" + value + "'", file, ln});
      refused = true;
      continue;
    }
    // The catalog's floors for a GPU (hardware/catalog.cpp: 1 TFLOP/s, 1 GB/s) and ceilings far
    // above any GPU (1 EFLOP/s and 1 PB/s per GPU, ~70x and ~125x a B300's dense FP4 and HBM):
    // 1e308 B/s wrote a profile that does not read back, 1 B/s one with 1e14% errors.
    const bool bandwidth = key == "mem_bw";
    const double lo = bandwidth ? 1e9 : 1e12, hi = bandwidth ? 1e15 : 1e18;
    if (*v < lo || *v > hi) {
      errors.add({fmt::format("{}: expected {} in [{:g}, {:g}] {} ({}), got '{}'", key,
                              bandwidth ? "an HBM bandwidth" : "a dense peak", lo, hi,
                              bandwidth ? "B/s" : "FLOP/s",
                              bandwidth ? "1 GB/s to 1 PB/s" : "1 TFLOP/s to 1 EFLOP/s", value),
                  file, ln});
      refused = true;
      continue;
    }
    if (*slot != 0) {
      errors.add({key + ": given twice", file, ln});
      continue;
    }
    *slot = *v;
    if (key == "mem_bw") spec.line = ln;
    ++records;
  }
  if (refused) return;
  if (spec.hbm_Bps == 0 || spec.bf16_flops == 0) {
    errors.add({"an AIConfigurator system spec needs mem_bw and bfloat16_tc_flops", file, 1});
    return;
  }
  into.inputs.back().records = records;
  into.kernel_specs.push_back(std::move(spec));
}

// ---------------------------------------------------------------------------------------------
// nccl-tests (github.com/NVIDIA/nccl-tests, src/common.cu: the "# nThread" header, the "Rank"
// list, the column header, one row per size, then "# Out of bounds values" and "# Avg bus
// bandwidth").

/// "all_reduce_perf" and the like, as the op it runs.
std::optional<Op> op_of_test_name(std::string_view s) {
  static const std::pair<const char*, Op> kNames[] = {{"all_reduce_perf", Op::kAllReduce},
                                                      {"all_gather_perf", Op::kAllGather},
                                                      {"reduce_scatter_perf", Op::kReduceScatter},
                                                      {"alltoall_perf", Op::kAllToAll},
                                                      {"sendrecv_perf", Op::kSendRecv},
                                                      {"broadcast_perf", Op::kBroadcast},
                                                      {"reduce_perf", Op::kReduce}};
  // Longest names first so that "reduce_perf" does not match inside "all_reduce_perf".
  std::optional<Op> found;
  size_t best = std::string_view::npos;
  for (const auto& [name, op] : kNames) {
    size_t pos = s.rfind(name);
    if (pos == std::string_view::npos) continue;
    // A hit that is the tail of a longer name ("all_reduce_perf" for "reduce_perf") is not one.
    if (pos > 0 && (std::isalnum(static_cast<unsigned char>(s[pos - 1])) || s[pos - 1] == '_'))
      continue;
    if (best == std::string_view::npos || pos > best) {
      best = pos;
      found = op;
    }
  }
  return found;
}

/// The op named by a file name ("all_gather.log", "alltoall_perf_16gpu.txt").
std::optional<Op> op_of_file_name(std::string_view path) {
  const std::string b = lower(base_name(path));
  if (auto op = op_of_test_name(b)) return op;
  static const std::pair<const char*, Op> kStems[] = {{"reduce_scatter", Op::kReduceScatter},
                                                      {"all_reduce", Op::kAllReduce},
                                                      {"allreduce", Op::kAllReduce},
                                                      {"all_gather", Op::kAllGather},
                                                      {"allgather", Op::kAllGather},
                                                      {"reducescatter", Op::kReduceScatter},
                                                      {"alltoall", Op::kAllToAll},
                                                      {"all_to_all", Op::kAllToAll},
                                                      {"sendrecv", Op::kSendRecv}};
  for (const auto& [stem, op] : kStems) {
    if (b.find(stem) != std::string::npos) return op;
  }
  return std::nullopt;
}

int elem_bytes(std::string_view type) {
  auto dt = collective::parse_dtype(type);
  return dt ? dt->bytes : 0;
}

struct NcclBlock {
  CollectiveRun run;
  std::vector<std::string> hosts;  // host of each rank line, in order
  std::map<std::string, int> per_host;
  std::string redop, root;
  int64_t max_bytes = 0;
  bool header_seen = false, footer_seen = false, has_root = true;
  std::optional<Op> named_op;
  int last_line = 0;
};

/// Infers the op from what the columns say when no test name is in the file: the reduction,
/// whether count is per rank buffer or per chunk, and busbw / algbw (nccl-tests' bus factor).
std::optional<Op> infer_op(const NcclBlock& b, std::string* why) {
  const int n = b.run.ranks;
  const int eb = elem_bytes(b.run.dtype);
  const CollectiveRow* big = nullptr;
  for (const auto& r : b.run.rows)
    if (!big || r.size_bytes > big->size_bytes) big = &r;
  if (!big || eb == 0 || n < 2) {
    *why = "too few rows or ranks to tell";
    return std::nullopt;
  }
  const bool per_chunk = big->count * eb * n == big->size_bytes && n > 1;
  const bool reducing = b.redop != "none";
  const double f = big->algbw_GBps > 0 ? big->busbw_GBps / big->algbw_GBps : 0;
  if (per_chunk) {
    if (reducing) return Op::kReduceScatter;
    *why =
        "all_gather_perf and alltoall_perf print the same columns (redop none, count = size / "
        "ranks, busbw = algbw (n-1)/n)";
    return std::nullopt;
  }
  if (b.root == "0") return reducing ? Op::kReduce : Op::kBroadcast;
  if (!reducing) {
    *why = "redop 'none' with count = size is no nccl-tests collective";
    return std::nullopt;
  }
  if (n == 2) {
    *why = "with 2 ranks all_reduce_perf and sendrecv_perf print the same columns";
    return std::nullopt;
  }
  if (std::abs(f - 1.0) < 0.02) return Op::kSendRecv;
  return Op::kAllReduce;
}

void finish_block(NcclBlock& b, std::string_view path, base::Errors& errors,
                  std::vector<CollectiveRun>& out, std::optional<Op> file_op) {
  const std::string file(path);
  if (b.run.rows.empty()) {
    if (b.header_seen || !b.hosts.empty())
      errors.add(
          {"nccl-tests run without result rows (expected one row per size after the "
           "column header): the output is cut short",
           file, b.last_line});
    return;
  }
  if (!b.footer_seen) {
    errors.add({"nccl-tests output ends after the row for " +
                    std::to_string(b.run.rows.back().size_bytes) +
                    " B without its closing '# Avg bus bandwidth' line" +
                    (b.max_bytes > 0 ? " (maxBytes " + std::to_string(b.max_bytes) + ")" : "") +
                    ": the run was cut short; rerun it or cut the file after a complete run",
                file, b.last_line});
    return;
  }
  // Ranks and hosts.
  if (!b.hosts.empty()) {
    b.run.ranks = static_cast<int>(b.hosts.size());
    b.run.nodes = static_cast<int>(b.per_host.size());
    for (const auto& [h, c] : b.per_host) b.run.per_node = std::max(b.run.per_node, c);
  }
  // The op: the test named in the file, else the file's name, else the columns.
  std::optional<Op> op = b.named_op ? b.named_op : file_op;
  std::string why;
  if (b.run.ranks == 0) {
    // No rank list (a trimmed log): the bus factor of the largest size gives the rank count
    // for the ops whose factor depends on it.
    const CollectiveRow* big = &b.run.rows.back();
    const double f = big->algbw_GBps > 0 ? big->busbw_GBps / big->algbw_GBps : 0;
    Op o = op.value_or(Op::kAllReduce);
    double n = 0;
    if (o == Op::kAllReduce && f < 2 && f > 0) n = 2 / (2 - f);
    if ((o == Op::kAllGather || o == Op::kReduceScatter || o == Op::kAllToAll) && f < 1 && f > 0)
      n = 1 / (1 - f);
    if (n < 1.5 || std::abs(n - std::round(n)) > 0.05) {
      errors.add(
          {"nccl-tests output without its '#  Rank ... device ...' lines: cannot tell how "
           "many GPUs ran it (keep the header nccl-tests prints before the table)",
           file, b.run.line});
      return;
    }
    b.run.ranks = static_cast<int>(std::lround(n));
    b.run.nodes = 0;  // unknown
  }
  if (!op) op = infer_op(b, &why);
  if (!op) {
    errors.add({"cannot tell which nccl-tests collective this is: " + why +
                    "; keep the command line (e.g. 'all_gather_perf -b 8 -e 8G') in the log or "
                    "name the file after the test (all_gather_perf.txt)",
                file, b.run.line});
    return;
  }
  b.run.op = *op;
  // Consistency of every row with the op and the rank count: count (elements per buffer or per
  // chunk) and busbw = algbw * factor. A mismatch means another op, another rank count or a
  // mangled file.
  const int eb = elem_bytes(b.run.dtype);
  const double factor = collective::busbw_factor(*op, b.run.ranks);
  bool bad = false;
  for (const auto& r : b.run.rows) {
    const int64_t want_count = collective::nccl_count(*op, r.size_bytes, eb, b.run.ranks);
    if (eb > 0 && r.count != want_count) {
      errors.add({"count " + std::to_string(r.count) + " does not fit " + collective::op_name(*op) +
                      " on " + std::to_string(b.run.ranks) + " ranks (expected " +
                      std::to_string(want_count) + " elements of " + b.run.dtype + " for size " +
                      std::to_string(r.size_bytes) + ")",
                  file, r.line});
      bad = true;
      break;
    }
    if (r.algbw_GBps >= 1.0) {
      const double f = r.busbw_GBps / r.algbw_GBps;
      if (std::abs(f - factor) > 0.02 * factor + 0.01 / r.algbw_GBps + 0.005) {
        const std::string implied = *op == Op::kAllReduce && f < 2
                                        ? std::to_string(std::lround(2 / (2 - f)))
                                    : f < 1 ? std::to_string(std::lround(1 / (1 - f)))
                                            : "?";
        errors.add({"busbw / algbw = " + std::to_string(f).substr(0, 5) + " but " +
                        collective::op_name(*op) + " on " + std::to_string(b.run.ranks) +
                        " ranks gives " + std::to_string(factor).substr(0, 5) +
                        " (nccl-tests' bus factor; the row looks like " + implied + " ranks)",
                    file, r.line});
        bad = true;
        break;
      }
    }
  }
  if (!bad) out.push_back(std::move(b.run));
}

void parse_nccl_tests(std::string_view path, std::string_view text, base::Errors& errors,
                      Measurements& into) {
  const std::string file(path);
  const auto lines = split_lines(text);
  std::vector<CollectiveRun> runs;
  std::optional<NcclBlock> cur;
  std::optional<Op> last_named;  // the last "<op>_perf" seen (a command line before the block)
  std::string version;
  const auto file_op = op_of_file_name(path);
  auto start_block = [&](int line) {
    if (cur) finish_block(*cur, path, errors, runs, file_op);
    cur.emplace();
    cur->run.file = file;
    cur->run.line = line;
    cur->run.nccl_version = version;
    cur->named_op = last_named;
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    const int ln = static_cast<int>(i) + 1;
    const std::string_view l = lines[i];
    if (auto op = op_of_test_name(l)) {
      last_named = op;
      if (cur && cur->run.rows.empty()) cur->named_op = op;
    }
    if (auto v = l.find("NCCL version "); v != std::string_view::npos) {
      auto w = words(l.substr(v + 13));
      if (!w.empty()) {
        version = w[0].substr(0, w[0].find('+'));
        if (cur) cur->run.nccl_version = version;
      }
    }
    const std::string t = trim(l);
    if (t.rfind("# nThread", 0) == 0) {
      start_block(ln);
      auto w = words(t);
      for (size_t k = 0; k + 1 < w.size(); ++k)
        if (w[k] == "maxBytes") cur->max_bytes = to_int(w[k + 1]).value_or(0);
      cur->last_line = ln;
      continue;
    }
    if (t.rfind("#", 0) == 0) {
      auto w = words(t.substr(1));
      if (!cur && !w.empty() && (w[0] == "Rank" || w[0] == "size")) start_block(ln);
      if (!cur) continue;
      cur->last_line = ln;
      // "#  Rank  0 Group  0 Pid   6899 on ztan-mig-235z device  0 [0000:04:00] NVIDIA H100..."
      if (w.size() >= 8 && w[0] == "Rank" && to_int(w[1])) {
        auto on = std::find(w.begin(), w.end(), "on");
        auto dev = std::find(w.begin(), w.end(), "device");
        if (on == w.end() || on + 1 == w.end()) {
          errors.add({"rank line without 'on HOST'", file, ln});
          continue;
        }
        const std::string host = *(on + 1);
        cur->hosts.push_back(host);
        cur->per_host[host]++;
        if (dev != w.end() && dev + 3 < w.end() && cur->run.device.empty()) {
          std::string name;
          for (auto it = dev + 3; it != w.end(); ++it) name += (name.empty() ? "" : " ") + *it;
          cur->run.device = name;
        }
        continue;
      }
      if (!w.empty() && w[0] == "size") {
        cur->header_seen = true;
        cur->has_root = std::find(w.begin(), w.end(), "root") != w.end();
        continue;
      }
      if (t.find("Avg bus bandwidth") != std::string::npos) cur->footer_seen = true;
      continue;
    }
    if (!cur || !cur->header_seen || t.empty() || !std::isdigit(static_cast<unsigned char>(t[0])))
      continue;  // NCCL INFO lines, mpirun noise, blank lines
    // A result row: size count type redop [root] | time algbw busbw #wrong | time algbw busbw
    // #wrong (in-place; N/A where the test has none).
    auto w = words(t);
    const size_t lead = cur->has_root ? 5 : 4;
    if (w.size() != lead + 8) {
      errors.add({"nccl-tests row with " + std::to_string(w.size()) + " columns, expected " +
                      std::to_string(lead + 8) + " (size count type redop" +
                      (cur->has_root ? " root" : "") +
                      ", then time algbw busbw #wrong out-of-place and in-place): the line is cut "
                      "short or not nccl-tests output",
                  file, ln});
      cur->last_line = ln;
      continue;
    }
    CollectiveRow r;
    r.line = ln;
    auto size = to_int(w[0]);
    auto count = to_int(w[1]);
    auto time = to_double(w[lead]);
    auto algbw = to_double(w[lead + 1]);
    auto busbw = to_double(w[lead + 2]);
    if (!size || !count || !time || !algbw || !busbw || *size <= 0 || *time <= 0 || *algbw < 0 ||
        *busbw < 0) {
      errors.add(
          {"nccl-tests row: expected whole size and count and positive time, algbw and "
           "busbw numbers, got '" +
               t + "'",
           file, ln});
      continue;
    }
    if (!measured_time(time, w[lead], "time", kUs, file, ln, errors)) continue;
    if (w[lead + 4] != "N/A" && !measured_time(w[lead + 4], "in-place time", kUs, file, ln, errors))
      continue;
    if (elem_bytes(w[2]) == 0) {
      errors.add({"unknown nccl-tests type '" + w[2] + "'", file, ln});
      continue;
    }
    if (cur->run.dtype.empty()) {
      cur->run.dtype = w[2];
      cur->redop = w[3];
      cur->root = cur->has_root ? w[4] : "-1";
    } else if (cur->run.dtype != w[2]) {
      errors.add(
          {"type '" + w[2] + "' changes within one run (it began with '" + cur->run.dtype + "')",
           file, ln});
      continue;
    }
    const std::string& wrong = w[lead + 3];
    if (wrong != "0" && wrong != "N/A" && to_double(wrong).value_or(1) != 0) {
      errors.add({"nccl-tests found " + wrong + " wrong results at size " + w[0] +
                      " (its data check failed): the timing of a broken run is no measurement",
                  file, ln});
      continue;
    }
    // algbw = size / time (GB/s = 1e9 B/s, time in us), to the 2 decimals printed.
    const double want_algbw = static_cast<double>(*size) / (*time * 1e3);
    if (std::abs(want_algbw - *algbw) > 0.01 * want_algbw + 0.011) {
      errors.add({"algbw " + w[lead + 1] +
                      " GB/s does not match size / time = " + std::to_string(want_algbw) +
                      " GB/s: not nccl-tests output, or a mangled "
                      "row",
                  file, ln});
      continue;
    }
    r.size_bytes = *size;
    r.count = *count;
    r.time_us = *time;
    r.algbw_GBps = *algbw;
    r.busbw_GBps = *busbw;
    if (auto ip = to_double(w[lead + 4])) r.in_place_time_us = *ip;
    if (!cur->run.rows.empty() && r.size_bytes <= cur->run.rows.back().size_bytes) {
      errors.add({"size " + w[0] + " does not grow from the row before (" +
                      std::to_string(cur->run.rows.back().size_bytes) +
                      "): two runs mixed in one block?",
                  file, ln});
      continue;
    }
    cur->run.rows.push_back(r);
    cur->last_line = ln;
  }
  if (cur) finish_block(*cur, path, errors, runs, file_op);
  if (runs.empty() && errors.empty())
    errors.add({"no nccl-tests result rows found", file, static_cast<int>(lines.size())});
  int records = 0;
  for (auto& r : runs) {
    records += static_cast<int>(r.rows.size());
    into.collectives.push_back(std::move(r));
  }
  into.inputs.back().records = records;
}

// ---------------------------------------------------------------------------------------------
// AIConfigurator tables (ai-dynamo/aiconfigurator, systems/data/<system>/...: one shape per row,
// latency in milliseconds). nccl.csv: message_size in ELEMENTS of nccl_dtype, one node.

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::pair<int, std::vector<std::string>>> rows;  // line, cells
};

CsvTable read_csv(std::string_view text, std::string_view path, base::Errors& errors) {
  CsvTable t;
  const auto lines = split_lines(text);
  size_t i = 0;
  while (i < lines.size() && (trim(lines[i]).empty() || trim(lines[i])[0] == '#')) ++i;
  if (i == lines.size()) return t;
  t.header = split_csv(lines[i]);
  for (++i; i < lines.size(); ++i) {
    const std::string s = trim(lines[i]);
    if (s.empty() || s[0] == '#') continue;
    auto cells = split_csv(lines[i]);
    if (cells.size() != t.header.size()) {
      errors.add({"CSV row with " + std::to_string(cells.size()) + " fields, expected " +
                      std::to_string(t.header.size()) + " (" + base::join(t.header) +
                      "): the row is cut short",
                  std::string(path), static_cast<int>(i) + 1});
      continue;
    }
    t.rows.emplace_back(static_cast<int>(i) + 1, std::move(cells));
  }
  return t;
}

int column(const CsvTable& t, std::string_view name) {
  auto it = std::find(t.header.begin(), t.header.end(), name);
  return it == t.header.end() ? -1 : static_cast<int>(it - t.header.begin());
}

void parse_aic_nccl(std::string_view path, std::string_view text, base::Errors& errors,
                    Measurements& into) {
  const std::string file(path);
  auto t = read_csv(text, path, errors);
  const int c_op = column(t, "op_name"), c_dt = column(t, "nccl_dtype"),
            c_n = column(t, "num_gpus"), c_size = column(t, "message_size"),
            c_lat = column(t, "latency");
  std::map<std::tuple<Op, std::string, int>, CollectiveRun> runs;
  int records = 0;
  for (const auto& [ln, cells] : t.rows) {
    std::string opname = cells[c_op] == "alltoall" ? "all_to_all" : cells[c_op];
    auto op = collective::parse_op(opname);
    auto dt = collective::parse_dtype(cells[c_dt]);
    auto n = to_int(cells[c_n]);
    auto elems = to_int(cells[c_size]);
    auto lat = to_double(cells[c_lat]);
    if (!op || !dt || !n || *n < 2 || !elems || *elems <= 0 || !lat || *lat <= 0) {
      errors.add(
          {"AIConfigurator nccl row: expected op_name (all_reduce, all_gather, "
           "reduce_scatter, alltoall), an nccl dtype, num_gpus >= 2, message_size in "
           "elements > 0 and latency in ms > 0",
           file, ln});
      continue;
    }
    if (!measured_time(lat, cells[c_lat], "latency", kMs, file, ln, errors)) continue;
    auto key = std::make_tuple(*op, dt->name, static_cast<int>(*n));
    auto& run = runs[key];
    if (run.rows.empty()) {
      run.file = file;
      run.line = ln;
      run.op = *op;
      run.dtype = dt->name;
      run.ranks = static_cast<int>(*n);
      run.nodes = 1;  // AIConfigurator's tables are measured on one node (measured/README.md)
      run.per_node = run.ranks;
    }
    CollectiveRow r;
    r.line = ln;
    r.size_bytes = *elems * dt->bytes;
    r.count = collective::nccl_count(*op, r.size_bytes, dt->bytes, run.ranks);
    r.time_us = *lat * 1e3;
    r.algbw_GBps = static_cast<double>(r.size_bytes) / (r.time_us * 1e3);
    r.busbw_GBps = r.algbw_GBps * collective::busbw_factor(*op, run.ranks);
    run.rows.push_back(r);
    ++records;
  }
  for (auto& [k, run] : runs) {
    std::stable_sort(run.rows.begin(), run.rows.end(),
                     [](const auto& a, const auto& b) { return a.size_bytes < b.size_bytes; });
    into.collectives.push_back(std::move(run));
  }
  into.inputs.back().records = records;
}

/// AIConfigurator kernel tables by their header: the kind, and the shape columns.
struct KernelKind {
  const char* kind;
  std::vector<std::string> header;
};
const std::vector<KernelKind>& kernel_kinds() {
  static const std::vector<KernelKind> k = {
      {"gemm", {"m", "n", "k", "latency"}},
      {"attention_context",
       {"batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "attn_dtype",
        "kv_cache_dtype", "latency"}},
      {"attention_generation",
       {"batch_size", "num_heads", "num_key_value_heads", "head_dim", "kv_cache_dtype", "step",
        "latency"}},
      {"moe",
       {"kernel_source", "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk",
        "num_experts", "moe_tp_size", "moe_ep_size", "distribution", "latency"}},
      {"mla_context", {"kv_cache_dtype", "num_heads", "batch_size", "isl", "tp_size", "latency"}},
      {"mla_generation",
       {"kv_cache_dtype", "num_heads", "batch_size", "tp_size", "step", "latency"}},
      {"mla_bmm", {"op_name", "kernel_source", "bmm_dtype", "num_tokens", "num_heads", "latency"}},
      {"custom_allreduce", {"num_gpus", "message_size", "latency"}},
  };
  return k;
}

void parse_aic_kernel(std::string_view path, std::string_view text, base::Errors& errors,
                      Measurements& into) {
  const std::string file(path);
  auto t = read_csv(text, path, errors);
  KernelTable table;
  table.file = file;
  for (const auto& k : kernel_kinds())
    if (k.header == t.header) table.kind = k.kind;
  table.columns.assign(t.header.begin(), t.header.end() - 1);
  if (table.kind == "gemm") {
    // gemm_bfloat16.csv, gemm_fp8.csv, gemm_fp8_block.csv share one header: the precision is
    // in the name, as AIConfigurator writes it.
    const std::string b = lower(base_name(path));
    for (const char* dt : {"fp8_block", "fp8", "bfloat16", "fp16", "fp4", "nvfp4", "int8"}) {
      if (b.find(std::string("gemm_") + dt) != std::string::npos) {
        table.dtype = dt;
        break;
      }
    }
    if (table.dtype.empty()) {
      errors.add(
          {"a GEMM table (m,n,k,latency) does not say its precision: name the file as "
           "AIConfigurator does (gemm_bfloat16.csv, gemm_fp8.csv, gemm_fp8_block.csv)",
           file, 1});
      return;
    }
  }
  for (const auto& [ln, cells] : t.rows) {
    auto lat = measured_time(cells.back(), "latency", kMs, file, ln, errors);
    if (!lat) continue;
    table.rows.push_back({std::vector<std::string>(cells.begin(), cells.end() - 1), *lat, ln});
  }
  into.inputs.back().records = static_cast<int>(table.rows.size());
  if (table.rows.empty()) {
    errors.add({"kernel table without rows", file, 1});
    return;
  }
  into.kernels.push_back(std::move(table));
}

// ---------------------------------------------------------------------------------------------
// Megatron-LM training log (megatron/training/training.py training_log(): "iteration N/ M |
// ... | elapsed time per iteration (ms): X | ..."; megatron/training/arguments.py prints the
// "arguments" block at start-up with the layout).

/// The range of a measured layout's integer (base/number.h's limits; 0 where the source may leave
/// it out: dp is then derived, batch and length unknown). Read as int64 and cast, a value past
/// them wrapped: a step-time CSV with gpus 4294967360 was fitted as 64 GPUs.
base::IntRange layout_range(std::string_view key) {
  if (key.find("batch") != std::string_view::npos) return {0, base::kMaxBatch};
  if (key.find("seq") != std::string_view::npos) return {0, base::kMaxSequence};
  if (key == "dp" || key == "data_parallel_size") return {0, base::kMaxGpus};
  return {1, base::kMaxGpus};
}

/// Derives dp where the source leaves it out and checks tp*pp*cp*dp against the GPU count (in
/// int64, each degree at most kMaxGpus, so the product cannot wrap); `gpus_key` names the count.
bool check_layout(StepTime& s, std::string_view gpus_key, const std::string& file, int ln,
                  base::Errors& errors) {
  if (s.gpus <= 0) {
    errors.add({std::string(gpus_key) + ": expected the GPU count (an integer in [1, " +
                    std::to_string(base::kMaxGpus) + "]), got none",
                file, ln});
    return false;
  }
  auto mp =
      base::checked_product({{"tp", s.tp}, {"pp", s.pp}, {"cp", s.cp}}, base::kMaxGpus, "GPUs");
  if (!mp) {
    errors.add({mp.error().message, file, ln});
    return false;
  }
  if (s.dp == 0) s.dp = static_cast<int>(s.gpus / *mp);
  const int64_t total = *mp * s.dp;  // <= 2^26 * 2^26
  if (total != s.gpus) {
    errors.add({"tp*pp*cp*dp = " + std::to_string(total) + " does not match " +
                    std::string(gpus_key) + " = " + std::to_string(s.gpus),
                file, ln});
    return false;
  }
  return true;
}

void parse_megatron(std::string_view path, std::string_view text, base::Errors& errors,
                    Measurements& into) {
  const std::string file(path);
  const auto lines = split_lines(text);
  std::map<std::string, std::string> args;
  std::map<std::string, int> arg_line;  // where each argument is printed, for messages
  bool refused = false;                 // an iteration line refused below
  std::vector<std::pair<int, double>> iters;
  bool in_args = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const int ln = static_cast<int>(i) + 1;
    const std::string_view l = lines[i];
    if (l.find("-- arguments --") != std::string_view::npos ||
        l.find("---- arguments ----") != std::string_view::npos) {
      in_args = true;
      continue;
    }
    if (in_args) {
      if (l.find("end of arguments") != std::string_view::npos) {
        in_args = false;
        continue;
      }
      // "  tensor_model_parallel_size ...................... 8"
      auto w = words(l);
      if (w.size() >= 3 && w[1].find_first_not_of('.') == std::string::npos) {
        args[w[0]] = w[2];
        arg_line[w[0]] = ln;
      }
      continue;
    }
    auto pos = l.find("elapsed time per iteration (ms):");
    if (pos == std::string_view::npos) continue;
    auto rest = l.substr(pos + 32);
    auto bar = rest.find('|');
    auto v = measured_time(rest.substr(0, bar), "elapsed time per iteration (ms)", kMs, file, ln,
                           errors);
    if (!v) {
      refused = true;
      continue;
    }
    iters.emplace_back(ln, *v);
  }
  if (iters.empty()) {
    if (refused) return;
    errors.add(
        {"no 'elapsed time per iteration (ms)' lines: the log ends before the first "
         "logged iteration",
         file, static_cast<int>(lines.size())});
    return;
  }
  if (args.empty()) {
    errors.add(
        {"Megatron-LM log without its 'arguments' block (printed at start-up): the layout "
         "is unknown; keep the start of the log, or give the layout and step time as a "
         "CSV (gpus,tp,pp,...,step_time_s)",
         file, iters.front().first});
    return;
  }
  bool ok = true;
  auto geti = [&](const char* k, int64_t dflt) -> int64_t {
    auto it = args.find(k);
    if (it == args.end() || it->second == "None") return dflt;
    auto v = to_int(it->second);
    if (!v) {
      errors.add({std::string("argument ") + k + " = '" + it->second + "' is not a whole number",
                  file, arg_line[k]});
      ok = false;
      return dflt;
    }
    if (auto in = base::check_integer(*v, layout_range(k)); !in) {
      errors.add({std::string("argument ") + k + ": " + in.error().message, file, arg_line[k]});
      ok = false;
      return dflt;
    }
    return *v;
  };
  StepTime s;
  s.file = file;
  s.line = iters.front().first;
  s.gpus = static_cast<int>(geti("world_size", 0));
  s.tp = static_cast<int>(geti("tensor_model_parallel_size", 1));
  s.pp = static_cast<int>(geti("pipeline_model_parallel_size", 1));
  s.cp = static_cast<int>(geti("context_parallel_size", 1));
  s.ep = static_cast<int>(geti("expert_model_parallel_size", 1));
  s.vpp = static_cast<int>(geti("virtual_pipeline_model_parallel_size", 1));
  s.dp = static_cast<int>(geti("data_parallel_size", 0));
  s.micro_batch = geti("micro_batch_size", 0);
  s.global_batch = geti("global_batch_size", 0);
  s.seq_len = geti("seq_length", 0);
  if (args.count("fp8") && args["fp8"] != "None")
    s.precision = "fp8";
  else if (args.count("bf16") && args["bf16"] == "True")
    s.precision = "bf16";
  if (!ok) return;
  if (s.gpus <= 0) {
    errors.add({"the arguments block has no world_size: the GPU count is unknown", file, 1});
    return;
  }
  if (!check_layout(s, "world_size", file, 1, errors)) return;
  // The first logged interval holds start-up (compilation, allocator warm-up, first
  // communicator setup); it is dropped when at least two more follow. The median of the rest
  // resists the odd slow iteration (checkpoint, evaluation).
  std::vector<double> kept;
  for (size_t i = iters.size() >= 3 ? 1 : 0; i < iters.size(); ++i) kept.push_back(iters[i].second);
  std::sort(kept.begin(), kept.end());
  const size_t m = kept.size();
  s.step_time_s = (m % 2 ? kept[m / 2] : 0.5 * (kept[m / 2 - 1] + kept[m / 2])) / 1e3;
  s.iterations = static_cast<int>(m);
  into.inputs.back().records = static_cast<int>(iters.size());
  into.steps.push_back(s);
}

/// A CSV of layouts and step times: gpus, tp, pp, [dp, cp, ep, vpp, micro_batch, global_batch,
/// seq_len, model, precision], step_time_s (or step_time_ms).
void parse_step_csv(std::string_view path, std::string_view text, base::Errors& errors,
                    Measurements& into) {
  const std::string file(path);
  auto t = read_csv(text, path, errors);
  const int c_s = column(t, "step_time_s"), c_ms = column(t, "step_time_ms");
  for (const char* need : {"gpus", "tp", "pp"}) {
    if (column(t, need) < 0) {
      errors.add(
          {std::string("step-time CSV without a '") + need +
               "' column (expected gpus, tp, "
               "pp, [dp, cp, ep, vpp, micro_batch, global_batch, seq_len, model, precision], "
               "step_time_s)",
           file, 1});
      return;
    }
  }
  int records = 0;
  for (const auto& row : t.rows) {
    // Named, not a structured binding: clang 14 (the fuzz build) cannot capture bindings in the
    // lambdas below.
    const int ln = row.first;
    const auto& cells = row.second;
    StepTime s;
    s.file = file;
    s.line = ln;
    bool ok = true;
    auto geti = [&](const char* k, int64_t dflt) -> int64_t {
      int c = column(t, k);
      if (c < 0 || cells[c].empty()) return dflt;
      auto v = to_int(cells[c]);
      if (!v) {
        errors.add({std::string(k) + " '" + cells[c] + "' is not a whole number", file, ln});
        ok = false;
        return dflt;
      }
      if (auto in = base::check_integer(*v, layout_range(k)); !in) {
        errors.add({std::string(k) + ": " + in.error().message, file, ln});
        ok = false;
        return dflt;
      }
      return *v;
    };
    s.gpus = static_cast<int>(geti("gpus", 0));
    s.tp = static_cast<int>(geti("tp", 1));
    s.pp = static_cast<int>(geti("pp", 1));
    s.cp = static_cast<int>(geti("cp", 1));
    s.ep = static_cast<int>(geti("ep", 1));
    s.vpp = static_cast<int>(geti("vpp", 1));
    s.dp = static_cast<int>(geti("dp", 0));
    s.micro_batch = geti("micro_batch", 0);
    s.global_batch = geti("global_batch", 0);
    s.seq_len = geti("seq_len", 0);
    if (int c = column(t, "model"); c >= 0) s.model = cells[c];
    if (int c = column(t, "precision"); c >= 0) s.precision = cells[c];
    auto v = c_s >= 0 ? measured_time(cells[c_s], "step_time_s", kSeconds, file, ln, errors)
                      : measured_time(cells[c_ms], "step_time_ms", kMs, file, ln, errors);
    if (!v) continue;
    s.step_time_s = c_s >= 0 ? *v : *v / 1e3;
    s.iterations = 1;
    if (!ok || !check_layout(s, "gpus", file, ln, errors)) continue;
    into.steps.push_back(s);
    ++records;
  }
  into.inputs.back().records = records;
}

// ---------------------------------------------------------------------------------------------
// MLPerf LoadGen mlperf_log_summary.txt (mlcommons/inference loadgen/results.cc: "key : value"
// lines under "MLPerf Results Summary", "Additional Stats", "Test Parameters Used").

void parse_loadgen(std::string_view path, std::string_view text, base::Errors& errors,
                   Measurements& into) {
  const std::string file(path);
  const auto lines = split_lines(text);
  ServingResult s;
  s.file = file;
  s.tool = "mlperf-loadgen";
  bool result_seen = false, stats_seen = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const int ln = static_cast<int>(i) + 1;
    auto colon = lines[i].find(':');
    if (colon == std::string_view::npos) continue;
    const std::string key = trim(lines[i].substr(0, colon));
    const std::string val = trim(lines[i].substr(colon + 1));
    auto num = to_double(val);
    if (key == "Scenario") {
      s.scenario = val;
      s.line = ln;
    } else if (key == "SUT name") {
      s.model = val;
    } else if (key == "Result is") {
      s.valid = val == "VALID";
      result_seen = true;
    } else if (key == "Samples per second" || key == "Completed samples per second") {
      if (!measured_rate(num, val, key, kMaxMeasuredRequestsPerS, "requests/s", file, ln, errors))
        continue;
      s.requests_per_s = *num;
    } else if (key.rfind("Tokens per second", 0) == 0 || key == "Completed tokens per second") {
      if (!measured_rate(num, val, key, kMaxMeasuredTokensPerS, "tokens/s", file, ln, errors))
        continue;
      s.output_tokens_per_s = *num;
    } else if (key == "target_qps" || key == "Scheduled samples per second") {
      if (!measured_rate(num, val, key, kMaxMeasuredRequestsPerS, "requests/s", file, ln, errors))
        continue;
      if (s.request_rate == 0) s.request_rate = *num;
    } else if (key.find("(ns)") != std::string::npos && num) {
      stats_seen = true;
      std::string k = lower(key.substr(0, key.find("(ns)")));
      std::string metric = k.find("first token") != std::string::npos    ? "ttft"
                           : k.find("output token") != std::string::npos ? "tpot"
                           : k.find("latency") != std::string::npos      ? "latency"
                                                                         : "";
      if (metric.empty()) continue;
      std::string stat;
      if (k.rfind("min", 0) == 0)
        stat = "min";
      else if (k.rfind("max", 0) == 0)
        stat = "max";
      else if (k.rfind("mean", 0) == 0)
        stat = "mean";
      else if (auto p = k.find(" percentile"); p != std::string::npos) {
        auto pct = to_double(k.substr(0, p));
        if (pct) {
          std::ostringstream o;
          o << "p" << *pct;
          stat = o.str();
        }
      }
      if (stat.empty()) continue;
      if (!measured_time(num, val, key, kNs, file, ln, errors, /*zero_is_none=*/true)) continue;
      s.latency_ms[metric + "_" + stat] = *num / 1e6;
    }
  }
  if (s.scenario.empty() || !result_seen) {
    errors.add({"LoadGen summary without 'Scenario' and 'Result is' lines: the file is cut short",
                file, static_cast<int>(lines.size())});
    return;
  }
  if (!stats_seen && s.requests_per_s == 0) {
    errors.add(
        {"LoadGen summary without throughput ('Samples per second' or 'Completed samples "
         "per second')",
         file, static_cast<int>(lines.size())});
    return;
  }
  into.inputs.back().records = 1;
  s.setup = static_cast<int>(into.serving_setups.size()) - 1;
  into.serving.push_back(s);
}

// vLLM benchmarks/benchmark_serving.py --save-result (one JSON object) and SGLang
// bench_serving.py --output-file (one JSON object per line).
void parse_serving_json(std::string_view path, std::string_view text, base::Errors& errors,
                        Measurements& into) {
  const std::string file(path);
  const auto lines = split_lines(text);
  std::vector<std::pair<int, nlohmann::json>> objects;
  auto whole = nlohmann::json::parse(text, nullptr, false);
  if (!whole.is_discarded() && whole.is_object()) {
    objects.emplace_back(1, std::move(whole));
  } else {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (trim(lines[i]).empty()) continue;
      auto j = nlohmann::json::parse(lines[i], nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        errors.add(
            {"not a JSON object (expected benchmark_serving's result JSON, one object per "
             "line for SGLang): the file is cut short or from another tool",
             file, static_cast<int>(i) + 1});
        return;
      }
      objects.emplace_back(static_cast<int>(i) + 1, std::move(j));
    }
  }
  int records = 0;
  for (auto& object : objects) {
    const int ln = object.first;  // not a binding: the lambdas below capture it (clang 14)
    auto& j = object.second;
    ServingResult s;
    s.file = file;
    s.line = ln;
    const std::string backend = j.value("backend", std::string());
    s.tool = backend.find("sglang") != std::string::npos ? "sglang" : "vllm";
    s.scenario = "online";
    s.model = j.value("model_id", j.value("model", std::string()));
    auto num = [&](const char* k) -> std::optional<double> {
      if (!j.contains(k)) return std::nullopt;
      const auto& v = j[k];
      if (v.is_number()) return v.get<double>();
      if (v.is_string() && (v == "inf" || v == "Infinity")) return 0.0;  // unbounded
      return std::nullopt;
    };
    auto tput = num("output_throughput");
    auto reqs = num("request_throughput");
    if (!tput || !reqs) {
      errors.add(
          {"serving benchmark JSON without 'output_throughput' and 'request_throughput' "
           "(expected vLLM benchmark_serving or SGLang bench_serving results)",
           file, ln});
      continue;
    }
    // Each figure within what a tool can have measured, named by its key at the object's line.
    bool ok = true;
    auto rate = [&](const char* k, std::optional<double> v, double max, const char* unit) {
      if (v && !measured_rate(v, j[k].dump(), k, max, unit, file, ln, errors)) ok = false;
    };
    rate("output_throughput", tput, kMaxMeasuredTokensPerS, "tokens/s");
    rate("request_throughput", reqs, kMaxMeasuredRequestsPerS, "requests/s");
    rate("request_rate", num("request_rate"), kMaxMeasuredRequestsPerS, "requests/s");
    s.output_tokens_per_s = *tput;
    s.requests_per_s = *reqs;
    s.request_rate = num("request_rate").value_or(0);
    for (const char* metric : {"ttft", "tpot", "itl", "e2el", "e2e_latency"}) {
      for (const char* stat : {"mean", "median", "p90", "p99"}) {
        const std::string k = std::string(stat) + "_" + metric + "_ms";
        if (auto v = num(k.c_str())) {
          if (!measured_time(v, j[k].dump(), k, kMs, file, ln, errors, /*zero_is_none=*/true)) {
            ok = false;
            continue;
          }
          const std::string m = std::string(metric) == "e2e_latency" ? "e2el" : metric;
          s.latency_ms[m + "_" + (std::string(stat) == "median" ? "p50" : stat)] = *v;
        }
      }
    }
    if (!ok) continue;
    s.setup = static_cast<int>(into.serving_setups.size()) - 1;
    into.serving.push_back(s);
    ++records;
  }
  into.inputs.back().records = records;
}

}  // namespace

base::Result<Format> detect_format(std::string_view text, std::string_view path) {
  const auto lines = split_lines(text.substr(0, std::min<size_t>(text.size(), 1 << 20)));
  // nccl-tests: its header or its column header.
  for (const auto& l : lines) {
    const std::string t = trim(l);
    if (t.rfind("# nThread", 0) == 0) return Format::kNcclTests;
    if (t.rfind("#", 0) == 0 && t.find("size") != std::string::npos &&
        t.find("count") != std::string::npos && t.find("redop") != std::string::npos)
      return Format::kNcclTests;
  }
  if (text.find("MLPerf Results Summary") != std::string_view::npos) return Format::kLoadgenSummary;
  if (text.find("bfloat16_tc_flops:") != std::string_view::npos &&
      text.find("mem_bw:") != std::string_view::npos)
    return Format::kAicSystem;
  if (text.find("elapsed time per iteration (ms)") != std::string_view::npos)
    return Format::kMegatronLog;
  // A scenario file with a `workload:` mapping holding `inference:` (YAML; docs/scenarios.md).
  {
    bool workload = false;
    for (const auto& l : lines) {
      if (l.rfind("workload:", 0) == 0) workload = true;
      if (workload && !l.empty() && (l[0] == ' ' || l[0] == '\t') &&
          trim(l).rfind("inference:", 0) == 0)
        return Format::kServingSetup;
    }
  }
  const std::string first = [&] {
    for (const auto& l : lines) {
      std::string t = trim(l);
      if (!t.empty() && t[0] != '#') return t;
    }
    return std::string();
  }();
  if (!first.empty() && first[0] == '{' && text.find("output_throughput") != std::string_view::npos)
    return Format::kServingJson;
  if (first.find(',') != std::string::npos) {
    auto header = split_csv(first);
    if (header ==
        std::vector<std::string>{"op_name", "nccl_dtype", "num_gpus", "message_size", "latency"})
      return Format::kAicNccl;
    for (const auto& k : kernel_kinds())
      if (k.header == header) return Format::kAicKernel;
    if (std::find(header.begin(), header.end(), "step_time_s") != header.end() ||
        std::find(header.begin(), header.end(), "step_time_ms") != header.end())
      return Format::kStepCsv;
  }
  return fail(
      "not a measurement file calibrate reads (expected nccl-tests output, an AIConfigurator "
      "table such as nccl.csv or gemm_fp8.csv, a Megatron-LM log with 'elapsed time per iteration "
      "(ms)', a step-time CSV with step_time_s, an MLPerf mlperf_log_summary.txt or a vLLM/SGLang "
      "benchmark_serving JSON, or a scenario file with workload.inference: the setup of serving "
      "results)",
      std::string(path), 1);
}

base::Status parse_text(std::string_view path, std::string_view text, Measurements& into) {
  auto f = detect_format(text, path);
  if (!f) return fail(f.error());
  into.inputs.push_back({std::string(path), sha256_hex(text), *f, 0});
  base::Errors errors;
  switch (*f) {
    case Format::kNcclTests:
      parse_nccl_tests(path, text, errors, into);
      break;
    case Format::kAicNccl:
      parse_aic_nccl(path, text, errors, into);
      break;
    case Format::kAicKernel:
      parse_aic_kernel(path, text, errors, into);
      break;
    case Format::kMegatronLog:
      parse_megatron(path, text, errors, into);
      break;
    case Format::kStepCsv:
      parse_step_csv(path, text, errors, into);
      break;
    case Format::kLoadgenSummary:
      parse_loadgen(path, text, errors, into);
      break;
    case Format::kServingJson:
      parse_serving_json(path, text, errors, into);
      break;
    case Format::kAicSystem:
      parse_aic_system(path, text, errors, into);
      break;
    case Format::kServingSetup:
      into.serving_setups.push_back({std::string(path), std::string(text)});
      into.inputs.back().records = 1;
      break;
    case Format::kAtScaleCases:  // never detected: the built-in recipes read their own cases
    case Format::kTrainingCases:
    case Format::kServingCases:
      break;
  }
  if (!errors.empty()) return fail(errors.combined());
  return {};
}

base::Status parse_path(const std::string& path, Measurements& into) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read file", path, 0);
  auto text = base::read_all(in);  // at most base::kMaxInputBytes: /dev/zero stops
  if (!text) return fail(text.error().message, path, 0);
  return parse_text(path, *text, into);
}

}  // namespace clustertwin::calibration
