// Serving configuration search; the space, scoring and ranking are described in
// serving_search.h and docs/models/inference.md.

#include "clustertwin/search/serving_search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "clustertwin/workload/serving.h"

namespace clustertwin::search {
namespace {

using execution::ServingSetup;
using execution::SteadyEstimate;
using workload::InstanceLayout;
using workload::ServingLayout;
using workload::ServingScenario;

// Prompt tokens per iteration given to a rank on top of its decode batch, and the budget of a
// prefill-pool rank.
constexpr int64_t kChunkTokens = 2048;
constexpr int64_t kPrefillPoolTokens = 8192;
constexpr int64_t kPrefillPoolBatch = 16;
// The steady-state estimate has no queueing: a point must meet the TTFT limit with this margin
// and the TPOT limit with this one to count as compliant before verification.
constexpr double kTtftMargin = 0.6;
constexpr double kTpotMargin = 0.95;

bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

template <class F>
void parallel_for(int64_t n, int threads, F&& f) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(1, n)));
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int64_t i = next++; i < n; i = next++) f(i);
    });
  }
  for (auto& th : pool) th.join();
}

bool meets_estimate(const ServingSetup& s, double ttft, double tpot) {
  if (!s.limits) return true;
  return ttft <= kTtftMargin * s.limits->ttft.base() && tpot <= kTpotMargin * s.limits->tpot.base();
}

// How far a point is from the limits (<= 1 meets them): the worse of the two ratios.
double violation(const ServingSetup& s, const ServingPoint& p) {
  if (!s.limits) return 0;
  return std::max(p.ttft_s / (kTtftMargin * s.limits->ttft.base()),
                  p.tpot_s / (kTpotMargin * s.limits->tpot.base()));
}

int64_t longest_sequence(const ServingSetup& s) {
  return s.dataset.input.max + s.dataset.output.max;
}

// Total order for deterministic ranking: compliant first, then tokens/s per GPU, then label.
bool better(const ServingPoint& a, const ServingPoint& b) {
  if (a.meets != b.meets) return a.meets;
  if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) {
    return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
  }
  if (a.batch != b.batch) return a.batch < b.batch;
  return a.label() < b.label();
}

// Pareto frontier: no other point has both more tokens/s per GPU and more per user.
void mark_pareto(std::vector<ServingPoint>& points) {
  std::vector<size_t> order(points.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& x = points[a];
    const auto& y = points[b];
    if (x.tokens_per_s_per_user != y.tokens_per_s_per_user) {
      return x.tokens_per_s_per_user > y.tokens_per_s_per_user;
    }
    return x.tokens_per_s_per_gpu > y.tokens_per_s_per_gpu;
  });
  double best_gpu = -1;
  for (size_t i : order) {
    points[i].pareto = points[i].tokens_per_s_per_gpu > best_gpu;
    best_gpu = std::max(best_gpu, points[i].tokens_per_s_per_gpu);
  }
}

}  // namespace

std::vector<InstanceLayout> instance_layouts(const models::ModelSpec& m, int domain_size,
                                             int64_t gpus) {
  std::vector<InstanceLayout> out;
  const int64_t cap = std::min<int64_t>(domain_size, gpus);
  for (int tp = 1; tp <= cap; tp *= 2) {
    for (int pp : {1, 2, 4}) {
      if (static_cast<int64_t>(tp) * pp > gpus) continue;
      // Pipelining only once TP fills the domain or the GPUs (it exists for capacity).
      if (pp > 1 && tp * 2 <= cap) continue;
      std::vector<int> eps = {1};
      if (m.moe && tp > 1) eps.push_back(tp);
      for (int ep : eps) {
        InstanceLayout l{.tp = tp, .pp = pp, .ep = ep};
        ServingLayout sl;
        sl.instance = l;
        if (workload::validate(sl, m, l.gpus())) out.push_back(l);
      }
    }
  }
  if (m.moe) {
    for (int t = 2; t <= cap; t *= 2) {
      InstanceLayout l{.tp = t, .ep = t, .dp_attention = true};
      ServingLayout sl;
      sl.instance = l;
      if (is_pow2(t) && workload::validate(sl, m, l.gpus())) out.push_back(l);
    }
  }
  return out;
}

