#include "clustertwin/scheduler/synthetic.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "clustertwin/base/number.h"
#include "clustertwin/base/text.h"
#include "clustertwin/scheduler/limits.h"
#include "clustertwin/scheduler/random.h"

namespace clustertwin::scheduler {
namespace {

double secs(Tick t) { return static_cast<double>(t) * 1e-9; }
// A duration drawn or derived inside a run (a repair, a checkpoint interval), held at 40
// years (kMaxDurationS, scheduler/limits.h) so that adding it to any time of a run (at most 250
// years) still fits in a Tick; longer durations do not occur in runs that mean anything.
Tick ticks(double s) { return engine::to_ticks(base::seconds(std::clamp(s, 0.0, kMaxDurationS))); }

struct Clamped {
  double median, sigma, lo, hi;
  double draw(Rng& r) const { return std::clamp(r.lognormal(median, sigma), lo, hi); }
};

double mean_of(const Clamped& d, Rng r) {
  double s = 0;
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) s += d.draw(r);
  return s / kDraws;
}

Tick limit_for(double run_s, Rng& r) {
  const double l = run_s * (1.2 + 1.8 * r.uniform());
  return ticks(std::ceil(l / 600.0) * 600.0);
}

}  // namespace

base::Result<SyntheticSpec> parse_synthetic(std::string_view spec) {
  SyntheticSpec s;
  const size_t colon = spec.find(':');
  s.preset = std::string(spec.substr(0, colon));
  const std::vector<std::string> presets = {"llm", "philly-like"};
  if (std::find(presets.begin(), presets.end(), s.preset) == presets.end()) {
    return base::fail("{synthetic}: unknown preset '" + s.preset + "'" +
                      base::did_you_mean(s.preset, presets) + " (expected llm or philly-like)");
  }
  if (s.preset == "philly-like") {
    s.load = 0.6;
    s.inference = 0;
    s.accounts = 11;
  }
  if (colon == std::string_view::npos) return s;
  std::string_view rest = spec.substr(colon + 1);
  const std::vector<std::string> keys = {"load",     "jobs", "inference", "pretrain",
                                         "finetune", "dev",  "accounts"};
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view kv = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) {
      return base::fail("{synthetic}: expected key=value, got '" + std::string(kv) + "'");
    }
    const std::string key(kv.substr(0, eq));
    const std::string_view val = kv.substr(eq + 1);
    // Counts are integers within the named limits, shares finite numbers (base/number.h).
    const bool count = key == "jobs" || key == "accounts";
    double v = 0;
    if (count) {
      auto iv = base::parse_integer(
          val, {.min = key == "jobs" ? 0 : 1, .max = key == "jobs" ? base::kMaxJobs : 1'000'000});
      if (!iv) return base::fail("{synthetic}: " + key + ": " + iv.error().message);
      v = static_cast<double>(*iv);
    } else {
      auto rv = base::parse_real(val, {.min = 0, .max = 1000});
      if (!rv) return base::fail("{synthetic}: " + key + ": " + rv.error().message);
      v = *rv;
    }
    if (key == "load") {
      s.load = v;
    } else if (key == "jobs") {
      s.jobs = static_cast<int64_t>(v);
    } else if (key == "inference") {
      if (v >= 1) return base::fail("{synthetic}: inference must be a fraction below 1");
      s.inference = v;
    } else if (key == "pretrain") {
      s.pretrain = v;
    } else if (key == "finetune") {
      s.finetune = v;
    } else if (key == "dev") {
      s.dev = v;
    } else if (key == "accounts") {
      s.accounts = std::max(1, static_cast<int>(v));
    } else {
      // did_you_mean lists the known keys itself when none is close.
      return base::fail("{synthetic}: unknown key '" + key + "'" + base::did_you_mean(key, keys));
    }
  }
  return s;
}

