#include "clustertwin/report/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "clustertwin/base/check.h"

namespace clustertwin::report {
namespace {

int64_t to_ns(base::Seconds s) { return static_cast<int64_t>(std::llround(s.base() * 1e9)); }

Json metadata(std::string_view kind, int pid, int tid, Json args) {
  Json m = {{"ph", "M"}, {"name", kind}, {"pid", pid}, {"args", std::move(args)}};
  if (tid >= 0) m["tid"] = tid;
  return m;
}

}  // namespace

double ns_to_trace_us(int64_t ns) {
  // Integer division keeps whole microseconds exact; the remainder is at most 3 decimals.
  const int64_t whole = ns / 1000;
  const int64_t frac = ns % 1000;
  return static_cast<double>(whole) + static_cast<double>(frac) / 1000.0;
}

int TraceWriter::process_id(std::string_view process) {
  if (auto it = pids_.find(process); it != pids_.end()) return it->second;
  const int pid = static_cast<int>(pids_.size()) + 1;
  pids_.emplace(std::string(process), pid);
  metadata_.push_back(metadata("process_name", pid, -1, {{"name", process}}));
  metadata_.push_back(metadata("process_sort_index", pid, -1, {{"sort_index", pid}}));
  return pid;
}

TraceTrack TraceWriter::track(std::string_view process, std::string_view thread) {
  const int pid = process_id(process);
  auto key = std::make_pair(pid, std::string(thread));
  if (auto it = tids_.find(key); it != tids_.end()) return {pid, it->second};
  const int tid = next_tid_++;
  tids_.emplace(std::move(key), tid);
  metadata_.push_back(metadata("thread_name", pid, tid, {{"name", thread}}));
  metadata_.push_back(metadata("thread_sort_index", pid, tid, {{"sort_index", tid}}));
  return {pid, tid};
}

void TraceWriter::complete(TraceTrack track, std::string_view name, std::string_view cat,
                           base::Seconds start, base::Seconds dur, Json args) {
  CT_CHECK(dur.base() >= 0.0, "trace slice with a negative duration");
  CT_CHECK(start.base() >= 0.0, "trace slice before time zero");
  events_.push_back(
      {'X', std::string(name), std::string(cat), track, to_ns(start), to_ns(dur), std::move(args)});
}

void TraceWriter::instant(TraceTrack track, std::string_view name, std::string_view cat,
                          base::Seconds at, Json args) {
  CT_CHECK(at.base() >= 0.0, "trace instant before time zero");
  events_.push_back(
      {'i', std::string(name), std::string(cat), track, to_ns(at), 0, std::move(args)});
}

void TraceWriter::counter(std::string_view process, std::string_view name, base::Seconds at,
                          const std::map<std::string, double>& series) {
  CT_CHECK(at.base() >= 0.0, "trace counter before time zero");
  Json args = Json::object();
  for (const auto& [k, v] : series) args[k] = v;
  events_.push_back(
      {'C', std::string(name), "counter", {process_id(process), 0}, to_ns(at), 0, std::move(args)});
}

Json TraceWriter::to_json() const {
  std::vector<size_t> order(events_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Event& x = events_[a];
    const Event& y = events_[b];
    if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
    if (x.track != y.track) return x.track < y.track;
    return x.dur_ns > y.dur_ns;  // a parent before the children that start with it
  });
  std::vector<Json> meta = metadata_;
  std::stable_sort(meta.begin(), meta.end(), [](const Json& a, const Json& b) {
    return std::make_pair(a["pid"].get<int>(), a.value("tid", 0)) <
           std::make_pair(b["pid"].get<int>(), b.value("tid", 0));
  });
  Json events = Json::array();
  for (auto& m : meta) events.push_back(std::move(m));
  for (size_t i : order) {
    const Event& e = events_[i];
    Json j = {{"ph", std::string(1, e.ph)},
              {"name", e.name},
              {"pid", e.track.pid},
              {"ts", ns_to_trace_us(e.ts_ns)}};
    if (e.ph != 'C') {
      j["tid"] = e.track.tid;
      j["cat"] = e.cat;
    }
    if (e.ph == 'X') j["dur"] = ns_to_trace_us(e.dur_ns);
    if (e.ph == 'i') j["s"] = "t";
    if (!e.args.empty()) j["args"] = e.args;
    events.push_back(std::move(j));
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}, {"otherData", other_}};
}

base::Status TraceWriter::write(const std::string& path) const {
  // One event per line: diffable, greppable, and still a single JSON document.
  const Json j = to_json();
  std::string out = "{\"displayTimeUnit\":\"ns\",\"otherData\":";
  out += j["otherData"].dump(-1, ' ', false, Json::error_handler_t::replace);
  out += ",\"traceEvents\":[\n";
  const auto& events = j["traceEvents"];
  for (size_t i = 0; i < events.size(); ++i) {
    out += events[i].dump(-1, ' ', false, Json::error_handler_t::replace);
    out += i + 1 < events.size() ? ",\n" : "\n";
  }
  out += "]}\n";
  return write_text(out, path);
}

