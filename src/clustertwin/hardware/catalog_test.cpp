#include "clustertwin/hardware/catalog.h"

#include <gtest/gtest.h>

#include "clustertwin/config/embedded.h"

namespace clustertwin::hardware {
namespace {

const Catalog& embedded() {
  static const Catalog cat = [] {
    auto c = Catalog::load_embedded();
    EXPECT_TRUE(c) << c.error().to_string();
    return *c;
  }();
  return cat;
}

TEST(Catalog, EmbeddedCatalogLoadsAndEveryFigureHasASource) {
  const auto& cat = embedded();
  ASSERT_TRUE(cat.gpu("gb300"));
  const GpuSpec& g = **cat.gpu("gb300");
  EXPECT_DOUBLE_EQ(g.peak_for(Precision::kFp4)->dense.base(), 15e15);
  EXPECT_DOUBLE_EQ(g.nvlink_bandwidth.base(), 900e9);
  for (const auto& [name, gpu] : cat.gpus()) {
    EXPECT_FALSE(gpu.provenance.empty()) << name;
    for (const auto& [fig, src] : gpu.provenance) EXPECT_FALSE(src.empty()) << name << "." << fig;
  }
}

TEST(Catalog, UnknownNamesSuggestTheClosest) {
  auto r = embedded().system("gb300-nvl27");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("did you mean 'gb300-nvl72'"), std::string::npos)
      << r.error().message;
}

TEST(Catalog, ShorthandBuildsANonBlockingClusterOfTheSystem) {
  auto c = resolve_cluster(embedded(), "gb300-nvl72*8");
  ASSERT_TRUE(c) << c.error().to_string();
  EXPECT_EQ(c->count, 8);
  EXPECT_EQ(c->scale_out.switch_name, "q3400");
  EXPECT_FALSE(resolve_cluster(embedded(), "gb300-nvl72*0"));
  EXPECT_FALSE(resolve_cluster(embedded(), "gb300-nvl72*-3"));
  EXPECT_FALSE(resolve_cluster(embedded(), "gb300-nvl72*x"));
  auto bad = resolve_cluster(embedded(), "gb300-nvl*8");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("did you mean"), std::string::npos);
}

// The embedded catalog with one file replaced (or added).
std::vector<CatalogFile> with(const std::string& path, const std::string& text) {
  std::vector<CatalogFile> files;
  bool replaced = false;
  for (const auto& f : config::embedded_catalog()) {
    if (path == f.path) {
      files.push_back({path, text});
      replaced = true;
    } else {
      files.push_back({f.path, f.text});
    }
  }
  if (!replaced) files.push_back({path, text});
  return files;
}

std::string load_error(const std::string& path, const std::string& text) {
  auto c = Catalog::load_files(with(path, text));
  EXPECT_FALSE(c) << "expected an error for " << path;
  return c ? "" : c.error().to_string();
}

TEST(CatalogBadInput, MissingSourceUnitOrKeyIsAnErrorWithLine) {
  const std::string e = load_error("gpus/x.yaml",
                                   "gpu:\n  name: x\n  display_name: X\n  architecture: A\n"
                                   "  peak_flops: {bf16: {value: 1 PFLOP/s, source: s}}\n"
                                   "  hbm_capacity: 80 GB\n"
                                   "  hbm_usable: {value: 80 GB/s, source: s}\n"
                                   "  hbm_bandwith: {value: 3 TB/s, source: s}\n"
                                   "sources: {s: somewhere}\n");
  EXPECT_NE(e.find("catalog/gpus/x.yaml:6: gpu.hbm_capacity: expected {value: ..., source: <ref>}"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("catalog/gpus/x.yaml:7: gpu.hbm_usable.value: expected a size"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("unknown key 'hbm_bandwith' (did you mean 'hbm_bandwidth'"), std::string::npos)
      << e;
  EXPECT_NE(e.find("missing required key 'tgp'"), std::string::npos) << e;
}

TEST(CatalogBadInput, RackThatDoesNotFitItsSwitchRadix) {
  std::string text;
  for (const auto& f : config::embedded_catalog()) {
    if (std::string(f.path) == "systems/gb300-nvl72.yaml") text = f.text;
  }
  ASSERT_FALSE(text.empty());
  const auto pos = text.find("nvswitch_chips: {value: 18");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, std::string("nvswitch_chips: {value: 18").size(), "nvswitch_chips: {value: 9");
  const std::string e = load_error("systems/gb300-nvl72.yaml", text);
  EXPECT_NE(e.find("does not fit its NVLink switch radix: 72 GPUs x 18 links = 1296 ports needed"),
            std::string::npos)
      << e;
}

TEST(CatalogBadInput, ZeroOrNegativeCounts) {
  const std::string e = load_error(
      "clusters/x.yaml",
      "cluster:\n  name: x\n  system: gb300-nvl72\n  count: 0\n  scale_out: {switch: q3400}\n");
  EXPECT_NE(
      e.find(
          "catalog/clusters/x.yaml:4: cluster.count: expected an integer in [1, 10000000], got 0"),
      std::string::npos)
      << e;
}

TEST(CatalogBadInput, UnknownReferenceSuggests) {
  const std::string e = load_error(
      "clusters/x.yaml",
      "cluster:\n  name: x\n  system: gb300-nvl27\n  count: 2\n  scale_out: {switch: q3400}\n");
  EXPECT_NE(e.find("unknown system 'gb300-nvl27' (did you mean 'gb300-nvl72'"), std::string::npos)
      << e;
}

}  // namespace
}  // namespace clustertwin::hardware
