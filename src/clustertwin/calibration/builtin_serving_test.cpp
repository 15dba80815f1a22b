#include "clustertwin/calibration/builtin_serving.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "clustertwin/config/embedded.h"

namespace clustertwin::calibration {
namespace {

constexpr const char* kCases = "calibration/serving-cases.yaml";

/// The embedded catalog with its serving cases replaced by `cases` (none when empty).
hardware::Catalog catalog_with_cases(const std::string& cases) {
  std::vector<hardware::CatalogFile> files;
  for (const auto& f : config::embedded_catalog()) {
    if (std::string(f.path) == kCases) continue;
    files.push_back({f.path, f.text});
  }
  if (!cases.empty()) files.push_back({kCases, cases});
  auto cat = hardware::Catalog::load_files(files);
  EXPECT_TRUE(cat) << cat.error().to_string();
  return std::move(*cat);
}

// Bad cases are refused before any replay, every error at once, each at its file:line with what
// was expected.
TEST(BuiltinServing, BadCasesNameFileAndLine) {
  const auto cat = catalog_with_cases(
      "serving_cases:\n"
      "  - id: A\n"
      "    fits: {constant: tp_overlaps, lower: 0.05, upper: 1, resolution: 0.05}\n"
      "    source: a\n"
      "    cluster: hgx-h200*1\n"
      "    gpus: 12\n"
      "    model: llama3.1-405b\n"
      "    scenario: server\n"
      "    precision: fp8\n"
      "    instance: {tp: 8, max_batch: 64, max_tokens: 2560, chunked_prefill: true}\n"
      "    measured: {tokens_per_s: 291.37}\n"
      "  - id: B\n"
      "    fits: {constant: stream_host_per_response, unit: ms, lower: 1, upper: 200,\n"
      "           resolution: 1}\n"
      "    source: b\n"
      "    cluster: gb300-nvl72*1\n"
      "    gpus: 8\n"
      "    model: deepseek-r1\n"
      "    scenario: offline\n"
      "    precision: fp4\n"
      "    instance: {tp: 8, max_batch: 1536, max_tokens: 6656, chunked_prefill: false}\n"
      "    measured: {tokens_per_s: 22545.1}\n"
      "    rate: 3\n");
  auto r = builtin_serving(cat);
  ASSERT_FALSE(r);
  const std::string m = r.error().to_string();
  EXPECT_NE(m.find("serving-cases.yaml:3"), std::string::npos) << m;   // tp_overlaps
  EXPECT_NE(m.find("tp_overlap"), std::string::npos) << m;             // the suggestion
  EXPECT_NE(m.find("serving-cases.yaml:6"), std::string::npos) << m;   // gpus 12 vs tp 8
  EXPECT_NE(m.find("serving-cases.yaml:13"), std::string::npos) << m;  // unit ms, not us
  EXPECT_NE(m.find("serving-cases.yaml:19"), std::string::npos) << m;  // scenario offline
  EXPECT_NE(m.find("rate"), std::string::npos) << m;                   // unknown key
  // No case file in the catalog: the file is named.
  auto none = builtin_serving(catalog_with_cases(""));
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().to_string().find("the catalog has no calibration/serving-cases.yaml"),
            std::string::npos)
      << none.error().to_string();
}

}  // namespace
}  // namespace clustertwin::calibration
