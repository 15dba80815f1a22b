#include "clustertwin/calibration/serving_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace clustertwin::calibration {
namespace {

/// Results whose iterations are a kernel part (scaled by f) plus a host part (h), the shape of
/// the serving step model: a run at a higher rate decodes a larger batch, whose kernels take
/// longer; a prompt's first token takes five iterations' kernels. The end-to-end round trip
/// through the real serving simulator is scenario/calibrate_test.cpp.
struct Synthetic {
  std::vector<ServingResult> results;
  std::vector<double> kernel_ms;  ///< per result: one decode iteration's kernels at f = 1
  [[nodiscard]] ServingPrediction at(size_t i, double f, double h_s) const {
    const double it = f * kernel_ms[i] + 1e3 * h_s;
    ServingPrediction p;
    p.tpot_p50_ms = p.tpot_mean_ms = it;
    p.ttft_p50_ms = p.ttft_mean_ms = 5 * f * kernel_ms[i] + 2e3 * h_s;
    const double batch = 8.0 * static_cast<double>(i + 1);
    p.output_tokens_per_s = 1e3 * batch / it;
    p.requests_per_s = p.output_tokens_per_s / 256;
    return p;
  }
};

Synthetic make_results(double f, double h_s, double noise, uint32_t seed, int n = 5) {
  Synthetic s;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-noise, noise);
  for (int i = 0; i < n; ++i) {
    s.kernel_ms.push_back(4.0 + 0.8 * i * i);
    auto p = s.at(static_cast<size_t>(i), f, h_s);
    ServingResult r;
    r.file = "bench.jsonl";
    r.line = i + 1;
    r.tool = "vllm";
    r.scenario = "online";
    const bool last = i + 1 == n;  // the last run unbounded: offline
    r.request_rate = last ? 0 : 2.0 * (i + 1);
    r.requests_per_s = r.request_rate;
    r.output_tokens_per_s = p.output_tokens_per_s * (1 + u(rng));
    r.latency_ms["tpot_p50"] = p.tpot_p50_ms * (1 + u(rng));
    r.latency_ms["ttft_p50"] = p.ttft_p50_ms * (1 + u(rng));
    r.latency_ms["ttft_p99"] = 10 * p.ttft_p50_ms;  // the tail: not fitted
    s.results.push_back(r);
  }
  return s;
}

// Property: results made by the model with a known kernel factor and host time, plus +-1% noise,
// are fitted back within the noise.
TEST(ServingFit, RoundTripWithinTheNoise) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    const double f = 0.9 + 0.1 * seed, h = 0.5e-3 + 0.4e-3 * seed;
    auto s = make_results(f, h, 0.01, seed);
    auto fit = fit_serving("h100", s.results,
                           [&](size_t i, double gf, double hs) -> base::Result<ServingPrediction> {
                             return s.at(i, gf, hs);
                           });
    ASSERT_TRUE(fit.has_value()) << fit.error().to_string();
    // 4 runs at a rate x (TPOT, TTFT) + the offline run's tokens/s.
    ASSERT_EQ(fit->observations.size(), 9u);
    EXPECT_EQ(fit->where.back().metric, "output_tokens_per_s");
    EXPECT_NEAR(fit->gpu_factor, f, 0.03 * f) << "seed " << seed;
    EXPECT_NEAR(fit->host_s, h, 0.15 * h) << "seed " << seed;
    EXPECT_TRUE(fit->result.parameters[0].constrained);
    EXPECT_TRUE(fit->result.parameters[1].constrained) << fit->result.parameters[1].why_not;
    EXPECT_GT(fit->result.parameters[1].sigma_rel, 0);
    EXPECT_LT(fit->result.rms_after, 0.01);
    EXPECT_GT(fit->result.rms_before, fit->result.rms_after);
    EXPECT_EQ(fit->result.folds, 4);
    EXPECT_LT(fit->result.cv_rms, 0.02);
  }
}