base::Result<Workload> generate(const SyntheticSpec& spec, const ClusterModel& c, Tick horizon,
                                uint64_t seed) {
  Workload w;
  const Rng root(seed ^ 0x5ced);
  const double H = secs(horizon);
  if (H <= 0) return base::fail("the horizon must be positive");
  const int64_t G = c.gpus();
  const int gpn = c.gpus_per_node();
  for (int a = 0; a < spec.accounts; ++a) w.account_id("team" + std::to_string(a));
  for (int u = 0; u < spec.accounts * 4; ++u) w.user_id("user" + std::to_string(u));
  // Partitions as LLM clusters run them: interactive development apart from the training queue
  // (so a waiting pretraining gang does not hold up a one-GPU evaluation), serving apart.
  const int part_train = w.partition_id(spec.preset == "philly-like" ? "default" : "train");
  const int part_dev = spec.preset == "philly-like" ? part_train : w.partition_id("dev");
  const int part_serve = spec.preset == "philly-like" ? part_train : w.partition_id("serve");
  auto pick_owner = [&](JobSpec& j, Rng& r) {
    j.account = static_cast<int>(r.below(spec.accounts));
    j.user = j.account * 4 + static_cast<int>(r.below(4));
  };
  const int unit = 64 % gpn == 0 ? 64 : gpn * 16;  // gang unit: 16 trays of 4 GPUs, 8 servers of 8

  struct Class {
    const char* name;
    double share;
    Clamped dur;
    std::vector<int> sizes;
    std::vector<double> weights;
  };
  std::vector<Class> classes;
  double serving_mean = 0;
  if (spec.preset == "philly-like") {
    // Pollux's philly.csv: 76,627 jobs on 1 GPU, 1,818 on 2, 1,870 on 4, 1,643 on 8, 199 on 16,
    // 67 on 32, 6 on 64, 3 on 128; duration median 1,144 s, mean 13,136 s.
    classes.push_back({"batch",
                       1.0,
                       {1144, std::sqrt(2 * std::log(13136.0 / 1144)), 10, 30 * 86400.0},
                       {1, 2, 4, 8, 16, 32, 64, 128},
                       {76627, 1818, 1870, 1643, 199, 67, 6, 3}});
  } else {
    std::vector<int> pre;
    for (int64_t f : {16, 8, 4, 2}) {
      const int64_t g = G / f / unit * unit;
      if (g >= unit) pre.push_back(static_cast<int>(g));
    }
    if (pre.empty()) pre.push_back(static_cast<int>(std::max<int64_t>(gpn, G / unit * unit)));
    classes.push_back({"pretrain",
                       spec.pretrain,
                       {36 * 3600.0, 0.8, 6 * 3600.0, 14 * 86400.0},
                       pre,
                       std::vector<double>(pre.size(), 1.0)});
    std::vector<int> ft;
    for (int g : {8, 16, 32, 64, 128, 256}) {
      if (g <= G / 4 && g >= gpn) ft.push_back(g);
    }
    if (ft.empty()) ft.push_back(gpn);
    classes.push_back({"finetune",
                       spec.finetune,
                       {2 * 3600.0, 1.0, 600, 2 * 86400.0},
                       ft,
                       std::vector<double>(ft.size(), 1.0)});
    classes.push_back(
        {"dev", spec.dev, {600, 1.3, 30, 12 * 3600.0}, {1, 2, 4, 8}, {0.45, 0.2, 0.15, 0.2}});
    serving_mean = spec.inference * 0.7 * static_cast<double>(G);
  }
  // Rates from the offered load.
  std::vector<double> rate(classes.size());
  double total_rate = 0;
  for (size_t k = 0; k < classes.size(); ++k) {
    const auto& cl = classes[k];
    double wsum = 0, gmean = 0;
    for (size_t i = 0; i < cl.sizes.size(); ++i) {
      wsum += cl.weights[i];
      gmean += cl.weights[i] * cl.sizes[i];
    }
    gmean /= wsum;
    const double dmean = mean_of(cl.dur, root.stream(100 + k));
    const double gpu_s = spec.load * cl.share * (static_cast<double>(G) - serving_mean) * H;
    rate[k] = gpu_s / (gmean * dmean) / H;
    total_rate += rate[k];
  }
  if (spec.jobs > 0) {
    const double want = static_cast<double>(spec.jobs) / H;
    const size_t dev = classes.size() - 1;  // the smallest jobs absorb the difference
    const double others = total_rate - rate[dev];
    if (want > others) {
      rate[dev] = want - others;
    } else {
      for (auto& r : rate) r *= want / total_rate;
    }
  }
  // The expected count before drawing any: a load and horizon that would submit billions of
  // jobs are refused here instead of ending in bad_alloc (issue 19).
  double expected_jobs = 0;
  for (double r : rate) expected_jobs += std::max(0.0, r) * H;
  if (!(expected_jobs <= static_cast<double>(base::kMaxJobs))) {
    return base::fail(fmt::format(
        "{{synthetic}}: the stream would submit about {:.3g} jobs over the horizon, more than the "
        "limit of {} (base::kMaxJobs): lower the load or jobs, or shorten {{days}}",
        expected_jobs, base::kMaxJobs));
  }
  for (size_t k = 0; k < classes.size(); ++k) {
    const auto& cl = classes[k];
    Rng r = root.stream(k + 1);
    if (rate[k] <= 0) continue;
    double t = 0;
    while (true) {
      t += r.exponential(1.0 / rate[k]);
      if (t >= H) break;
      JobSpec j;
      j.submit = engine::to_ticks(base::seconds(t));  // t < H: a time of the run
      j.gpus = cl.sizes[r.choose(cl.weights)];
      const double run = cl.dur.draw(r);
      j.work_s = run;
      j.time_limit = limit_for(run, r);
      pick_owner(j, r);
      const std::string name = cl.name;
      j.partition = name == "dev" ? part_dev : part_train;
      if (name == "pretrain") {
        j.kind = JobKind::kPretrain;
        TrainingWork tw;
        const bool big = j.gpus >= 1024 && j.gpus % 128 == 0;
        tw.model = big ? "llama3.1-405b" : "llama3.1-70b";
        auto& l = tw.layout;
        l.tp = 8;
        l.pp = big ? 16 : 4;
        l.seq_len = 8192;
        l.recompute = big ? models::Recompute::kFull : models::Recompute::kSelective;
        l.dp = j.gpus / (l.tp * l.pp);
        l.micro_batch = 1;
        l.global_batch = static_cast<int64_t>(l.dp) * 4 * l.pp;
        j.training = static_cast<int>(w.training.size());
        w.training.push_back(tw);
        j.auto_checkpoint = true;
      } else if (name == "finetune") {
        j.kind = JobKind::kFinetune;
        j.qos = Qos::kLow;
        TrainingWork tw;
        const bool big = j.gpus >= 64;
        tw.model = big ? "llama3.1-70b" : "llama3.1-8b";
        auto& l = tw.layout;
        l.tp = big ? 8 : 1;
        l.pp = big ? 2 : 1;
        l.seq_len = 4096;
        l.recompute = big ? models::Recompute::kSelective : models::Recompute::kNone;
        l.dp = j.gpus / (l.tp * l.pp);
        l.micro_batch = 1;
        l.global_batch = static_cast<int64_t>(l.dp) * 4 * l.pp;
        j.training = static_cast<int>(w.training.size());
        w.training.push_back(tw);
        j.checkpoint.interval = ticks(3600);
      } else {
        j.kind = spec.preset == "philly-like" ? JobKind::kBatch : JobKind::kDev;
      }
      w.jobs.push_back(j);
    }
  }
  // Inference services: replicas of `unit` GPUs following a daily cycle.
  if (spec.inference > 0 && spec.preset == "llm") {
    const int peak = static_cast<int>(spec.inference * static_cast<double>(G) / unit);
    const int trough = static_cast<int>(0.4 * peak);
    const int hours = static_cast<int>(std::ceil(H / 3600.0));
    auto replicas = [&](int h) {
      const double x = std::cos(6.283185307179586 * ((h % 24) - 14) / 24.0);
      return trough + static_cast<int>(std::lround((peak - trough) * (1 + x) / 2));
    };
    Rng r = root.stream(50);
    constexpr int kServices = 4;
    for (int i = 0; i < peak; ++i) {
      int h = 0;
      while (h < hours) {
        if (replicas(h) <= i) {
          ++h;
          continue;
        }
        const int from = h;
        while (h < hours && replicas(h) > i) ++h;
        JobSpec j;
        j.submit = engine::to_ticks(base::seconds(from * 3600.0));
        j.gpus = unit;
        j.work_s = std::min(H, h * 3600.0) - from * 3600.0;
        j.time_limit = ticks(j.work_s);
        j.kind = JobKind::kInference;
        j.partition = part_serve;
        j.qos = Qos::kHigh;
        j.stateless = true;
        j.account = w.account_id("serving-" + std::to_string(i % kServices));
        j.user = w.user_id("serving");
        (void)r;
        w.jobs.push_back(j);
      }
    }
  }
  w.sort_by_submit();
  for (size_t k = 0; k < w.jobs.size(); ++k) w.jobs[k].id = static_cast<int64_t>(k);
  w.description = spec.preset;
  return w;
}

int64_t fit_to_memory(Workload& w, SpeedModel& speed) {
  int64_t changed = 0;
  for (const auto& j : w.jobs) {
    if (j.training < 0) continue;
    auto& tw = w.training[static_cast<size_t>(j.training)];
    bool widened = false;
    while (true) {
      auto id = speed.add(tw, j.gpus);
      if (id) break;
      if (id.error().message.find("does not fit in GPU memory") == std::string::npos) break;
      auto& l = tw.layout;
      const auto fits = [&](int tp, int pp) {
        const int64_t mp = static_cast<int64_t>(tp) * pp * l.cp;
        return mp <= j.gpus && j.gpus % mp == 0;
      };
      if (l.tp < 8 && fits(2 * l.tp, l.pp)) {
        l.tp *= 2;
      } else if (fits(l.tp, 2 * l.pp)) {
        l.pp *= 2;
      } else {
        break;
      }
      l.dp = static_cast<int>(j.gpus / (static_cast<int64_t>(l.tp) * l.pp * l.cp));
      l.global_batch = static_cast<int64_t>(l.dp) * 4 * l.pp;
      widened = true;
    }
    if (widened) ++changed;
  }
  return changed;
}

}  // namespace clustertwin::scheduler
