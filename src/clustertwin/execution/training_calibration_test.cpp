#include "clustertwin/execution/training_calibration.h"

#include <gtest/gtest.h>

#include <vector>

#include "clustertwin/execution/training.h"
#include "clustertwin/workload/catalog_test_support.h"

namespace clustertwin::execution {
namespace {

// A catalog of `text` as training.yaml beside the shipped serving.yaml (which gives the eager
// issue time per layer).
base::Result<TrainingCalibration> from_text(const std::string& text) {
  std::vector<hardware::CatalogFile> files{{"calibration/training.yaml", text}};
  for (const auto& f : workload::test_support::catalog().other_files()) {
    if (f.path == "calibration/serving.yaml") files.push_back(f);
  }
  auto cat = hardware::Catalog::load_files(files);
  if (!cat) return base::fail(cat.error());
  return training_calibration(*cat);
}

// The shipped constants come from catalog/calibration/training.yaml with their sources, and a
// setup takes them only when applied (the step model has no compiled-in fit). Their values are
// `calibrate --builtin training`'s fit, pinned byte for byte by
// cli.calibrate_builtin_training_reproduces_the_catalog; here: within the fit's bounds.
TEST(TrainingCalibration, ReadsTheCatalogsFittedConstantsWithSources) {
  auto tc = training_calibration(workload::test_support::catalog());
  ASSERT_TRUE(tc) << tc.error().to_string();
  EXPECT_GT(tc->fp8_overhead, 0.01);
  EXPECT_LT(tc->fp8_overhead, 1.0);
  EXPECT_GT(tc->host_per_expert_gemm.base(), 1e-6);
  EXPECT_LT(tc->host_per_expert_gemm.base(), 1e-3);
  EXPECT_GT(tc->eager_host_per_layer.base(), 1e-5);  // serving.yaml's
  EXPECT_LT(tc->eager_host_per_layer.base(), 1e-2);
  EXPECT_EQ(tc->path, "catalog/calibration/training.yaml");
  EXPECT_NE(tc->sources.find("least squares over the training validation cases"), std::string::npos)
      << tc->sources;
  EXPECT_NE(tc->sources.find("leave-one-source-out"), std::string::npos) << tc->sources;
  TrainingSetup s;
  EXPECT_EQ(s.fp8_overhead, 0.0);
  EXPECT_EQ(s.host_per_expert_gemm.base(), 0.0);
  EXPECT_EQ(s.eager_host_per_layer.base(), 0.0);
  tc->apply(s);
  EXPECT_DOUBLE_EQ(s.fp8_overhead, tc->fp8_overhead);
  EXPECT_DOUBLE_EQ(s.host_per_expert_gemm.base(), tc->host_per_expert_gemm.base());
  EXPECT_DOUBLE_EQ(s.eager_host_per_layer.base(), tc->eager_host_per_layer.base());
}

// Bad files: errors name the file and line and what was expected; nothing is defaulted.
TEST(TrainingCalibration, BadFilesFailWithFileAndLine) {
  const std::string head = "sources:\n  f: a fit\ntraining_calibration:\n";
  auto ok = from_text(head +
                      "  fp8_overhead: {value: 0.2, source: f}\n"
                      "  host_per_expert_gemm: {value: 50 us, source: f}\n");
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_DOUBLE_EQ(ok->host_per_expert_gemm.base(), 50e-6);

  auto no_unit = from_text(head +
                           "  fp8_overhead: {value: 0.2, source: f}\n"
                           "  host_per_expert_gemm: {value: 50, source: f}\n");
  ASSERT_FALSE(no_unit);
  EXPECT_NE(no_unit.error().to_string().find("catalog/calibration/training.yaml:5"),
            std::string::npos)
      << no_unit.error().to_string();

  auto missing = from_text(head + "  fp8_overhead: {value: 0.2, source: f}\n");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().to_string().find("host_per_expert_gemm"), std::string::npos)
      << missing.error().to_string();

  auto negative = from_text(head +
                            "  fp8_overhead: {value: -0.1, source: f}\n"
                            "  host_per_expert_gemm: {value: 50 us, source: f}\n");
  ASSERT_FALSE(negative);
  EXPECT_NE(negative.error().to_string().find("fp8_overhead"), std::string::npos)
      << negative.error().to_string();

  auto typo = from_text(head +
                        "  fp8_overhead: {value: 0.2, source: f}\n"
                        "  host_per_expert_gemm: {value: 50 us, source: f}\n"
                        "  host_per_expert_gem: {value: 50 us, source: f}\n");
  ASSERT_FALSE(typo);

  auto none = hardware::Catalog::load_files(std::vector<hardware::CatalogFile>{});
  ASSERT_TRUE(none);
  auto absent = training_calibration(*none);
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().message,
            "the catalog has no calibration/training.yaml (the training step model's fitted "
            "constants)");
}

}  // namespace
}  // namespace clustertwin::execution
