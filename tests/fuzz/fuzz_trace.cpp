// libFuzzer target: a job trace (CSV or JSON) goes through the trace reader in both bad-row
// modes; every outcome must be a workload or an error naming the row, never a crash, and a
// workload's jobs must be sorted by submit time with positive sizes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "clustertwin/scheduler/trace.h"

using namespace clustertwin;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (auto mode : {scheduler::BadRows::kStop, scheduler::BadRows::kSkip}) {
    scheduler::TraceOptions opt;
    opt.bad_rows = mode;
    auto w = scheduler::read_trace(text, "fuzz.csv", opt);
    if (!w) {
      (void)w.error().to_string();
      continue;
    }
    for (size_t i = 0; i < w->jobs.size(); ++i) {
      if (w->jobs[i].gpus <= 0) std::abort();
      if (i > 0 && w->jobs[i].submit < w->jobs[i - 1].submit) std::abort();
    }
  }
  return 0;
}