// One result at one batch size cannot tell the host time from the kernel factor: the fit says
// so and holds the host time at its start.
TEST(ServingFit, OneResultDoesNotConstrainTheHostTime) {
  auto s = make_results(1.3, 2e-3, 0.0, 1, 1);  // one offline run
  auto fit = fit_serving("h100", s.results,
                         [&](size_t i, double gf, double hs) -> base::Result<ServingPrediction> {
                           return s.at(i, gf, hs);
                         });
  ASSERT_TRUE(fit.has_value()) << fit.error().to_string();
  ASSERT_EQ(fit->observations.size(), 1u);
  EXPECT_TRUE(fit->result.parameters[0].constrained);
  EXPECT_FALSE(fit->result.parameters[1].constrained);
  EXPECT_NE(fit->result.parameters[1].why_not.find("only together with serving.gpu_factor"),
            std::string::npos)
      << fit->result.parameters[1].why_not;
  EXPECT_NEAR(fit->host_s, kServingHostStart, 1e-12);  // exp(log(start))
  const std::string y = serving_profile_yaml(*fit, s.results);
  EXPECT_NE(y.find("constrained: false"), std::string::npos) << y;
  EXPECT_NE(y.find("kept at the start value"), std::string::npos) << y;
}

TEST(ServingFit, ResultsWithoutAComparableFigureAreRefused) {
  ServingResult r;
  r.file = "summary.txt";
  r.line = 4;
  r.tool = "mlperf-loadgen";
  r.scenario = "Server";
  r.request_rate = 0;  // no target_qps
  r.latency_ms["ttft_p50"] = 100;
  auto fit = fit_serving("h100", std::span<const ServingResult>(&r, 1),
                         [](size_t, double, double) -> base::Result<ServingPrediction> {
                           return ServingPrediction{};
                         });
  ASSERT_FALSE(fit.has_value());
  EXPECT_EQ(fit.error().file, "summary.txt");
  EXPECT_EQ(fit.error().line, 4);
  EXPECT_NE(fit.error().message.find("request rate"), std::string::npos);
  r.request_rate = 5;
  r.latency_ms.clear();
  auto none = serving_observations(std::span<const ServingResult>(&r, 1));
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("nothing the model can be compared on"), std::string::npos);
}

TEST(ServingFit, ProfileReadsBackAndRefusesBadValues) {
  auto s = make_results(1.2, 1e-3, 0.0, 2);
  auto fit = fit_serving("h100", s.results,
                         [&](size_t i, double gf, double hs) -> base::Result<ServingPrediction> {
                           return s.at(i, gf, hs);
                         });
  ASSERT_TRUE(fit.has_value()) << fit.error().to_string();
  auto back = read_serving_calibration({"p.yaml", serving_profile_yaml(*fit, s.results)});
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ((*back)->gpu, "h100");
  EXPECT_NEAR((*back)->gpu_factor, 1.2, 0.01);
  EXPECT_NEAR((*back)->host_s, 1e-3, 1e-4);
  auto bad = read_serving_calibration(
      {"p.yaml", "serving:\n  gpu: h100\n  gpu_factor: 9\n  host_s: 0.001\n"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().to_string().find("p.yaml:3"), std::string::npos) << bad.error().to_string();
  auto none = read_serving_calibration({"p.yaml", "collectives:\n  gpus: [h100]\n"});
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->has_value());
}

