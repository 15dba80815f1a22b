#pragma once
/// Chrome trace-event JSON (ECOSYSTEM.md §2.3), the `--trace FILE` format that Perfetto and
/// chrome://tracing open. A trace is a set of tracks: a process (pid) per group — a pipeline
/// stage, a replica, a GPU — and a thread (tid) per stream inside it — compute, a comm channel.
/// Each track is named by metadata events, slices are complete ('X') events with microsecond
/// `ts`/`dur`, and counters ('C') carry series such as link utilisation or watts.
///
/// Times are taken as base::Seconds and kept as integer nanoseconds, written as microseconds with
/// three decimals, so nesting checks are exact and output does not depend on float noise.
/// Output is deterministic whatever order events were added in: metadata first (by pid, tid),
/// then events by (ts, pid, tid, longer first, insertion order).
///
/// Perfetto needs the 'X' slices of one tid to nest perfectly: overlapping work (two streams,
/// overlapped communication) belongs on separate tracks. `validate_trace` checks that, and every
/// required field, so a test can hold any layer's trace to the format.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/base/units.h"
#include "clustertwin/report/json_out.h"

namespace clustertwin::report {

/// A named track: pid (the process group) and tid (the thread inside it).
struct TraceTrack {
  int pid = 0;
  int tid = 0;
  auto operator<=>(const TraceTrack&) const = default;
};

class TraceWriter {
 public:
  /// The track `thread` inside process `process`, created (with its process_name and
  /// thread_name metadata) on first use. Ids are dense, in order of first use, starting at 1;
  /// sort indices follow the same order so the viewer lists tracks as they were declared.
  TraceTrack track(std::string_view process, std::string_view thread);

  /// A complete slice on `track`. `dur` must be >= 0 (a check: a negative duration is a bug).
  void complete(TraceTrack track, std::string_view name, std::string_view cat, base::Seconds start,
                base::Seconds dur, Json args = Json::object());

  /// An instant event on `track` (thread scope).
  void instant(TraceTrack track, std::string_view name, std::string_view cat, base::Seconds at,
               Json args = Json::object());

  /// A counter sample on process `process` (created if new): each key of `series` is one line
  /// of the counter track `name`, values are numbers.
  void counter(std::string_view process, std::string_view name, base::Seconds at,
               const std::map<std::string, double>& series);

  /// Free-form run information written under "otherData" (scenario, version, units).
  void set_other_data(Json other) { other_ = std::move(other); }

  [[nodiscard]] size_t event_count() const { return events_.size(); }

  /// {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}.
  [[nodiscard]] Json to_json() const;

  /// Writes to_json() compactly (one event a line) to `path`, or stdout for "-".
  [[nodiscard]] base::Status write(const std::string& path) const;

 private:
  struct Event {
    char ph = 'X';
    std::string name;
    std::string cat;
    TraceTrack track;
    int64_t ts_ns = 0;
    int64_t dur_ns = 0;
    Json args;
  };
  int process_id(std::string_view process);

  std::map<std::string, int, std::less<>> pids_;
  std::map<std::pair<int, std::string>, int, std::less<>> tids_;
  std::vector<Json> metadata_;
  std::vector<Event> events_;
  int next_tid_ = 1;
  Json other_ = Json::object();
};

/// Every problem found in a trace (empty when valid): the top level is {"traceEvents": [...]}
/// or a bare array; each event has a known `ph`, a string `name`, integer `pid` (and `tid` for
/// slices and instants), a number `ts` >= 0 (not needed on metadata); 'X' has `dur` >= 0;
/// 'C' has an object of numeric `args`; metadata names a known kind with the right argument;
/// 'B'/'E' pair up per tid; and 'X' slices on one (pid, tid) nest: a slice that starts inside
/// another ends inside it too. Messages name the event index: "event 12: ...".
std::vector<std::string> validate_trace(const Json& trace);

/// Microseconds with three decimals (nanosecond precision) from integer nanoseconds.
double ns_to_trace_us(int64_t ns);

}  // namespace clustertwin::report
