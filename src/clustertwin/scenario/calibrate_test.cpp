#include "clustertwin/scenario/calibrate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "clustertwin/base/file.h"
#include "clustertwin/calibration/step_fit.h"
#include "clustertwin/execution/training.h"
#include "clustertwin/scenario/goodput.h"
#include "clustertwin/scenario/serving.h"
#include "clustertwin/scenario/training.h"
#include "clustertwin/scheduler/speed.h"

namespace clustertwin::scenario {
namespace {

namespace fs = std::filesystem;

TEST(CalibrateWords, EachDoorWritesItsWordForCalibratesOwnSettings) {
  const std::string m = "{builtin} collectives: no file 'h900' in the recipe; see {only}";
  EXPECT_EQ(render(m, calibrate_words(), Door::kCli),
            "--builtin collectives: no file 'h900' in the recipe; see --only");
  EXPECT_EQ(render(m, calibrate_words(), Door::kFile),
            "builtin collectives: no file 'h900' in the recipe; see only");
  EXPECT_EQ(render("{out_dir}", calibrate_words(), Door::kCli), "--out-dir");
}

TEST(CalibrateWords, TheProfileListNamesTheFieldThatPicksOne) {
  const std::string text = profile_list_text(
      {{.name = "h100", .gpus = {"h100", "h800"}, .measured_on = "DGX H100"}, {.name = "b200"}});
  EXPECT_EQ(text,
            "Built-in calibration profiles (catalog/collectives/; pick one with {calibration} "
            "NAME):\n  h100  GPUs: h100, h800  measured on: DGX H100\n  b200  GPUs: \n");
  // A profile's serving step constants go on a line of their own under it.
  EXPECT_EQ(profile_list_text({{.name = "h200", .gpus = {"h200"}, .serving = "tp_overlap 0.45"}}),
            "Built-in calibration profiles (catalog/collectives/; pick one with {calibration} "
            "NAME):\n  h200  GPUs: h200\n      serving: tp_overlap 0.45\n");
}

// Kernel tables through `--calibration` (issue 16): the H100 BF16 GEMM table a user would
// measure, made by the compute model's own equation t = t0 + ideal / r with a known efficiency
// r(m, n, k) (not the catalog's) and +-2% noise, is fitted by `calibrate` into a profile; the
// compute model that train (resolve_training), search, serve (prepare_serving) and goodput
// (SpeedModel) then run reproduces the true kernel times within the noise, and without the
// profile (the catalog's grid) it does not.
constexpr double kPeak = 989e12, kHbm = 3.35e12, kT0 = 4e-6, kNoise = 0.02;
double true_r(double m, double n, double k) {
  auto s = [](double x) { return x / (x + 512.0); };
  return 0.6 * s(m) * s(n) * s(k) + 0.005;
}
double true_time(double m, double n, double k) {
  const double ideal =
      std::max(2.0 * m * n * k / kPeak, (2.0 * n * k + 2.0 * m * k + 2.0 * m * n) / kHbm);
  return kT0 + ideal / true_r(m, n, k);
}
/// A fixed +-kNoise pattern (SplitMix64: the same bytes on every platform).
double noise(uint64_t i) {
  uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return kNoise * (2.0 * static_cast<double>(z >> 11) / 9007199254740992.0 - 1.0);
}
const std::vector<int> kMs = {1, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
// Power-of-two n and k are fitted (the grid lines), 768 and 3072 held out between them.
const std::vector<int> kNK = {32, 128, 512, 768, 1024, 2048, 3072, 4096, 8192, 16384, 65536};

struct KernelRoundTrip {
  fs::path dir;
  std::string profile;
  KernelRoundTrip() {
    dir = fs::temp_directory_path() / ("ct-kernel-roundtrip-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream csv(dir / "gemm_bfloat16.csv");
    csv << "m,n,k,latency\n";
    csv.precision(10);
    uint64_t i = 0;
    for (int m : kMs)
      for (int n : kNK)
        for (int k : kNK)
          csv << m << "," << n << "," << k << "," << 1e3 * true_time(m, n, k) * (1 + noise(i++))
              << "\n";
    csv.close();
    profile = (dir / "kernels.yaml").string();
  }
  ~KernelRoundTrip() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

/// |predicted / true - 1| at the table's shapes: the largest on the fitted grid lines, the
/// median held out.
struct KernelErrors {
  double fitted_max = 0, held_out_median = 0, all_median = 0;
};
KernelErrors kernel_errors(const compute::ComputeModel& cm) {
  std::vector<double> held, all;
  KernelErrors e;
  for (int m : kMs)
    for (int n : kNK)
      for (int k : kNK) {
        const double t = cm.gemm({.m = m, .n = n, .k = k}, compute::DType::kBf16).base();
        const double err = std::abs(t / true_time(m, n, k) - 1);
        all.push_back(err);
        if (n == 768 || n == 3072 || k == 768 || k == 3072) {
          held.push_back(err);
        } else {
          e.fitted_max = std::max(e.fitted_max, err);
        }
      }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  e.held_out_median = median(held);
  e.all_median = median(all);
  return e;
}

TEST(CalibrateKernels, AProfileOfKernelTablesRunsInEveryVerbThatRunsTheComputeModel) {
  KernelRoundTrip rt;
  Environment env;
  std::ostringstream out;
  auto run = run_calibrate(env,
                           {.cluster = "hgx-h100*1",
                            .stack = "round-trip",
                            .files = {(rt.dir / "gemm_bfloat16.csv").string()},
                            .profile_path = rt.profile},
                           out, nullptr);
  ASSERT_TRUE(run) << run.error().to_string();
  ASSERT_TRUE(base::write_file_atomic(rt.profile, run->profile));
  EXPECT_NE(run->profile.find("kind: compute"), std::string::npos);

  TrainingRequest t;
  t.cluster = "hgx-h100*1";
  t.model = "llama3.1-8b";
  t.tp = 8;
  auto plain = resolve_training(env, t);
  ASSERT_TRUE(plain) << plain.error().to_string();
  const KernelErrors before = kernel_errors(*(*plain)->compute);
  EXPECT_GT(before.all_median, 0.10) << "the catalog's grid must not already be the truth";

  t.calibration = rt.profile;
  auto fitted = resolve_training(env, t);
  ASSERT_TRUE(fitted) << fitted.error().to_string();
  const KernelErrors after = kernel_errors(*(*fitted)->compute);
  std::cout << "|predicted / true - 1|: catalog median " << before.all_median
            << "; with the profile: largest at the fitted shapes " << after.fitted_max
            << ", median held out " << after.held_out_median << "\n";
  // The fitted grid lines hold each noisy measurement (3-digit efficiencies: +0.5%).
  EXPECT_LT(after.fitted_max, kNoise + 0.006);
  EXPECT_LT(after.held_out_median, kNoise);
  EXPECT_NE((*fitted)->compute_note.find("gemm bf16"), std::string::npos);
  // The catalog's other tables stay (the profile has only GEMM BF16).
  EXPECT_EQ((*fitted)->compute->table_names(), (*plain)->compute->table_names());
  // The step runs it: the model's own GEMMs are slower at r ~0.6 than on the catalog's grid.
  auto s0 = execution::simulate_training_step((*plain)->setup);
  auto s1 = execution::simulate_training_step((*fitted)->setup);
  ASSERT_TRUE(s0 && s1);
  EXPECT_GT(s1->step_time_s, 1.05 * s0->step_time_s);

  // search resolves through the same function.
  TrainingRequest q;
  q.cluster = "hgx-h100*1";
  q.model = "llama3.1-8b";
  q.calibration = rt.profile;
  auto searched = resolve_training_search(env, q);
  ASSERT_TRUE(searched) << searched.error().to_string();
  EXPECT_LT(kernel_errors(*(*searched)->compute).fitted_max, kNoise + 0.006);

  // goodput's scheduler prices steps with the job's compute model.
  scheduler::SpeedModel speed((*fitted)->cluster->catalog, (*fitted)->cluster->topo);
  scheduler::TrainingWork work{.model = "llama3.1-8b", .layout = (*fitted)->layout};
  auto id = speed.add(work, 8);
  ASSERT_TRUE(id) << id.error().to_string();
  const double catalog_step = speed.best_step_s(*id);
  speed.set_compute(*(*fitted)->compute);
  EXPECT_GT(speed.best_step_s(*id), 1.05 * catalog_step);

  // serve: the same tables under the serving step model.
  ServingRequest v;
  v.cluster = "hgx-h100*1";
  v.gpus = 1;
  v.model = "llama3.1-8b";
  v.precision = "bf16";
  v.tp = 1;
  v.scenario = "offline";
  v.isl = 256;
  v.osl = 32;
  v.calibration = rt.profile;
  auto served = prepare_serving(env, v);
  ASSERT_TRUE(served) << served.error().to_string();
  EXPECT_LT(kernel_errors(*(*served)->compute).fitted_max, kNoise + 0.006);
  EXPECT_NE((*served)->notes.back().find("fitted to measured kernel tables"), std::string::npos);

  // Another GPU's cluster refuses it, naming the field and the profile.
  t.cluster = "hgx-b200*1";
  auto other = resolve_training(env, t);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("{calibration} " + rt.profile +
                                       " fitted the compute model on h100; this cluster's GPU "
                                       "is b200"),
            std::string::npos)
      << other.error().message;
}

TEST(CalibrateKernels, ABadComputeMappingInAProfileIsAnErrorAtItsLine) {
  KernelRoundTrip rt;
  Environment env;
  std::ostringstream out;
  auto run = run_calibrate(env,
                           {.cluster = "hgx-h100*1",
                            .files = {(rt.dir / "gemm_bfloat16.csv").string()},
                            .profile_path = rt.profile},
                           out, nullptr);
  ASSERT_TRUE(run) << run.error().to_string();
  std::string text = run->profile;
  const auto at = text.find("        - \"m=1 n=32 | ");
  ASSERT_NE(at, std::string::npos);
  text.replace(text.find('|', at) + 2, 1, "x");
  ASSERT_TRUE(base::write_file_atomic(rt.profile, text));
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
  TrainingRequest t;
  t.cluster = "hgx-h100*1";
  t.model = "llama3.1-8b";
  t.tp = 8;
  t.calibration = rt.profile;
  auto bad = resolve_training(env, t);
  ASSERT_FALSE(bad);
  // The first row of the GEMM grid: the reader names the list's key, one line above it.
  EXPECT_NE(bad.error().to_string().find(rt.profile + ":" + std::to_string(line - 1) +
                                         ": compute.gemm.bf16.efficiency: row 'm=1 n=32': "
                                         "expected efficiencies in [1e-05, 2]"),
            std::string::npos)
      << bad.error().to_string();
}

// A step-time profile's per-iteration host time (issue 16): goodput's scheduler prices every
// step with it, as train does, on top of the compute-time scale.
TEST(CalibrateSteps, GoodputRunsTheProfilesHostTime) {
  KernelRoundTrip rt;  // for its folder
  {
    std::ofstream p(rt.profile);
    p << "collectives:\n  name: host\n  gpus: [h100]\ntraining:\n  gpu: h100\n"
         "  compute_scale: 1\n  host_time_s: 0.5\n";
  }
  TrainingRequest t;
  t.cluster = "hgx-h100*2";
  t.model = "llama3.1-8b";
  t.tp = 8;
  GoodputSettings g;
  g.days = 1;
  g.no_sweep = true;
  auto plain = run_goodput(Environment{}, t, g);
  ASSERT_TRUE(plain) << plain.error().to_string();
  t.calibration = rt.profile;
  auto fitted = run_goodput(Environment{}, t, g);
  ASSERT_TRUE(fitted) << fitted.error().to_string();
  const double before = plain->json["step_time_s"].get<double>();
  const double after = fitted->json["step_time_s"].get<double>();
  EXPECT_NEAR(after - before, 0.5, 1e-5) << before << " -> " << after;
  EXPECT_NE(fitted->text.find("per-iteration host time 0.5 s fitted to measured steps"),
            std::string::npos)
      << fitted->text;
  // Kept when the overhead is given: the two were fitted together, the host time is no part
  // of it.
  t.overhead = 0.1;
  auto given = run_goodput(Environment{}, t, g);
  ASSERT_TRUE(given) << given.error().to_string();
  t.calibration.clear();
  auto given_plain = run_goodput(Environment{}, t, g);
  ASSERT_TRUE(given_plain) << given_plain.error().to_string();
  EXPECT_NEAR(
      given->json["step_time_s"].get<double>() - given_plain->json["step_time_s"].get<double>(),
      0.5, 1e-5);
}

// The step model's two constants through a user's step-time fit (issue 16): step times the
// training model makes at a known compute scale, host time, FP8 GEMM overhead and host time per
// expert GEMM (none of them the catalog's), with +-1% noise, on BF16 and FP8 runs of a dense
// model and runs of a MoE model, are fitted by `calibrate` into a profile; `train
// --calibration` then runs the fitted constants (through TrainingCalibration::apply) and
// reproduces the true steps, which the catalog's constants do not.
struct StepRun {
  std::string model, precision;
  int tp = 1, pp = 1, ep = 1;
  int64_t micro_batch = 1, global_batch = 0, seq_len = 0;
};
constexpr double kScale = 1.12, kHost = 0.04, kFp8 = 0.35, kPerExpert = 250e-6;
constexpr const char* kCluster = "hgx-h100*2";

TrainingRequest step_request(const StepRun& r) {
  TrainingRequest t;
  t.cluster = kCluster;
  t.model = r.model;
  t.gpus = 16;
  t.tp = r.tp;
  t.pp = r.pp;
  t.ep = r.ep;
  t.micro_batch = r.micro_batch;
  t.global_batch = r.global_batch;
  t.seq_len = r.seq_len;
  t.precision = r.precision;
  return t;
}

/// The run's step under the training model at the true values.
double true_step(const StepRun& r) {
  auto t = step_request(r);
  t.overhead = kScale - 1;
  auto job = resolve_training(Environment{}, t);
  EXPECT_TRUE(job) << job.error().to_string();
  if (!job) return 0;
  (*job)->setup.host_time = base::seconds(kHost);
  (*job)->setup.fp8_overhead = kFp8;
  (*job)->setup.host_per_expert_gemm = base::seconds(kPerExpert);
  auto s = execution::simulate_training_step((*job)->setup);
  EXPECT_TRUE(s) << s.error().to_string();
  return s ? s->step_time_s : 0;
}

struct StepRoundTrip {
  fs::path dir;
  std::string csv, profile;
  explicit StepRoundTrip(const std::vector<StepRun>& runs) {
    dir = fs::temp_directory_path() / ("ct-step-roundtrip-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    csv = (dir / "steps.csv").string();
    profile = (dir / "steps.yaml").string();
    std::ofstream f(csv);
    f << "gpus,tp,pp,ep,micro_batch,global_batch,seq_len,model,precision,step_time_s\n";
    f.precision(10);
    uint64_t i = 0;
    for (const auto& r : runs) {
      f << 16 << "," << r.tp << "," << r.pp << "," << r.ep << "," << r.micro_batch << ","
        << r.global_batch << "," << r.seq_len << "," << r.model << "," << r.precision << ","
        << true_step(r) * (1 + 0.5 * noise(i++)) << "\n";
    }
  }
  ~StepRoundTrip() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  /// The written profile as the job builders read it (collective::read_profile_source).
  [[nodiscard]] collective::ProfileSource source() const {
    std::ifstream in(profile, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return {.name = profile, .text = text.str()};
  }
  [[nodiscard]] base::Result<CalibrateRun> calibrate() const {
    CalibrateRequest c;
    c.cluster = kCluster;
    c.files = {csv};
    c.folds = 0;
    c.profile_path = profile;
    std::ostringstream out;
    auto run = run_calibrate(Environment{}, c, out, nullptr);
    std::cout << out.str();
    if (run) {
      std::ofstream(profile) << run->profile;
    }
    return run;
  }
};

const std::vector<StepRun> kDense = {
    {.model = "llama3.1-8b", .precision = "bf16", .tp = 1, .global_batch = 64, .seq_len = 4096},
    {.model = "llama3.1-8b", .precision = "bf16", .tp = 2, .global_batch = 16, .seq_len = 1024},
    {.model = "llama3.1-8b", .precision = "fp8", .tp = 1, .global_batch = 64, .seq_len = 4096},
    {.model = "llama3.1-8b", .precision = "fp8", .tp = 4, .global_batch = 32, .seq_len = 8192}};
const std::vector<StepRun> kMoe = {{.model = "mixtral-8x7b",
                                    .precision = "bf16",
                                    .pp = 4,
                                    .ep = 4,
                                    .global_batch = 16,
                                    .seq_len = 1024},
                                   {.model = "mixtral-8x7b",
                                    .precision = "bf16",
                                    .pp = 2,
                                    .ep = 8,
                                    .global_batch = 32,
                                    .seq_len = 2048}};

TEST(CalibrateSteps, TheTwoStepConstantsRoundTripThroughAProfileIntoTrain) {
  std::vector<StepRun> runs = kDense;
  runs.insert(runs.end(), kMoe.begin(), kMoe.end());
  StepRoundTrip rt(runs);
  auto run = rt.calibrate();
  ASSERT_TRUE(run) << run.error().to_string();
  auto tc = calibration::training_calibration_of(rt.source(), "h100", "{calibration}");
  ASSERT_TRUE(tc) << tc.error().to_string();
  ASSERT_TRUE(*tc) << run->profile;
  ASSERT_TRUE((*tc)->fp8_overhead) << run->profile;
  ASSERT_TRUE((*tc)->host_per_expert_gemm_s) << run->profile;
  EXPECT_NEAR(*(*tc)->fp8_overhead, kFp8, 0.1 * kFp8) << run->profile;
  EXPECT_NEAR(*(*tc)->host_per_expert_gemm_s, kPerExpert, 0.1 * kPerExpert) << run->profile;
  EXPECT_NEAR((*tc)->compute_scale, kScale, 0.03 * kScale) << run->profile;
  EXPECT_NE((*tc)->fp8_overhead_source.find("steps.csv:"), std::string::npos);

  // train --calibration runs them: every run's step within the noise of the truth; without the
  // profile's constants (the scale and host time alone) the FP8 and MoE runs are off.
  for (const auto& r : runs) {
    auto t = step_request(r);
    t.calibration = rt.profile;
    auto job = resolve_training(Environment{}, t);
    ASSERT_TRUE(job) << job.error().to_string();
    EXPECT_DOUBLE_EQ((*job)->setup.fp8_overhead, *(*tc)->fp8_overhead);
    EXPECT_DOUBLE_EQ((*job)->setup.host_per_expert_gemm.base(), *(*tc)->host_per_expert_gemm_s);
    auto trained = run_training(Environment{}, t, "");
    ASSERT_TRUE(trained) << trained.error().to_string();
    const double truth = true_step(r);
    EXPECT_NEAR(trained->json["step_time_s"].get<double>(), truth, 0.02 * truth)
        << r.model << " " << r.precision << " tp" << r.tp << " ep" << r.ep;
    EXPECT_NE(trained->text.find("FP8 GEMM overhead"), std::string::npos) << trained->text;
  }
  double catalog_err = 0;
  for (const auto& r : kDense) {
    if (r.precision != "fp8") continue;
    auto t = step_request(r);
    t.overhead = (*tc)->compute_scale - 1;
    auto plain = run_training(Environment{}, t, "");
    ASSERT_TRUE(plain) << plain.error().to_string();
    catalog_err = std::max(catalog_err,
                           std::abs(plain->json["step_time_s"].get<double>() / true_step(r) - 1));
  }
  EXPECT_GT(catalog_err, 0.04);

  // goodput's scheduler prices its steps with them too: the FP8 run slower with the profile than
  // with the same profile less its two constants (training.yaml's then).
  std::string stripped;
  {
    std::istringstream in(run->profile);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("  fp8_overhead:", 0) != 0 && line.rfind("  host_per_expert_gemm:", 0) != 0)
        stripped += line + "\n";
    }
  }
  const std::string without = (rt.dir / "without.yaml").string();
  std::ofstream(without) << stripped;
  auto t = step_request(kDense[2]);
  GoodputSettings g;
  g.days = 1;
  g.no_sweep = true;
  t.calibration = rt.profile;
  auto with_constants = run_goodput(Environment{}, t, g);
  ASSERT_TRUE(with_constants) << with_constants.error().to_string();
  t.calibration = without;
  auto catalog_constants = run_goodput(Environment{}, t, g);
  ASSERT_TRUE(catalog_constants) << catalog_constants.error().to_string();
  EXPECT_GT(with_constants->json["step_time_s"].get<double>(),
            1.04 * catalog_constants->json["step_time_s"].get<double>());
}

// All runs FP8 of one shape: the FP8 overhead moves every step as the compute scale does, so
// the fit says it sees the two only together, keeps the catalog's value and writes none; a
// dense-only fit offers no host time per expert GEMM at all.
TEST(CalibrateSteps, FP8OfOneShapeIsNotConstrainedApartFromTheScale) {
  std::vector<StepRun> runs;
  for (int64_t gb : {16, 32, 64, 128})
    runs.push_back(
        {.model = "llama3.1-8b", .precision = "fp8", .tp = 2, .global_batch = gb, .seq_len = 2048});
  StepRoundTrip rt(runs);
  auto run = rt.calibrate();
  ASSERT_TRUE(run) << run.error().to_string();
  EXPECT_NE(run->profile.find("name: training.fp8_overhead"), std::string::npos) << run->profile;
  EXPECT_NE(run->profile.find("only together with training.compute_scale"), std::string::npos)
      << run->profile;
  EXPECT_EQ(run->profile.find("host_per_expert_gemm"), std::string::npos) << run->profile;
  auto tc = calibration::training_calibration_of(rt.source(), "h100", "{calibration}");
  ASSERT_TRUE(tc && *tc) << run->profile;
  EXPECT_FALSE((*tc)->fp8_overhead) << run->profile;
  EXPECT_FALSE((*tc)->host_per_expert_gemm_s);
}

}  // namespace
}  // namespace clustertwin::scenario
