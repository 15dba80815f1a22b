#pragma once
/// Test support for the training tests (workload layout and memory, execution training, the
/// training validation): the embedded catalog, loaded once per test binary, and its models by
/// name. A missing model is a broken test set-up, so it aborts with the catalog's message.

#include <string_view>

#include "clustertwin/base/check.h"
#include "clustertwin/models/model_catalog.h"

namespace clustertwin::workload::test_support {

inline const hardware::Catalog& catalog() {
  static const hardware::Catalog c = [] {
    auto r = hardware::Catalog::load_embedded();
    CT_CHECK(r.has_value(), "the embedded catalog does not load");
    return std::move(*r);
  }();
  return c;
}

inline models::ModelSpec model(std::string_view name) {
  auto m = models::load_model(catalog(), name);
  CT_CHECK(m.has_value(), "test model missing from the catalog");
  return std::move(*m);
}

}  // namespace clustertwin::workload::test_support
