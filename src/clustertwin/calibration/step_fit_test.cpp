#include "clustertwin/calibration/step_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace clustertwin::calibration {
namespace {

/// Runs whose step is a compute part (scaled) plus a communication part (not): the shape of
/// the training model's step with the framework overhead on compute only.
struct Synthetic {
  std::vector<StepTime> steps;
  std::vector<double> compute_s, comm_s;
  [[nodiscard]] double at(size_t i, double scale, double host_s = 0) const {
    return compute_s[i] * scale + comm_s[i] + host_s;
  }
};

Synthetic make_runs(double true_scale, double noise, uint32_t seed, int n = 8,
                    double true_host_s = 0) {
  Synthetic s;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-noise, noise);
  for (int i = 0; i < n; ++i) {
    s.compute_s.push_back(1.0 + 0.5 * i);
    s.comm_s.push_back(0.2 + 0.1 * (i % 3));
    StepTime t;
    t.file = "steps.csv";
    t.line = i + 2;
    t.model = "llama3.1-8b";
    t.gpus = 16;
    t.tp = 8;
    t.step_time_s = s.at(static_cast<size_t>(i), true_scale, true_host_s) * (1 + u(rng));
    s.steps.push_back(t);
  }
  return s;
}

TEST(StepFit, RoundTripWithinTheNoise) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    const double truth = 1.15 + 0.05 * seed;
    auto s = make_runs(truth, 0.02, seed);
    auto fit =
        fit_step_times("h100", s.steps, [&](size_t i, const StepValues& v) -> base::Result<double> {
          return s.at(i, v.scale, v.host_s);
        });
    ASSERT_TRUE(fit.has_value()) << fit.error().to_string();
    EXPECT_NEAR(fit->compute_scale, truth, 0.03 * truth) << "seed " << seed;
    EXPECT_LT(fit->result.rms_after, 0.02);
    EXPECT_GT(fit->result.rms_before, fit->result.rms_after);
    EXPECT_EQ(fit->result.folds, 4);  // 8 runs: four folds of two
    EXPECT_LT(fit->result.cv_rms, 0.03);
    ASSERT_EQ(fit->result.parameters.size(), 2u);
    EXPECT_TRUE(fit->result.parameters[0].constrained);
    EXPECT_GT(fit->result.parameters[0].sigma_rel, 0);
    EXPECT_EQ(fit->result.parameters[1].name, "training.host_time_s");
  }
}

// Property: a per-iteration host time and a compute scale come back together from runs of
// different step lengths (the host time is a larger share of the short steps).
TEST(StepFit, HostTimeRoundTripWithinTheNoise) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    const double scale = 1.1 + 0.05 * seed, host = 0.2 + 0.1 * seed;
    auto s = make_runs(scale, 0.005, seed, 8, host);
    auto fit =
        fit_step_times("h100", s.steps, [&](size_t i, const StepValues& v) -> base::Result<double> {
          return s.at(i, v.scale, v.host_s);
        });
    ASSERT_TRUE(fit.has_value()) << fit.error().to_string();
    EXPECT_NEAR(fit->compute_scale, scale, 0.03 * scale) << "seed " << seed;
    EXPECT_NEAR(fit->host_time_s, host, 0.15 * host) << "seed " << seed;
    EXPECT_TRUE(fit->result.parameters[1].constrained) << "seed " << seed;
    EXPECT_GT(fit->result.parameters[1].sigma_rel, 0);
    EXPECT_LT(fit->result.rms_after, 0.01);
  }
}

// One run cannot tell a host time from the scale: the fit says so and holds it at its start.
TEST(StepFit, OneRunDoesNotConstrainTheHostTime) {
  auto s = make_runs(1.3, 0.0, 5, 1, 0.5);
  auto fit =
      fit_step_times("h100", s.steps, [&](size_t i, const StepValues& v) -> base::Result<double> {
        return s.at(i, v.scale, v.host_s);
      });
  ASSERT_TRUE(fit.has_value()) << fit.error().to_string();
  const auto& host = fit->result.parameters[1];
  EXPECT_FALSE(host.constrained);
  EXPECT_EQ(host.why_not, "only together with training.compute_scale");
  EXPECT_NEAR(fit->host_time_s, kHostTimeStart, 1e-12);
  // The scale alone follows the run, up to the prior's pull toward 1 (one measurement).
  EXPECT_NEAR(fit->result.after[0], s.steps[0].step_time_s, 0.02 * s.steps[0].step_time_s);
  const auto summary = step_fit_summary(*fit, s.steps);
  EXPECT_NE(summary.find("training.host_time_s = 0.001 (start 0.001): not constrained (only "
                         "together with training.compute_scale)"),
            std::string::npos)
      << summary;
}

