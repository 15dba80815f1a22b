// Request-level serving simulation; model, rules and sources in serving_sim.h and
// docs/models/inference.md.

#include "clustertwin/execution/serving_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <queue>
#include <span>

#include "clustertwin/base/check.h"
#include "clustertwin/engine/engine.h"

namespace clustertwin::execution {
namespace {

using engine::Simulator;
using engine::Tick;
using workload::KvPolicy;
using workload::ServingScenario;

constexpr double kMinDurationS = 600.0;  // LoadGen min_duration for Offline and Server
constexpr double kOfflineSlack = 1.1;    // LoadGen kSlack for the offline sample count
constexpr int64_t kMlperfOfflineFloor = 24576;
constexpr int64_t kMaxRequestsPerInstance = 60000;

std::string fmt(const char* f, double v) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Nearest rank, as LoadGen reports percentiles: the p-quantile of n samples is the
// ceil(p n)-th smallest.
size_t nearest_rank(double p, size_t count) {
  const auto n = static_cast<double>(count);
  return static_cast<size_t>(std::clamp(std::ceil(p * n) - 1.0, 0.0, n - 1.0));
}

// Samples over a limit that make the p99 exceed it for certain: p99 > L iff at least
// n - nearest_rank(0.99, n) samples are above L.
int64_t p99_violations(int64_t n) {
  return n <= 0 ? 0 : n - static_cast<int64_t>(nearest_rank(0.99, static_cast<size_t>(n)));
}

LatencyStats stats_of(std::vector<double>& v) {
  LatencyStats s;
  if (v.empty()) return s;
  // Selection instead of a sort: O(n) per percentile, descending so each call narrows the range.
  auto pct = [&](double p, size_t hi) {
    const size_t i = nearest_rank(p, v.size());
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i),
                     v.begin() + static_cast<std::ptrdiff_t>(hi));
    return v[i];
  };
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.max = *std::max_element(v.begin(), v.end());
  s.p99 = pct(0.99, v.size());
  s.p90 = pct(0.90, nearest_rank(0.99, v.size()));
  s.p50 = pct(0.50, nearest_rank(0.90, v.size()));
  return s;
}

enum class State : uint8_t { kWaiting, kPrefill, kDecode, kTransfer, kDone };

struct Seq {
  int32_t input = 0, output = 0;
  int32_t prompt = 0;     // tokens to prefill (input; + generated after a preemption)
  int32_t prefilled = 0;  // of prompt
  // Pooled pipeline (Instance::pooled): prompt tokens handed to micro-batches so far; a chunk
  // is scheduled before the previous one has left the pipeline (TensorRT-LLM moves a request
  // to its next context chunk as it enqueues the micro-batch).
  int32_t scheduled = 0;
  int32_t generated = 0;  // output tokens produced
  int32_t gen_at_start = 0;
  double arrival = 0, first_token = -1;
  double admitted = -1;  // first admission to a rank
  int64_t start_iter = 0;
  double kv_base = 0;   // KV tokens held at decode start (or admission)
  double ctx_base = 0;  // context at decode start
  int instance = -1, rank = -1;
  uint32_t epoch = 0;
  State state = State::kWaiting;
  bool needs_prefill = true;
  bool ttft_late = false;  // counted over the TTFT limit while still queued
};

struct HeapEntry {
  int64_t finish;
  uint32_t epoch;
  int32_t id;
  bool operator>(const HeapEntry& o) const {
    return finish != o.finish ? finish > o.finish : id > o.id;
  }
};

struct Rank {
  double capacity = 0;  // KV tokens
  double kv_used = 0;
  int64_t decoding = 0;
  double sum_ctx = 0;
  std::vector<int32_t> prefilling;
  std::vector<int32_t> running;  // admitted decoders, oldest first (lazy removal)
  std::priority_queue<HeapEntry, std::vector<HeapEntry>, std::greater<>> finish;
  std::vector<std::pair<int32_t, int32_t>> chunks;  // this iteration's prompt chunks
  int group = 0;
};

struct Group {
  std::vector<int> ranks;
  bool busy = false;
  int64_t iter = 0;
  double started = 0;
  StepTime step;
  // Attention-DP balance counters (InstanceLayout::adp_timeout_iters; TensorRT-LLM's
  // adp_ctx_waiting_iters_count / adp_ctx_batching_wait_iters_count).
  int adp_waiting = 0, adp_batching = 0;
};

struct Instance {
  bool prefill_pool = false;
  const StepModel* step = nullptr;
  const workload::InstanceLayout* layout = nullptr;
  std::deque<int32_t> queue;
  std::vector<Rank> ranks;
  std::vector<Group> groups;
  int64_t in_flight = 0;
  int first_gpu = 0;
  int64_t traced = 0;
  /// Prefill pool: when each rank's link is free to send the next KV cache (transfer()).
  std::vector<double> kv_send_free_s;
  /// Streaming front end: when it has handled every response handed to it so far.
  double responses_free_s = 0;
  /// Pipeline parallelism (pp > 1 without attention DP): the micro-batches -- one group each --
  /// share the instance's stages, its request pool and its KV cache (TensorRT-LLM's in-flight
  /// batching with PP; header note). `stage_free`: when each stage has run every micro-batch
  /// handed to it so far; `prompts`: prompts in progress, first come first served, any
  /// micro-batch running their next chunk; `kv_used` / `kv_capacity`: the shared KV cache.
  bool pooled = false;
  std::vector<double> stage_free;
  std::vector<int32_t> prompts;
  double kv_used = 0, kv_capacity = 0;
};

// The KV cache a rank's sequences live in: the rank's own, or the pooled pipeline's.
double& kv_used(Instance& in, Rank& r) { return in.pooled ? in.kv_used : r.kv_used; }
double kv_capacity(const Instance& in, const Rank& r) {
  return in.pooled ? in.kv_capacity : r.capacity;
}

class Sim {
 public:
  Sim(const ServingSetup& s, const StepModel& agg, const StepModel* pre,
      const workload::ServingMemory& mem, const workload::ServingMemory* pre_mem, int symmetry)
      : s_(s), symmetry_(symmetry) {
    const auto& l = s.layout;
    tps_ = l.tokens_per_step();
    q_ = 1.0 + l.mtp;
    max_out_ = s.dataset.output.max;
    // Streamed responses (ServingSetup): server and interactive runs stream; the PyTorch
    // runtime's front end pays host time per response.
    if (s.scenario != ServingScenario::kOffline && l.runtime == workload::ServingRuntime::kPytorch)
      response_s_ = s.calibration.stream_host_per_response_s;
    stream_interval_ = std::max(1, l.stream_interval);
    auto make = [&](bool prefill, const StepModel& step, const workload::InstanceLayout& il,
                    const workload::ServingMemory& m, int count, int first_gpu) {
      for (int i = 0; i < count; ++i) {
        Instance inst;
        inst.prefill_pool = prefill;
        inst.step = &step;
        inst.layout = &il;
        inst.first_gpu = first_gpu + i * il.gpus();
        const int ranks = il.ranks();
        inst.ranks.resize(static_cast<size_t>(ranks));
        inst.kv_send_free_s.assign(static_cast<size_t>(ranks), 0.0);
        for (auto& r : inst.ranks) r.capacity = static_cast<double>(m.kv_tokens_per_rank);
        if (il.dp_attention || ranks == 1) {
          Group g;
          for (int r = 0; r < ranks; ++r) g.ranks.push_back(r);
          inst.groups.push_back(g);
        } else {
          for (int r = 0; r < ranks; ++r) {
            Group g;
            g.ranks.push_back(r);
            inst.ranks[static_cast<size_t>(r)].group = r;
            inst.groups.push_back(g);
          }
          // Pipeline micro-batches: one pool, one KV cache, shared stages.
          inst.pooled = true;
          inst.stage_free.assign(static_cast<size_t>(ranks), 0.0);
          inst.kv_capacity = static_cast<double>(m.kv_tokens_per_rank) * ranks;
        }
        instances_.push_back(std::move(inst));
      }
    };
    if (l.disaggregated) {
      CT_CHECK(pre && pre_mem, "disaggregated serving needs the prefill model");
      const int p = l.prefill_replicas / symmetry;
      make(true, *pre, l.prefill, *pre_mem, p, 0);
      make(false, agg, l.instance, mem, l.replicas / symmetry, p * l.prefill.gpus());
    } else {
      make(false, agg, l.instance, mem, l.replicas / symmetry, 0);
    }
  }

  /// The deployment's request count, for messages (the simulated shares round it up).
  void set_requested(int64_t n) { requested_ = n; }

  ServingResult run(const std::vector<workload::RequestLengths>& reqs, double rate_sim) {
    begin(reqs, rate_sim);
    return run_to_end();
  }

  /// Sets up the run (requests, arrivals) without running it.
  void begin(std::span<const workload::RequestLengths> reqs, double rate_sim) {
    seqs_.resize(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
      Seq& q = seqs_[i];
      q.input = std::max(1, reqs[i].input);
      q.output = std::max(1, reqs[i].output);
      q.prompt = q.input;
    }
    int64_t multi_token = 0;
    for (const Seq& q : seqs_) multi_token += q.output > 1 ? 1 : 0;
    if (s_.limits && s_.stop_when_limits_fail) {
      ttft_stop_ = p99_violations(static_cast<int64_t>(seqs_.size()));
      tpot_stop_ = p99_violations(multi_token);
    }
    dispatched_.assign(instances_.size(), 0);
    ttft_.reserve(reqs.size());
    tpot_.reserve(reqs.size());
    e2e_.reserve(reqs.size());
    if (s_.scenario == ServingScenario::kOffline || rate_sim <= 0) {
      // LoadGen's offline query: every sample at t = 0, dealt round robin to the instances.
      int next = 0;
      std::vector<int> entry = entry_instances();
      for (size_t i = 0; i < seqs_.size(); ++i) {
        const int inst = entry[static_cast<size_t>(next)];
        next = (next + 1) % static_cast<int>(entry.size());
        dispatched_[static_cast<size_t>(inst)]++;
        enqueue(static_cast<int32_t>(i), inst, false);
      }
      sim_.schedule_at(0, [this](Simulator&) {
        for (size_t i = 0; i < instances_.size(); ++i) kick(static_cast<int>(i));
      });
    } else {
      workload::Rng rng(s_.seed * 7919 + 17);
      double t = 0;
      for (size_t i = 0; i < seqs_.size(); ++i) {
        t += rng.exponential(rate_sim);
        seqs_[i].arrival = t;
      }
      schedule_arrival(0);
    }
    multi_token_ = multi_token;
  }