// A profile's serving: mapping may carry the step model's catalog constants of its software
// stack (each optional, in place of catalog/calibration/serving.yaml's), with or without a fit
// of serving results; each bad value is refused at its line, and a mapping that sets nothing is
// refused. A built-in profile carries the catalog's four, and is for its own GPUs only.
TEST(ServingFit, AProfileCarriesTheServingConstants) {
  auto p = read_serving_calibration(
      {"p.yaml", "serving:\n  gpu: h100\n  tp_overlap: 0.3\n  eager_host_per_layer_s: 0.002\n"});
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  ASSERT_TRUE(p->has_value());
  EXPECT_FALSE((*p)->fitted);
  EXPECT_EQ((*p)->tp_overlap, 0.3);
  EXPECT_FALSE((*p)->stream_host_per_response_s.has_value());
  EXPECT_FALSE((*p)->engine_host_per_iteration_s.has_value());
  execution::ServingStepCalibration c{.tp_overlap = 0.45,
                                      .stream_host_per_response = base::seconds(29e-6),
                                      .eager_host_per_layer = base::seconds(1.1e-3),
                                      .engine_host_per_iteration = base::seconds(4e-3)};
  (*p)->apply(c);
  EXPECT_EQ(c.tp_overlap, 0.3);
  EXPECT_EQ(c.stream_host_per_response.base(), 29e-6);  // not given: the catalog's
  EXPECT_EQ(c.eager_host_per_layer.base(), 0.002);
  EXPECT_EQ(c.engine_host_per_iteration.base(), 4e-3);  // not given: the catalog's
  // The C++ executor's host time per engine iteration of another host (a CPU, a TensorRT-LLM
  // version) alone is a profile too, and replaces the catalog's; a unit slip is refused.
  auto engine = read_serving_calibration(
      {"e.yaml", "serving:\n  gpu: h200\n  engine_host_per_iteration_s: 0.0062\n"});
  ASSERT_TRUE(engine.has_value()) << engine.error().to_string();
  ASSERT_TRUE(engine->has_value());
  EXPECT_EQ((*engine)->engine_host_per_iteration_s, 0.0062);
  (*engine)->apply(c);
  EXPECT_EQ(c.engine_host_per_iteration.base(), 0.0062);
  EXPECT_EQ(c.tp_overlap, 0.3);  // not given: as before
  auto slip = read_serving_calibration(
      {"e.yaml", "serving:\n  gpu: h200\n  engine_host_per_iteration_s: 4\n"});
  ASSERT_FALSE(slip.has_value());
  EXPECT_NE(slip.error().to_string().find("e.yaml:3"), std::string::npos)
      << slip.error().to_string();
  auto bad = read_serving_calibration({"p.yaml",
                                       "serving:\n  gpu: h100\n  gpu_factor: 1.2\n"
                                       "  tp_overlap: 1.5\n  stream_host_per_response_s: 0.5\n"});
  ASSERT_FALSE(bad.has_value());
  const std::string m = bad.error().to_string();
  EXPECT_NE(m.find("p.yaml:3"), std::string::npos) << m;  // gpu_factor without host_s
  EXPECT_NE(m.find("host_s"), std::string::npos) << m;
  EXPECT_NE(m.find("p.yaml:4"), std::string::npos) << m;  // overlap above 1
  EXPECT_NE(m.find("p.yaml:5"), std::string::npos) << m;  // 0.5 s per response: a unit slip
  auto empty = read_serving_calibration({"p.yaml", "serving:\n  gpu: h100\n"});
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().to_string().find("got none"), std::string::npos)
      << empty.error().to_string();

  auto cat = hardware::Catalog::load_embedded();
  ASSERT_TRUE(cat);
  auto catalog = execution::serving_step_calibration(*cat);
  ASSERT_TRUE(catalog);
  auto h100 = builtin_serving_calibration(*cat, "h100");
  ASSERT_TRUE(h100.has_value()) << h100.error().to_string();
  ASSERT_TRUE(h100->has_value());
  EXPECT_FALSE((*h100)->fitted);
  EXPECT_EQ((*h100)->tp_overlap, catalog->tp_overlap);
  EXPECT_EQ((*h100)->stream_host_per_response_s, catalog->stream_host_per_response.base());
  EXPECT_EQ((*h100)->eager_host_per_layer_s, catalog->eager_host_per_layer.base());
  EXPECT_EQ((*h100)->engine_host_per_iteration_s, catalog->engine_host_per_iteration.base());
  EXPECT_EQ((*h100)->path, "catalog/calibration/serving.yaml");
  for (const char* none : {"h900", "defaults", "at-scale"}) {
    auto n = builtin_serving_calibration(*cat, none);
    ASSERT_TRUE(n.has_value()) << none;
    EXPECT_FALSE(n->has_value()) << none;
  }
  const collective::ProfileSource h100_name{.name = "h100", .builtin = true};
  auto h800 = serving_calibration_of(*cat, h100_name, "h800", "--calibration", false);
  ASSERT_TRUE(h800.has_value()) << h800.error().to_string();
  EXPECT_EQ((*h800)->gpu, "h800");
  auto b200 = serving_calibration_of(*cat, h100_name, "b200", "--calibration", false);
  ASSERT_FALSE(b200.has_value());
  EXPECT_NE(b200.error().to_string().find(
                "--calibration h100 is for GPUs h100, h800; this cluster's GPU is b200"),
            std::string::npos)
      << b200.error().to_string();
}

