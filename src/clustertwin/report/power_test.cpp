#include "clustertwin/report/power.h"

#include <gtest/gtest.h>

#include "clustertwin/power/test_fixture.h"

namespace clustertwin::report {
namespace {

using power::testing::Job;

const power::TrainingPowerResult& result() {
  static const power::TrainingPowerResult r = [] {
    static const Job j("gb300-nvl72*2", "llama3.1-8b");
    power::TrainingPowerOptions o;
    o.smoothing = power::SmoothingRequest{};
    o.token_budget = 1e12;
    o.price_per_kWh = 0.08;
    o.grid_gCO2_per_kWh = 400;
    o.window.duration_s = 60;
    auto res = power::analyze_training_power(
        j.input(
            {.tp = 2, .pp = 2, .dp = 36, .micro_batch = 1, .global_batch = 288, .seq_len = 4096}),
        o);
    return *res;
  }();
  return r;
}

TEST(PowerReport, JsonCarriesTheDocumentedUnitKeysAndWaveforms) {
  const auto j = power_json(result(), 500);
  for (const char* k :
       {"gpu_avg_W", "gpu_peak_W", "rack_avg_W", "rack_peak_W", "rack_limit_W", "cluster_avg_W",
        "cluster_peak_W", "energy_per_token_J", "energy_per_step_J", "facility_W", "pue"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_TRUE(j[k].is_number()) << k;
  }
  EXPECT_GT(j["pue"].get<double>(), 1.0);
  EXPECT_TRUE(j["cooling"].contains("rack_flow_L_per_min"));
  EXPECT_TRUE(j["run"].contains("carbon_kg"));
  EXPECT_TRUE(j["smoothing"].contains("peak_reduction"));
  ASSERT_TRUE(j["waveforms"].is_array());
  ASSERT_GE(j["waveforms"].size(), 5u);
  for (const auto& w : j["waveforms"]) {
    ASSERT_EQ(w["t_s"].size(), w["power_W"].size());
    EXPECT_LE(w["t_s"].size(), 500u);
    EXPECT_TRUE(w["stats"].contains("peak_W"));
  }
}

TEST(PowerReport, TrainingAndServingWriteTheSameCoolingBlock) {
  // The serving view sized the same facility: its cooling block has the same keys and figures,
  // the hottest rack's liquid heat (what the CDU warning compares) included.
  power::ServingPowerResult s;
  s.cooling_plan = result().cooling_plan;
  s.rack_cooling = result().rack_cooling;
  s.cluster_flow_L_per_min = result().cluster_flow_L_per_min;
  const auto c = power_json(result(), 500)["cooling"];
  EXPECT_EQ(serving_power_json(s)["cooling"], c);
  EXPECT_GT(c["rack_liquid_heat_peak_W"].get<double>(), 0);
  EXPECT_LT(c["rack_liquid_heat_peak_W"].get<double>(), c["rack_heat_peak_W"].get<double>());
}

TEST(PowerReport, TraceCountersAreValid) {
  TraceWriter w;
  add_power_counters(w, result(), 300);
  const auto problems = validate_trace(w.to_json());
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_GT(w.event_count(), 100u);
}

TEST(PowerReport, TextShowsTheWaveformsWithAndWithoutSmoothing) {
  const auto t = power_text(result());
  EXPECT_NE(t.find("cluster IT, smoothed"), std::string::npos);
  EXPECT_NE(t.find("coolant flow per rack"), std::string::npos);
  EXPECT_NE(t.find("PUE"), std::string::npos);
  EXPECT_NE(t.find("per token"), std::string::npos);
  EXPECT_EQ(sparkline({1, 2, 3, 4}, 4), "▁▃▆█");
}

}  // namespace
}  // namespace clustertwin::report