  /// Runs (the rest of) the run to its end, or to its early stop.
  ServingResult run_to_end() {
    sim_.run();
    return finish(seqs_.size());
  }

  /// Rate-search probes (stop_when_limits_fail): runs until the p99 limits are provably met and
  /// says so, or returns false when the run ended (or stopped early on a miss) first. Provably
  /// met: so few samples are still without their first token, or still decoding, that even if
  /// every one of them ended over its limit, neither limit would have more samples over it than
  /// the p99 allows. What is left is mostly the drain after the last arrival (the tail of long
  /// answers: ~60% of a DeepSeek-R1 server run's iterations), which cannot change the verdict;
  /// run_to_end() continues the same run when its figures are wanted. The check runs between
  /// slices of simulated time, so where the run pauses does not depend on anything but the run.
  bool run_until_met() {
    constexpr Tick kSlice = 1'000'000'000;  // one simulated second, doubled while nothing runs
    Tick until = sim_.now(), slice = kSlice;
    while (!sim_.empty() && !stopped_ && !sim_.event_limit_reached()) {
      if (limits_met() || drain_bound_met()) return true;
      const int64_t before = sim_.events_run();
      until = std::max(until, sim_.now()) + slice;
      sim_.run_until(until);
      slice = sim_.events_run() == before ? 2 * slice : kSlice;
    }
    return false;
  }

  /// The p99 figures of the samples done so far and the output tokens/s to the last of them
  /// (a probe paused by run_until_met).
  [[nodiscard]] RateProbe partial_figures() const {
    RateProbe p;
    std::vector<double> v = ttft_;
    p.ttft_p99_s = stats_of(v).p99;
    v = tpot_;
    p.tpot_p99_s = stats_of(v).p99;
    if (last_done_ > 0) {
      p.tokens_per_s_per_gpu =
          output_tokens_ * symmetry_ / last_done_ / static_cast<double>(s_.layout.gpus());
    }
    return p;
  }

  /// The run stopped at the engine's event limit instead of finishing (a bound on run time).
  [[nodiscard]] bool hit_event_limit() const { return sim_.event_limit_reached(); }
  /// The run stopped because an iteration or KV transfer would have ended past the limit of
  /// simulated time (ticks_within_clock): when, in seconds; 0 when it did not.
  [[nodiscard]] double clock_overrun_s() const { return clock_overrun_s_; }
  [[nodiscard]] int64_t events() const { return sim_.events_run(); }

 private:
  std::vector<int> entry_instances() const {
    std::vector<int> out;
    const bool disagg = s_.layout.disaggregated;
    for (size_t i = 0; i < instances_.size(); ++i) {
      if (!disagg || instances_[i].prefill_pool) out.push_back(static_cast<int>(i));
    }
    return out;
  }

  int least_loaded(bool prefill_pool) const {
    int best = -1;
    for (size_t i = 0; i < instances_.size(); ++i) {
      const auto& in = instances_[i];
      if (s_.layout.disaggregated && in.prefill_pool != prefill_pool) continue;
      if (best < 0 || in.in_flight < instances_[static_cast<size_t>(best)].in_flight) {
        best = static_cast<int>(i);
      }
    }
    return best;
  }

  /// The instance a server / interactive arrival goes to (workload::ServingDispatch): the least
  /// loaded one, or the next in turn. With round robin each of n simulated instances sees every
  /// n-th arrival (an Erlang-n stream at its share of the rate); where more than
  /// kDispatchInstances are reduced to n, each real instance's stream is smoother than that.
  int dispatch_target() {
    if (workload::resolve_dispatch(s_.layout.dispatch, s_.scenario) ==
        workload::ServingDispatch::kRoundRobin) {
      if (entry_.empty()) entry_ = entry_instances();
      const int inst = entry_[next_entry_];
      next_entry_ = (next_entry_ + 1) % entry_.size();
      return inst;
    }
    return least_loaded(s_.layout.disaggregated);
  }

  void schedule_arrival(size_t i) {
    if (i >= seqs_.size()) return;
    sim_.schedule_at(engine::to_ticks(base::seconds(seqs_[i].arrival)), [this, i](Simulator&) {
      if (stopped_) return;
      const int inst = dispatch_target();
      dispatched_[static_cast<size_t>(inst)]++;
      enqueue(static_cast<int32_t>(i), inst, true);
      schedule_arrival(i + 1);
    });
  }

  void enqueue(int32_t id, int inst, bool wake) {
    Seq& q = seqs_[static_cast<size_t>(id)];
    q.instance = inst;
    q.state = State::kWaiting;
    Instance& in = instances_[static_cast<size_t>(inst)];
    in.queue.push_back(id);
    in.in_flight++;
    if (wake) kick(inst);
  }

  double now_s() const { return engine::to_seconds(sim_.now()).base(); }

  /// `dt_s` seconds from now in ticks (at least one), or nullopt after stopping the run when
  /// that moment is past base::kMaxSimSeconds: an iteration of absurd length (a calibration
  /// profile's GEMM efficiency of 1e-300 made one of ~1e298 s, which aborted in
  /// engine::to_ticks) ends the run, and finish() refuses it with the time (clock_overrun_s).
  std::optional<Tick> ticks_within_clock(double dt_s) {
    const double end = now_s() + dt_s;
    if (std::isfinite(end) && end <= base::kMaxSimSeconds)
      return std::max<Tick>(1, engine::to_ticks(base::seconds(dt_s)));
    stopped_ = true;
    if (clock_overrun_s_ == 0) clock_overrun_s_ = std::isfinite(end) ? end : HUGE_VAL;
    return std::nullopt;
  }

  void kick(int inst) {
    Instance& in = instances_[static_cast<size_t>(inst)];
    for (size_t g = 0; g < in.groups.size(); ++g) {
      if (!in.groups[g].busy) start_iteration(inst, static_cast<int>(g));
    }
  }

  // Evicts the newest decoding sequence of rank r (KvPolicy::kPreempt): its KV is freed and it
  // returns to the front of the queue to recompute input + generated tokens later.
  bool preempt(Instance& in, Rank& r, const Group& g) {
    while (!r.running.empty()) {
      const int32_t id = r.running.back();
      r.running.pop_back();
      Seq& q = seqs_[static_cast<size_t>(id)];
      if (q.state != State::kDecode || q.rank != static_cast<int>(&r - in.ranks.data())) continue;
      const double steps = static_cast<double>(g.iter - q.start_iter);
      kv_used(in, r) -= q.kv_base + steps * tps_;
      r.sum_ctx -= q.ctx_base + steps * tps_;
      r.decoding--;
      q.generated = std::min(q.output - 1, q.gen_at_start + static_cast<int32_t>(steps * tps_));
      q.prompt = q.input + q.generated;
      q.prefilled = 0;
      q.scheduled = 0;
      q.epoch++;
      q.state = State::kWaiting;
      q.needs_prefill = true;
      in.queue.push_front(id);
      preemptions_++;
      return true;
    }
    return false;
  }

  // Pooled pipeline: decoding sequences over the micro-batches, and with the prompts in
  // progress, the requests the capacity scheduler holds.
  static int64_t pool_decoding(const Instance& in) {
    int64_t n = 0;
    for (const Rank& r : in.ranks) n += r.decoding;
    return n;
  }
  static int64_t pool_live(const Instance& in) {
    return pool_decoding(in) + static_cast<int64_t>(in.prompts.size());
  }

