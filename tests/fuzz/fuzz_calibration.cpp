// libFuzzer target: the measurement files `clustertwin calibrate` reads (issue 16) go through
// calibration::parse_text -- format detection and the nccl-tests, AIConfigurator CSV,
// Megatron-LM log, step-time CSV, LoadGen summary and vLLM/SGLang JSON parsers. Users hand it
// whatever their tools printed, cut short or from another tool: every outcome must be records or
// an error naming the file, never a crash or an exception escaping; the input's hash is recorded
// either way.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "clustertwin/calibration/parse.h"

using namespace clustertwin;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  calibration::Measurements m;
  auto st = calibration::parse_text("fuzz.txt", text, m);
  if (!st) {
    if (st.error().file.empty() && st.error().message.find("fuzz.txt") == std::string::npos)
      std::abort();
    (void)st.error().to_string();
    return 0;
  }
  if (m.inputs.size() != 1 || m.inputs[0].sha256.size() != 64) std::abort();
  return 0;
}
