#include "clustertwin/report/trace.h"

#include <gtest/gtest.h>

namespace clustertwin::report {
namespace {

using base::Seconds;
Seconds us(double v) { return Seconds::from_base(v * 1e-6); }

TraceWriter pipeline() {
  TraceWriter w;
  const auto s0 = w.track("stage 0", "compute");
  const auto c0 = w.track("stage 0", "comm");
  const auto s1 = w.track("stage 1", "compute");
  w.complete(s0, "F0", "compute", us(0), us(10), {{"microbatch", 0}});
  w.complete(s0, "attn", "compute", us(0), us(4));  // nested inside F0
  w.complete(s0, "mlp", "compute", us(4), us(6));
  w.complete(c0, "send", "p2p", us(8), us(4));  // overlaps F0, on its own track
  w.complete(s1, "F0", "compute", us(12), us(10.0005));
  w.instant(s1, "checkpoint", "io", us(30));
  w.counter("fabric", "link util", us(5), {{"leaf0-up", 42.5}, {"leaf0-down", 40.0}});
  return w;
}

TEST(Trace, WritesValidNamedTracks) {
  const Json j = pipeline().to_json();
  EXPECT_TRUE(validate_trace(j).empty()) << ::testing::PrintToString(validate_trace(j));
  EXPECT_EQ(j["displayTimeUnit"], "ns");
  std::vector<std::string> names;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && (e["name"] == "process_name" || e["name"] == "thread_name")) {
      names.push_back(e["args"]["name"].get<std::string>());
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"stage 0", "compute", "comm", "stage 1", "compute",
                                             "fabric"}));
  // Microseconds, nanosecond precision.
  bool found = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["ts"] == 12.0) {
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 10.001);  // 10.0005 us rounds to 10001 ns
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(Trace, SameTrackIdsAndOutputWhateverTheOrder) {
  TraceWriter a;
  TraceWriter b;
  const auto a0 = a.track("gpu0", "compute");
  const auto a1 = a.track("gpu0", "nvlink");
  const auto b0 = b.track("gpu0", "compute");
  const auto b1 = b.track("gpu0", "nvlink");
  EXPECT_EQ(a.track("gpu0", "compute"), a0);
  a.complete(a0, "gemm", "compute", us(0), us(5));
  a.complete(a1, "allreduce", "collective", us(1), us(5));
  b.complete(b1, "allreduce", "collective", us(1), us(5));
  b.complete(b0, "gemm", "compute", us(0), us(5));
  EXPECT_EQ(a.to_json().dump(), b.to_json().dump());
}

Json events(std::initializer_list<Json> list) { return {{"traceEvents", Json(list)}}; }

TEST(TraceValidate, FindsOverlapOnOneTrack) {
  const auto errors = validate_trace(events({
      {{"ph", "X"}, {"name", "a"}, {"pid", 1}, {"tid", 1}, {"ts", 0}, {"dur", 10}},
      {{"ph", "X"}, {"name", "b"}, {"pid", 1}, {"tid", 1}, {"ts", 5}, {"dur", 10}},
      {{"ph", "X"}, {"name", "c"}, {"pid", 1}, {"tid", 2}, {"ts", 5}, {"dur", 10}},
      {{"ph", "X"}, {"name", "d"}, {"pid", 1}, {"tid", 1}, {"ts", 10}, {"dur", 1}},
  }));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("event 1: slice on pid 1 tid 1 overlaps event 0"), std::string::npos);
}

TEST(TraceValidate, FindsMissingAndBadFields) {
  const auto errors = validate_trace(events({
      {{"name", "no ph"}, {"pid", 1}},
      {{"ph", "X"}, {"name", "neg"}, {"pid", 1}, {"tid", 1}, {"ts", 0}, {"dur", -1}},
      {{"ph", "X"}, {"name", "nodur"}, {"pid", 1}, {"tid", 1}, {"ts", 0}},
      {{"ph", "X"}, {"pid", 1}, {"ts", -2}, {"dur", 1}},
      {{"ph", "C"}, {"name", "c"}, {"pid", 1}, {"ts", 0}, {"args", {{"v", "high"}}}},
      {{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"args", {{"name", 3}}}},
      {{"ph", "M"}, {"name", "colour"}, {"pid", 1}, {"args", Json::object()}},
      {{"ph", "B"}, {"name", "open"}, {"pid", "one"}, {"tid", 1}, {"ts", 0}},
      {{"ph", "E"}, {"name", "close"}, {"pid", 1}, {"tid", 9}, {"ts", 1}},
  }));
  const std::vector<std::string> expected = {
      "event 0: missing or unknown \"ph\"",
      "event 1: dur = -1 is negative",
      "event 2: complete event without number \"dur\"",
      "event 3: missing string \"name\"",
      "event 3: missing integer \"tid\"",
      "event 3: ts = -2 is negative",
      "event 4: counter series \"v\" is not a number",
      "event 5: thread_name needs a string args.name",
      "event 5: thread metadata needs an integer \"tid\"",
      "event 6: unknown metadata \"colour\"",
      "event 7: missing integer \"pid\"",
      "event 7: begin event never ended",
      "event 8: end event without a begin on its tid",
  };
  EXPECT_EQ(errors, expected);
}

TEST(TraceValidate, AcceptsBareArrayAndRejectsOtherShapes) {
  EXPECT_TRUE(validate_trace(Json::array()).empty());
  EXPECT_EQ(validate_trace(Json{{"events", Json::array()}}).size(), 1u);
}

TEST(Trace, MicrosecondsFromNanoseconds) {
  EXPECT_DOUBLE_EQ(ns_to_trace_us(1'234'567), 1234.567);
  EXPECT_DOUBLE_EQ(ns_to_trace_us(0), 0.0);
  EXPECT_DOUBLE_EQ(ns_to_trace_us(999), 0.999);
}

}  // namespace
}  // namespace clustertwin::report
