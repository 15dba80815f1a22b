#include "clustertwin/hardware/catalog_document.h"

#include <string>

namespace clustertwin::hardware {

base::Result<config::Document> catalog_document(const Catalog& catalog, std::string_view path,
                                                std::string_view what) {
  for (const auto& f : catalog.other_files()) {
    if (f.path == path) return config::parse_document(f.text, "catalog/" + f.path);
  }
  return base::fail("the catalog has no " + std::string(path) + " (" + std::string(what) + ")");
}

base::Status read_catalog_document(const Catalog& catalog, std::string_view path,
                                   std::string_view what,
                                   const std::function<void(config::Reader& top)>& read) {
  auto doc = catalog_document(catalog, path, what);
  if (!doc) return base::fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  config::Reader top(doc->root, ctx);
  top.read_sources();
  read(top);
  top.finish();
  if (!ctx.errors.empty()) return base::fail(ctx.errors.combined());
  return {};
}

}  // namespace clustertwin::hardware