TEST(StepFit, FewRunsHaveNoCrossValidation) {
  auto s = make_runs(1.3, 0.0, 7, 3);
  auto fit =
      fit_step_times("h100", s.steps, [&](size_t i, const StepValues& v) -> base::Result<double> {
        return s.at(i, v.scale, v.host_s);
      });
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->result.folds, 0);
  EXPECT_NE(step_fit_summary(*fit, s.steps).find("no cross-validation"), std::string::npos);
}

TEST(StepFit, ScaleNoMeasurementSeesIsNotConstrained) {
  // Steps that are all communication: the compute scale changes nothing, and the fit says so
  // (the generic fitter refuses a fit where nothing is constrained).
  auto s = make_runs(1.0, 0.0, 3, 4);
  auto fit = fit_step_times(
      "h100", s.steps,
      [&](size_t i, const StepValues&) -> base::Result<double> { return s.comm_s[i]; });
  ASSERT_FALSE(fit.has_value());
}

TEST(StepFit, PredictorErrorsNameTheRun) {
  auto s = make_runs(1.0, 0.0, 3, 2);
  auto fit =
      fit_step_times("h100", s.steps, [&](size_t i, const StepValues&) -> base::Result<double> {
        if (i == 1) return base::fail("--gpus 64 is more than cluster 'x' has (16)");
        return 1.0;
      });
  ASSERT_FALSE(fit.has_value());
  EXPECT_EQ(fit.error().file, "steps.csv");
  EXPECT_EQ(fit.error().line, 3);
}

TEST(StepFit, NoRunsIsAnError) {
  auto fit = fit_step_times("h100", {},
                            [](size_t, const StepValues&) -> base::Result<double> { return 1.0; });
  EXPECT_FALSE(fit.has_value());
}

TEST(StepFit, ProfileReadsBack) {
  auto s = make_runs(1.4, 0.01, 11);
  auto fit =
      fit_step_times("h100", s.steps, [&](size_t i, const StepValues& v) -> base::Result<double> {
        return s.at(i, v.scale, v.host_s);
      });
  ASSERT_TRUE(fit.has_value());
  std::vector<InputFile> inputs{{.path = "steps.csv",
                                 .sha256 = std::string(64, 'a'),
                                 .format = Format::kStepCsv,
                                 .records = 8}};
  const auto yaml =
      step_profile_yaml(*fit, inputs, s.steps, {.cluster = "hgx-h100*2", .name = "test"});
  // Deterministic: the same fit gives the same bytes.
  EXPECT_EQ(yaml,
            step_profile_yaml(*fit, inputs, s.steps, {.cluster = "hgx-h100*2", .name = "test"}));
  auto back = read_training_calibration({"p.yaml", yaml});
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ((*back)->gpu, "h100");
  EXPECT_NEAR((*back)->compute_scale, fit->compute_scale, 1e-3 * fit->compute_scale);
  EXPECT_NEAR((*back)->host_time_s, fit->host_time_s, 1e-3 * fit->host_time_s);
}

TEST(StepFit, ProfileErrorsNameTheLine) {
  auto none = read_training_calibration({"p.yaml", "collectives: {name: x, gpus: [h100]}\n"});
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->has_value());
  auto bad =
      read_training_calibration({"p.yaml",
                                 "collectives: {name: x, gpus: [h100]}\ntraining:\n  gpu: h100\n  "
                                 "compute_scale: 9\n"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().file, "p.yaml");
  EXPECT_EQ(bad.error().line, 4);
  auto unknown = read_training_calibration(
      {"p.yaml", "training:\n  gpu: h100\n  compute_scale: 1.2\n  host_s: 0.1\n"});
  ASSERT_FALSE(unknown.has_value());
  // The step model's constants: read with their sources; outside the fit's bounds an error at
  // the line.
  auto constants = read_training_calibration(
      {"p.yaml",
       "training:\n  gpu: h100\n  compute_scale: 1.2\n  fp8_overhead: {value: 0.3, source: "
       "\"s.csv:2\"}\n  host_per_expert_gemm: {value: 250 us, source: \"s.csv:3\"}\n"});
  ASSERT_TRUE(constants.has_value()) << constants.error().to_string();
  ASSERT_TRUE(constants->has_value());
  EXPECT_DOUBLE_EQ((*constants)->fp8_overhead.value_or(0), 0.3);
  EXPECT_NEAR((*constants)->host_per_expert_gemm_s.value_or(0), 250e-6, 1e-12);
  EXPECT_EQ((*constants)->host_per_expert_gemm_source, "s.csv:3");
  auto high = read_training_calibration(
      {"p.yaml",
       "training:\n  gpu: h100\n  compute_scale: 1.2\n  fp8_overhead: {value: 0.3, source: a}\n"
       "  host_per_expert_gemm: {value: 5 ms, source: b}\n"});
  ASSERT_FALSE(high.has_value());
  EXPECT_EQ(high.error().line, 5) << high.error().to_string();
  EXPECT_NE(high.error().message.find("expected 1 us to 1000 us, got 5000 us"), std::string::npos)
      << high.error().to_string();
}

}  // namespace
}  // namespace clustertwin::calibration
