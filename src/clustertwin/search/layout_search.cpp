#include "clustertwin/search/layout_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <system_error>
#include <thread>

namespace clustertwin::search {

std::string LayoutScore::key() const {
  const auto& l = layout;
  std::string s = fmt::format("TP{} PP{} DP{}", l.tp, l.pp, l.dp);
  if (l.cp > 1) s += fmt::format(" CP{}", l.cp);
  if (l.ep > 1) s += fmt::format(" EP{}", l.ep);
  if (l.vpp > 1) s += fmt::format(" VPP{}", l.vpp);
  s += fmt::format(" mb{} {}", l.micro_batch, models::recompute_name(l.recompute));
  return s;
}

namespace {

std::vector<int> divisors(int64_t n, int64_t max) {
  std::vector<int> out;
  for (int64_t d = 1; d <= std::min(n, max); ++d) {
    if (n % d == 0) out.push_back(static_cast<int>(d));
  }
  return out;
}

}  // namespace

LayoutSearchResult search_layouts(const execution::TrainingSetup& base, const LayoutSpace& space,
                                  int top, int threads,
                                  const std::function<void(int64_t, int64_t)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto& m = *base.model;
  const auto& b = base.layout;
  std::vector<workload::TrainingLayout> cands;
  const int max_tp = static_cast<int>(std::min<int64_t>(space.domain_size, m.heads));
  for (int tp : divisors(space.gpus, max_tp)) {
    if ((tp & (tp - 1)) != 0) continue;  // powers of two, as frameworks use
    for (int cp : space.cps) {
      if (space.gpus % (static_cast<int64_t>(tp) * cp) != 0) continue;
      if (cp > 1 && b.seq_len < 8192) continue;
      for (int pp : divisors(space.gpus / (static_cast<int64_t>(tp) * cp), space.max_pp)) {
        if (pp > m.layers) continue;
        const int64_t dp64 = space.gpus / (static_cast<int64_t>(tp) * cp * pp);
        const int dp = static_cast<int>(dp64);
        // MoE parallel folding (Megatron-Core parallel_state): the expert grid etp x ep x edp
        // spans the same tp*cp*dp GPUs of a stage, so EP may reach across TP and CP ranks as
        // long as etp*ep divides tp*cp*dp (Qwen3-235B's TP2 EP32 DP16 on 256 H100).
        std::vector<int> eps = {1};
        const int64_t fold = static_cast<int64_t>(tp) * cp * dp;
        const int64_t etp = std::max(1, b.etp);
        if (m.moe && fold % etp == 0) eps = divisors(fold / etp, m.moe->experts);
        for (int ep : eps) {
          if (m.moe && m.moe->experts % ep != 0) continue;
          for (int vpp : space.vpps) {
            if (vpp > 1 && (pp == 1 || pp * vpp > m.layers)) continue;
            for (int mb : space.micro_batches) {
              if (b.global_batch % (static_cast<int64_t>(mb) * dp) != 0) continue;
              for (auto rc : space.recomputes) {
                workload::TrainingLayout l = b;
                l.tp = tp;
                l.cp = cp;
                l.pp = pp;
                l.dp = dp;
                l.ep = ep;
                l.vpp = vpp;
                l.micro_batch = mb;
                l.recompute = rc;
                if (vpp > 1 && l.micro_batches() % pp != 0) continue;
                cands.push_back(l);
              }
            }
          }
        }
      }
    }
  }
  LayoutSearchResult r;
  r.candidates = static_cast<int64_t>(cands.size());
  std::vector<LayoutScore> scores(cands.size());
  std::vector<uint8_t> ok(cands.size(), 0);
  std::atomic<size_t> next{0};
  std::atomic<int64_t> done{0};
  const int n_threads = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  auto work = [&] {
    for (size_t i = next++; i < cands.size(); i = next++) {
      execution::TrainingSetup s = base;
      s.layout = cands[i];
      s.gpus = space.gpus;
      auto e = execution::estimate_training_step(s);
      if (e) {
        scores[i] = {cands[i], e->step_time_s, e->tokens_per_s, e->mfu, e->memory.total().base()};
        ok[i] = 1;
      }
      const int64_t d = ++done;
      if (progress) progress(d, r.candidates);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < n_threads; ++t) {
    // A thread the system will not start (ulimit -u, memory) leaves its share of the work to
    // the threads that did start: the result is the same, only slower.
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
  for (auto& t : pool) t.join();
  for (size_t i = 0; i < cands.size(); ++i) {
    if (ok[i]) r.best.push_back(scores[i]);
  }
  r.feasible = static_cast<int64_t>(r.best.size());
  std::sort(r.best.begin(), r.best.end(), [](const LayoutScore& a, const LayoutScore& c) {
    if (a.step_time_s != c.step_time_s) return a.step_time_s < c.step_time_s;
    return a.key() < c.key();
  });
  if (static_cast<int>(r.best.size()) > top) r.best.resize(static_cast<size_t>(top));
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace clustertwin::search
