#include "clustertwin/scheduler/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "clustertwin/base/json_scan.h"
#include "clustertwin/base/number.h"
#include "clustertwin/base/text.h"
#include "clustertwin/engine/engine.h"
#include "clustertwin/scheduler/limits.h"

namespace clustertwin::scheduler {

const char* job_kind_name(JobKind k) {
  switch (k) {
    case JobKind::kBatch:
      return "batch";
    case JobKind::kPretrain:
      return "pretrain";
    case JobKind::kFinetune:
      return "finetune";
    case JobKind::kInference:
      return "inference";
    case JobKind::kDev:
      return "dev";
  }
  return "?";
}

const char* qos_name(Qos q) {
  switch (q) {
    case Qos::kLow:
      return "low";
    case Qos::kNormal:
      return "normal";
    case Qos::kHigh:
      return "high";
  }
  return "?";
}

int Workload::account_id(const std::string& name) {
  auto it = std::find(accounts.begin(), accounts.end(), name);
  if (it != accounts.end()) return static_cast<int>(it - accounts.begin());
  accounts.push_back(name);
  account_gpu_limit.push_back(0);
  account_shares.push_back(1.0);
  return static_cast<int>(accounts.size()) - 1;
}

int Workload::partition_id(const std::string& name) {
  auto it = std::find(partitions.begin(), partitions.end(), name);
  if (it != partitions.end()) return static_cast<int>(it - partitions.begin());
  partitions.push_back(name);
  return static_cast<int>(partitions.size()) - 1;
}

int Workload::user_id(const std::string& name) {
  auto it = std::find(users.begin(), users.end(), name);
  if (it != users.end()) return static_cast<int>(it - users.begin());
  users.push_back(name);
  return static_cast<int>(users.size()) - 1;
}

void Workload::sort_by_submit() {
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; });
}