  void start_iteration(int inst_idx, int group_idx) {
    Instance& in = instances_[static_cast<size_t>(inst_idx)];
    Group& g = in.groups[static_cast<size_t>(group_idx)];
    const auto& il = *in.layout;
    const bool reserve = s_.layout.kv_policy == KvPolicy::kReserve;
    if (ttft_stop_ > 0) {
      // Queued requests that have waited past the TTFT limit will miss it: count them now, so
      // that an overloaded probe stops as its queue grows rather than when it drains.
      const double late = now_s() - s_.limits->ttft.base();
      for (int32_t id : in.queue) {
        Seq& q = seqs_[static_cast<size_t>(id)];
        if (q.first_token >= 0 || q.ttft_late) continue;
        if (q.arrival >= late) break;  // first-come order: the rest arrived later
        q.ttft_late = true;
        ttft_over_++;
      }
      check_stop();
      if (stopped_) return;
    }
    batch_.assign(g.ranks.size(), RankBatch{});
    const size_t n_ranks = g.ranks.size();
    // A sequence is admitted only while the batch, with it, still fits the token budget when
    // every live sequence decodes (TensorRT-LLM's max_num_tokens caps generation too).
    const auto max_live = std::min<int64_t>(
        il.max_batch,
        std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(il.max_tokens) / q_)));
    admit_.assign(n_ranks, AdmitState{});
    // Prompt chunks of rank k within its budget (chunked prefill, or whole prompts).
    auto take_chunk = [&](size_t k, int32_t id) -> bool {
      Rank& r = in.ranks[static_cast<size_t>(g.ranks[k])];
      AdmitState& a = admit_[k];
      RankBatch& b = batch_[k];
      Seq& q = seqs_[static_cast<size_t>(id)];
      const int32_t done = in.pooled ? q.scheduled : q.prefilled;
      const double remaining = q.prompt - done;
      double take = remaining;
      if (il.chunked_prefill) {
        take = std::min(remaining, std::floor(a.budget));
        // TensorRT-LLM's first-come-first-served chunking: a chunk cut short by the budget is
        // rounded down to a multiple of the chunk unit (the KV block size); a prompt whose rest
        // fits is taken whole.
        if (take < remaining && il.chunk_unit > 1) {
          const double unit = il.chunk_unit;
          take = std::floor(take / unit) * unit;
        }
      } else if (remaining > a.budget) {
        // An unchunked prompt longer than the budget runs alone in an otherwise
        // prefill-free iteration.
        if (a.chunk_taken ||
            a.budget < static_cast<double>(il.max_tokens) - static_cast<double>(r.decoding) * q_)
          return false;
      }
      if (take < 1) return false;
      const auto t = static_cast<int32_t>(take);
      r.chunks.emplace_back(id, t);
      b.prefill_tokens += t;
      b.prefill_seqs++;
      b.prefill_pairs += causal_pairs(t, done);
      if (done + t >= q.prompt) b.logits++;
      if (in.pooled) q.scheduled += t;
      a.budget -= take;
      a.chunk_taken = true;
      return true;
    };
    for (size_t k = 0; k < n_ranks; ++k) {
      Rank& r = in.ranks[static_cast<size_t>(g.ranks[k])];
      r.chunks.clear();
      if (!reserve) {
        while (r.decoding > 0 &&
               kv_used(in, r) + static_cast<double>(r.decoding) * tps_ > kv_capacity(in, r)) {
          if (!preempt(in, r, g)) break;
        }
      }
      AdmitState& a = admit_[k];
      a.budget = static_cast<double>(il.max_tokens) - static_cast<double>(r.decoding) * q_;
      if (in.pooled) {
        // The micro-batch takes the next chunk of every prompt in progress that is not in
        // flight in another micro-batch, first come first served, within its batch and token
        // limits (TensorRT-LLM MicroBatchScheduler skips the in-flight request ids). A scheduled
        // chunk keeps its request in flight until its micro-batch comes back, as in the
        // TensorRT-LLM of MLPerf v5.0 / v5.1; with pp_chunk_overlap (PR #9308, 2025-11) only
        // the last chunk does, and the next chunk goes into the next micro-batch.
        a.live = r.decoding;
        for (int32_t id : in.prompts) {
          if (a.budget < 1 || a.live >= max_live) break;
          const Seq& q = seqs_[static_cast<size_t>(id)];
          // In flight: a chunk of it is in the pipeline (with overlap: its last chunk).
          if (il.pp_chunk_overlap ? q.scheduled >= q.prompt : q.scheduled > q.prefilled) continue;
          if (take_chunk(k, id)) {
            a.live++;
          } else if (!il.chunked_prefill) {
            break;
          }
        }
        continue;
      }
      a.live = r.decoding + static_cast<int64_t>(r.prefilling.size());
      for (int32_t id : r.prefilling) {
        if (a.budget < 1) break;
        // A chunk rounded down to nothing leaves the budget to later prompts whose rest fits.
        if (!take_chunk(k, id) && !il.chunked_prefill) break;
      }
    }
    // Admits the queue's first request to rank k; false when the rank cannot take it now.
    auto admit_one = [&](size_t k) -> bool {
      Rank& r = in.ranks[static_cast<size_t>(g.ranks[k])];
      AdmitState& a = admit_[k];
      const int rank_id = g.ranks[k];
      if (in.queue.empty() || a.live >= max_live) return false;
      // Pooled pipeline: TensorRT-LLM's capacity scheduler holds at most max_batch x pp
      // requests (maxNumSequences) over the micro-batches.
      if (in.pooled && pool_live(in) >= max_live * static_cast<int64_t>(in.groups.size()))
        return false;
      const int32_t id = in.queue.front();
      Seq& q = seqs_[static_cast<size_t>(id)];
      const double need = q.prompt + 1.0;
      const double extra = reserve ? static_cast<double>(max_out_ - q.generated) : 0.0;
      // Admission keeps a watermark free for the running sequences' next tokens (vLLM keeps
      // 1% of the blocks; we add two steps of growth) so that admitting does not force a
      // preemption on the very next step.
      const double cap = kv_capacity(in, r);
      const auto running = static_cast<double>(in.pooled ? pool_decoding(in) : r.decoding);
      const double watermark = reserve ? 0.0 : 0.01 * cap + 2.0 * (running + 1) * tps_;
      if (kv_used(in, r) + need + extra + watermark > cap) return false;
      if (q.needs_prefill) {
        if (a.budget < 1) return false;
        if (!il.chunked_prefill && q.prompt > a.budget && a.chunk_taken) return false;
        in.queue.pop_front();
        admitted(q);
        q.rank = rank_id;
        q.state = State::kPrefill;
        q.kv_base = need + extra;
        kv_used(in, r) += q.kv_base;
        (in.pooled ? in.prompts : r.prefilling).push_back(id);
        a.live++;
        take_chunk(k, id);
      } else {
        // Disaggregated decode side: the KV cache arrived; decoding starts this iteration, and
        // the first token (computed by the prefill pool) goes out with it: TTFT = prefill +
        // KV transfer + the waits for the link and for a decode slot (TensorRT-LLM's
        // disaggregated server hands the context server's first token to the generation server,
        // which streams it; SGLang PD and Dynamo stream from the decode side too).
        if (a.budget < q_) return false;
        in.queue.pop_front();
        if (q.first_token < 0) first_token(q, now_s());
        q.rank = rank_id;
        q.kv_base = need + extra;
        kv_used(in, r) += q.kv_base;
        begin_decode(r, g, id);
        a.budget -= q_;
        a.live++;
      }
      return true;
    };
    if (il.dp_attention && n_ranks > 1 && s_.layout.adp_balance) {
      // TensorRT-LLM's attention-DP request assignment: each new request goes to the rank with
      // the fewest active requests that can take it (ties: the lowest rank).
      while (!in.queue.empty()) {
        size_t best = n_ranks;
        for (size_t k = 0; k < n_ranks; ++k) {
          if (admit_[k].open && (best == n_ranks || admit_[k].live < admit_[best].live)) best = k;
        }
        if (best == n_ranks) break;
        if (!admit_one(best)) admit_[best].open = false;
      }
    } else {
      for (size_t k = 0; k < n_ranks; ++k) {
        while (admit_one(k)) {
        }
      }
    }
    if (il.dp_attention && n_ranks > 1 && il.adp_timeout_iters > 0 && !hold_ok(in, g, il)) {
      // Balance says wait: the prompts stay assigned to their ranks (and hold their KV) but
      // run no chunk this iteration.
      for (size_t k = 0; k < n_ranks; ++k) {
        Rank& r = in.ranks[static_cast<size_t>(g.ranks[k])];
        r.chunks.clear();
        batch_[k] = RankBatch{};
      }
      adp_held_++;
    }
    bool any = false;
    for (size_t k = 0; k < n_ranks; ++k) {
      const Rank& r = in.ranks[static_cast<size_t>(g.ranks[k])];
      RankBatch& b = batch_[k];
      b.decode = r.decoding;
      b.decode_context = r.sum_ctx;
      b.logits += r.decoding;
      if (b.decode > 0 || b.prefill_tokens > 0) any = true;
    }
    if (!any) {
      g.busy = false;
      return;
    }
    g.busy = true;
    g.started = now_s();
    g.step = in.step->time(batch_);
    double duration = g.step.total;
    if (in.stage_free.size() > 1) {
      // The micro-batch passes the stages in order, each running one micro-batch at a time,
      // first come first served; its tokens come back from the last stage. A pass is split
      // evenly over the stages (the layers are).
      const double stage = g.step.total / static_cast<double>(in.stage_free.size());
      double t = g.started;
      for (double& free : in.stage_free) {
        t = std::max(t, free) + stage;
        free = t;
      }
      duration = t - g.started;
    }
    const auto dt = ticks_within_clock(duration);
    if (!dt) return;
    record(in, inst_idx, group_idx, g);
    sim_.schedule_in(
        *dt, [this, inst_idx, group_idx](Simulator&) { end_iteration(inst_idx, group_idx); });
  }

  // TensorRT-LLM's attention-DP balance (PyExecutor._balance_adp_requests; blog 10), on the
  // prompt chunks this iteration scheduled on the group's ranks: true lets them run.
  static bool hold_ok_counts(Group& g, const workload::InstanceLayout& il, bool all_ctx,
                             bool all_free, bool all_gen) {
    // The counters advance in every iteration, with or without prompts, as TensorRT-LLM's do:
    // a prompt arriving after a run of decode-only iterations waits for the rest of the cycle.
    if (all_free && all_ctx) {
      g.adp_waiting = 0;
      if (all_gen) {
        if (g.adp_batching < il.adp_batching_wait_iters) {
          g.adp_batching++;
          return false;
        }
        g.adp_batching = 0;
      }
      return true;
    }
    g.adp_waiting++;
    if (g.adp_waiting >= il.adp_timeout_iters || !all_gen) {
      g.adp_waiting = 0;
      return true;
    }
    return false;
  }
  bool hold_ok(const Instance& in, Group& g, const workload::InstanceLayout& il) const {
    bool all_ctx = true, all_free = true, all_gen = true;
    for (int rank_id : g.ranks) {
      const Rank& r = in.ranks[static_cast<size_t>(rank_id)];
      all_ctx = all_ctx && !r.chunks.empty();
      all_free = all_free && r.decoding < il.max_batch;
      all_gen = all_gen && r.decoding > 0;
    }
    return hold_ok_counts(g, il, all_ctx, all_free, all_gen);
  }

  void record(Instance& in, int inst_idx, int group_idx, const Group& g) {
    double used = 0, cap = 0;
    int32_t dec = 0, pre = 0;
    for (size_t k = 0; k < g.ranks.size(); ++k) {
      const Rank& r = in.ranks[static_cast<size_t>(g.ranks[k])];
      used += r.kv_used;
      cap += r.capacity;
      dec += static_cast<int32_t>(batch_[k].decode);
      pre += static_cast<int32_t>(batch_[k].prefill_tokens);
    }
    if (in.pooled) {
      used = in.kv_used;
      cap = in.kv_capacity;
    }
    const double util = cap > 0 ? used / cap : 0;
    if (!in.prefill_pool) {
      const double dt = g.step.total;
      kv_time_ += util * dt;
      busy_time_ += dt;
      kv_peak_ = std::max(kv_peak_, util);
      decode_sum_ += dec;
      rank_iters_ += static_cast<int64_t>(g.ranks.size());
      step_sum_.attention += g.step.attention;
      step_sum_.dense += g.step.dense;
      step_sum_.moe += g.step.moe;
      step_sum_.head += g.step.head;
      step_sum_.mtp += g.step.mtp;
      step_sum_.comm += g.step.comm;
      step_sum_.host += g.step.host;
      step_sum_.total += g.step.total;
      decode_iters_++;
    }
    iterations_++;
    if (pre > 0) prompt_iters_++;
    if (in.traced < s_.trace_iterations) {
      in.traced++;
      trace_.push_back({.instance = inst_idx,
                        .group = group_idx,
                        .start_s = g.started,
                        .duration_s = g.step.total,
                        .decode = dec,
                        .prefill_tokens = pre,
                        .kv_utilization = util});
    }
  }

  // First admission of a request from its queue: the end of the loaded window offline, and the
  // start of its service time.
  void admitted(Seq& q) {
    if (q.admitted >= 0) return;
    q.admitted = now_s();
    last_admit_ = q.admitted;
    live_++;
    peak_live_ = std::max(peak_live_, live_);
  }

  // The p99 limits are provably met (run_until_met); only for probes (stop_when_limits_fail).
  // Samples queued past the TTFT limit count twice (over it, and without a first token).
  [[nodiscard]] bool limits_met() const {
    if (ttft_stop_ <= 0) return false;
    const auto n = static_cast<int64_t>(seqs_.size());
    const auto tpot_open = multi_token_ - static_cast<int64_t>(tpot_.size());
    return ttft_over_ + (n - firsts_) < ttft_stop_ &&
           (tpot_stop_ <= 0 || tpot_over_ + tpot_open < tpot_stop_);
  }

  // The p99 limits are provably met once only the drain is left (run_until_met): every sample
  // has its first token and is done or decoding, no prompt is left, so each decode group's
  // future is fixed -- its sequences finish at known iterations and nothing joins them. An
  // upper bound of every remaining iteration's time then bounds each unfinished sample's TPOT:
  // between two of the group's finishing iterations its ranks' batches stay the same and only
  // their contexts grow, so the step time at the later one (StepModel::time with the ranks'
  // batches and contexts then) bounds every iteration in between (the step time grows with the
  // context). The streaming front end adds its response time per iteration (exactly as
  // end_iteration does). When the samples over the TPOT limit, done or bounded, are fewer than
  // the p99 allows, the verdict is in. Single-group instances only (attention-DP, or one
  // pipeline slot); checked again only once a fifth of the unfinished samples have finished.
  bool drain_bound_met() {
    if (ttft_stop_ <= 0 || tpot_stop_ <= 0) return false;
    const auto n = static_cast<int64_t>(seqs_.size());
    const int64_t open = n - completed_;
    if (open > next_bound_check_ || ttft_over_ + (n - firsts_) >= ttft_stop_) return false;
    int64_t decoding = 0;
    for (const Instance& in : instances_) {
      for (const Rank& r : in.ranks) decoding += r.decoding;
      if (!in.queue.empty()) return false;
    }
    if (decoding != open) return false;  // prompts, transfers or arrivals are still to come
    next_bound_check_ = open - std::max<int64_t>(1, open / 5);
    const double limit = s_.limits->tpot.base();
    const bool reserve = s_.layout.kv_policy == KvPolicy::kReserve;
    // The unfinished samples by instance and rank: (finishing iteration, id).
    std::vector<std::vector<std::vector<std::pair<int64_t, int32_t>>>> by(instances_.size());
    for (size_t i = 0; i < instances_.size(); ++i) by[i].resize(instances_[i].ranks.size());
    for (size_t id = 0; id < seqs_.size(); ++id) {
      const Seq& q = seqs_[id];
      if (q.state != State::kDecode) continue;
      const double remaining = q.output - q.gen_at_start;
      const auto steps = static_cast<int64_t>(std::ceil(remaining / tps_ - 1e-9));
      by[static_cast<size_t>(q.instance)][static_cast<size_t>(q.rank)].emplace_back(
          q.start_iter + std::max<int64_t>(steps, 1), static_cast<int32_t>(id));
    }
    int64_t over = tpot_over_;
    std::vector<RankBatch> batch;
    for (size_t i = 0; i < instances_.size(); ++i) {
      const Instance& in = instances_[i];
      const int64_t live = [&] {
        int64_t c = 0;
        for (const Rank& r : in.ranks) c += r.decoding;
        return c;
      }();
      if (live == 0) continue;
      if (in.groups.size() != 1) return false;
      const Group& g = in.groups.front();
      if (!g.busy) return false;
      const size_t nr = in.ranks.size();
      // Per rank: sequences, and sum of (context at decode start - (start_iter + 1) x tps), so
      // that the context sum at the start of iteration j is that + count x j x tps.
      std::vector<int64_t> count(nr, 0);
      std::vector<double> base(nr, 0);
      std::vector<std::pair<int64_t, std::pair<int32_t, int32_t>>> fin;  // (finish, (rank, id))
      for (size_t k = 0; k < nr; ++k) {
        double growth = 0;
        for (auto [f, id] : by[i][k]) {
          const Seq& q = seqs_[static_cast<size_t>(id)];
          count[k]++;
          base[k] += q.ctx_base - static_cast<double>(q.start_iter + 1) * tps_;
          growth += static_cast<double>(f - g.iter + 1) * tps_;
          fin.push_back({f, {static_cast<int32_t>(k), id}});
        }
        const Rank& r = in.ranks[k];
        // No preemption ahead: the rank's KV cache holds every sequence to its end.
        if (!reserve && r.kv_used + growth > r.capacity) return false;
        if (count[k] != r.decoding) return false;
      }
      std::sort(fin.begin(), fin.end());
      // Iteration g.iter + 1 is running and ends at `end` (exact, the engine's tick).
      double end = g.started + g.step.total;
      double delivered = end;  // the front end's bound after the last iteration so far
      int64_t last = g.iter + 1;
      int64_t present = live;
      auto responses = [&](int64_t seqs) {
        return response_s_ * static_cast<double>(seqs) / stream_interval_;
      };
      if (response_s_ > 0) delivered = std::max(in.responses_free_s, end) + responses(present);
      size_t at = 0;
      while (at < fin.size()) {
        const int64_t f = std::max(fin[at].first, g.iter + 1);
        if (f > last) {
          // Iterations last+1 .. f, all with the sequences finishing at f or later, at most as
          // long as iteration f (its contexts are the largest).
          batch.assign(nr, RankBatch{});
          for (size_t k = 0; k < nr; ++k) {
            batch[k].decode = count[k];
            batch[k].decode_context =
                count[k] > 0 ? base[k] + static_cast<double>(count[k] * f) * tps_ : 0;
            batch[k].logits = count[k];
          }
          // Ticks round to the nanosecond: one more per iteration covers it.
          const double step = in.step->time(batch).total + 1e-9;
          const auto len = static_cast<double>(f - last);
          if (response_s_ > 0) {
            const double c = responses(present);
            delivered =
                std::max(delivered + len * c, end + std::max(step + len * c, len * step + c));
          }
          end += len * step;
          if (response_s_ <= 0) delivered = end;
          last = f;
        }
        for (; at < fin.size() && std::max(fin[at].first, g.iter + 1) == f; ++at) {
          const auto [k, id] = fin[at].second;
          const Seq& q = seqs_[static_cast<size_t>(id)];
          if (q.output > 1 && (delivered - q.first_token) / (q.output - 1) > limit) {
            if (++over >= tpot_stop_) return false;
          }
          count[static_cast<size_t>(k)]--;
          base[static_cast<size_t>(k)] -= q.ctx_base - static_cast<double>(q.start_iter + 1) * tps_;
          present--;
        }
      }
    }
    return over < tpot_stop_;
  }

  // Stops the run once a p99 limit is provably missed (stop_when_limits_fail).
  void check_stop() {
    if ((ttft_stop_ > 0 && ttft_over_ >= ttft_stop_) ||
        (tpot_stop_ > 0 && tpot_over_ >= tpot_stop_))
      stopped_ = true;
  }

  void begin_decode(Rank& r, const Group& g, int32_t id) {
    Seq& q = seqs_[static_cast<size_t>(id)];
    q.state = State::kDecode;
    q.start_iter = g.iter;
    q.gen_at_start = q.generated;
    q.ctx_base = q.prompt + 1.0;
    r.sum_ctx += q.ctx_base;
    r.decoding++;
    r.running.push_back(id);
    const double remaining = q.output - q.generated;
    const auto steps = static_cast<int64_t>(std::ceil(remaining / tps_ - 1e-9));
    r.finish.push({g.iter + std::max<int64_t>(steps, 1), q.epoch, id});
  }

  // `t`: when the last token reaches the user (the front end's delivery, end_iteration).
  void complete(Instance& in, Rank& r, const Group& g, int32_t id, double t) {
    Seq& q = seqs_[static_cast<size_t>(id)];
    const double steps = static_cast<double>(g.iter - q.start_iter);
    kv_used(in, r) -= q.kv_base + (s_.layout.kv_policy == KvPolicy::kReserve ? 0.0 : steps * tps_);
    r.sum_ctx -= q.ctx_base + steps * tps_;
    r.decoding--;
    q.state = State::kDone;
    q.generated = q.output;
    const double ttft = q.first_token - q.arrival;
    ttft_.push_back(ttft);
    e2e_.push_back(t - q.arrival);
    if (q.output > 1) {
      const double tpot = (t - q.first_token) / (q.output - 1);
      tpot_.push_back(tpot);
      if (s_.limits && tpot > s_.limits->tpot.base()) tpot_over_++;
    }
    service_sum_ += t - q.admitted;
    live_--;
    output_tokens_ += q.output;
    input_tokens_ += q.input;
    last_done_ = std::max(last_done_, t);
    in.in_flight--;
    completed_++;
  }

  void end_iteration(int inst_idx, int group_idx) {
    if (stopped_) return;
    Instance& in = instances_[static_cast<size_t>(inst_idx)];
    Group& g = in.groups[static_cast<size_t>(group_idx)];
    const bool reserve = s_.layout.kv_policy == KvPolicy::kReserve;
    g.iter++;
    const double t_gpu = now_s();
    // The streaming front end (ServingSetup): the responses of this iteration -- one per
    // decoding sequence every stream_interval iterations, and every first token -- reach the
    // users when the front end has handled them and everything handed to it before.
    double t = t_gpu;
    if (response_s_ > 0) {
      double responses = 0;
      for (int rank_id : g.ranks) {
        const Rank& r = in.ranks[static_cast<size_t>(rank_id)];
        responses += static_cast<double>(r.decoding) / stream_interval_;
        for (auto [id, tok] : r.chunks) {
          const Seq& q = seqs_[static_cast<size_t>(id)];
          // A prefill-pool instance hands its first tokens to the decode side with the KV.
          if (q.prefilled + tok >= q.prompt && q.first_token < 0 && !in.prefill_pool)
            responses += 1;
        }
      }
      t = std::max(in.responses_free_s, t_gpu) + response_s_ * responses;
      in.responses_free_s = t;
    }
    for (int rank_id : g.ranks) {
      Rank& r = in.ranks[static_cast<size_t>(rank_id)];
      const double grow = static_cast<double>(r.decoding) * tps_;
      emitted_ += grow;
      r.sum_ctx += grow;
      if (!reserve) kv_used(in, r) += grow;
      while (!r.finish.empty() && r.finish.top().finish <= g.iter) {
        const HeapEntry e = r.finish.top();
        r.finish.pop();
        Seq& q = seqs_[static_cast<size_t>(e.id)];
        if (q.state != State::kDecode || q.epoch != e.epoch) continue;
        complete(in, r, g, e.id, t);
      }
      // Prompt chunks of this iteration.
      for (auto [id, tok] : r.chunks) {
        Seq& q = seqs_[static_cast<size_t>(id)];
        q.prefilled += tok;
        if (q.prefilled < q.prompt) continue;
        auto& prompts = in.pooled ? in.prompts : r.prefilling;
        prompts.erase(std::find(prompts.begin(), prompts.end(), id));
        q.rank = rank_id;  // pooled: it decodes in the micro-batch of its last chunk
        // Disaggregated: the prefill pool's first token reaches the user from the decode side,
        // with the KV cache (decode admission, below), unless the answer ends here.
        if (q.first_token < 0 && (!in.prefill_pool || q.generated + 1 >= q.output)) {
          first_token(q, t);
        }
        q.generated++;
        if (q.generated >= q.output) {
          // A one-token answer is done with its prompt (complete() undoes the decode count).
          q.start_iter = g.iter;
          q.ctx_base = 0;
          r.decoding++;
          complete(in, r, g, id, t);
          continue;
        }
        if (in.prefill_pool) {
          transfer(inst_idx, rank_id, id);
          continue;
        }
        begin_decode(r, g, id);
      }
      r.chunks.clear();
      // Compact the lazily cleaned admission list now and then.
      if (r.running.size() > 64 && r.running.size() > 2 * static_cast<size_t>(r.decoding)) {
        std::erase_if(r.running, [&](int32_t id) {
          const Seq& q = seqs_[static_cast<size_t>(id)];
          return q.state != State::kDecode || q.rank != rank_id || q.instance != inst_idx;
        });
      }
    }
    if (emit_.empty() || emit_.back().second != emitted_) emit_.emplace_back(t_gpu, emitted_);
    check_stop();
    if (stopped_) return;
    g.busy = false;
    start_iteration(inst_idx, group_idx);
    // Finished requests may have freed room for other idle groups of the instance.
    if (in.groups.size() > 1) kick(inst_idx);
  }

  void first_token(Seq& q, double t) {
    q.first_token = t;
    firsts_++;
    emitted_ += 1;
    if (s_.limits && !q.ttft_late && t - q.arrival > s_.limits->ttft.base()) ttft_over_++;
  }

  void transfer(int inst_idx, int rank_id, int32_t id) {
    Seq& q = seqs_[static_cast<size_t>(id)];
    q.state = State::kTransfer;
    const int dst = least_loaded(false);
    Instance& src = instances_[static_cast<size_t>(inst_idx)];
    const Instance& d = instances_[static_cast<size_t>(dst)];
    const int dom = s_.fabric.domain_size;
    const bool same = src.first_gpu / dom == d.first_gpu / dom;
    // Link concurrency: a rank's GPUs send one KV cache at a time at the link's rate
    // (kv_transfer_s), first come first served, so prompts that finish together share the link
    // instead of each getting all of it. (Fair sharing would end such a batch of transfers at
    // the same last time; FIFO delivers the first ones sooner.)
    const double dt = src.step->kv_transfer_s(q.prompt + 1, same);
    double& link_free = src.kv_send_free_s[static_cast<size_t>(rank_id)];
    const double start = std::max(now_s(), link_free);
    link_free = start + dt;
    instances_[static_cast<size_t>(dst)].in_flight++;  // reserve its place now
    const auto transfer = ticks_within_clock(link_free - now_s());
    if (!transfer) return;
    sim_.schedule_in(*transfer, [this, inst_idx, rank_id, id, dst](Simulator&) {
      if (stopped_) return;
      Instance& s = instances_[static_cast<size_t>(inst_idx)];
      Rank& r = s.ranks[static_cast<size_t>(rank_id)];
      Seq& moved = seqs_[static_cast<size_t>(id)];
      kv_used(s, r) -= moved.kv_base;
      s.in_flight--;
      moved.needs_prefill = false;
      moved.state = State::kWaiting;
      moved.instance = dst;
      Instance& d2 = instances_[static_cast<size_t>(dst)];
      d2.queue.push_back(id);
      kick(dst);
      kick(inst_idx);
    });
  }

  ServingResult finish(size_t n) {
    ServingResult out;
    out.simulated_requests = static_cast<int64_t>(n);
    out.requests = static_cast<int64_t>(n) * symmetry_;
    out.symmetry = symmetry_;
    out.simulated_instances = static_cast<int>(instances_.size());
    out.dispatched = dispatched_;
    out.duration_s = last_done_;
    out.iterations = iterations_;
    out.preemptions = preemptions_;
    out.prompt_iterations = prompt_iters_;
    out.adp_held_iterations = adp_held_;
    out.events = sim_.events_run();
    out.stopped_early = stopped_;
    CT_CHECK(stopped_ || completed_ == static_cast<int64_t>(n), "every request must complete");
    const double gpus = static_cast<double>(s_.layout.gpus());
    if (last_done_ > 0) {
      out.tokens_per_s = output_tokens_ * symmetry_ / last_done_;
      out.tokens_per_s_per_gpu = out.tokens_per_s / gpus;
      out.requests_per_s = static_cast<double>(n) * symmetry_ / last_done_;
    }
    out.ttft_s = stats_of(ttft_);
    out.tpot_s = stats_of(tpot_);
    out.e2e_s = stats_of(e2e_);
    out.tokens_per_s_per_user = out.tpot_s.p50 > 0 ? 1.0 / out.tpot_s.p50 : 0;
    const double done = static_cast<double>(std::max<int64_t>(1, completed_));
    out.mean_input_tokens = input_tokens_ / done;
    out.mean_output_tokens = output_tokens_ / done;
    steady_state(out, gpus, done);
    out.kv_utilization_mean = busy_time_ > 0 ? kv_time_ / busy_time_ : 0;
    out.kv_utilization_peak = kv_peak_;
    out.mean_decode_batch = rank_iters_ > 0 ? decode_sum_ / static_cast<double>(rank_iters_) : 0;
    if (decode_iters_ > 0) {
      const double k = 1.0 / static_cast<double>(decode_iters_);
      out.mean_step = step_sum_;
      out.mean_step.attention *= k;
      out.mean_step.dense *= k;
      out.mean_step.moe *= k;
      out.mean_step.head *= k;
      out.mean_step.mtp *= k;
      out.mean_step.comm *= k;
      out.mean_step.host *= k;
      out.mean_step.total *= k;
    }
    out.trace = std::move(trace_);
    return out;
  }

  // The loaded window and whether the run reached a steady state (serving_sim.h).
  void steady_state(ServingResult& out, double gpus, double done) const {
    if (stopped_ || completed_ == 0) return;
    const bool offline = s_.scenario == ServingScenario::kOffline || s_.rate_qps <= 0;
    const double lifetime = offline ? service_sum_ / done : out.e2e_s.mean;
    const double end = offline ? last_admit_ : seqs_.back().arrival;
    const double start = offline ? 0.0 : std::min(lifetime, 0.5 * end);
    out.arrival_window_s = end;
    auto emitted_by = [&](double t) {
      auto it = std::upper_bound(emit_.begin(), emit_.end(), std::make_pair(t, 1e300));
      return it == emit_.begin() ? 0.0 : std::prev(it)->second;
    };
    if (end > start) {
      out.steady_window_s = end - start;
      out.steady_tokens_per_s = (emitted_by(end) - emitted_by(start)) * symmetry_ / (end - start);
      out.steady_tokens_per_s_per_gpu = out.steady_tokens_per_s / gpus;
    }
    const auto n = static_cast<double>(
        requested_ > 0 ? requested_ : static_cast<int64_t>(seqs_.size()) * symmetry_);
    out.steady = end >= lifetime && end > 0;
    if (!out.steady) {
      if (offline) {
        // Requests the ranks hold at once: what was admitted, or what the batch limits and the
        // KV cache allow at the mean sequence length when everything fitted.
        double hold = 0;
        for (const auto& in : instances_) {
          if (s_.layout.disaggregated && !in.prefill_pool) continue;
          const auto& il = *in.layout;
          const double by_batch =
              std::min(static_cast<double>(il.max_batch), static_cast<double>(il.max_tokens) / q_);
          for (const auto& r : in.ranks) {
            hold += std::min(by_batch, r.capacity / std::max(1.0, out.mean_input_tokens +
                                                                      out.mean_output_tokens));
          }
        }
        const double held = std::max(hold, static_cast<double>(peak_live_));
        out.steady_min_requests = static_cast<int64_t>(std::ceil(2.0 * held * symmetry_));
        out.steady_note =
            fmt("%.0f requests are too few for a steady state: ", n) +
            (peak_live_ >= static_cast<int64_t>(seqs_.size())
                 ? std::string("every one is admitted at once")
                 : fmt("the last is admitted at %.3g s", end)) +
            fmt(", before one request lifetime (%.3g s) has passed, so the figures describe ",
                lifetime) +
            fmt("the drain; at least about %.0f requests keep the GPUs loaded",
                static_cast<double>(out.steady_min_requests));
      } else {
        out.steady_min_requests =
            static_cast<int64_t>(std::ceil(2.0 * s_.rate_qps * std::max(lifetime, 1e-3)));
        out.steady_note =
            fmt("%.0f requests are too few for a steady state: ", n) +
            fmt("at %.4g requests/s they arrive ", s_.rate_qps) + fmt("within %.3g s, ", end) +
            fmt("less than the mean latency (%.3g s), so the queues never ", lifetime) +
            fmt("build up (at least about %.0f requests would)",
                static_cast<double>(out.steady_min_requests));
      }
    }
    const auto floor = static_cast<double>(
        std::min<int64_t>(kMlperfOfflineFloor, std::max<int64_t>(1, s_.dataset.samples)));
    out.loadgen_length =
        offline ? (n >= floor && out.duration_s >= kMinDurationS) : end >= kMinDurationS;
  }

  const ServingSetup& s_;
  int symmetry_ = 1;
  int64_t requested_ = 0;  // the deployment's request count (before rounding to instances)
  double tps_ = 1, q_ = 1;
  int64_t max_out_ = 0;
  double response_s_ = 0;  // front-end host time per streamed response (0: not streaming)
  double stream_interval_ = 1;
  std::vector<int> entry_;  // round-robin dispatch: the instances arrivals enter, in turn
  size_t next_entry_ = 0;
  std::vector<int64_t> dispatched_;  // requests the harness handed each simulated instance
  Simulator sim_;
  std::vector<Instance> instances_;
  std::vector<Seq> seqs_;
  std::vector<RankBatch> batch_;
  // One iteration's admission state per rank of the stepping group.
  struct AdmitState {
    double budget = 0;  // tokens left in max_tokens
    int64_t live = 0;   // decoding + prefilling sequences
    bool chunk_taken = false, open = true;
  };
  std::vector<AdmitState> admit_;
  std::vector<double> ttft_, tpot_, e2e_;
  double output_tokens_ = 0, input_tokens_ = 0, last_done_ = 0;
  int64_t completed_ = 0, iterations_ = 0, preemptions_ = 0, adp_held_ = 0;
  int64_t prompt_iters_ = 0;
  double kv_time_ = 0, busy_time_ = 0, kv_peak_ = 0, decode_sum_ = 0;
  int64_t rank_iters_ = 0, decode_iters_ = 0;
  StepTime step_sum_;
  std::vector<IterationRecord> trace_;
  // Run length and early stop.
  std::vector<std::pair<double, double>> emit_;  // (iteration end, output tokens emitted so far)
  double emitted_ = 0, last_admit_ = 0, service_sum_ = 0;
  int64_t live_ = 0, peak_live_ = 0;
  int64_t ttft_stop_ = 0, tpot_stop_ = 0, ttft_over_ = 0, tpot_over_ = 0;
  int64_t multi_token_ = 0, firsts_ = 0;  // samples of more than one token; with a first token
  int64_t next_bound_check_ = std::numeric_limits<int64_t>::max();  // drain_bound_met
  bool stopped_ = false;
  double clock_overrun_s_ = 0;  // ticks_within_clock
};

