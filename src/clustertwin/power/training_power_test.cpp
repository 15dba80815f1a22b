#include "clustertwin/power/training_power.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "clustertwin/power/test_fixture.h"

namespace clustertwin::power {
namespace {

using testing::catalog;
using testing::Job;
using testing::power_catalog;

workload::TrainingLayout llama8b_layout() {
  return workload::TrainingLayout{
      .tp = 2, .pp = 2, .dp = 36, .micro_batch = 1, .global_batch = 288, .seq_len = 4096};
}

const Job& gb300_job() {
  static const Job j("gb300-nvl72*2", "llama3.1-8b");
  return j;
}

TEST(TrainingPower, FiguresAreConsistentAndEnergyIsTheIntegralOfPower) {
  const auto& j = gb300_job();
  TrainingPowerOptions o;
  o.window = {.duration_s = 0, .resolution_s = 0.01, .start_s = 0, .init_s = 0};
  auto r = analyze_training_power(j.input(llama8b_layout()), o);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_GT(r->gpu_avg_W, r->gpu_idle_W);
  EXPECT_LE(r->gpu_peak_W, 0.98 * 1400 + 1e-6);
  EXPECT_GE(r->gpu_min_W, r->gpu_idle_W);
  EXPECT_GT(r->gpu_compute_W, r->gpu_memory_bound_W);
  EXPECT_LE(r->cluster_min_W, r->cluster_avg_W);
  EXPECT_LE(r->cluster_avg_W, r->cluster_peak_W);
  EXPECT_LT(r->cluster_peak_W, r->cluster_nameplate_W / 0.9);
  EXPECT_EQ(r->racks, 2);
  EXPECT_DOUBLE_EQ(r->compute_slowdown, 1.0);
  // GPU energy of a step = the integral of each stage's timeline x its GPUs.
  double e = 0;
  for (const auto& tl : r->stage_timelines) {
    double sum = 0;
    for (const auto& s : tl.segments()) sum += s.power_W * (s.t1_s - s.t0_s);
    EXPECT_NEAR(tl.period_s(), r->step_time_s, 1e-9);
    e += sum * 144.0 / 2;
  }
  EXPECT_NEAR(e, r->gpu_energy_per_step_J, 1e-9 * e);
  // The cluster waveform's energy over whole steps = steps x the step's energy (the window
  // starts training at 0; stop is where the window ends minus 20 s of idle).
  const auto& w = r->waveforms;
  const auto it =
      std::find_if(w.begin(), w.end(), [](const Waveform& x) { return x.name == "cluster IT"; });
  ASSERT_NE(it, w.end());
  const auto& g = w.front();
  ASSERT_EQ(g.name, "gpu (stage 0)");
  const double steps = std::floor(r->window.stop_s / r->step_time_s);
  const double t_end = steps * r->step_time_s;
  // GPU: exact up to the bin that straddles the last step's end.
  double gpu_e = 0, wave_e = 0;
  for (size_t i = 0; static_cast<double>(i + 1) * g.dt_s <= t_end + 1e-12; ++i) {
    gpu_e += g.power_W[i] * g.dt_s;
    wave_e += it->power_W[i] * it->dt_s;
  }
  const double covered = std::floor(t_end / g.dt_s + 1e-9) * g.dt_s;
  const double gpu_expect = r->stage_timelines[0].energy_J(covered);
  EXPECT_NEAR(gpu_e, gpu_expect, 1e-9 * gpu_expect);
  // Cluster: the PSU efficiency is applied to 10 ms averages instead of every interval, so the
  // waveform's energy differs from the step's by the curve's curvature only (< 0.1%).
  const double expect = covered / r->step_time_s * r->cluster_avg_W * r->step_time_s;
  EXPECT_NEAR(wave_e, expect, 1e-3 * expect);
  EXPECT_GT(r->facility_energy_per_token_J, r->energy_per_token_J);
  EXPECT_NEAR(r->facility_energy_per_step_J, r->energy_per_step_J * r->facility.pue, 1e-6);
}

// The timelines are built in one pass over the task records when execution recorded them in
// completion order (each stage's tasks in start order), and from a sort by stage and start
// otherwise: both give the same result, to the bit.
TEST(TrainingPower, TaskRecordOrderDoesNotMatter) {
  const auto& j = gb300_job();
  const auto in = j.input(llama8b_layout());
  auto step = execution::simulate_training_step(in.setup);
  ASSERT_TRUE(step) << step.error().to_string();
  TrainingPowerOptions o;
  o.waveforms = false;
  auto recorded = in;
  recorded.baseline = &*step;
  auto a = analyze_training_power(recorded, o);
  ASSERT_TRUE(a) << a.error().to_string();
  auto reversed = *step;
  std::reverse(reversed.tasks.begin(), reversed.tasks.end());
  ASSERT_GT(reversed.tasks.size(), 4U);
  auto shuffled_in = in;
  shuffled_in.baseline = &reversed;
  auto b = analyze_training_power(shuffled_in, o);
  ASSERT_TRUE(b) << b.error().to_string();
  EXPECT_EQ(a->gpu_avg_W, b->gpu_avg_W);
  EXPECT_EQ(a->gpu_peak_W, b->gpu_peak_W);
  EXPECT_EQ(a->cluster_avg_W, b->cluster_avg_W);
  EXPECT_EQ(a->cluster_peak_W, b->cluster_peak_W);
  EXPECT_EQ(a->cluster_min_W, b->cluster_min_W);
  EXPECT_EQ(a->rack_peak_W, b->rack_peak_W);
  EXPECT_EQ(a->energy_per_step_J, b->energy_per_step_J);
  ASSERT_EQ(a->stage_timelines.size(), b->stage_timelines.size());
  for (size_t s = 0; s < a->stage_timelines.size(); ++s) {
    EXPECT_EQ(a->stage_timelines[s].segments().size(), b->stage_timelines[s].segments().size());
    EXPECT_EQ(a->stage_timelines[s].energy_per_period_J(),
              b->stage_timelines[s].energy_per_period_J());
  }
  // The cluster's peak is the highest of its values between segment ends: no higher than the
  // sum of the racks' peaks and the fabric, and at least the average.
  double racks_peak = 0;
  for (const auto& c : a->rack_classes) racks_peak += c.count * c.peak_ac_W;
  EXPECT_LE(a->cluster_peak_W, racks_peak + a->fabric.ac_W + 1e-6);
  EXPECT_GE(a->cluster_peak_W, a->cluster_avg_W);
}

TEST(TrainingPower, RackClassesHoldTheStagesTheRankOrderPutsThere) {
  static const Job j("gb300-nvl72*4", "llama3.1-8b");
  // 216 GPUs from GPU 36: racks straddle stages and the job's ends.
  workload::TrainingLayout l{
      .tp = 2, .pp = 4, .dp = 27, .micro_batch = 1, .global_batch = 108, .seq_len = 2048};
  auto in = j.input(l);
  in.setup.first_gpu = 36;
  TrainingPowerOptions o;
  o.waveforms = false;
  auto r = analyze_training_power(in, o);
  ASSERT_TRUE(r) << r.error().to_string();
  std::map<std::vector<int>, int> expect;
  for (int rack = 0; rack < 4; ++rack) {
    std::vector<int> stages(4, 0);
    for (int g = rack * 72; g < rack * 72 + 72; ++g) {
      const int rank = g - 36;
      if (rank >= 0 && rank < 216) ++stages[static_cast<size_t>(workload::coord_of(l, rank).pp)];
    }
    ++expect[stages];
  }
  std::map<std::vector<int>, int> got;
  int racks = 0;
  for (const auto& c : r->rack_classes) {
    got[c.stage_gpus] += c.count;
    racks += c.count;
    EXPECT_EQ(c.job_gpus() + c.idle_gpus, 72);
  }
  EXPECT_EQ(racks, 4);
  EXPECT_EQ(got, expect);
}

TEST(TrainingPower, CapSlowsTheStepThroughFeedback) {
  const auto& j = gb300_job();
  TrainingPowerOptions o;
  o.waveforms = false;
  o.gpu.cap = base::watts(800);
  auto r = analyze_training_power(j.input(llama8b_layout()), o);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_GT(r->compute_slowdown, 1.05);
  EXPECT_GT(r->step_time_s, r->baseline_step_time_s * 1.03);
  EXPECT_LE(r->gpu_peak_W, 0.98 * 800 + 1e-6);
  EXPECT_EQ(r->cap_reason, "power cap (asked)");
  auto slow = training_compute_slowdown(catalog(), power_catalog(), j.setup(llama8b_layout()),
                                        *j.gpu, o.gpu);
  ASSERT_TRUE(slow);
  EXPECT_DOUBLE_EQ(*slow, r->compute_slowdown);
  // No feedback: the same step time.
  o.feedback = false;
  auto nf = analyze_training_power(j.input(llama8b_layout()), o);
  ASSERT_TRUE(nf);
  EXPECT_DOUBLE_EQ(nf->step_time_s, nf->baseline_step_time_s);
}

TEST(TrainingPower, NodePolicyCapsTheGpus) {
  const auto& j = gb300_job();
  TrainingPowerOptions o;
  o.waveforms = false;
  o.node_policy = "GB300-Med";  // 3,200 W per 4-GPU node
  auto r = analyze_training_power(j.input(llama8b_layout()), o);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_DOUBLE_EQ(r->cap_W, 800);
  EXPECT_NE(r->cap_reason.find("GB300-Med"), std::string::npos);
  o.node_policy = "GB300-Mid";
  auto bad = analyze_training_power(j.input(llama8b_layout()), o);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("GB300-Med"), std::string::npos) << bad.error().message;
}

TEST(TrainingPower, ARackOverItsShelvesIsCappedAndSaysWhatItCosts) {
  // The same rack with six more PSUs held as spares: 18 x 5.5 kW = 99 kW usable.
  auto pc = testing::gb300_with_spare_psus(30);
  ASSERT_TRUE(pc) << pc.error().to_string();
  const auto& j = gb300_job();
  auto in = j.input(llama8b_layout());
  in.power = &*pc;
  TrainingPowerOptions o;
  o.waveforms = false;
  auto r = analyze_training_power(in, o);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_TRUE(r->rack_limit_binds);
  EXPECT_EQ(r->cap_reason, "rack limit");
  EXPECT_LT(r->cap_W, 1400);
  EXPECT_GT(r->step_time_s, r->baseline_step_time_s);
  EXPECT_LE(r->rack_peak.dc_W, 99e3 * (1 + 1e-6));
  EXPECT_NE(r->rack_limit_message.find("rack limit binds"), std::string::npos)
      << r->rack_limit_message;
  ASSERT_FALSE(r->warnings.empty());
}

TEST(TrainingPower, SmoothingLiftsTheValleysAndAccountsForTheEnergy) {
  const auto& j = gb300_job();
  TrainingPowerOptions o;
  o.smoothing =
      *parse_smoothing("floor=0.8,ramp-up=1kW/s,ramp-down=200W/s,hysteresis=1s,storage=65J");
  auto r = analyze_training_power(j.input(llama8b_layout()), o);
  ASSERT_TRUE(r) << r.error().to_string();
  const auto& S = r->smoothing;
  EXPECT_TRUE(S.enabled);
  EXPECT_DOUBLE_EQ(S.settings.floor, 0.8);
  EXPECT_DOUBLE_EQ(S.settings.ramp_up_W_per_s, 1000);
  EXPECT_GT(S.floor_burn_J, 0);
  EXPECT_GE(S.unserved_J, 0);
  EXPECT_GT(S.swing_reduction, 0.0);
  EXPECT_GT(S.extra_energy_J, 0);
  ASSERT_GE(r->waveforms.size(), 7u);
  // The smoothed cluster never changes faster than the sum of its racks' limits (plus the PSU
  // efficiency's slope, bounded here by 1.1x).
  const auto& cs = *std::find_if(r->waveforms.begin(), r->waveforms.end(), [](const Waveform& w) {
    return w.name == "cluster IT, smoothed";
  });
  const double limit_up = 1000.0 * 144 / 0.9;
  EXPECT_LE(cs.stats.max_ramp_up_W_per_s, 1.1 * limit_up);
}

TEST(TrainingPower, BadInputIsAnError) {
  const auto& j = gb300_job();
  TrainingPowerOptions o;
  o.waveforms = false;
  o.gpu.cap = base::watts(100);
  auto r = analyze_training_power(j.input(llama8b_layout()), o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("settable range"), std::string::npos);
  o = {};
  o.waveforms = false;
  o.cooling.pue = 0.95;
  EXPECT_FALSE(analyze_training_power(j.input(llama8b_layout()), o));
  o = {};
  o.smoothing = SmoothingRequest{.ramp_up_W_per_s = 0.0};
  auto z = analyze_training_power(j.input(llama8b_layout()), o);
  ASSERT_FALSE(z);
  EXPECT_NE(z.error().message.find("ramp"), std::string::npos);
  EXPECT_FALSE(parse_smoothing("floor=high"));
  EXPECT_FALSE(parse_smoothing("flor=0.8"));
  EXPECT_FALSE(parse_smoothing("floor"));
  auto p = parse_smoothing("ramp-up=2kW/s,hysteresis=500ms,storage=1kJ");
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(*p->ramp_up_W_per_s, 2000);
  EXPECT_DOUBLE_EQ(*p->hysteresis_s, 0.5);
  EXPECT_DOUBLE_EQ(*p->storage_per_gpu_J, 1000);
}

// The window's samples are bounded by what a sample costs (kMaxWindowStageSamples over stages
// and rack classes) and in all; the refusal names the resolution that fits. 100,000 s at 10 ms
// ran 45 s and 825 MB (release) before the bound.
TEST(TrainingPower, AWindowBeyondItsSampleBoundIsRefusedWithTheResolutionThatFits) {
  const auto& j = gb300_job();
  TrainingPowerOptions o;
  o.window.duration_s = 100000;
  auto r = analyze_training_power(j.input(llama8b_layout()), o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("got 1e+07: a 100000 s window at 0.01 s"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("use {resolution} 0.05 s or coarser"), std::string::npos)
      << r.error().message;
  o.window.duration_s = 1e6;
  o.window.resolution_s = 10;
  EXPECT_TRUE(analyze_training_power(j.input(llama8b_layout()), o));
  o.window.duration_s = 3e7;
  auto far = analyze_training_power(j.input(llama8b_layout()), o);
  ASSERT_FALSE(far);
  EXPECT_NE(far.error().message.find("use a shorter window ({duration}, {stop})"),
            std::string::npos)
      << far.error().message;
}

TEST(TrainingPower, HopperHasNoSmoothing) {
  static const Job j("hgx-h100*8", "llama3.1-8b");
  TrainingPowerOptions o;
  o.smoothing = SmoothingRequest{};
  auto r = analyze_training_power(
      j.input({.tp = 8, .pp = 1, .dp = 8, .micro_batch = 1, .global_batch = 64, .seq_len = 4096}),
      o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no power smoothing"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace clustertwin::power