// A catalog constant on its grid: a replay whose prediction moves in steps (a rate search's)
// and falls as the constant grows is bracketed to the grid value nearest the measurement, in
// about log2(grid points) replays; a measurement the bounds cannot reach is an error that says
// where it lies.
TEST(ServingConstantFit, BracketsTheMeasurementOnTheGrid) {
  // Throughput 1000 / (1 + h / 30 us), quantised to 2% steps as a rate search's probes are.
  int calls = 0;
  auto predict = [&](double h_us) -> base::Result<double> {
    ++calls;
    const double exact = 1000.0 / (1.0 + h_us / 30.0);
    return std::pow(1.02, std::floor(std::log(exact) / std::log(1.02)));
  };
  const Parameter p{.name = "stream_host_per_response", .start = 1, .lower = 1, .upper = 200};
  auto fit = fit_serving_constant(p, 1.0, 500.0, predict);
  ASSERT_TRUE(fit) << fit.error().to_string();
  EXPECT_NEAR(fit->value, 30.0, 1.0);
  EXPECT_LE(std::abs(std::log(fit->predicted / 500.0)),
            std::abs(std::log(fit->other_predicted / 500.0)));
  EXPECT_EQ(std::abs(fit->other - fit->value), 1.0);
  EXPECT_LE(calls, 12);
  EXPECT_EQ(static_cast<size_t>(calls), fit->probes.size());
  // Deterministic: the same replays give the same value.
  auto again = fit_serving_constant(p, 1.0, 500.0, predict);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->value, fit->value);
  // Rising with the constant (an overlap that hides more communication) works alike.
  auto rising = [](double x) -> base::Result<double> { return 100.0 * (1.0 + x); };
  const Parameter o{.name = "tp_overlap", .start = 0.05, .lower = 0.05, .upper = 1.0};
  auto ov = fit_serving_constant(o, 0.05, 148.0, rising);
  ASSERT_TRUE(ov) << ov.error().to_string();
  EXPECT_NEAR(ov->value, 0.5, 1e-12);  // 150 at 0.5, 145 at 0.45
  // Out of reach: 1,000 at 1 us is the most the bounds give.
  auto beyond = fit_serving_constant(p, 1.0, 2000.0, predict);
  ASSERT_FALSE(beyond);
  EXPECT_NE(beyond.error().to_string().find("lies outside what the bounds predict"),
            std::string::npos)
      << beyond.error().to_string();
  // A replay's error stops the fit with its message.
  auto failing = fit_serving_constant(
      p, 1.0, 500.0, [](double) -> base::Result<double> { return base::fail("no layout"); });
  ASSERT_FALSE(failing);
  EXPECT_NE(failing.error().to_string().find("no layout"), std::string::npos);
  EXPECT_FALSE(fit_serving_constant(p, 0.0, 500.0, predict));
}

}  // namespace
}  // namespace clustertwin::calibration