// Identical shares of the deployment simulated once each (serving_sim.h, "symmetry").
int symmetry_of(const workload::ServingLayout& l, bool offline) {
  const int base = l.disaggregated ? std::gcd(l.replicas, l.prefill_replicas) : l.replicas;
  if (offline) return base;
  const int instances = l.replicas + (l.disaggregated ? l.prefill_replicas : 0);
  for (int d = 1; d < base; ++d) {
    if (base % d == 0 && instances / d <= kDispatchInstances) return d;
  }
  // No divisor brings it under the cap: all of a few instances, or one share of many.
  return instances <= 4 * kDispatchInstances ? 1 : base;
}

StepSetup step_setup(const ServingSetup& s, const workload::InstanceLayout& il, int first_gpu) {
  StepSetup st;
  st.model = s.model;
  st.instance = il;
  st.weights = s.layout.weights;
  st.kv_bytes = s.layout.kv_bytes;
  st.mtp = s.layout.mtp;
  st.tp_overlap = s.layout.tp_overlap;
  st.norm_quant_fusion = s.layout.norm_quant_fusion;
  st.compute = s.compute;
  st.comm = s.comm;
  st.fabric = s.fabric;
  st.first_gpu = first_gpu;
  st.moe_imbalance = s.moe_imbalance;
  st.calibration = s.calibration;
  st.cap_slowdown = s.cap_slowdown;
  st.runtime = s.layout.runtime;
  return st;
}

