#pragma once
/// One catalog data file read the way every file of fitted constants is read
/// (catalog/calibration/*.yaml): found among Catalog::other_files() by its path, parsed, its
/// `sources:` table read, its root mapping handed to the caller and then checked for unknown
/// keys, every error of the file reported at once with file:line. It lives here rather than in
/// config (where the Reader is) because config sits above hardware and cannot see the Catalog.

#include <functional>
#include <string_view>

#include "clustertwin/base/result.h"
#include "clustertwin/config/reader.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::hardware {

/// The catalog file at `path` (relative to the catalog root, "calibration/serving.yaml") parsed,
/// named "catalog/<path>" in messages. A catalog without it is an error that says what the file
/// holds (`what`: "the serving step model's fitted constants").
base::Result<config::Document> catalog_document(const Catalog& catalog, std::string_view path,
                                                std::string_view what);

/// catalog_document(), then a strict read: the root's `sources:` table, `read(top)` on the root
/// mapping (ReadContext::file is "catalog/<path>"), then the root's unknown keys. Fails with
/// every error of the file at once.
base::Status read_catalog_document(const Catalog& catalog, std::string_view path,
                                   std::string_view what,
                                   const std::function<void(config::Reader& top)>& read);

}  // namespace clustertwin::hardware
