#include "clustertwin/power/serving_power.h"

#include <gtest/gtest.h>

#include <numeric>

#include "clustertwin/execution/serving_calibration.h"
#include "clustertwin/power/test_fixture.h"

namespace clustertwin::power {
namespace {

using testing::catalog;
using testing::power_catalog;

// A serving deployment on a cluster: model, compute model, topology and one simulated run.
struct Serving {
  hardware::ClusterSpec spec;
  topology::Topology topo;
  const hardware::GpuSpec* gpu;
  compute::ComputeModel cm;
  models::ModelSpec model;
  execution::ServingSetup setup;
  execution::ServingResult result;
  Serving(const std::string& cluster, const std::string& m, const workload::ServingLayout& l,
          int64_t isl, int64_t osl, int64_t requests)
      : spec(*hardware::resolve_cluster(catalog(), cluster)),
        topo(*topology::Topology::build(catalog(), spec)),
        gpu(*catalog().gpu((*catalog().system(spec.system))->gpu)),
        cm(*compute::ComputeModel::for_gpu(*gpu, catalog())),
        model(*models::load_model(catalog(), m)) {
    setup.model = &model;
    setup.compute = &cm;
    setup.fabric = *execution::serving_fabric(catalog(), spec);
    execution::serving_step_calibration(catalog())->apply(setup);
    setup.memory_capacity = gpu->hbm_usable;
    setup.dataset = workload::fixed_dataset(isl, osl);
    setup.layout = l;
    setup.requests = requests;
    result = *execution::simulate_serving(setup);
  }
  [[nodiscard]] ServingPowerInput input() const {
    return {.catalog = &catalog(),
            .power = &power_catalog(),
            .cluster = &spec,
            .topology = &topo,
            .setup = &setup,
            .result = &result};
  }
};

workload::ServingLayout tp_layout(int tp, int replicas, compute::DType w) {
  workload::ServingLayout l;
  l.weights = w;
  l.instance = {.tp = tp, .max_batch = 128, .max_tokens = 2048};
  l.replicas = replicas;
  return l;
}

TEST(ServingPower, FiguresAreConsistentAndEnergyIsTheIntegralOfPower) {
  // Llama 3.1 8B FP8 on one 8 x H200 node, TP1 x 8, offline.
  Serving s("hgx-h200*1", "llama3.1-8b", tp_layout(1, 8, compute::DType::kFp8), 1024, 256, 400);
  auto r = analyze_serving_power(s.input(), {});
  ASSERT_TRUE(r) << r.error().to_string();
  // Nothing slowed at the default limit: the run is the caller's.
  EXPECT_DOUBLE_EQ(r->kernel_slowdown, 1.0);
  EXPECT_DOUBLE_EQ(r->serving.tokens_per_s, s.result.tokens_per_s);
  // Power between idle and the limit; prompt kernels (compute-bound) draw more than decode
  // kernels (memory-bound), which stay below 80% of TDP (shared reference §1.3).
  EXPECT_GT(r->gpu_avg_W, r->gpu_idle_W);
  EXPECT_LE(r->gpu_peak_W, r->cap_W);
  EXPECT_GT(r->gpu_prefill_W, r->gpu_decode_W);
  EXPECT_GT(r->gpu_prefill_W, 0.9 * r->gpu_tgp_W);
  EXPECT_LT(r->gpu_decode_W, 0.8 * r->gpu_tgp_W);
  // GPU-time shares add up to one.
  ASSERT_EQ(r->pools.size(), 1u);
  const auto& p = r->pools[0];
  EXPECT_NEAR(p.decode_share + p.prefill_share + p.other_share + p.idle_share, 1.0, 1e-9);
  EXPECT_GT(p.decode_share, 0);
  EXPECT_GT(p.prefill_share, 0);
  // Energy = integral of power: the GPU waveform times the GPUs is the GPU energy; the
  // deployment IT waveform integrates to the IT energy; energy per token is energy / tokens.
  const auto& wg = r->waveforms[0];
  const double e_gpu = std::accumulate(wg.power_W.begin(), wg.power_W.end(), 0.0) * wg.dt_s;
  // The last bin may be shorter than dt.
  EXPECT_NEAR(e_gpu * 8, r->gpu_energy_J, 0.002 * r->gpu_energy_J);
  const auto& wi = r->waveforms[2];
  EXPECT_NEAR(wi.stats.energy_J, r->energy_J, 0.002 * r->energy_J);
  EXPECT_NEAR(r->energy_per_token_J * r->output_tokens, r->energy_J, 1e-6 * r->energy_J);
  EXPECT_NEAR(r->facility_energy_per_token_J, r->energy_per_token_J * r->facility.pue, 1e-9);
  EXPECT_GT(r->energy_per_token_J, r->gpu_energy_per_token_J);
  // An 8-GPU node is one system: its share is the whole node, plus its fabric share.
  EXPECT_GT(r->cluster_avg_W, 8 * r->gpu_avg_W);
  EXPECT_GE(r->facility.pue, 1.0);
}

TEST(ServingPower, CapSlowsPromptsButNotDecodeUntilItFallsBelowDecodeDemand) {
  Serving s("hgx-h200*1", "llama3.1-8b", tp_layout(1, 8, compute::DType::kFp8), 1024, 256, 400);
  auto base = analyze_serving_power(s.input(), {});
  ASSERT_TRUE(base);
  // A cap above every decode kernel's demand: prompt kernels slow, decode kernels do not.
  ServingPowerOptions o;
  ASSERT_GE(base->decode_peak_demand_W, base->decode_demand_W);
  o.gpu.cap = base::watts(std::ceil(base->decode_peak_demand_W / 0.98) + 10);
  ASSERT_LT(o.gpu.cap.base(), base->gpu_tgp_W);
  auto capped = analyze_serving_power(s.input(), o);
  ASSERT_TRUE(capped) << capped.error().to_string();
  EXPECT_GT(capped->prefill_slowdown, 1.005);
  EXPECT_DOUBLE_EQ(capped->decode_slowdown, 1.0);
  EXPECT_GT(capped->kernel_slowdown, 1.0);
  // Fed back: the run is simulated again with the kernels slowed.
  EXPECT_LT(capped->serving.tokens_per_s, base->serving.tokens_per_s);
  EXPECT_LE(capped->gpu_peak_W, capped->cap_W);
  // A cap below the decode demand slows decode too.
  o.gpu.cap = base::watts(std::max(200.0, 0.7 * base->decode_demand_W));
  auto low = analyze_serving_power(s.input(), o);
  ASSERT_TRUE(low) << low.error().to_string();
  EXPECT_GT(low->decode_slowdown, 1.01);
  EXPECT_GT(low->prefill_slowdown, capped->prefill_slowdown);
}

TEST(ServingPower, DisaggregatedPoolsAndMoe) {
  // Mixtral 8x7B on one GB300 NVL72: 2 prefill instances TP4 EP4, 8 decode instances TP8 EP8.
  workload::ServingLayout l;
  l.weights = compute::DType::kNvfp4;
  l.instance = {.tp = 8, .ep = 8, .max_batch = 128, .max_tokens = 2048};
  l.replicas = 8;
  l.disaggregated = true;
  l.prefill = {.tp = 4, .ep = 4, .max_batch = 16, .max_tokens = 8192};
  l.prefill_replicas = 2;
  Serving s("gb300-nvl72*1", "mixtral-8x7b", l, 2048, 256, 300);
  auto r = analyze_serving_power(s.input(), {});
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_EQ(r->pools.size(), 2u);
  EXPECT_EQ(r->pools[0].name, "prefill");
  EXPECT_EQ(r->pools[1].name, "decode");
  EXPECT_EQ(r->pools[0].gpus + r->pools[1].gpus, 72);
  EXPECT_EQ(r->pools[1].decode_share > 0, true);
  EXPECT_DOUBLE_EQ(r->pools[0].decode_share, 0.0);
  // A GB300 NVL72 serving stays under its shelves' capacity and the 130-140 kW full-load figure.
  EXPECT_FALSE(r->rack_limit_binds);
  EXPECT_LT(r->rack_peak_W, 140e3);
  EXPECT_GT(r->rack_cooling.flow_L_per_min, 0);
}

TEST(ServingPower, ARackOverItsShelvesIsCappedAndSaysWhatItCosts) {
  // A GB300 NVL72 with 12 of its 48 PSUs usable (66 kW): serving at full tilt does not fit.
  auto pc = testing::gb300_with_spare_psus(36);
  ASSERT_TRUE(pc) << pc.error().to_string();
  // As a TensorRT engine, so that the GPUs run flat out: in the PyTorch runtime an 8B model's
  // prompt iterations are host-bound (serving_step.h, eager iterations) and leave them idle.
  workload::ServingLayout l = tp_layout(1, 72, compute::DType::kNvfp4);
  l.runtime = workload::ServingRuntime::kTrtEngine;
  Serving s("gb300-nvl72*1", "llama3.1-8b", l, 2048, 128, 720);
  auto in = s.input();
  in.power = &*pc;
  auto r = analyze_serving_power(in, {});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_TRUE(r->rack_limit_binds);
  EXPECT_EQ(r->cap_reason, "rack limit");
  EXPECT_LT(r->cap_W, r->gpu_tgp_W);
  EXPECT_LT(r->serving.tokens_per_s, r->baseline_tokens_per_s);
  EXPECT_NE(r->rack_limit_message.find("rack limit binds"), std::string::npos)
      << r->rack_limit_message;
  EXPECT_NE(r->rack_limit_message.find("tokens/s"), std::string::npos);
  ASSERT_FALSE(r->warnings.empty());
}

// Smoothing of a serving rack (GB300): the grid side never drops below the load (the floored
// GPUs, then ramp-limited), moves at most by the ramp limits, costs the floor's energy, and is
// refused on a system without it.
TEST(ServingPower, SmoothingHoldsTheFloorAndTheRampsAndSaysWhatItCosts) {
  Serving s("gb300-nvl72*1", "llama3.1-8b", tp_layout(1, 72, compute::DType::kNvfp4), 2048, 128,
            720);
  ServingPowerOptions o;
  o.smoothing = SmoothingRequest{};
  auto r = analyze_serving_power(s.input(), o);
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_TRUE(r->smoothing.enabled);
  const auto& S = r->smoothing;
  const Waveform* raw = nullptr;
  const Waveform* smooth = nullptr;
  for (const auto& w : r->waveforms) {
    if (w.name == "rack (instances)") raw = &w;
    if (w.name == "rack (instances), smoothed") smooth = &w;
  }
  ASSERT_TRUE(raw && smooth);
  ASSERT_EQ(raw->power_W.size(), smooth->power_W.size());
  for (size_t b = 0; b < raw->power_W.size(); ++b) {
    EXPECT_GE(smooth->power_W[b], raw->power_W[b] * (1 - 1e-9)) << "bin " << b;
  }
  // Per bin, the grid side moves at most the ramp limits x 72 GPUs x dt (DC); the AC waveform
  // adds the PSU curve's slope (< 1 / 0.9).
  const double dt = smooth->dt_s;
  for (size_t b = 1; b < smooth->power_W.size(); ++b) {
    const double d = smooth->power_W[b] - smooth->power_W[b - 1];
    EXPECT_LE(d, S.settings.ramp_up_W_per_s * 72 * dt / 0.9 + 1e-6) << "bin " << b;
    EXPECT_GE(d, -S.settings.ramp_down_W_per_s * 72 * dt / 0.9 - 1e-6) << "bin " << b;
  }
  // The floor (60% of 1,400 W) lifts the GPUs' low phases: energy spent, and the grid pays it.
  EXPECT_GT(S.floor_burn_J, 0);
  EXPECT_GT(S.extra_energy_J, S.floor_burn_J - S.unserved_J);
  EXPECT_GE(S.swing_reduction, 0);
  EXPECT_GT(S.storage_J, 0);
  // No smoothing asked: no smoothed waveform.
  auto plain = analyze_serving_power(s.input(), {});
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->smoothing.enabled);
  EXPECT_EQ(plain->waveforms.size() + 1, r->waveforms.size());
  // A system without smoothing refuses it.
  Serving h("hgx-h200*1", "llama3.1-8b", tp_layout(1, 8, compute::DType::kFp8), 512, 64, 50);
  auto e = analyze_serving_power(h.input(), o);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("has no power smoothing"), std::string::npos);
}

TEST(ServingPower, BadSettingsAreErrors) {
  Serving s("hgx-h200*1", "llama3.1-8b", tp_layout(1, 8, compute::DType::kFp8), 512, 64, 50);
  ServingPowerOptions o;
  o.gpu.cap = base::watts(50);
  auto r = analyze_serving_power(s.input(), o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("outside the settable range"), std::string::npos);
  o = {};
  o.cooling.pue = 0.9;
  r = analyze_serving_power(s.input(), o);
  ASSERT_FALSE(r);
  o = {};
  o.resolution_s = 0;
  EXPECT_FALSE(analyze_serving_power(s.input(), o));
}

}  // namespace
}  // namespace clustertwin::power