int64_t max_sequence(const ServingSetup& s) { return s.dataset.input.max + s.dataset.output.max; }

// Output tokens/s one instance's streaming front end can deliver (ServingSetup): a response
// carries stream_interval steps of tokens and costs stream_host_per_response_s; unbounded when
// the run does not stream or the runtime pays no host time per response.
double stream_token_cap(const ServingSetup& s) {
  const double c = s.calibration.stream_host_per_response_s;
  if (s.scenario == ServingScenario::kOffline ||
      s.layout.runtime != workload::ServingRuntime::kPytorch || c <= 0)
    return std::numeric_limits<double>::infinity();
  return std::max(1, s.layout.stream_interval) * s.layout.tokens_per_step() / c;
}

using Prepared = PreparedServing;

base::Result<Prepared> prepare(const ServingSetup& s, int64_t table_batch = 0,
                               int64_t table_tokens = 0) {
  if (!s.model || !s.compute)
    return base::fail("serving: a model and a compute model are required");
  if (auto st = workload::validate(s.layout, *s.model, s.layout.gpus()); !st)
    return base::fail(st.error());
  Prepared p;
  const auto& l = s.layout;
  // The longest sequence must fit one rank: prompt (+ output when reserving).
  const int64_t longest = max_sequence(s);
  const int pre_gpus = l.disaggregated ? l.prefill_replicas * l.prefill.gpus() : 0;
  auto mem = workload::check_serving_memory(*s.model, l.instance, l, s.memory_capacity,
                                            l.disaggregated ? longest : longest);
  if (!mem) return base::fail(mem.error());
  p.mem = *mem;
  // The tables reach the larger of the layout's limits and the caller's (prepare_serving).
  workload::InstanceLayout tables = l.instance;
  tables.max_batch = std::max(tables.max_batch, table_batch);
  tables.max_tokens = std::max(tables.max_tokens, table_tokens);
  auto agg = StepModel::build(step_setup(s, tables, pre_gpus));
  if (!agg) return base::fail(agg.error());
  p.agg = std::move(*agg);
  if (l.disaggregated) {
    auto pm = workload::check_serving_memory(*s.model, l.prefill, l, s.memory_capacity,
                                             s.dataset.input.max + 1);
    if (!pm) return base::fail("prefill pool: " + pm.error().message);
    p.pre_mem = *pm;
    auto pre = StepModel::build(step_setup(s, l.prefill, 0));
    if (!pre) return base::fail(pre.error());
    p.pre = std::move(*pre);
    p.has_pre = true;
  }
  return p;
}

}  // namespace