std::vector<std::string> validate_trace(const Json& trace) {
  std::vector<std::pair<size_t, std::string>> errors;  // (event index, message)
  const Json* events = nullptr;
  if (trace.is_array()) {
    events = &trace;
  } else if (trace.is_object() && trace.contains("traceEvents") &&
             trace["traceEvents"].is_array()) {
    events = &trace["traceEvents"];
  } else {
    return {"top level: expected an object with a \"traceEvents\" array, or an array"};
  }
  auto bad = [&](size_t i, const std::string& what) {
    errors.emplace_back(i, fmt::format("event {}: {}", i, what));
  };
  auto is_int = [](const Json& e, const char* key) {
    return e.contains(key) && e[key].is_number_integer();
  };
  auto number = [](const Json& e, const char* key) -> const Json* {
    return e.contains(key) && e[key].is_number() ? &e[key] : nullptr;
  };
  const std::string known = "XBEiICMbnestfPON";
  struct Slice {
    int64_t start_ns;
    int64_t end_ns;
    size_t index;
  };
  std::map<std::pair<int64_t, int64_t>, std::vector<Slice>> slices;
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> open;  // B without E

  for (size_t i = 0; i < events->size(); ++i) {
    const Json& e = (*events)[i];
    if (!e.is_object()) {
      bad(i, "not an object");
      continue;
    }
    if (!e.contains("ph") || !e["ph"].is_string() || e["ph"].get<std::string>().size() != 1 ||
        known.find(e["ph"].get<std::string>()[0]) == std::string::npos) {
      bad(i, "missing or unknown \"ph\"");
      continue;
    }
    const char ph = e["ph"].get<std::string>()[0];
    if (!e.contains("name") || !e["name"].is_string()) bad(i, "missing string \"name\"");
    if (!is_int(e, "pid")) bad(i, "missing integer \"pid\"");
    const bool needs_tid = ph == 'X' || ph == 'B' || ph == 'E' || ph == 'i' || ph == 'I';
    if (needs_tid && !is_int(e, "tid")) bad(i, "missing integer \"tid\"");
    if (ph == 'M') {
      const std::string kind =
          e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
      const bool named =
          kind == "process_name" || kind == "thread_name" || kind == "process_labels";
      const bool sorted = kind == "process_sort_index" || kind == "thread_sort_index";
      if (!named && !sorted) {
        bad(i, fmt::format("unknown metadata \"{}\"", kind));
      } else if (!e.contains("args") || !e["args"].is_object()) {
        bad(i, "metadata without \"args\"");
      } else if (named && !(e["args"].contains(kind == "process_labels" ? "labels" : "name") &&
                            e["args"][kind == "process_labels" ? "labels" : "name"].is_string())) {
        bad(i, fmt::format("{} needs a string args.{}", kind,
                           kind == "process_labels" ? "labels" : "name"));
      } else if (sorted && !(e["args"].contains("sort_index") &&
                             e["args"]["sort_index"].is_number_integer())) {
        bad(i, fmt::format("{} needs an integer args.sort_index", kind));
      }
      if ((kind == "thread_name" || kind == "thread_sort_index") && !is_int(e, "tid")) {
        bad(i, "thread metadata needs an integer \"tid\"");
      }
      continue;
    }
    const Json* ts = number(e, "ts");
    if (!ts) {
      bad(i, "missing number \"ts\" (microseconds)");
      continue;
    }
    const double ts_us = ts->get<double>();
    if (!std::isfinite(ts_us) || ts_us < 0) bad(i, fmt::format("ts = {} is negative", ts_us));
    if (e.contains("args") && !e["args"].is_object()) bad(i, "\"args\" is not an object");
    const auto key = std::make_pair(is_int(e, "pid") ? e["pid"].get<int64_t>() : 0,
                                    is_int(e, "tid") ? e["tid"].get<int64_t>() : 0);
    const auto ns = [](double us) { return static_cast<int64_t>(std::llround(us * 1000.0)); };
    if (ph == 'X') {
      const Json* dur = number(e, "dur");
      if (!dur) {
        bad(i, "complete event without number \"dur\"");
      } else if (!std::isfinite(dur->get<double>()) || dur->get<double>() < 0) {
        bad(i, fmt::format("dur = {} is negative", dur->get<double>()));
      } else {
        slices[key].push_back({ns(ts_us), ns(ts_us) + ns(dur->get<double>()), i});
      }
    } else if (ph == 'C') {
      if (!e.contains("args") || !e["args"].is_object() || e["args"].empty()) {
        bad(i, "counter without numeric \"args\"");
      } else {
        for (const auto& [k, v] : e["args"].items()) {
          if (!v.is_number()) bad(i, fmt::format("counter series \"{}\" is not a number", k));
        }
      }
    } else if (ph == 'B') {
      open[key].push_back(i);
    } else if (ph == 'E') {
      if (open[key].empty()) {
        bad(i, "end event without a begin on its tid");
      } else {
        open[key].pop_back();
      }
    }
  }
  for (const auto& [key, begins] : open) {
    for (size_t i : begins) bad(i, "begin event never ended");
  }
  for (auto& [key, list] : slices) {
    std::stable_sort(list.begin(), list.end(), [](const Slice& a, const Slice& b) {
      if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
      return a.end_ns > b.end_ns;
    });
    std::vector<const Slice*> stack;
    for (const Slice& s : list) {
      while (!stack.empty() && stack.back()->end_ns <= s.start_ns) stack.pop_back();
      if (!stack.empty() && s.end_ns > stack.back()->end_ns) {
        bad(s.index, fmt::format("slice on pid {} tid {} overlaps event {} without nesting "
                                 "(put overlapping work on separate tracks)",
                                 key.first, key.second, stack.back()->index));
        continue;
      }
      stack.push_back(&s);
    }
  }
  std::stable_sort(errors.begin(), errors.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  out.reserve(errors.size());
  for (auto& [index, message] : errors) out.push_back(std::move(message));
  return out;
}

}  // namespace clustertwin::report
