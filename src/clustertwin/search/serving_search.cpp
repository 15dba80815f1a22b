// Serving configuration search; the space, scoring and ranking are described in
// serving_search.h and docs/models/inference.md.

#include "clustertwin/search/serving_search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <system_error>
#include <thread>

#include "clustertwin/workload/serving.h"

namespace clustertwin::search {
namespace {

using execution::PreparedServing;
using execution::ServingSetup;
using execution::SteadyEstimate;
using workload::InstanceLayout;
using workload::ServingLayout;
using workload::ServingScenario;

// A prefill-pool rank's sequences per iteration, and the decode pool's token slack beyond its
// batch (it runs no prompts).
constexpr int64_t kPrefillPoolBatch = 16;
constexpr int64_t kDecodePoolSlack = 64;
// The steady-state estimate has no queueing: a point must meet the TTFT limit with this margin
// and the TPOT limit with this one to count as compliant before verification.
constexpr double kTtftMargin = 0.6;
constexpr double kTpotMargin = 0.95;
// Batches beyond this multiple of the memory limit at the mean context are not scored: the
// scheduler admits by the prompts, so a limit somewhat above the mean-context bound still fills
// while early sequences are short, but not twice over.
constexpr double kMemoryBatchReach = 2.0;
// A server candidate must beat the best verified rate by the rate search's resolution.
constexpr double kRateStep = 1.02;
constexpr int kRateProbes = 12;
// A leader's first probe at this fraction of its estimated capacity, then steps of these
// factors up / down before the bisection (the MLPerf-style default is 0.6, x1.5, x0.5).
constexpr double kRateStart = 0.9;
constexpr double kRateGrow = 1.1;
constexpr double kRateShrink = 0.7;

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
  auto work = [&] {
    for (int64_t i = next++; i < n; i = next++) f(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    // A thread the system will not start leaves its share to the others (same result).
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
  for (auto& th : pool) th.join();
}

bool meets_estimate(const ServingSetup& s, double ttft, double tpot) {
  if (!s.limits) return true;
  return ttft <= kTtftMargin * s.limits->ttft.base() && tpot <= kTpotMargin * s.limits->tpot.base();
}

bool meets_ttft(const ServingSetup& s, double ttft) {
  return !s.limits || ttft <= kTtftMargin * s.limits->ttft.base();
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

// The configuration as a key: two points with the same key are the same deployment.
std::string key_of(const ServingLayout& l) {
  auto inst = [](const InstanceLayout& i) {
    return i.label() + "/" + std::to_string(i.max_batch) + "/" + std::to_string(i.max_tokens) +
           (i.chunked_prefill ? "c" : "u");
  };
  std::string k =
      inst(l.instance) + " x" + std::to_string(l.replicas) + " mtp" + std::to_string(l.mtp);
  if (l.disaggregated) k += " | " + inst(l.prefill) + " x" + std::to_string(l.prefill_replicas);
  return k;
}

// Total order for deterministic ranking: compliant first, then tokens/s per GPU, then the
// smaller limits, then the key.
bool better(const ServingPoint& a, const ServingPoint& b) {
  if (a.meets != b.meets) return a.meets;
  if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) {
    return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
  }
  if (a.batch != b.batch) return a.batch < b.batch;
  if (a.layout.instance.max_tokens != b.layout.instance.max_tokens) {
    return a.layout.instance.max_tokens < b.layout.instance.max_tokens;
  }
  return key_of(a.layout) < key_of(b.layout);
}

// The frontier of each kind: among the points that meet the TTFT limit, those that no other
// point of the same kind beats in both tokens/s per GPU and tokens/s per user.
void mark_pareto(std::vector<ServingPoint>& points, const ServingSetup& s) {
  for (auto& p : points) p.pareto = false;
  for (int kind = 0; kind < 2; ++kind) {
    std::vector<size_t> order;
    for (size_t i = 0; i < points.size(); ++i) {
      if (points[i].layout.disaggregated != (kind == 1)) continue;
      const bool ttft_ok = points[i].verified
                               ? (!s.limits || points[i].ttft_s <= s.limits->ttft.base())
                               : meets_ttft(s, points[i].ttft_s);
      if (ttft_ok) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
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
}

// One instance layout with one MTP draft length: the unit of parallel work.
struct Family {
  InstanceLayout layout;
  int mtp = 0;
};

struct DecodeRate {
  size_t family = 0;
  int64_t batch = 0;
  double instance_rps = 0, tpot_s = 0, tokens_per_s_per_user = 0;
};

struct PrefillRate {
  size_t layout = 0;
  int64_t budget = 0;
  double instance_rps = 0, ttft_s = 0;
};

struct FamilyOut {
  std::vector<ServingPoint> agg;
  std::vector<DecodeRate> dec;
  std::vector<PrefillRate> pre;
  int64_t pruned = 0;
};

}  // namespace

std::string ServingPoint::limits() const {
  const auto& i = layout.instance;
  std::string s =
      "batch " + std::to_string(i.max_batch) + ", " + std::to_string(i.max_tokens) + " tokens";
  if (!i.chunked_prefill) s += ", unchunked";
  if (layout.mtp > 0) s += ", MTP " + std::to_string(layout.mtp);
  return s;
}

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
  if (space.batches.empty() || space.prompt_budgets.empty()) {
    return base::fail("serving search: batches and prompt budgets must not be empty");
  }
  const models::ModelSpec& m = *base.model;
  ServingSearchResult out;
  const auto lm = execution::length_moments(base.dataset, base.seed);
  const double g = static_cast<double>(space.gpus);
  const bool offline = base.scenario == ServingScenario::kOffline || !base.limits;
  const bool disagg = space.disaggregated && !offline;
  const int64_t longest = longest_sequence(base);
  // Chunked prefill off in the base layout (`--no-chunked-prefill`) is the user's constraint:
  // only unchunked candidates then (it was tried beside chunked and dropped when chunked won).
  const bool chunked_on = base.layout.instance.chunked_prefill;
  const bool chunked_off = space.chunked_off || !chunked_on;
  std::vector<int64_t> batches = space.batches;
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  const int64_t min_budget =
      *std::min_element(space.prompt_budgets.begin(), space.prompt_budgets.end());
  const int64_t max_budget =
      *std::max_element(space.prompt_budgets.begin(), space.prompt_budgets.end());

  // Instance layouts that hold the model and one longest sequence at the smallest limits.
  std::vector<InstanceLayout> layouts;
  for (InstanceLayout l : instance_layouts(m, space.domain_size, space.gpus)) {
    ++out.layouts;
    l.max_batch = 1;
    l.max_tokens = 1 + min_budget;
    l.chunked_prefill = chunked_on;  // the disaggregated pools' too
    if (!workload::check_serving_memory(m, l, base.layout, base.memory_capacity, longest)) {
      ++out.rejected;
      continue;
    }
    layouts.push_back(l);
  }
  if (layouts.empty()) {
    // Report why the widest candidate failed.
    InstanceLayout widest{.tp = static_cast<int>(std::min<int64_t>(space.domain_size, space.gpus))};
    auto why =
        workload::check_serving_memory(m, widest, base.layout, base.memory_capacity, longest);
    return base::fail("no serving layout of '" + m.name + "' fits " + std::to_string(space.gpus) +
                      " GPUs: " + (why ? std::string("no valid layout") : why.error().message));
  }
  // MTP draft lengths 0..k when the base layout speculates with k.
  std::vector<Family> families;
  for (const auto& l : layouts) {
    for (int k = 0; k <= std::max(0, base.layout.mtp); ++k) families.push_back({l, k});
  }

  std::vector<FamilyOut> work(families.size());
  std::atomic<int64_t> done{0};
  const auto total = static_cast<int64_t>(families.size());
  const int64_t table_batch = batches.back();
  parallel_for(total, threads, [&](int64_t fi) {
    const Family& fam = families[static_cast<size_t>(fi)];
    FamilyOut& fo = work[static_cast<size_t>(fi)];
    ServingSetup s = base;
    s.layout.disaggregated = false;
    s.layout.prefill_replicas = 0;
    s.layout.mtp = fam.mtp;
    s.layout.instance = fam.layout;
    s.layout.replicas = static_cast<int>(std::max<int64_t>(1, space.gpus / fam.layout.gpus()));
    const double q = 1.0 + fam.mtp;
    auto tokens_for = [&](int64_t b, int64_t budget) {
      return static_cast<int64_t>(std::ceil(static_cast<double>(b) * q)) + budget;
    };
    // One step model for every limit of the family: tables reach the largest batch and budget.
    auto prep = execution::prepare_serving(s, table_batch, tokens_for(table_batch, max_budget));
    if (!prep) return;
    // The memory limit: the batch the KV cache holds at the mean context (smallest limits).
    const double per_seq = base.layout.kv_policy == workload::KvPolicy::kReserve
                               ? lm.input + static_cast<double>(base.dataset.output.max)
                               : lm.context;
    const auto memory_batch = std::max<int64_t>(
        1, static_cast<int64_t>(static_cast<double>(prep->mem.kv_tokens_per_rank) / per_seq));
    std::vector<int64_t> bs;
    for (int64_t b : batches) {
      if (static_cast<double>(b) <= kMemoryBatchReach * static_cast<double>(memory_batch)) {
        bs.push_back(b);
      } else {
        ++fo.pruned;
      }
    }
    if (std::find(bs.begin(), bs.end(), memory_batch) == bs.end()) bs.push_back(memory_batch);
    std::sort(bs.begin(), bs.end());
    const double tpot_bound = base.limits ? base.limits->tpot.base() : 0;
    // The weights per GPU are the family's whatever its limits (serving_weights).
    const workload::ServingMemory weights = workload::serving_weights(m, fam.layout, s.layout);

    // Aggregated: batch x budget x chunking.
    for (bool chunked : {true, false}) {
      if (chunked ? !chunked_on : !chunked_off) continue;
      for (int64_t budget : space.prompt_budgets) {
        for (size_t bi = 0; bi < bs.size(); ++bi) {
          const int64_t b = bs[bi];
          InstanceLayout inst = fam.layout;
          inst.max_batch = b;
          inst.max_tokens = tokens_for(b, budget);
          inst.chunked_prefill = chunked;
          auto mem = workload::check_serving_memory(m, inst, s.layout, base.memory_capacity,
                                                    longest, &weights);
          if (!mem) {
            fo.pruned += static_cast<int64_t>(bs.size() - bi);
            break;  // larger limits need more memory still
          }
          prep->mem = *mem;
          s.layout.instance = inst;
          auto e = execution::estimate_serving(s, lm, *prep, b);
          if (!e) continue;
          ServingPoint p;
          p.layout = s.layout;
          p.batch = b;
          p.gpus_used = s.layout.gpus();
          p.tokens_per_s_per_gpu = e->tokens_per_s_per_gpu * static_cast<double>(p.gpus_used) / g;
          p.tokens_per_s_per_user = e->tokens_per_s_per_user;
          p.ttft_s = e->ttft_s;
          p.tpot_s = e->tpot_s;
          p.meets = meets_estimate(base, p.ttft_s, p.tpot_s);
          fo.agg.push_back(p);
          if (tpot_bound > 0 && e->tpot_s > tpot_bound) {
            // TPOT grows with the batch: the larger ones miss the limit too.
            fo.pruned += static_cast<int64_t>(bs.size() - bi - 1);
            break;
          }
        }
      }
    }
    if (disagg) {
      // Decode pool: the batch and a small slack, no prompts.
      ServingSetup d = s;
      d.layout.disaggregated = true;
      d.layout.prefill = fam.layout;
      d.layout.prefill_replicas = 1;
      d.layout.replicas = 1;
      PreparedServing dp;
      dp.agg = prep->agg;
      for (size_t bi = 0; bi < bs.size(); ++bi) {
        const int64_t b = bs[bi];
        InstanceLayout inst = fam.layout;
        inst.max_batch = b;
        inst.max_tokens = tokens_for(b, kDecodePoolSlack);
        auto mem = workload::check_serving_memory(m, inst, d.layout, base.memory_capacity, longest,
                                                  &weights);
        if (!mem) break;
        dp.mem = *mem;
        d.layout.instance = inst;
        auto e = execution::estimate_serving(d, lm, dp, b);
        if (!e) continue;
        fo.dec.push_back({.family = static_cast<size_t>(fi),
                          .batch = b,
                          .instance_rps = e->decode_instance_rps,
                          .tpot_s = e->tpot_s,
                          .tokens_per_s_per_user = e->tokens_per_s_per_user});
        if (tpot_bound > 0 && e->tpot_s > tpot_bound) break;
      }
      // Prefill pool (once per layout: drafts do not change a prompt's pass).
      if (fam.mtp == 0) {
        for (int64_t budget : space.prefill_budgets) {
          ServingSetup pset = s;
          pset.layout.disaggregated = true;
          pset.layout.prefill = fam.layout;
          pset.layout.prefill.max_batch = kPrefillPoolBatch;
          pset.layout.prefill.max_tokens = budget;
          pset.layout.prefill_replicas = 1;
          pset.layout.replicas = 1;
          pset.layout.instance.max_batch = 1;
          pset.layout.instance.max_tokens = tokens_for(1, kDecodePoolSlack);
          auto pp = execution::prepare_serving(pset);
          if (!pp) continue;
          auto e = execution::estimate_serving(pset, lm, *pp, 1);
          if (!e) continue;
          const size_t li = static_cast<size_t>(fi) / static_cast<size_t>(base.layout.mtp + 1);
          fo.pre.push_back({.layout = li,
                            .budget = budget,
                            .instance_rps = e->prefill_instance_rps,
                            .ttft_s = e->ttft_s});
        }
      }
    }
    const int64_t d = ++done;
    if (progress) progress(d, total);
  });

  std::vector<DecodeRate> dec;
  std::vector<PrefillRate> pre;
  for (auto& fo : work) {
    out.points.insert(out.points.end(), fo.agg.begin(), fo.agg.end());
    dec.insert(dec.end(), fo.dec.begin(), fo.dec.end());
    pre.insert(pre.end(), fo.pre.begin(), fo.pre.end());
    out.pruned += fo.pruned;
  }
  if (disagg) {
    // Disaggregated points: every prefill layout and budget whose TTFT alone meets the limit,
    // paired with every decode layout and batch, at the split that balances the rates.
    for (const PrefillRate& pr : pre) {
      if (!meets_ttft(base, pr.ttft_s)) {
        out.pruned += static_cast<int64_t>(dec.size());
        continue;
      }
      const int64_t gp = layouts[pr.layout].gpus();
      for (const DecodeRate& dr : dec) {
        const Family& fam = families[dr.family];
        const int64_t gd = fam.layout.gpus();
        double best_rate = 0;
        int best_p = 0, best_d = 0;
        for (int64_t np = 1; np * gp + gd <= space.gpus; ++np) {
          const int64_t nd = (space.gpus - np * gp) / gd;
          const double rate = std::min(static_cast<double>(np) * pr.instance_rps,
                                       static_cast<double>(nd) * dr.instance_rps);
          if (rate > best_rate * (1 + 1e-12)) {
            best_rate = rate;
            best_p = static_cast<int>(np);
            best_d = static_cast<int>(nd);
          }
        }
        if (best_p == 0) continue;
        ServingPoint p;
        ServingLayout& l = p.layout;
        l = base.layout;
        l.mtp = fam.mtp;
        l.disaggregated = true;
        l.instance = fam.layout;
        l.instance.max_batch = dr.batch;
        l.instance.max_tokens =
            static_cast<int64_t>(std::ceil(static_cast<double>(dr.batch) * (1.0 + fam.mtp))) +
            kDecodePoolSlack;
        l.replicas = best_d;
        l.prefill = layouts[pr.layout];
        l.prefill.max_batch = kPrefillPoolBatch;
        l.prefill.max_tokens = pr.budget;
        l.prefill_replicas = best_p;
        p.batch = dr.batch;
        p.gpus_used = l.gpus();
        p.tokens_per_s_per_gpu = best_rate * lm.output / g;
        p.tpot_s = dr.tpot_s;
        p.tokens_per_s_per_user = dr.tokens_per_s_per_user;
        p.ttft_s = pr.ttft_s;
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
  const auto t_verify = std::chrono::steady_clock::now();
  out.score_s = std::chrono::duration<double>(t_verify - t0).count();

  // Verification with the event simulation, in rounds merged in index order, so the outcome
  // does not depend on the threads (verify, below: offline rounds run side by side, server
  // candidates one after the other).
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < out.points.size(); ++i) index.emplace(key_of(out.points[i].layout), i);
  std::set<size_t> tried;
  double best_verified = -1, best_rate = 0;
  int best_index = -1;
  struct Run {
    base::Result<execution::ServingResult> sim = base::fail("not run");
    base::Result<execution::RateSearch> rate = base::fail("not run");
  };
  // Simulates each of `batch`; true when one of them became the best verified point.
  auto verify_round = [&](const std::vector<size_t>& batch) -> base::Result<bool> {
    std::vector<Run> runs(batch.size());
    // Server / interactive: once some layout met a rate, a candidate starts just above it and
    // is dropped at its first miss (it cannot beat the best).
    const bool floor = best_rate > 0;
    parallel_for(static_cast<int64_t>(batch.size()), threads, [&](int64_t k) {
      ServingSetup s = base;
      s.layout = out.points[batch[static_cast<size_t>(k)]].layout;
      s.requests = space.verify_requests;
      Run& run = runs[static_cast<size_t>(k)];
      if (offline) {
        run.sim = execution::simulate_serving(s);
      } else {
        // The first probe near the estimated capacity (or just above the best rate so far),
        // then small steps: the estimate is usually within ~10% of the compliant rate.
        const double estimated =
            out.points[batch[static_cast<size_t>(k)]].tokens_per_s_per_gpu * g / lm.output;
        run.rate = execution::find_max_rate(
            s, {.max_probes = kRateProbes,
                .start_qps = floor ? kRateStep * best_rate : kRateStart * estimated,
                .floor_at_start = floor,
                .grow = kRateGrow,
                .shrink = kRateShrink});
      }
    });
    bool improved = false;
    for (size_t k = 0; k < batch.size(); ++k) {
      const size_t i = batch[k];
      tried.insert(i);
      ServingPoint& p = out.points[i];
      Run& run = runs[k];
      if (offline) {
        auto& r = run.sim;
        ++out.simulations;
        if (!r) continue;
        // A request count chosen for the run must give a steady state (as in find_max_rate).
        if (space.verify_requests > 0 && !r->steady) return base::fail(r->steady_note);
        const double tps = r->tokens_per_s / g;
        p.ttft_s = r->ttft_s.p99;
        p.tpot_s = r->tpot_s.p99;
        p.tokens_per_s_per_user = r->tokens_per_s_per_user;
        p.tokens_per_s_per_gpu = tps;
        p.verified = true;
        if (tps > best_verified) {
          best_verified = tps;
          best_index = static_cast<int>(i);
          out.run = std::move(*r);
          improved = true;
        }
        continue;
      }
      auto& r = run.rate;
      if (!r && space.verify_requests > 0) return base::fail(r.error());
      if (!r) continue;
      out.simulations += static_cast<int64_t>(r->probes.size());
      if (floor && !r->found) continue;  // cannot beat the best: its estimate stays
      const double tps = r->result.tokens_per_s / g;
      p.ttft_s = r->result.ttft_s.p99;
      p.tpot_s = r->result.tpot_s.p99;
      p.tokens_per_s_per_user = r->result.tokens_per_s_per_user;
      p.tokens_per_s_per_gpu = tps;
      p.meets = r->found;
      p.rate_qps = r->rate_qps;
      p.verified = true;
      if ((r->found && tps > best_verified) || best_index < 0) {
        best_verified = r->found ? tps : best_verified;
        best_rate = r->found ? r->rate_qps : 0;
        best_index = static_cast<int>(i);
        out.run = r->result;
        out.rate = std::move(*r);
        improved = true;
      }
    }
    return improved;
  };
  // Offline runs of a round are independent (split over the threads). Server / interactive
  // candidates run one after the other instead: each starts just above the best rate found
  // before it, so one that cannot beat it costs one probe, stopped at its first miss (run side
  // by side, every candidate of a round would search its own rate from scratch).
  auto verify = [&](const std::vector<size_t>& batch) -> base::Result<bool> {
    if (offline) return verify_round(batch);
    bool improved = false;
    for (size_t i : batch) {
      auto r = verify_round({i});
      if (!r) return base::fail(r.error());
      improved = *r || improved;
    }
    return improved;
  };
  // The leading aggregated and disaggregated points alternately (the estimate ranks the two
  // kinds less reliably against each other than within a kind).
  {
    std::vector<size_t> kinds[2];
    for (size_t i = 0; i < out.points.size(); ++i) {
      const auto& p = out.points[i];
      if (i > 0 && !p.meets) continue;
      kinds[p.layout.disaggregated ? 1 : 0].push_back(i);
    }
    std::vector<size_t> leaders;
    const auto n_leaders = static_cast<size_t>(
        std::max(0, offline ? space.verify : std::min(space.verify, space.rate_verify)));
    for (size_t k = 0; leaders.size() < n_leaders; ++k) {
      bool any = false;
      for (auto& v : kinds) {
        if (k < v.size() && leaders.size() < n_leaders) {
          leaders.push_back(v[k]);
          any = true;
        }
      }
      if (!any) break;
    }
    if (!leaders.empty()) {
      auto r = verify(leaders);
      if (!r) return base::fail(r.error());
    }
  }
  // Local search around the best verified point: the neighbouring batch limits, token budgets
  // and chunking of its family (the estimate ranks close points less reliably than the
  // simulation), moving while a neighbour is better.
  auto neighbours = [&](size_t i) {
    const ServingLayout& l = out.points[i].layout;
    std::vector<ServingLayout> v;
    const int64_t b = l.instance.max_batch;
    const double q = 1.0 + l.mtp;
    const int64_t budget =
        l.instance.max_tokens - static_cast<int64_t>(std::ceil(static_cast<double>(b) * q));
    auto with = [&](int64_t nb, int64_t nbudget, bool chunked) {
      ServingLayout x = l;
      x.instance.max_batch = nb;
      x.instance.max_tokens =
          static_cast<int64_t>(std::ceil(static_cast<double>(nb) * q)) + nbudget;
      x.instance.chunked_prefill = chunked;
      v.push_back(x);
    };
    auto up = std::upper_bound(batches.begin(), batches.end(), b);
    auto down = std::lower_bound(batches.begin(), batches.end(), b);
    if (up != batches.end()) with(*up, budget, l.instance.chunked_prefill);
    if (down != batches.begin()) with(*(down - 1), budget, l.instance.chunked_prefill);
    if (!l.disaggregated) {
      const auto& bud = space.prompt_budgets;
      auto bu = std::upper_bound(bud.begin(), bud.end(), budget);
      auto bd = std::lower_bound(bud.begin(), bud.end(), budget);
      if (bu != bud.end()) with(b, *bu, l.instance.chunked_prefill);
      if (bd != bud.begin()) with(b, *(bd - 1), l.instance.chunked_prefill);
      if (chunked_on && chunked_off) with(b, budget, !l.instance.chunked_prefill);
    }
    std::vector<size_t> found;
    for (const auto& x : v) {
      auto it = index.find(key_of(x));
      if (it != index.end() && !tried.count(it->second)) found.push_back(it->second);
    }
    std::sort(found.begin(), found.end());  // points are ranked: best estimate first
    return found;
  };
  for (int budget = std::max(0, offline ? space.refine : space.rate_refine);
       budget > 0 && best_index >= 0;) {
    auto cand = neighbours(static_cast<size_t>(best_index));
    if (cand.size() > static_cast<size_t>(budget)) cand.resize(static_cast<size_t>(budget));
    if (cand.empty()) break;
    budget -= static_cast<int>(cand.size());
    auto r = verify(cand);
    if (!r) return base::fail(r.error());
    if (!*r) break;
  }
  // After verification, so that simulated figures take their place on the frontier.
  mark_pareto(out.points, base);
  if (best_index >= 0) {
    out.best = best_index;
    out.found = out.points[static_cast<size_t>(best_index)].meets;
  }
  const auto t_end = std::chrono::steady_clock::now();
  out.verify_s = std::chrono::duration<double>(t_end - t_verify).count();
  out.wall_s = std::chrono::duration<double>(t_end - t0).count();
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
    s.fabric = st.fabric;
    ServingSpace sp{.gpus = st.gpus, .domain_size = st.fabric.domain_size, .verify = 0};
    GenerationStep g;
    g.change = st.change;
    // Once the target precision is available the baseline's stays a choice: a user keeps the
    // one that serves more (FP4 GEMMs are not faster at every shape), so no step loses.
    std::vector<compute::DType> precisions = {st.weights};
    if (st.weights != from.weights) precisions.push_back(from.weights);
    for (compute::DType w : precisions) {
      s.layout.weights = st.compute->effective(w);
      auto r = search_serving(s, sp, threads);
      if (r) {
        const auto& p = r->points[static_cast<size_t>(r->best)];
        if (g.label.empty() || p.tokens_per_s_per_gpu > g.tokens_per_s_per_gpu) {
          g.label = p.label() + " " + p.limits() +
                    (w != st.weights ? std::string(", ") + compute::dtype_name(w) : "");
          g.tokens_per_s_per_gpu = p.tokens_per_s_per_gpu;
          g.meets = p.meets;
        }
      } else if (g.label.empty()) {
        g.label = r.error().message;
      }
    }
    if (!out.empty() && out.back().tokens_per_s_per_gpu > 0) {
      g.factor = g.tokens_per_s_per_gpu / out.back().tokens_per_s_per_gpu;
    }
    out.push_back(g);
  }
  return out;
}

}  // namespace clustertwin::search