LengthMoments length_moments(const workload::Dataset& d, uint64_t seed) {
  auto reqs = workload::sample_requests(d, 8192, seed);
  LengthMoments m;
  double in = 0, out = 0, weighted = 0;
  std::vector<double> ins;
  ins.reserve(reqs.size());
  for (auto r : reqs) {
    in += r.input;
    out += r.output;
    // A sequence spends `output` steps decoding at mean context input + output/2.
    weighted += static_cast<double>(r.output) * (r.input + 0.5 * r.output);
    ins.push_back(r.input);
  }
  const auto n = static_cast<double>(reqs.size());
  m.input = in / n;
  m.output = out / n;
  m.context = weighted / out;
  std::sort(ins.begin(), ins.end());
  m.input_p99 = ins[static_cast<size_t>(0.99 * (n - 1))];
  return m;
}

base::Result<PreparedServing> prepare_serving(const ServingSetup& s, int64_t table_batch,
                                              int64_t table_tokens) {
  return prepare(s, table_batch, table_tokens);
}

base::Result<SteadyEstimate> estimate_serving(const ServingSetup& s, const LengthMoments& lm,
                                              int64_t batch) {
  auto p = prepare(s);
  if (!p) return base::fail(p.error());
  return estimate_serving(s, lm, *p, batch);
}

