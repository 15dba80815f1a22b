// libFuzzer target: a model file (the project's YAML or a Hugging Face config.json, chosen by
// the first byte) goes through the parser, the strict reader and the model checks; every
// outcome must be a model or errors, never a crash, and a model's counts must be finite.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "clustertwin/models/model.h"
#include "clustertwin/models/model_catalog.h"

using namespace clustertwin;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const bool json = !text.empty() && text[0] == '{';
  auto m = json ? models::parse_hf_config(text, "fuzz/config.json")
                : models::parse_model_yaml(text, "fuzz.yaml");
  if (!m) {
    (void)m.error().to_string();
    return 0;
  }
  const auto c = models::count_params(*m);
  if (!std::isfinite(c.total) || c.total < 0) std::abort();
  return 0;
}
