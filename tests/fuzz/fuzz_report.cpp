// libFuzzer target: the input of `clustertwin report --from` (issue 19) goes through
// report::read_results -- the duplicate-key and nesting scan, the JSON parser and the results
// document check; every outcome must be a document or an error naming the file, never a crash
// (100,000 nested brackets once overflowed the stack), and an accepted document is an object
// that serialises again.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "clustertwin/report/json_out.h"

using namespace clustertwin;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto r = report::read_results(text, "fuzz.json");
  if (!r) {
    if (r.error().file != "fuzz.json") std::abort();
    (void)r.error().to_string();
    return 0;
  }
  if (!r->is_object()) std::abort();
  (void)r->dump(-1, ' ', false, report::Json::error_handler_t::replace);
  return 0;
}