base::Result<SteadyEstimate> estimate_serving(const ServingSetup& s, const LengthMoments& lm,
                                              const PreparedServing& prepared, int64_t batch) {
  const PreparedServing* p = &prepared;
  const auto& l = s.layout;
  const auto& il = l.instance;
  SteadyEstimate e;
  const double tps = l.tokens_per_step();
  const double q = 1.0 + l.mtp;
  const double per_seq_kv = l.kv_policy == KvPolicy::kReserve
                                ? lm.input + static_cast<double>(s.dataset.output.max)
                                : lm.context;
  const auto kv_batch = std::max<int64_t>(
      1, static_cast<int64_t>(static_cast<double>(p->mem.kv_tokens_per_rank) / per_seq_kv));
  int64_t b = batch > 0 ? batch : il.max_batch;
  b = std::min<int64_t>(
      b, std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(il.max_tokens) / q)));
  if (s.max_concurrency > 0)
    b = std::min<int64_t>(b, std::max<int64_t>(1, s.max_concurrency / il.ranks()));
  if (kv_batch < b) {
    b = kv_batch;
    e.kv_limited = true;
  }
  b = std::max<int64_t>(1, std::min<int64_t>(b, il.max_batch));
  e.batch = b;
  const double gpus = static_cast<double>(l.gpus());
  if (!l.disaggregated) {
    const double prefill_per_step = static_cast<double>(b) * tps * lm.input / lm.output;
    const double budget =
        std::max(1.0, static_cast<double>(il.max_tokens) - static_cast<double>(b) * q);
    const auto chunk = static_cast<int64_t>(
        il.chunked_prefill ? std::max(1.0, std::min(lm.input, budget)) : lm.input);
    e.step = p->agg.uniform(b, lm.context, prefill_per_step, chunk);
    const double inst_tokens =
        std::min(il.ranks() * static_cast<double>(b) * tps / e.step.total, stream_token_cap(s));
    e.tokens_per_s_per_gpu = inst_tokens * l.replicas / gpus;
    e.tpot_s = e.step.total / tps;
    const double chunks = il.chunked_prefill ? std::ceil(lm.input_p99 / budget) : 1.0;
    e.ttft_s = (chunks + 0.5) * e.step.total;
    e.requests_per_s = inst_tokens * l.replicas / lm.output;
  } else if (!p->has_pre) {
    // Decode pool alone (a search pairs it with prefill pools later): its own rate only.
    e.step = p->agg.uniform(b, lm.context, 0, 0);
    const double dec_rate =
        std::min(il.ranks() * static_cast<double>(b) * tps / e.step.total, stream_token_cap(s));
    e.decode_instance_rps = dec_rate / lm.output;
    e.requests_per_s = l.replicas * e.decode_instance_rps;
    e.tokens_per_s_per_gpu = e.requests_per_s * lm.output / gpus;
    e.tpot_s = e.step.total / tps;
    e.decode_replicas = l.replicas;
  } else {
    // Prefill pool: full token budget of prompts per iteration.
    const auto& pl = l.prefill;
    const double tokens = std::max(1.0, static_cast<double>(pl.max_tokens));
    RankBatch r;
    const double seqs = std::max(1.0, tokens / lm.input);
    r.prefill_tokens = static_cast<int64_t>(tokens);
    r.prefill_seqs = static_cast<int64_t>(std::ceil(seqs));
    r.prefill_pairs = seqs * causal_pairs(static_cast<int64_t>(std::min(tokens, lm.input)), 0);
    r.logits = r.prefill_seqs;
    std::vector<RankBatch> rs(static_cast<size_t>(pl.dp_attention ? pl.tp : 1), r);
    const StepTime tp = p->pre.time(rs);
    const double pre_rate = pl.ranks() * tokens / tp.total;  // prompt tokens/s per instance
    e.step = p->agg.uniform(b, lm.context, 0, 0);
    const double dec_rate =
        std::min(il.ranks() * static_cast<double>(b) * tps / e.step.total, stream_token_cap(s));
    const double rate =
        std::min(l.prefill_replicas * pre_rate / lm.input, l.replicas * dec_rate / lm.output);
    e.requests_per_s = rate;
    e.tokens_per_s_per_gpu = rate * lm.output / gpus;
    e.tpot_s = e.step.total / tps;
    e.ttft_s = (std::ceil(lm.input_p99 / tokens) + 0.5) * tp.total +
               p->pre.kv_transfer_s(static_cast<int64_t>(lm.input_p99), false);
    e.prefill_instance_rps = pre_rate / lm.input;
    e.decode_instance_rps = dec_rate / lm.output;
    e.prefill_replicas = l.prefill_replicas;
    e.decode_replicas = l.replicas;
  }
  e.tokens_per_s_per_user = e.tpot_s > 0 ? 1.0 / e.tpot_s : 0;
  return e;
}

int64_t default_request_count(const ServingSetup& s, double expected_qps) {
  const int64_t floor =
      std::min<int64_t>(kMlperfOfflineFloor, std::max<int64_t>(1, s.dataset.samples));
  double n = 0;
  if (s.scenario == ServingScenario::kOffline) {
    n = std::max(static_cast<double>(floor), kOfflineSlack * kMinDurationS * expected_qps);
  } else {
    n = std::max(std::min(static_cast<double>(floor), 4000.0), kMinDurationS * s.rate_qps);
  }
  const int instances =
      s.layout.replicas + (s.layout.disaggregated ? s.layout.prefill_replicas : 0);
  const double cap = static_cast<double>(kMaxRequestsPerInstance) * std::max(1, instances);
  return static_cast<int64_t>(std::min(n, cap));
}

namespace {

// One serving run that can pause (Sim::run_until_met) and be continued: owns what the Sim
// refers to, so it does not move.
class ServingRun {
 public:
  ServingRun(const ServingRun&) = delete;
  ServingRun& operator=(const ServingRun&) = delete;

  /// What the probes of one rate search share: the step models (the same layout; their
  /// attention memo then serves every probe) and the sampled requests (sample_requests draws
  /// them one after the other, so a run of n takes the first n of a longer draw).
  struct Shared {
    const Prepared* prepared = nullptr;
    std::vector<workload::RequestLengths> requests;
  };

  static base::Result<std::unique_ptr<ServingRun>> start(const ServingSetup& setup,
                                                         Shared* shared = nullptr) {
    std::unique_ptr<ServingRun> run(new ServingRun(setup));
    const ServingSetup& s = run->s_;
    if (shared && shared->prepared) {
      run->p_ptr_ = shared->prepared;
    } else {
      auto p = prepare(s);
      if (!p) return base::fail(p.error());
      run->p_ = std::move(*p);
      run->p_ptr_ = &run->p_;
    }
    const auto& l = s.layout;
    if (!std::isfinite(s.rate_qps) || s.rate_qps < 0) {
      return base::fail(fmt("the arrival rate must be a finite number >= 0, got %g", s.rate_qps));
    }
    if (s.scenario != ServingScenario::kOffline && s.rate_qps <= 0) {
      return base::fail("the " + std::string(workload::scenario_name(s.scenario)) +
                        " scenario needs an arrival rate > 0");
    }
    const int symmetry = symmetry_of(l, s.scenario == ServingScenario::kOffline);
    int64_t n = s.requests;
    if (n <= 0) {
      double qps = s.rate_qps;
      if (s.scenario == ServingScenario::kOffline) {
        auto e = estimate_serving(s, length_moments(s.dataset, s.seed));
        qps = e ? e->requests_per_s : 0;
      }
      n = default_request_count(s, qps);
    }
    int64_t n_sim = std::max<int64_t>(1, (n + symmetry - 1) / symmetry);
    if (s.requests <= 0 && s.scenario != ServingScenario::kOffline) {
      // LoadGen issues queries until min_duration has elapsed: draw the same arrival stream as
      // Sim::run and count the arrivals up to 600 s (within the per-instance cap).
      workload::Rng rng(s.seed * 7919 + 17);
      const double rate_sim = s.rate_qps / symmetry;
      const int64_t cap = n_sim + static_cast<int64_t>(std::ceil(0.1 * static_cast<double>(n_sim)));
      double t = 0;
      int64_t k = 0;
      while (k < cap && t < kMinDurationS) {
        t += rng.exponential(rate_sim);
        ++k;
      }
      n_sim = std::max(n_sim, k);
      n = n_sim * symmetry;
    }
    if (n_sim > base::kMaxRequests) {
      return base::fail(std::to_string(n_sim) +
                        " requests to simulate are more than the limit of " +
                        std::to_string(base::kMaxRequests) + " (base::kMaxRequests)");
    }
    if (s.scenario != ServingScenario::kOffline) {
      // The arrival stream Sim::run will draw, to its last arrival: a rate so low that the run
      // would outlast the engine's clock is refused here, not aborted there (issue 19).
      workload::Rng rng(s.seed * 7919 + 17);
      const double rate_sim = s.rate_qps / symmetry;
      double t = 0;
      for (int64_t k = 0; k < n_sim && t <= base::kMaxSimSeconds; ++k)
        t += rng.exponential(rate_sim);
      if (!(t <= base::kMaxSimSeconds)) {
        return base::fail(fmt("at %g requests/s, ", s.rate_qps) + std::to_string(n) +
                          fmt(" requests arrive over more than %.0f s (100 years), the limit of "
                              "simulated time: give a higher rate or fewer requests",
                              base::kMaxSimSeconds));
      }
    }
    std::vector<workload::RequestLengths> own;
    std::span<const workload::RequestLengths> reqs;
    if (shared) {
      if (static_cast<int64_t>(shared->requests.size()) < n_sim)
        shared->requests = workload::sample_requests(s.dataset, n_sim, s.seed);
      reqs = std::span(shared->requests).first(static_cast<size_t>(n_sim));
    } else {
      own = workload::sample_requests(s.dataset, n_sim, s.seed);
      reqs = own;
    }
    const Prepared& pr = *run->p_ptr_;
    run->symmetry_ = symmetry;
    run->sim_ = std::make_unique<Sim>(s, pr.agg, pr.has_pre ? &pr.pre : nullptr, pr.mem,
                                      pr.has_pre ? &pr.pre_mem : nullptr, symmetry);
    run->sim_->set_requested(n);
    run->sim_->begin(reqs, s.rate_qps / symmetry);
    return run;
  }