std::optional<double> parse_timestamp(std::string_view s) {
  // YYYY-MM-DD HH:MM:SS (a 'T' separator is accepted too).
  if (s.size() != 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
      s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  auto num = [&](size_t at, size_t len, int* out) {
    return std::from_chars(s.data() + at, s.data() + at + len, *out).ec == std::errc{};
  };
  int y, mo, d, h, mi, se;
  if (!num(0, 4, &y) || !num(5, 2, &mo) || !num(8, 2, &d) || !num(11, 2, &h) || !num(14, 2, &mi) ||
      !num(17, 2, &se)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return std::nullopt;
  // Days from civil (Howard Hinnant's algorithm).
  y -= mo <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const double days = static_cast<double>(era) * 146097.0 + doe - 719468;
  return days * 86400.0 + h * 3600.0 + mi * 60.0 + se;
}

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cur += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (ch != '\r') {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

std::optional<double> to_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  const char* b = s.data();
  const char* e = b + s.size();
  while (b < e && *b == ' ') ++b;
  double v = 0;
  auto r = std::from_chars(b, e, v);
  if (r.ec != std::errc{} || r.ptr != e || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Canonical column names, and the Philly (Pollux) aliases.
std::string canonical(std::string h) {
  for (auto& ch : h) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  while (!h.empty() && h.back() == ' ') h.pop_back();
  while (!h.empty() && h.front() == ' ') h.erase(h.begin());
  static const std::map<std::string, std::string> alias = {
      {"timestamp", "submit"}, {"duration", "duration_s"}, {"num_gpus", "gpus"},
      {"cluster", "account"},  {"vc", "account"},          {"job_id", "id"}};
  auto it = alias.find(h);
  return it == alias.end() ? h : it->second;
}

const std::vector<std::string>& known_columns() {
  static const std::vector<std::string> k = {
      "id",   "submit_s",    "submit",       "gpus",    "duration_s",   "time_limit_s", "account",
      "user", "qos",         "kind",         "model",   "tp",           "pp",           "cp",
      "ep",   "micro_batch", "global_batch", "seq_len", "checkpoint_s", "gpu_time"};
  return k;
}

struct RowReader {
  const TraceOptions& opt;
  Workload& w;
  // Returns an error message, or "" when the row became a job.
  std::string add(const std::map<std::string, std::string>& f, int row, double* submit_abs) {
    auto get = [&](const char* k) -> const std::string* {
      auto it = f.find(k);
      return it == f.end() || it->second.empty() ? nullptr : &it->second;
    };
    JobSpec j;
    j.source_row = row;
    double submit = 0;
    if (auto* s = get("submit_s")) {
      auto v = to_double(*s);
      if (!v || *v < 0) return "submit_s: expected seconds >= 0, got '" + *s + "'";
      submit = *v;
    } else if (auto* s2 = get("submit")) {
      auto v = parse_timestamp(*s2);
      if (!v) return "submit: expected YYYY-MM-DD HH:MM:SS, got '" + *s2 + "'";
      submit = *v;
    } else {
      return "missing submit time (submit_s or submit/timestamp)";
    }
    const std::string* g = get("gpus");
    if (!g) return "missing gpus";
    auto gv = to_double(*g);
    if (!gv || *gv < 1 || *gv != std::floor(*gv) || *gv > 1e7) {
      return "gpus: expected a whole number >= 1, got '" + *g + "'";
    }
    j.gpus = static_cast<int>(*gv);
    const std::string* d = get("duration_s");
    if (!d) return "missing duration_s";
    auto dv = to_double(*d);
    if (!dv || *dv < 0) return "duration_s: expected seconds >= 0, got '" + *d + "'";
    if (*dv > kMaxDurationS) {
      return "duration_s: expected at most 40 years (" + fmt::format("{:.0f}", kMaxDurationS) +
             " s), got '" + *d + "'";
    }
    j.work_s = std::max(1.0, *dv);
    double limit = std::ceil(j.work_s * opt.limit_factor / 60.0) * 60.0;
    if (auto* l = get("time_limit_s")) {
      auto lv = to_double(*l);
      if (!lv || *lv <= 0 || *lv > kMaxDurationS) {
        return "time_limit_s: expected seconds in (0, 40 years], got '" + *l + "'";
      }
      limit = *lv;
    }
    j.time_limit = engine::to_ticks(base::seconds(std::min(limit, kMaxDurationS)));
    if (auto* id = get("id")) {
      auto iv = to_double(*id);
      j.id = iv ? static_cast<int64_t>(*iv) : static_cast<int64_t>(w.jobs.size());
    } else {
      j.id = static_cast<int64_t>(w.jobs.size());
    }
    j.account = w.account_id(get("account") ? *get("account") : "default");
    j.user = w.user_id(get("user") ? *get("user") : (get("account") ? *get("account") : "user"));
    j.partition = w.partition_id(get("partition") ? *get("partition") : "default");
    if (auto* q = get("qos")) {
      if (*q == "low") {
        j.qos = Qos::kLow;
      } else if (*q == "normal") {
        j.qos = Qos::kNormal;
      } else if (*q == "high") {
        j.qos = Qos::kHigh;
      } else {
        return "qos: expected low, normal or high, got '" + *q + "'";
      }
    }
    if (auto* k = get("kind")) {
      static const std::map<std::string, JobKind> kinds = {{"batch", JobKind::kBatch},
                                                           {"pretrain", JobKind::kPretrain},
                                                           {"finetune", JobKind::kFinetune},
                                                           {"inference", JobKind::kInference},
                                                           {"dev", JobKind::kDev}};
      auto it = kinds.find(*k);
      if (it == kinds.end()) {
        return "kind: expected batch, pretrain, finetune, inference or dev, got '" + *k + "'";
      }
      j.kind = it->second;
      j.stateless = j.kind == JobKind::kInference;
    }
    if (auto* m = get("model")) {
      TrainingWork t;
      t.model = *m;
      auto& l = t.layout;
      struct IntCol {
        const char* name;
        int64_t* i64;
        int* i32;
      };
      int64_t mb = 1, gb = 0, sl = 4096;
      int tp = 1, pp = 1, cp = 1, ep = 1;
      const IntCol cols[] = {{"tp", nullptr, &tp},          {"pp", nullptr, &pp},
                             {"cp", nullptr, &cp},          {"ep", nullptr, &ep},
                             {"micro_batch", &mb, nullptr}, {"global_batch", &gb, nullptr},
                             {"seq_len", &sl, nullptr}};
      for (const auto& c : cols) {
        if (auto* s = get(c.name)) {
          // Through the one checked way in: no wrap (4294967304 is not 8), no 1e300 cast.
          auto v = base::parse_integer(
              *s, {.min = 1, .max = c.i32 ? int64_t{1} << 24 : base::kMaxSequence});
          if (!v) return std::string(c.name) + ": " + v.error().message;
          if (c.i64) *c.i64 = *v;
          if (c.i32) *c.i32 = static_cast<int>(*v);
        }
      }
      auto mp_r =
          base::checked_product({{"tp", tp}, {"pp", pp}, {"cp", cp}}, base::kMaxGpus, "GPUs");
      if (!mp_r) return mp_r.error().message;
      const int64_t mp = *mp_r;
      if (j.gpus % mp != 0) {
        return "gpus = " + std::to_string(j.gpus) +
               " is not a multiple of tp*pp*cp = " + std::to_string(mp);
      }
      l.tp = tp;
      l.pp = pp;
      l.cp = cp;
      l.ep = ep;
      l.dp = static_cast<int>(j.gpus / mp);
      l.micro_batch = mb;
      l.seq_len = sl;
      if (gb > 0) {
        l.global_batch = gb;
      } else {
        // The default of `train`: micro_batch x dp x 4 pp, checked as it grows.
        auto dgb = base::checked_product({{"micro_batch", mb}, {"dp", l.dp}, {"4*pp", 4 * pp}},
                                         base::kMaxBatch, "sequences (give global_batch)");
        if (!dgb) return "global_batch: " + dgb.error().message;
        l.global_batch = *dgb;
      }
      j.training = static_cast<int>(w.training.size());
      w.training.push_back(std::move(t));
      if (j.kind == JobKind::kBatch) j.kind = JobKind::kPretrain;
      j.checkpoint.restore = engine::to_ticks(base::seconds(opt.restore_s));
    }
    if (auto* c = get("checkpoint_s")) {
      if (*c == "auto") {
        j.auto_checkpoint = true;
      } else {
        auto cv = to_double(*c);
        if (!cv || *cv <= 0 || *cv > kMaxDurationS)
          return "checkpoint_s: expected seconds in (0, 40 years] or 'auto', got '" + *c + "'";
        j.checkpoint.interval = engine::to_ticks(base::seconds(*cv));
      }
      j.checkpoint.restore = engine::to_ticks(base::seconds(opt.restore_s));
    }
    *submit_abs = submit;
    w.jobs.push_back(std::move(j));
    return "";
  }
};

base::Status finish(Workload& w, std::vector<double>& submits, const std::string& file) {
  if (w.jobs.empty()) return {};
  if (static_cast<int64_t>(w.jobs.size()) > base::kMaxJobs) {
    return base::fail(std::to_string(w.jobs.size()) + " jobs are more than the limit of " +
                          std::to_string(base::kMaxJobs) + " (base::kMaxJobs)",
                      file);
  }
  const double t0 = *std::min_element(submits.begin(), submits.end());
  for (size_t i = 0; i < w.jobs.size(); ++i) {
    // A row submitted 1e10 s after the first once overflowed the engine's clock (issue 19).
    auto t = engine::checked_ticks(
        base::seconds(submits[i] - t0),
        "job " + std::to_string(w.jobs[i].source_row) + ": submit time after the first job's");
    if (!t) return base::fail(t.error().message, file);
    w.jobs[i].submit = *t;
  }
  w.sort_by_submit();
  return {};
}

base::Result<Workload> read_json(std::string_view text, const std::string& file,
                                 const TraceOptions& opt) {
  if (auto st = base::check_json_text(text, file); !st) return base::fail(st.error());
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return base::fail("not valid JSON", file);
  const nlohmann::json* arr = &j;
  if (j.is_object()) {
    if (!j.contains("jobs")) return base::fail("expected a \"jobs\" array", file);
    arr = &j["jobs"];
  }
  if (!arr->is_array()) return base::fail("expected an array of jobs", file);
  Workload w;
  RowReader rr{opt, w};
  std::vector<double> submits;
  base::Errors errors;
  int row = 0;
  for (const auto& item : *arr) {
    ++row;
    if (!item.is_object()) {
      errors.add({"job " + std::to_string(row) + ": expected an object", file, 0});
      continue;
    }
    std::map<std::string, std::string> f;
    std::string bad;
    for (auto it = item.begin(); it != item.end(); ++it) {
      const std::string key = canonical(it.key());
      if (std::find(known_columns().begin(), known_columns().end(), key) == known_columns().end()) {
        bad = "unknown key '" + it.key() + "'" + base::did_you_mean(it.key(), known_columns());
        break;
      }
      if (it->is_string()) {
        f[key] = it->get<std::string>();
      } else if (it->is_number()) {
        std::ostringstream os;
        os.precision(17);
        os << it->get<double>();
        f[key] = os.str();
      } else {
        bad = "key '" + it.key() + "': expected a number or a string";
        break;
      }
    }
    double submit = 0;
    if (bad.empty()) bad = rr.add(f, row, &submit);
    if (!bad.empty()) {
      if (opt.bad_rows == BadRows::kSkip) {
        ++w.skipped_rows;
        if (w.warnings.size() < 5)
          w.warnings.push_back(file + ": job " + std::to_string(row) + ": " + bad);
        continue;
      }
      errors.add({"job " + std::to_string(row) + ": " + bad, file, 0});
      continue;
    }
    submits.push_back(submit);
  }
  if (!errors.empty()) return base::fail(errors.combined());
  if (w.jobs.empty()) return base::fail("the trace holds no jobs", file);
  if (auto st = finish(w, submits, file); !st) return base::fail(st.error());
  return w;
}

}  // namespace

base::Result<Workload> read_trace(std::string_view text, const std::string& file,
                                  const TraceOptions& opt) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
    return read_json(text, file, opt);
  }
  Workload w;
  RowReader rr{opt, w};
  std::vector<double> submits;
  std::istringstream in{std::string(text)};
  std::string line;
  std::vector<std::string> header;
  base::Errors errors;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r" || line[0] == '#') continue;
    auto f = split_csv(line);
    if (header.empty()) {
      for (auto& h : f) {
        const std::string c = canonical(h);
        if (std::find(known_columns().begin(), known_columns().end(), c) == known_columns().end()) {
          errors.add({"unknown column '" + h + "'" + base::did_you_mean(h, known_columns()), file,
                      line_no});
        }
        header.push_back(c);
      }
      if (!errors.empty()) return base::fail(errors.combined());
      continue;
    }
    std::string bad;
    double submit = 0;
    if (f.size() != header.size()) {
      bad =
          "expected " + std::to_string(header.size()) + " fields, got " + std::to_string(f.size());
    } else {
      std::map<std::string, std::string> m;
      for (size_t i = 0; i < f.size(); ++i) m[header[i]] = f[i];
      bad = rr.add(m, line_no, &submit);
    }
    if (!bad.empty()) {
      if (opt.bad_rows == BadRows::kSkip) {
        ++w.skipped_rows;
        if (w.warnings.size() < 5)
          w.warnings.push_back(file + ":" + std::to_string(line_no) + ": " + bad);
        continue;
      }
      errors.add({bad, file, line_no});
      if (errors.items.size() >= 20) break;
      continue;
    }
    submits.push_back(submit);
  }
  if (!errors.empty()) {
    return base::fail(
        base::Error{errors.combined().to_string() +
                        "\n(use {bad_rows} skip to skip malformed rows and count them)",
                    "", 0});
  }
  if (header.empty()) return base::fail("the trace is empty (expected a header line)", file);
  if (w.jobs.empty()) return base::fail("the trace holds no jobs", file);
  if (auto st = finish(w, submits, file); !st) return base::fail(st.error());
  return w;
}

