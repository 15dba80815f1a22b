// Sweep overhead benchmark (issue 17 target: < 5 ms per point beyond the point's own run).
// Runs the sweep machinery over designs of 2,000 and 400 points with a point function that does no
// simulation and returns a canned results JSON of a real point's size (the example study's
// training + power points are ~190 kB of JSON; also 5 kB), so everything measured is overhead:
// reading and expanding the design, building each point's scenario, handing points to threads,
// serializing the JSON, storing each point in its own SQLite transaction, and the final
// rewrite. Prints per-phase wall time and the overhead per point.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "clustertwin/sweep/design.h"
#include "clustertwin/sweep/run.h"
#include "clustertwin/sweep/store.h"

using namespace clustertwin;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// CPU seconds of this process so far (user + system, all threads): on a shared, oversubscribed
/// machine wall time measures the neighbours; CPU time measures the work.
double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  return s(u.ru_utime) + s(u.ru_stime);
}

/// A results JSON of about `bytes` of text: scalar sections like a training run's plus power
/// waveforms (the bulk of a real point).
nlohmann::json canned_results(size_t bytes) {
  nlohmann::json j;
  j["training"] = {{"step_time_s", 0.466814}, {"tokens_per_s_per_gpu", 17548.8}, {"mfu", 0.3613}};
  for (int i = 0; i < 60; ++i) j["training"]["breakdown_s"]["k" + std::to_string(i)] = 0.001 * i;
  nlohmann::json wave = nlohmann::json::array();
  double v = 917.234;
  const size_t base = j.dump().size();
  size_t size = base;
  while (size < bytes) {
    v = v * 1.000173 + 0.37;
    nlohmann::json e = {{"t_s", static_cast<double>(wave.size()) * 0.01}, {"W", v}};
    size += e.dump().size() + 1;
    wave.push_back(std::move(e));
  }
  j["power"] = {{"gpu_avg_W", 917.234}, {"waveform", wave}};
  return j;
}

void run_case(size_t json_bytes, int threads, int samples) {
  const std::string text = R"(
name: bench
scenario:
  cluster: gb300-nvl72*2
  workload:
    training: {model: llama3.1-8b, tp: 4, global_batch: 288, seq_len: 4096, power: true}
design:
  - product:
      workload.training.tp: [1, 2, 4, 8, 16, 32, 64, 72, 144, 288]
      workload.training.model: [llama3.1-8b, llama3.1-70b, llama3.1-405b, gpt3-175b]
  - latin_hypercube:
      samples: )" + std::to_string(samples) +
                           R"(
      seed: 1
      axes:
        workload.training.power_cap: {min: 700, max: 1400, unit: W}
)";
  const double cpu0 = cpu_s();
  auto t0 = Clock::now();
  auto design = sweep::parse_design(text, "bench.yaml");
  if (!design) {
    std::fprintf(stderr, "%s\n", design.error().to_string().c_str());
    std::exit(1);
  }
  const double parse_s = since(t0);
  const auto points = static_cast<double>(design->points.size());
  const std::string db = (std::filesystem::temp_directory_path() / "ct-sweep-bench.db").string();
  std::filesystem::remove(db);
  const double cpu_parse = cpu_s() - cpu0;
  const nlohmann::json results = canned_results(json_bytes);
  const double cpu1 = cpu_s();
  t0 = Clock::now();
  auto store = sweep::Store::open(db, *design);
  if (!store) std::exit(1);
  sweep::Cluster one;
  auto r = sweep::run_sweep(
      *design, &*store,
      [&results](const sweep::Point&, const YAML::Node& scenario) {
        sweep::PointResult p;
        p.ok = scenario.IsMap();
        p.results = results;
        return p;
      },
      {.threads = threads}, one);
  if (!r) std::exit(1);
  const double run_s = since(t0);
  t0 = Clock::now();
  if (!store->finalize()) std::exit(1);
  const double final_s = since(t0);
  const double cpu_ms = (cpu_parse + cpu_s() - cpu1) / points * 1e3;
  const double wall_ms = (parse_s + run_s + final_s) / points * 1e3;
  std::printf(
      "%6.0f points, %4.0f kB JSON each, %d thread(s): wall parse+expand %.3f s, run+store %.3f "
      "s, finalize %.3f s; database %.0f MB -> overhead per point %.3f ms CPU, %.3f ms wall "
      "(target < 5 ms)\n",
      points, static_cast<double>(json_bytes) / 1e3, threads, parse_s, run_s, final_s,
      static_cast<double>(std::filesystem::file_size(db)) / 1e6, cpu_ms, wall_ms);
  std::filesystem::remove(db);
}

}  // namespace

int main() {
  run_case(5'000, 1, 50);    // 2,000 points
  run_case(190'000, 1, 10);  // 400 points, 76 MB of results
  run_case(190'000, 2, 10);
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  std::printf("peak RSS %.0f MiB\n", static_cast<double>(u.ru_maxrss) / 1024.0);
  return 0;
}