base::Result<ServingSearchResult> search_serving(
    const ServingSetup& base, const ServingSpace& space, int threads,
    const std::function<void(int64_t, int64_t)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!base.model || !base.compute) return base::fail("serving search: a model is required");
  if (space.gpus < 1) return base::fail("serving search: gpus must be >= 1");
  const models::ModelSpec& m = *base.model;
  ServingSearchResult out;
  const auto lm = execution::length_moments(base.dataset, base.seed);
  const double q = 1.0 + base.layout.mtp;
  const double g = static_cast<double>(space.gpus);

  // Instance layouts that hold the model and one longest sequence.
  std::vector<InstanceLayout> layouts;
  for (InstanceLayout l : instance_layouts(m, space.domain_size, space.gpus)) {
    ++out.layouts;
    l.max_batch = 1;
    l.max_tokens = kChunkTokens;
    if (!workload::check_serving_memory(m, l, base.layout, base.memory_capacity,
                                        longest_sequence(base))) {
      ++out.rejected;
      continue;
    }
    layouts.push_back(l);
  }
  if (layouts.empty()) {
    // Report why the smallest and the largest candidates failed.
    InstanceLayout widest{.tp = static_cast<int>(std::min<int64_t>(space.domain_size, space.gpus))};
    auto why = workload::check_serving_memory(m, widest, base.layout, base.memory_capacity,
                                              longest_sequence(base));
    return base::fail("no serving layout of '" + m.name + "' fits " + std::to_string(space.gpus) +
                      " GPUs: " + (why ? std::string("no valid layout") : why.error().message));
  }

  // Aggregated points: (layout, batch).
  struct Job {
    size_t layout;
    int64_t batch;
  };
  std::vector<Job> jobs;
  for (size_t i = 0; i < layouts.size(); ++i) {
    for (int64_t b : space.batches) jobs.push_back({i, b});
  }
  std::vector<std::optional<ServingPoint>> agg(jobs.size());
  // Disaggregated: prefill rates per prefill layout, decode rates per (layout, batch).
  std::vector<std::optional<SteadyEstimate>> dec(space.disaggregated ? jobs.size() : 0);
  std::vector<std::optional<SteadyEstimate>> pre(space.disaggregated ? layouts.size() : 0);
  const int64_t total = static_cast<int64_t>(jobs.size() + dec.size() + pre.size());
  std::atomic<int64_t> done{0};
  auto tick = [&] {
    const int64_t d = ++done;
    if (progress) progress(d, total);
  };
  auto agg_layout = [&](const InstanceLayout& l, int64_t b) {
    ServingLayout sl = base.layout;
    sl.disaggregated = false;
    sl.prefill_replicas = 0;
    sl.instance = l;
    sl.instance.max_batch = b;
    sl.instance.max_tokens = std::max<int64_t>(
        kChunkTokens, static_cast<int64_t>(std::ceil(static_cast<double>(b) * q)) + kChunkTokens);
    sl.replicas = static_cast<int>(std::max<int64_t>(1, space.gpus / l.gpus()));
    return sl;
  };
  auto disagg_layout = [&](const InstanceLayout& p, const InstanceLayout& d, int64_t b) {
    ServingLayout sl = agg_layout(d, b);
    sl.instance.max_tokens =
        std::max<int64_t>(256, static_cast<int64_t>(std::ceil(static_cast<double>(b) * q)) + 64);
    sl.disaggregated = true;
    sl.prefill = p;
    sl.prefill.max_batch = kPrefillPoolBatch;
    sl.prefill.max_tokens = kPrefillPoolTokens;
    sl.prefill_replicas = 1;
    sl.replicas = 1;
    return sl;
  };
  parallel_for(total, threads, [&](int64_t k) {
    const auto idx = static_cast<size_t>(k);
    if (idx < jobs.size()) {
      const Job& j = jobs[idx];
      const InstanceLayout& l = layouts[j.layout];
      ServingSetup s = base;
      s.layout = agg_layout(l, j.batch);
      auto e = execution::estimate_serving(s, lm, j.batch);
      if (e && e->batch == j.batch) {
        ServingPoint p;
        p.layout = s.layout;
        p.batch = e->batch;
        p.gpus_used = s.layout.gpus();
        p.tokens_per_s_per_gpu = e->tokens_per_s_per_gpu * static_cast<double>(p.gpus_used) / g;
        p.tokens_per_s_per_user = e->tokens_per_s_per_user;
        p.ttft_s = e->ttft_s;
        p.tpot_s = e->tpot_s;
        p.meets = meets_estimate(base, p.ttft_s, p.tpot_s);
        agg[idx] = p;
      }
    } else if (idx < jobs.size() + dec.size()) {
      const Job& j = jobs[idx - jobs.size()];
      ServingSetup s = base;
      s.layout = disagg_layout(layouts.front(), layouts[j.layout], j.batch);
      auto e = execution::estimate_serving(s, lm, j.batch);
      if (e && e->batch == j.batch) dec[idx - jobs.size()] = *e;
    } else {
      const size_t i = idx - jobs.size() - dec.size();
      ServingSetup s = base;
      s.layout = disagg_layout(layouts[i], layouts.front(), 1);
      auto e = execution::estimate_serving(s, lm, 1);
      if (e) pre[i] = *e;
    }
    tick();
  });
  for (auto& p : agg) {
    if (p) out.points.push_back(*p);
  }
  if (space.disaggregated && base.scenario != ServingScenario::kOffline) {
    // Disaggregation pays off against latency limits; offline throughput has none to meet.
    for (size_t pi = 0; pi < layouts.size(); ++pi) {
      if (!pre[pi]) continue;
      const int64_t gp = layouts[pi].gpus();
      for (size_t j = 0; j < jobs.size(); ++j) {
        if (!dec[j]) continue;
        const InstanceLayout& dl = layouts[jobs[j].layout];
        const int64_t gd = dl.gpus();
        // The split of the GPUs that maximises the balanced rate.
        double best_rate = 0;
        int best_p = 0, best_d = 0;
        for (int64_t np = 1; np * gp + gd <= space.gpus; ++np) {
          const int64_t nd = (space.gpus - np * gp) / gd;
          const double rate = std::min(static_cast<double>(np) * pre[pi]->prefill_instance_rps,
                                       static_cast<double>(nd) * dec[j]->decode_instance_rps);
          if (rate > best_rate * (1 + 1e-12)) {
            best_rate = rate;
            best_p = static_cast<int>(np);
            best_d = static_cast<int>(nd);
          }
        }
        if (best_p == 0) continue;
        ServingPoint p;
        p.layout = disagg_layout(layouts[pi], dl, jobs[j].batch);
        p.layout.prefill_replicas = best_p;
        p.layout.replicas = best_d;
        p.batch = jobs[j].batch;
        p.gpus_used = p.layout.gpus();
        p.tokens_per_s_per_gpu = best_rate * lm.output / g;
        p.tpot_s = dec[j]->tpot_s;
        p.tokens_per_s_per_user = dec[j]->tokens_per_s_per_user;
        p.ttft_s = pre[pi]->ttft_s;
        p.meets = meets_estimate(base, p.ttft_s, p.tpot_s);
        out.points.push_back(p);
      }
    }
  }
  if (out.points.empty()) return base::fail("serving search: no configuration could be scored");
  std::sort(out.points.begin(), out.points.end(), better);
  out.found = out.points.front().meets;
  if (!out.found) {
    // Best effort: the point closest to the limits.
    size_t closest = 0;
    for (size_t i = 1; i < out.points.size(); ++i) {
      if (violation(base, out.points[i]) < violation(base, out.points[closest])) closest = i;
    }
    std::rotate(out.points.begin(), out.points.begin() + static_cast<std::ptrdiff_t>(closest),
                out.points.begin() + static_cast<std::ptrdiff_t>(closest) + 1);
    out.notes.push_back("no configuration meets the limits (estimated); the closest is reported");
  }
  out.best = 0;

  // Verify the leaders with the event simulation and keep the best verified one: the best
  // aggregated and the best disaggregated points alternately (the estimate ranks the two kinds
  // less reliably against each other than within a kind).
  std::vector<int> leaders;
  {
    std::vector<int> kinds[2];
    for (size_t i = 0; i < out.points.size(); ++i) {
      const auto& p = out.points[i];
      if (i > 0 && !p.meets) continue;
      kinds[p.layout.disaggregated ? 1 : 0].push_back(static_cast<int>(i));
    }
    for (size_t k = 0; leaders.size() < static_cast<size_t>(std::max(0, space.verify)); ++k) {
      bool any = false;
      for (auto& v : kinds) {
        if (k < v.size() && leaders.size() < static_cast<size_t>(space.verify)) {
          leaders.push_back(v[k]);
          any = true;
        }
      }
      if (!any) break;
    }
  }
  double best_verified = -1;
  int best_index = -1;
  for (int i : leaders) {
    ServingPoint& p = out.points[static_cast<size_t>(i)];
    ServingSetup s = base;
    s.layout = p.layout;
    s.requests = space.verify_requests;
    double tps = 0;
    if (base.scenario == ServingScenario::kOffline || !base.limits) {
      auto r = execution::simulate_serving(s);
      if (!r) continue;
      // A request count chosen for the run must give a steady state (as in find_max_rate).
      if (space.verify_requests > 0 && !r->steady) return base::fail(r->steady_note);
      tps = r->tokens_per_s / g;
      p.ttft_s = r->ttft_s.p99;
      p.tpot_s = r->tpot_s.p99;
      p.tokens_per_s_per_user = r->tokens_per_s_per_user;
      if (tps > best_verified) {
        best_verified = tps;
        best_index = i;
        out.run = std::move(*r);
      }
    } else {
      auto r = execution::find_max_rate(s, 12);
      if (!r && space.verify_requests > 0) return base::fail(r.error());
      if (!r) continue;
      tps = r->result.tokens_per_s / g;
      p.ttft_s = r->result.ttft_s.p99;
      p.tpot_s = r->result.tpot_s.p99;
      p.tokens_per_s_per_user = r->result.tokens_per_s_per_user;
      p.meets = r->found;
      if ((r->found && tps > best_verified) || best_index < 0) {
        best_verified = r->found ? tps : best_verified;
        best_index = i;
        out.run = r->result;
        out.rate = std::move(*r);
      }
    }
    p.tokens_per_s_per_gpu = tps;
    p.verified = true;
  }
  // After verification, so that simulated figures take their place on the frontier.
  mark_pareto(out.points);
  if (best_index >= 0) {
    out.best = best_index;
    out.found = out.points[static_cast<size_t>(best_index)].meets;
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

base::Result<std::vector<GenerationStep>> generation_breakdown(const ServingSetup& base,
                                                               const GenerationTarget& from,
                                                               const GenerationTarget& to,
                                                               int threads) {
  if (!from.gpu || !to.gpu || !from.compute || !to.compute) {
    return base::fail("generation comparison: both GPUs and compute models are required");
  }
  struct Step {
    const char* change;
    const compute::ComputeModel* compute;
    base::Bytes memory;
    compute::DType weights;
    execution::ServingFabric fabric;
    int64_t gpus;
  };
  execution::ServingFabric narrow = to.fabric;
  narrow.domain_size = from.fabric.domain_size;
  const std::vector<Step> steps = {
      {"baseline", from.compute, from.gpu->hbm_usable, from.weights, from.fabric, from.gpus},
      {"GPU compute, HBM and NVLink bandwidth", to.compute, from.gpu->hbm_usable, from.weights,
       narrow, from.gpus},
      {"memory capacity", to.compute, to.gpu->hbm_usable, from.weights, narrow, from.gpus},
      {"FP4 weights", to.compute, to.gpu->hbm_usable, to.weights, narrow, from.gpus},
      {"NVLink domain size", to.compute, to.gpu->hbm_usable, to.weights, to.fabric, to.gpus},
  };
  std::vector<GenerationStep> out;
  for (const Step& st : steps) {
    ServingSetup s = base;
    s.compute = st.compute;
    s.memory_capacity = st.memory;
    s.layout.weights = st.compute->effective(st.weights);
    s.fabric = st.fabric;
    ServingSpace sp{.gpus = st.gpus, .domain_size = st.fabric.domain_size, .verify = 0};
    GenerationStep g;
    g.change = st.change;
    auto r = search_serving(s, sp, threads);
    if (r) {
      const auto& p = r->points[static_cast<size_t>(r->best)];
      g.label = p.label() + " batch " + std::to_string(p.batch);
      g.tokens_per_s_per_gpu = p.tokens_per_s_per_gpu;
      g.meets = p.meets;
    } else {
      g.label = r.error().message;
    }
    if (!out.empty() && out.back().tokens_per_s_per_gpu > 0) {
      g.factor = g.tokens_per_s_per_gpu / out.back().tokens_per_s_per_gpu;
    }
    out.push_back(g);
  }
  return out;
}

}  // namespace clustertwin::search
