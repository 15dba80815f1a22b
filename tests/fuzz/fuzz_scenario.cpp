// libFuzzer target: a cluster/scenario document goes through the YAML parser, the strict reader
// and the catalog checks; every outcome must be a value (a spec or errors), never a crash.
#include <cstdint>
#include <string>

#include "clustertwin/config/reader.h"
#include "clustertwin/hardware/catalog.h"

using namespace clustertwin;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hardware::Catalog cat = *hardware::Catalog::load_embedded();
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto doc = config::parse_document(text, "fuzz.yaml");
  if (!doc) return 0;
  config::ReadContext ctx{.file = "fuzz.yaml"};
  config::Reader top(doc->root, ctx);
  auto body = top.child("cluster", config::Reader::Need::kOptional);
  top.finish();
  if (!body) return 0;
  auto c = hardware::read_cluster(*body);
  body->finish();
  if (c && ctx.errors.empty()) (void)cat.validate(*c);
  (void)ctx.errors.to_string();
  return 0;
}
