// libFuzzer target: a sweep file goes through the YAML parser and the design reader (blocks,
// Latin hypercube, key paths, outputs); every outcome must be a design or errors, never a crash
// or an exception.
#include <cstdint>
#include <string>

#include "clustertwin/sweep/design.h"

using namespace clustertwin;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // A thousand points at most: the limit itself (a million) is a test of patience, not of
  // the reader.
  auto d = sweep::parse_design(text, "fuzz.yaml", {.max_points = 1000});
  if (!d) (void)d.error().to_string();
  return 0;
}
