#include "clustertwin/hardware/catalog_document.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace clustertwin::hardware {
namespace {

Catalog with_file(const std::string& path, const std::string& text) {
  std::vector<CatalogFile> files{{path, text}};
  auto c = Catalog::load_files(files);
  EXPECT_TRUE(c) << c.error().to_string();
  return std::move(*c);
}

// The file is found by its path and named catalog/<path>; its sources are read before the
// caller's keys, so a figure can cite them.
TEST(CatalogDocument, ReadsTheFileWithItsSources) {
  auto cat = with_file("calibration/x.yaml",
                       "sources:\n  f: a fit\nconstants:\n  k: {value: 2.5, source: f}\n");
  double k = 0;
  std::string file;
  auto st =
      read_catalog_document(cat, "calibration/x.yaml", "x's constants", [&](config::Reader& top) {
        file = top.context().file;
        EXPECT_EQ(top.context().sources.at("f"), "a fit");
        if (auto c = top.child("constants")) {
          k = c->number_figure("k").value_or(0);
          c->finish();
        }
      });
  ASSERT_TRUE(st) << st.error().to_string();
  EXPECT_EQ(file, "catalog/calibration/x.yaml");
  EXPECT_EQ(k, 2.5);
  auto doc = catalog_document(cat, "calibration/x.yaml", "x's constants");
  ASSERT_TRUE(doc) << doc.error().to_string();
  EXPECT_EQ(doc->file, "catalog/calibration/x.yaml");
}

// A missing file says which and what it holds; a syntax error, an unknown top-level key and the
// caller's own errors come back with file:line, all of them at once.
TEST(CatalogDocument, ErrorsNameTheFileAndLine) {
  auto cat = with_file("calibration/x.yaml", "sources: {}\nconstants: {}\ntypo: 1\n");
  auto none = read_catalog_document(cat, "calibration/y.yaml", "y's constants",
                                    [](config::Reader&) { FAIL() << "read without a file"; });
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().to_string(), "the catalog has no calibration/y.yaml (y's constants)");

  auto st =
      read_catalog_document(cat, "calibration/x.yaml", "x's constants", [](config::Reader& top) {
        top.error("expected a k", "constants");
        top.allow("constants");
      });
  ASSERT_FALSE(st);
  const std::string msg = st.error().to_string();
  EXPECT_NE(msg.find("catalog/calibration/x.yaml:2: constants: expected a k"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("catalog/calibration/x.yaml:3: unknown key 'typo'"), std::string::npos) << msg;

  auto bad = with_file("calibration/z.yaml", "a: [1, 2\n");
  auto syntax = catalog_document(bad, "calibration/z.yaml", "z");
  ASSERT_FALSE(syntax);
  EXPECT_NE(syntax.error().to_string().find("catalog/calibration/z.yaml"), std::string::npos)
      << syntax.error().to_string();
}

}  // namespace
}  // namespace clustertwin::hardware