  /// Sim::run_until_met.
  bool run_until_met() { return sim_->run_until_met(); }
  [[nodiscard]] RateProbe partial_figures() const { return sim_->partial_figures(); }

  /// Runs to the end and words the result.
  base::Result<ServingResult> finish() {
    const ServingSetup& s = s_;
    const int symmetry = symmetry_;
    ServingResult r = sim_->run_to_end();
    const Sim& sim = *sim_;
    const Prepared* p = p_ptr_;
    if (sim.hit_event_limit()) {
      return base::fail(
          "the serving simulation stopped after " + std::to_string(sim.events()) +
          " events, the limit of one run (base::kMaxEvents): simulate fewer requests");
    }
    if (sim.clock_overrun_s() > 0) {
      return base::fail(
          fmt("a serving iteration would end at %.3g s of simulated time, ",
              sim.clock_overrun_s()) +
          fmt("more than the limit of %.0f s (100 years): a kernel time is absurd; check the "
              "GPU's rates and the calibration profile's efficiencies",
              base::kMaxSimSeconds));
    }
    r.rate_qps = s.scenario == ServingScenario::kOffline ? r.requests_per_s : s.rate_qps;
    r.memory = p->mem;
    if (p->has_pre) r.prefill_memory = p->pre_mem;
    if (symmetry > 1) {
      r.notes.push_back("symmetry: " + std::to_string(symmetry) +
                        " identical shares of the deployment, one simulated");
    }
    if (r.preemptions > 0) {
      r.notes.push_back(std::to_string(r.preemptions) +
                        " preemptions: the KV cache filled and sequences were recomputed");
    }
    if (r.adp_held_iterations > 0) {
      r.notes.push_back("attention-DP balance held the prompts of " +
                        std::to_string(r.adp_held_iterations) + " of " +
                        std::to_string(r.iterations) + " iterations; " +
                        std::to_string(r.prompt_iterations) + " carried prompts");
    }
    if (r.stopped_early) {
      r.notes.push_back("stopped early: the p99 limits were provably missed (figures are partial)");
    } else if (!r.steady) {
      r.notes.push_back(r.steady_note);
    } else if (!r.loadgen_length) {
      r.notes.push_back(fmt("shorter than LoadGen's minimum run (%.0f s", kMinDurationS) +
                        (s.scenario == ServingScenario::kOffline ? " and the sample floor" : "") +
                        "): not a valid MLPerf length; steady-state " +
                        fmt("%.0f tokens/s per GPU over ", r.steady_tokens_per_s_per_gpu) +
                        fmt("%.3g s", r.steady_window_s));
    }
    if (s.limits) {
      std::string why;
      if (r.ttft_s.p99 > s.limits->ttft.base()) {
        why += "TTFT p99 " + fmt("%.3g", r.ttft_s.p99) + " s > " +
               fmt("%.3g", s.limits->ttft.base()) + " s";
      }
      if (r.tpot_s.p99 > s.limits->tpot.base()) {
        if (!why.empty()) why += "; ";
        why += "TPOT p99 " + fmt("%.3g", r.tpot_s.p99 * 1e3) + " ms > " +
               fmt("%.3g", s.limits->tpot.base() * 1e3) + " ms";
      }
      if (r.stopped_early) {
        // Stopped because more samples than the p99 allows were over a limit (counted as they
        // happened: the partial percentiles may not show it yet).
        if (!why.empty()) why += "; ";
        why += "p99 limits provably missed (stopped early)";
      }
      r.meets_limits = why.empty();
      r.limit_note = why;
    }
    return r;
  }

 private:
  explicit ServingRun(const ServingSetup& s) : s_(s) {}
  ServingSetup s_;
  Prepared p_;
  const Prepared* p_ptr_ = nullptr;  // p_ or the rate search's (Shared)
  int symmetry_ = 1;
  std::unique_ptr<Sim> sim_;
};

}  // namespace

base::Result<ServingResult> simulate_serving(const ServingSetup& s) {
  auto run = ServingRun::start(s);
  if (!run) return base::fail(run.error());
  return (*run)->finish();
}

namespace {

// find_max_rate; `allow_pause`: compliant probes may pause once their verdict is in.
base::Result<RateSearch> rate_search(const ServingSetup& s, const RateSearchOptions& o,
                                     bool allow_pause) {
  const int max_probes = o.max_probes;
  const double start_qps = o.start_qps;
  const bool floor_at_start = o.floor_at_start;
  if (!s.limits) return base::fail("a rate search needs TTFT and TPOT limits");
  const LengthMoments lm = length_moments(s.dataset, s.seed);
  auto est = estimate_serving(s, lm);
  if (!est) return base::fail(est.error());
  RateSearch out;
  // A probe that provably meets the limits before its end (Sim::run_until_met) is paused, not
  // finished: only the highest compliant rate's figures are reported, so only that run is
  // continued to its end (`best`, below). With LoadGen's run length only: a fixed request
  // count must show a steady state in every probe.
  const bool pause = allow_pause && s.requests <= 0;
  ServingRun::Shared shared;
  auto prepared = prepare(s);
  if (!prepared) return base::fail(prepared.error());
  shared.prepared = &*prepared;
  struct Probe {
    bool meets = false;
    std::optional<ServingResult> result;  // a finished run
    std::unique_ptr<ServingRun> paused;   // a run paused once it provably met the limits
  };
  auto probe = [&](double rate, bool stop_early = true) -> base::Result<Probe> {
    ServingSetup x = s;
    x.rate_qps = rate;
    if (x.scenario == ServingScenario::kOffline) x.scenario = ServingScenario::kServer;
    x.requests = s.requests > 0 ? s.requests : 0;
    x.stop_when_limits_fail = stop_early;
    auto run = ServingRun::start(x, &shared);
    if (!run) return base::fail(run.error());
    Probe pr;
    if (stop_early && pause && (*run)->run_until_met()) {
      RateProbe rp = (*run)->partial_figures();
      rp.rate_qps = rate;
      rp.meets = true;
      out.probes.push_back(rp);
      out.paused++;
      pr.meets = true;
      pr.paused = std::move(*run);
      return pr;
    }
    auto r = (*run)->finish();
    if (!r) return base::fail(r.error());
    // A fixed request count that ends before a steady state cannot judge the rate.
    if (s.requests > 0 && !r->stopped_early && !r->steady) return base::fail(r->steady_note);
    out.probes.push_back({.rate_qps = rate,
                          .ttft_p99_s = r->ttft_s.p99,
                          .tpot_p99_s = r->tpot_s.p99,
                          .tokens_per_s_per_gpu = r->tokens_per_s_per_gpu,
                          .meets = r->meets_limits});
    pr.meets = r->meets_limits;
    pr.result = std::move(*r);
    return pr;
  };
  // The highest compliant probe so far (its run, finished or paused, and its index in probes).
  Probe best;
  size_t best_index = 0;
  auto take = [&](Probe&& pr) {
    best = std::move(pr);
    best_index = out.probes.size() - 1;
  };
  // Bracket from the steady-state capacity: grow by 1.5x while compliant, shrink by 2x while
  // not (down to 1/64 of it, below which the limits are called unreachable), then bisect to 2%.
  const double cap = std::max(1e-3, est->requests_per_s);
  double lo = 0, hi = 0;
  double rate = start_qps > 0 ? start_qps : 0.6 * cap;
  int probes = 0;
  std::optional<ServingResult> lightest;
  while (probes < max_probes) {
    auto r = probe(rate);
    ++probes;
    if (!r) return base::fail(r.error());
    if (r->meets) {
      lo = rate;
      out.found = true;
      out.rate_qps = rate;
      take(std::move(*r));
      if (hi > 0) break;
      rate *= o.grow;
    } else {
      hi = rate;
      if (floor_at_start && start_qps > 0 && !out.found) {
        // Only rates above the start matter to the caller: this one cannot beat it.
        out.result = std::move(*r->result);
        return out;
      }
      if (!lightest || rate < lightest->rate_qps) lightest = std::move(r->result);
      if (lo > 0) break;
      if (rate < cap / 64) break;
      rate *= o.shrink;
    }
  }
  if (!out.found) {
    if (lightest) {
      // The best effort is reported in full: run the lightest probe to the end.
      if (lightest->stopped_early) {
        auto full = probe(lightest->rate_qps, false);
        if (!full) return base::fail(full.error());
        out.probes.pop_back();  // the same rate, already listed
        lightest = std::move(full->result);
      }
      out.result = std::move(*lightest);
    }
    return out;
  }
  while (hi > 0 && probes < max_probes && hi - lo > 0.02 * lo) {
    const double mid = 0.5 * (lo + hi);
    auto r = probe(mid);
    ++probes;
    if (!r) return base::fail(r.error());
    if (r->meets) {
      lo = mid;
      out.rate_qps = mid;
      take(std::move(*r));
    } else {
      hi = mid;
    }
  }
  if (best.paused) {
    // The highest compliant rate's run, continued to its end: its figures replace the partial
    // ones of its probe.
    auto r = best.paused->finish();
    if (!r) return base::fail(r.error());
    RateProbe& rp = out.probes[best_index];
    rp.ttft_p99_s = r->ttft_s.p99;
    rp.tpot_p99_s = r->tpot_s.p99;
    rp.tokens_per_s_per_gpu = r->tokens_per_s_per_gpu;
    // The drain bound assumes an iteration is not faster with more context (Sim::
    // drain_bound_met); should a run it passed end over a limit, the search is repeated
    // without pausing, so the answer is always a run that met the limits to its end.
    if (!r->meets_limits) return rate_search(s, o, false);
    best.result = std::move(*r);
  }
  out.result = std::move(*best.result);
  return out;
}

}  // namespace

base::Result<RateSearch> find_max_rate(const ServingSetup& s, const RateSearchOptions& o) {
  return rate_search(s, o, true);
}

}  // namespace clustertwin::execution
