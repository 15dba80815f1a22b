#include "clustertwin/calibration/builtin_training.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "clustertwin/config/embedded.h"
#include "clustertwin/execution/training_calibration.h"

namespace clustertwin::calibration {
namespace {

/// The embedded catalog with its training cases replaced by `cases`.
hardware::Catalog catalog_with_cases(const std::string& cases) {
  std::vector<hardware::CatalogFile> files;
  for (const auto& f : config::embedded_catalog()) {
    if (std::string(f.path) == "calibration/training-cases.yaml") continue;
    files.push_back({f.path, f.text});
  }
  files.push_back({"calibration/training-cases.yaml", cases});
  auto cat = hardware::Catalog::load_files(files);
  EXPECT_TRUE(cat) << cat.error().to_string();
  return std::move(*cat);
}

/// A case file whose measured figures are `measured` (in the order of the cases below): two
/// FP8 dense runs of source `dense` and one MoE run of source `moe` whose eager expert issue
/// outruns its GPU (Mixtral 8x7B without expert parallelism: 8 local experts, short sequences, on
/// B200 for the memory).
std::string cases_text(const std::vector<double>& measured) {
  char b[2048];
  std::snprintf(b, sizeof b,
                "sources:\n"
                "  dense: {name: Dense, cite: made by the model}\n"
                "  moe: {name: MoE, cite: made by the model}\n"
                "training_cases:\n"
                "  - {id: d1, source: dense, cluster: hgx-h100*1, gpus: 8, model: llama3.1-8b,\n"
                "     layout: {tp: 8, global_batch: 8, seq_len: 4096, precision: fp8},\n"
                "     metric: step_time_s, measured: %.17g, text: TP8}\n"
                "  - {id: d2, source: dense, cluster: hgx-h100*1, gpus: 8, model: llama3.1-8b,\n"
                "     layout: {tp: 2, global_batch: 16, seq_len: 2048, precision: fp8},\n"
                "     metric: tokens_per_s_per_gpu, measured: %.17g, text: TP2 DP4}\n"
                "  - {id: m1, source: moe, cluster: hgx-b200*1, gpus: 8, model: mixtral-8x7b,\n"
                "     layout: {tp: 8, etp: 8, global_batch: 8, seq_len: 512},\n"
                "     metric: step_time_s, measured: %.17g, text: TP8 ETP8 EP1}\n",
                measured[0], measured[1], measured[2]);
  return b;
}

// Round trip through the step model: figures made by the model itself at known constants (an
// FP8 overhead of 0.3, 250 us per expert GEMM) with a +-1% pattern are fitted back within the
// pattern, each constant seen by its own source, and the file carries the fit.
TEST(BuiltinTraining, RoundTripThroughTheStepModel) {
  const double truth_fp8 = 0.3, truth_host = 250e-6;
  // The model's own figures at the truth.
  auto probe = catalog_with_cases(cases_text({1, 1, 1}));
  auto cases = training_cases(probe);
  ASSERT_TRUE(cases) << cases.error().to_string();
  std::vector<double> measured;
  const double pattern[] = {1.01, 0.99, 1.005};
  for (size_t i = 0; i < cases->cases.size(); ++i) {
    auto r = TrainingCaseRunner::make(probe, cases->cases[i]);
    ASSERT_TRUE(r) << r.error().to_string();
    auto p = (*r)->predict(TrainingConstants{.fp8_overhead = truth_fp8,
                                             .host_per_expert_gemm = base::seconds(truth_host)});
    ASSERT_TRUE(p) << p.error().to_string();
    measured.push_back(p->value * pattern[i]);
  }
  auto cat = catalog_with_cases(cases_text(measured));
  auto b = builtin_training(cat);
  ASSERT_TRUE(b) << b.error().to_string();
  for (const auto& l : b->summary) std::printf("%s\n", l.c_str());
  ASSERT_EQ(b->fit.parameters.size(), 2u);
  const auto& fp8 = b->fit.parameters[0];
  const auto& host = b->fit.parameters[1];
  EXPECT_TRUE(fp8.constrained);
  EXPECT_TRUE(host.constrained);
  EXPECT_NEAR(fp8.value / truth_fp8, 1.0, 0.10) << fp8.value;
  EXPECT_NEAR(host.value / truth_host, 1.0, 0.10) << host.value;
  EXPECT_LT(b->fit.rms_after, 0.015);
  EXPECT_EQ(b->fit_sources[0], "Dense");
  EXPECT_EQ(b->fit_sources[1], "MoE");
  // Both sources see a constant, so both are left out in turn.
  ASSERT_EQ(b->loso.size(), 2u);
  // Without the MoE source nothing sees the host constant: held at its start, not a range.
  EXPECT_FALSE(b->loso[1].constrained[1]);
  EXPECT_TRUE(b->loso[1].constrained[0]);
  ASSERT_EQ(b->files.size(), 1u);
  EXPECT_EQ(b->files[0].path, "catalog/calibration/training.yaml");
  EXPECT_NE(b->files[0].text.find("fp8_overhead: {value: "), std::string::npos);
  EXPECT_NE(b->files[0].text.find("leave-one-source-out"), std::string::npos);
  // The file reads back as the step model reads it.
  std::vector<hardware::CatalogFile> files;
  for (const auto& f : config::embedded_catalog()) {
    if (std::string(f.path) == "calibration/training.yaml") continue;
    files.push_back({f.path, f.text});
  }
  files.push_back({"calibration/training.yaml", b->files[0].text});
  auto written = hardware::Catalog::load_files(files);
  ASSERT_TRUE(written) << written.error().to_string();
  auto tc = execution::training_calibration(*written);
  ASSERT_TRUE(tc) << tc.error().to_string();
  EXPECT_NEAR(tc->fp8_overhead / fp8.value, 1.0, 1e-3);
  EXPECT_NEAR(tc->host_per_expert_gemm.base() / host.value, 1.0, 1e-3);
  EXPECT_FALSE(training_html_section(*b).empty());
}

}  // namespace
}  // namespace clustertwin::calibration