base::Status apply_vc_quotas(Workload& w, std::string_view csv, const std::string& file,
                             int gpus_per_node) {
  std::istringstream in{std::string(csv)};
  std::string line;
  int line_no = 0;
  int rows = 0;
  // Whole nodes, at most the GPU limit's worth: a node num of 1e308 once became INT64_MIN GPUs
  // and overflowed when multiplied by the GPUs per node.
  const int64_t max_nodes = base::kMaxGpus / std::max(1, gpus_per_node);
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1 || line.empty()) continue;
    auto f = split_csv(line);
    if (f.size() != 2) return base::fail("expected 2 fields (vc, node num)", file, line_no);
    auto n = base::parse_integer(f[1], {.min = 0, .max = max_nodes});
    if (!n) return base::fail("node num: " + n.error().message, file, line_no);
    const int a = w.account_id(f[0]);
    w.account_gpu_limit[static_cast<size_t>(a)] = *n * gpus_per_node;
    w.account_shares[static_cast<size_t>(a)] = std::max(1.0, static_cast<double>(*n));
    ++rows;
  }
  if (rows == 0) {
    return base::fail(
        "no quota rows (expected a header line, then one 'vc,node num' row per account)", file,
        std::max(1, line_no));
  }
  return {};
}

}  // namespace clustertwin::scheduler
