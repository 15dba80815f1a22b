#include "clustertwin/execution/serving_calibration.h"

#include <gtest/gtest.h>

#include <vector>

#include "clustertwin/workload/catalog_test_support.h"

namespace clustertwin::execution {
namespace {

base::Result<ServingStepCalibration> from_text(const std::string& text) {
  auto cat = hardware::Catalog::load_files(
      std::vector<hardware::CatalogFile>{{"calibration/serving.yaml", text}});
  if (!cat) return base::fail(cat.error());
  return serving_step_calibration(*cat);
}

// The shipped constants come from catalog/calibration/serving.yaml with their sources, and a
// setup or layout takes them only when applied (the step model has no compiled-in fit).
TEST(ServingStepCalibration, ReadsTheCatalogsFittedConstantsWithSources) {
  auto sc = serving_step_calibration(workload::test_support::catalog());
  ASSERT_TRUE(sc) << sc.error().to_string();
  // The values are `calibrate --builtin serving`'s fit, pinned byte for byte by
  // cli.calibrate_builtin_serving_reproduces_the_catalog; here: within the fit's bounds.
  EXPECT_GT(sc->tp_overlap, 0.0);
  EXPECT_LE(sc->tp_overlap, 1.0);
  EXPECT_GT(sc->stream_host_per_response.base(), 1e-6);
  EXPECT_LT(sc->stream_host_per_response.base(), 200e-6);
  EXPECT_GT(sc->eager_host_per_layer.base(), 1e-5);
  EXPECT_LT(sc->eager_host_per_layer.base(), 1e-2);
  EXPECT_GT(sc->engine_host_per_iteration.base(), 1e-4);
  EXPECT_LT(sc->engine_host_per_iteration.base(), 2e-2);
  EXPECT_EQ(sc->path, "catalog/calibration/serving.yaml");
  for (const char* s : {"VC0154", "S0099", "TensorRT-LLM blog 3", "VC0020"}) {
    EXPECT_NE(sc->sources.find(s), std::string::npos) << s << " in " << sc->sources;
  }
  ServingSetup s;
  EXPECT_EQ(s.layout.tp_overlap, 0.0);
  EXPECT_EQ(s.calibration.stream_host_per_response_s, 0.0);
  EXPECT_EQ(s.calibration.eager_host_per_layer_s, 0.0);
  EXPECT_EQ(s.calibration.engine_host_per_iteration_s, 0.0);
  s.calibration.gpu_factor = 1.25;  // a profile's: applying the catalog's leaves it
  sc->apply(s);
  EXPECT_DOUBLE_EQ(s.layout.tp_overlap, sc->tp_overlap);
  EXPECT_DOUBLE_EQ(s.calibration.stream_host_per_response_s, sc->stream_host_per_response.base());
  EXPECT_DOUBLE_EQ(s.calibration.eager_host_per_layer_s, sc->eager_host_per_layer.base());
  EXPECT_DOUBLE_EQ(s.calibration.engine_host_per_iteration_s, sc->engine_host_per_iteration.base());
  EXPECT_DOUBLE_EQ(s.calibration.gpu_factor, 1.25);
  StepSetup st;
  EXPECT_EQ(st.tp_overlap, 0.0);
  sc->apply(st);
  EXPECT_DOUBLE_EQ(st.tp_overlap, sc->tp_overlap);
  EXPECT_DOUBLE_EQ(st.calibration.eager_host_per_layer_s, sc->eager_host_per_layer.base());
  EXPECT_DOUBLE_EQ(st.calibration.engine_host_per_iteration_s,
                   sc->engine_host_per_iteration.base());
}

// Bad files: errors name the file and line and what was expected; nothing is defaulted.
TEST(ServingStepCalibration, BadFilesFailWithFileAndLine) {
  const std::string head = "sources:\n  f: a fit\nserving_calibration:\n";
  const std::string overlap = "  tp_overlap: {value: 0.4, source: f}\n";
  const std::string stream = "  stream_host_per_response: {value: 25 us, source: f}\n";
  const std::string eager = "  eager_host_per_layer: {value: 1 ms, source: f}\n";
  const std::string engine = "  engine_host_per_iteration: {value: 4.5 ms, source: f}\n";
  auto ok = from_text(head + overlap + stream + eager + engine);
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_DOUBLE_EQ(ok->tp_overlap, 0.4);
  EXPECT_DOUBLE_EQ(ok->stream_host_per_response.base(), 25e-6);
  EXPECT_DOUBLE_EQ(ok->eager_host_per_layer.base(), 1e-3);
  EXPECT_DOUBLE_EQ(ok->engine_host_per_iteration.base(), 4.5e-3);

  auto no_unit = from_text(head + overlap + "  stream_host_per_response: {value: 25, source: f}\n" +
                           eager + engine);
  ASSERT_FALSE(no_unit);
  EXPECT_NE(no_unit.error().to_string().find("catalog/calibration/serving.yaml:5"),
            std::string::npos)
      << no_unit.error().to_string();

  auto beyond =
      from_text(head + "  tp_overlap: {value: 1.5, source: f}\n" + stream + eager + engine);
  ASSERT_FALSE(beyond);
  EXPECT_NE(beyond.error().to_string().find("catalog/calibration/serving.yaml:4"),
            std::string::npos)
      << beyond.error().to_string();

  auto slow = from_text(head + overlap + stream +
                        "  eager_host_per_layer: {value: 1.11 s, source: f}\n" + engine);
  ASSERT_FALSE(slow);
  EXPECT_NE(slow.error().to_string().find("eager_host_per_layer: expected at most 100 ms"),
            std::string::npos)
      << slow.error().to_string();
  EXPECT_NE(slow.error().to_string().find("serving.yaml:6"), std::string::npos)
      << slow.error().to_string();

  auto missing = from_text(head + overlap + stream);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().to_string().find("eager_host_per_layer"), std::string::npos)
      << missing.error().to_string();
  // The engine host time is required as the others are, and bounded as they are (a unit slip:
  // 4 s for 4 ms).
  auto no_engine = from_text(head + overlap + stream + eager);
  ASSERT_FALSE(no_engine);
  EXPECT_NE(no_engine.error().to_string().find("engine_host_per_iteration"), std::string::npos)
      << no_engine.error().to_string();
  auto slow_engine = from_text(head + overlap + stream + eager +
                               "  engine_host_per_iteration: {value: 4 s, source: f}\n");
  ASSERT_FALSE(slow_engine);
  EXPECT_NE(slow_engine.error().to_string().find("serving.yaml:7"), std::string::npos)
      << slow_engine.error().to_string();

  auto unsourced =
      from_text(head + overlap + stream + "  eager_host_per_layer: {value: 1 ms}\n" + engine);
  ASSERT_FALSE(unsourced);

  auto none = hardware::Catalog::load_files(std::vector<hardware::CatalogFile>{});
  ASSERT_TRUE(none) << none.error().to_string();
  auto absent = serving_step_calibration(*none);
  ASSERT_FALSE(absent);
  EXPECT_NE(absent.error().to_string().find("calibration/serving.yaml"), std::string::npos);
}

}  // namespace
}  // namespace clustertwin::execution
