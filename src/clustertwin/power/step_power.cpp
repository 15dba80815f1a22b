// One training step as the power view observes it (step_power.h; docs/models/power.md §1-2).

#include "clustertwin/power/step_power.h"

#include <algorithm>
#include <array>
#include <limits>
#include <utility>

#include "clustertwin/models/ops.h"
#include "clustertwin/workload/layout.h"

namespace clustertwin::power {

using models::Part;

namespace {

std::vector<OpPower> op_powers(const GpuPowerModel& gm, const compute::ComputeModel& cm,
                               const std::vector<compute::Op>& ops) {
  std::vector<OpPower> out;
  out.reserve(ops.size());
  for (const auto& o : ops) out.push_back(gm.op(cm, o));
  return out;
}

PartOps part_ops(const GpuPowerModel& gm, const execution::TrainingSetup& s,
                 const models::PassSpec& pass, Part part, int index) {
  const auto& m = *s.model;
  PartOps p;
  p.fwd = op_powers(gm, *s.compute, models::forward_ops(m, part, index, pass));
  p.bwd = op_powers(gm, *s.compute, models::backward_ops(m, part, index, pass));
  auto rc =
      op_powers(gm, *s.compute, models::recompute_ops(m, part, index, pass, s.layout.recompute));
  p.bwd.insert(p.bwd.end(), rc.begin(), rc.end());
  return p;
}

PhasePower scaled(PhasePower p, double k) {
  p.time_s *= k;
  p.capped_time_s *= k;
  p.energy_J *= k;
  p.compute_bound_s *= k;
  return p;
}

}  // namespace

// ---------------------------------------------------------------------------------- profiles

Profiles build_profiles(const GpuPowerModel& gm, const execution::TrainingSetup& s) {
  const auto& m = *s.model;
  const auto& l = s.layout;
  // The step's own pass (execution::training_pass: etp, FP8 attention and all), with the MoE
  // pairs at the mean GPU's share: work is conserved across the EP group, so the busiest rank's
  // extra time (the step's task durations) is the others waiting, not more energy (as serving
  // power does, serving_power.cpp).
  models::PassSpec pass = execution::training_pass(m, l);
  pass.moe_imbalance = 1.0;
  Profiles p;
  for (int i = 0; i < m.layers && !(p.has_dense && p.has_moe); ++i) {
    if (m.is_moe_layer(i) && !p.has_moe) {
      p.moe = part_ops(gm, s, pass, Part::kLayer, i);
      p.has_moe = true;
    } else if (!m.is_moe_layer(i) && !p.has_dense) {
      p.dense = part_ops(gm, s, pass, Part::kLayer, i);
      p.has_dense = true;
    }
  }
  p.embed = part_ops(gm, s, pass, Part::kEmbedding, 0);
  p.head = part_ops(gm, s, pass, Part::kHead, 0);
  if (m.mtp_layers > 0) p.mtp = part_ops(gm, s, pass, Part::kMtp, 0);
  p.split = workload::split_layers(m.layers, l.pp * l.vpp);
  return p;
}

std::vector<ChunkPower> chunk_powers(const Profiles& p, const execution::TrainingSetup& s,
                                     const GpuPowerModel& gm, const GpuSettings& g) {
  const auto& m = *s.model;
  const int chunks = static_cast<int>(p.split.size());
  const PhasePower dense_f = phase_power(p.dense.fwd, gm, g),
                   dense_b = phase_power(p.dense.bwd, gm, g);
  const PhasePower moe_f = phase_power(p.moe.fwd, gm, g), moe_b = phase_power(p.moe.bwd, gm, g);
  std::vector<ChunkPower> out(static_cast<size_t>(chunks));
  int first = 0;
  for (int c = 0; c < chunks; ++c) {
    auto& cp = out[static_cast<size_t>(c)];
    int n_moe = 0, n = p.split[static_cast<size_t>(c)];
    for (int i = first; i < first + n; ++i) n_moe += m.is_moe_layer(i) ? 1 : 0;
    cp.fwd += scaled(dense_f, n - n_moe);
    cp.bwd += scaled(dense_b, n - n_moe);
    cp.fwd += scaled(moe_f, n_moe);
    cp.bwd += scaled(moe_b, n_moe);
    if (c == 0) {
      cp.fwd += phase_power(p.embed.fwd, gm, g);
      cp.bwd += phase_power(p.embed.bwd, gm, g);
    }
    if (c == chunks - 1) {
      cp.fwd += phase_power(p.head.fwd, gm, g);
      cp.bwd += phase_power(p.head.bwd, gm, g);
      cp.fwd += scaled(phase_power(p.mtp.fwd, gm, g), m.mtp_layers);
      cp.bwd += scaled(phase_power(p.mtp.bwd, gm, g), m.mtp_layers);
    }
    first += n;
  }
  return out;
}

double slowdown_of(const std::vector<ChunkPower>& cps) {
  double t = 0, tc = 0;
  for (const auto& c : cps) {
    t += c.fwd.time_s + c.bwd.time_s;
    tc += c.fwd.capped_time_s + c.bwd.capped_time_s;
  }
  return t > 0 ? tc / t : 1.0;
}

// ---------------------------------------------------------------------------------- timelines

// One pass over the tasks in the order execution recorded them (completion order, so each
// stage's tasks arrive in start order: a stage runs one task at a time); tasks recorded in another
// order are sorted by stage and start first.
StageTimelines stage_timelines(const execution::TrainingResult& r,
                               const workload::TrainingLayout& l,
                               const std::vector<ChunkPower>& cps, const PowerLevels& lv) {
  StageTimelines out;
  out.level_W = {lv.wait_W, lv.comm_W, lv.optimizer_W};
  for (const auto& cp : cps) {
    out.level_W.push_back((1 - lv.fwd_comm_share) * cp.fwd.power_W() +
                          lv.fwd_comm_share * lv.comm_W);
    out.level_W.push_back((1 - lv.bwd_comm_share) * cp.bwd.power_W() +
                          lv.bwd_comm_share * lv.comm_W);
  }
  const size_t levels = out.level_W.size();
  const auto pp = static_cast<size_t>(l.pp);
  const double step = r.step_time_s;
  struct Builder {
    std::vector<Segment> seg;
    std::vector<double> cum;
    std::vector<uint16_t> level;
    double t = 0, e = 0, peak = 0, low = 1e300;
    engine::Tick last_start = std::numeric_limits<engine::Tick>::min();
    // The stage moves to level k (power w) until t1; `lt` is its time per level.
    [[gnu::always_inline]] void push(double t1, uint16_t k, double w, Activity a, double* lt) {
      if (t1 > t) {
        seg.push_back({t, t1, w, a});
        level.push_back(k);
        lt[k] += t1 - t;
        e += w * (t1 - t);
        cum.push_back(e);
        peak = std::max(peak, w);
        low = std::min(low, w);
        t = t1;
      }
    }
  };
  std::vector<Builder> bs(pp);
  out.level_time_s.assign(pp * levels, 0.0);
  auto reset = [&] {
    const size_t est = 2 * r.tasks.size() / std::max<size_t>(pp, 1) + 8;
    for (auto& b : bs) {
      b = Builder{};
      b.seg.reserve(est);
      b.cum.reserve(est + 1);
      b.level.reserve(est);
      b.cum.push_back(0);
    }
    std::fill(out.level_time_s.begin(), out.level_time_s.end(), 0.0);
  };
  auto push = [&](Builder& b, size_t st, double t1, uint16_t k, Activity a) {
    b.push(std::min(t1, step), k, out.level_W[k], a, out.level_time_s.data() + st * levels);
  };
  // False when a stage's tasks are not in start order.
  auto add = [&](const execution::TaskRecord& task) {
    const auto st = static_cast<size_t>(task.stage);
    auto& b = bs[st];
    if (task.start < b.last_start) return false;
    b.last_start = task.start;
    // b.push directly (not the lambda above): this is the hot loop, and the lambda is not
    // reliably inlined into it (measured: +10% of the power cost).
    double* lt = out.level_time_s.data() + st * levels;
    b.push(std::min(static_cast<double>(task.start) * 1e-9, step), kWaitLevel,
           out.level_W[kWaitLevel], Activity::kWait, lt);
    const auto k = static_cast<uint16_t>(kChunkLevel0 + 2 * task.chunk + (task.forward ? 0 : 1));
    b.push(std::min(static_cast<double>(task.end) * 1e-9, step), k, out.level_W[k],
           Activity::kCompute, lt);
    return true;
  };
  reset();
  if (!std::all_of(r.tasks.begin(), r.tasks.end(), add)) {
    std::vector<const execution::TaskRecord*> order;
    order.reserve(r.tasks.size());
    for (const auto& t : r.tasks) order.push_back(&t);
    std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
      return std::pair{a->stage, a->start} < std::pair{b->stage, b->start};
    });
    reset();
    for (const auto* t : order) add(*t);
  }
  out.timelines.reserve(pp);
  out.level.reserve(pp);
  for (size_t st = 0; st < pp; ++st) {
    auto& b = bs[st];
    const auto& stage = r.stages[st];
    push(b, st, std::max(b.t, stage.pipeline_end_s), kWaitLevel, Activity::kWait);
    push(b, st, b.t + stage.dp_exposed_s, kCommLevel, Activity::kComm);
    push(b, st, b.t + stage.optimizer_s, kOptLevel, Activity::kOptimizer);
    push(b, st, step, kWaitLevel, Activity::kWait);
    if (b.seg.empty()) {
      out.timelines.emplace_back();
    } else {
      out.timelines.push_back(
          PeriodicTimeline::from_parts(std::move(b.seg), std::move(b.cum), b.peak, b.low));
    }
    out.level.push_back(std::move(b.level));
  }
  return out;
}

// ---------------------------------------------------------------------------------- racks

namespace {

// A small cache of the system model by GPU sum: a class's GPU power takes few distinct values
// over a step (per-chunk compute, wait, communication, optimizer), so most lookups hit.
class SystemCache {
 public:
  SystemCache(const RackClass& c, const SystemPowerModel& sm) : c_(c), sm_(sm) {}
  const SystemBreakdown& at(double gpu_sum) {
    if (last_ && last_sum_ == gpu_sum) return *last_;
    for (size_t k = 0; k < used_; ++k) {
      if (cache_[k].first == gpu_sum) {
        last_sum_ = gpu_sum;
        last_ = &cache_[k].second;
        return *last_;
      }
    }
    cache_[next_] = {gpu_sum, class_power(c_, sm_, gpu_sum, true)};
    last_ = &cache_[next_].second;
    last_sum_ = gpu_sum;
    used_ = std::min(cache_.size(), used_ + 1);
    next_ = (next_ + 1) % cache_.size();
    return *last_;
  }

 private:
  const RackClass& c_;
  const SystemPowerModel& sm_;
  std::array<std::pair<double, SystemBreakdown>, 16> cache_{};
  size_t used_ = 0, next_ = 0;
  const SystemBreakdown* last_ = nullptr;
  double last_sum_ = -1;
};

// A stage's segment end in the cluster sweep: its time, its stage and the level that follows
// (kNone after the stage's last segment).
struct End {
  double t;
  uint32_t stage;
  uint32_t next;
};
constexpr uint32_t kNone = ~0U;

struct Walk {
  double energy_J = 0, peak_W = -1e300, min_W = 1e300;
};

// The cluster over [0, step) from its value at 0 and the ends in time order, when every class
// holds one stage: each end moves its stage's contribution to the next level's (contrib[stage x
// L + level]). Ends closer than 1e-12 s form one instant: the cluster is recorded only between
// instants. A separate function so that the loop's state stays in registers.
Walk walk_single_stage(std::span<const End> ends, std::span<const double> contrib, size_t L,
                       std::span<double> cur, double cluster, double step) {
  Walk w;
  double t = 0, e = 0, peak = -1e300, low = 1e300;
  for (const End& x : ends) {
    if (x.t > t + 1e-12) {
      const double t1 = std::min(x.t, step);
      e += cluster * (t1 - t);
      peak = std::max(peak, cluster);
      low = std::min(low, cluster);
      t = t1;
      if (t >= step) break;
    }
    if (x.next == kNone) continue;
    const double v = contrib[x.stage * L + x.next];
    cluster += v - cur[x.stage];
    cur[x.stage] = v;
  }
  if (t < step) {
    e += cluster * (step - t);
    peak = std::max(peak, cluster);
    low = std::min(low, cluster);
  }
  w.energy_J = e;
  w.peak_W = peak;
  w.min_W = low;
  return w;
}

}  // namespace

StepSweep sweep_step(const StageTimelines& stl, double step, std::vector<RackClass>& classes,
                     const SystemPowerModel& sm, double idle_W, double fabric_W) {
  const auto& tls = stl.timelines;
  const size_t S = tls.size(), C = classes.size(), L = stl.level_W.size();
  StepSweep out;
  out.peak_sum.assign(C, 0.0);
  size_t K = 0;
  for (const auto& tl : tls) K += tl.segments().size();
  // Single-stage classes' AC x count, per stage and level.
  std::vector<double> contrib(S * L, 0.0);
  std::vector<std::vector<int>> multi_of(S);
  std::vector<int> multi;
  for (size_t ci = 0; ci < C; ++ci) {
    auto& c = classes[ci];
    c.peak_ac_W = -1;
    c.peak_dc_W = 0;
    c.min_ac_W = 1e300;
    if (c.present.size() != 1) {
      multi.push_back(static_cast<int>(ci));
      for (const auto& [st, n] : c.present)
        multi_of[static_cast<size_t>(st)].push_back(static_cast<int>(ci));
      continue;
    }
    const auto st = static_cast<size_t>(c.present[0].first);
    const double n = c.present[0].second, idle = c.idle_gpus * idle_W;
    const double* lt = stl.level_time_s.data() + st * L;
    double e = 0;
    for (size_t k = 0; k < L; ++k) {
      if (lt[k] <= 0) continue;
      const double sum = n * stl.level_W[k] + idle;
      const auto br = class_power(c, sm, sum, true);
      contrib[st * L + k] += c.count * br.ac_W;
      e += br.ac_W * lt[k];
      if (br.ac_W > c.peak_ac_W) {
        c.peak_ac_W = br.ac_W;
        out.peak_sum[ci] = sum;
      }
      c.peak_dc_W = std::max(c.peak_dc_W, br.dc_W);
      c.min_ac_W = std::min(c.min_ac_W, br.ac_W);
    }
    c.avg_ac_W = e / step;
  }

  // Classes over several stages (or none): evaluated whenever one of their stages moves on.
  std::vector<double> stage_W(S, 0.0);
  for (size_t st = 0; st < S; ++st) {
    const auto& sg = tls[st].segments();
    stage_W[st] = sg.empty() ? 0.0 : sg[0].power_W;
  }
  std::vector<SystemCache> cache;
  cache.reserve(multi.size());
  std::vector<size_t> slot(C, 0);
  std::vector<double> ac(C, 0.0), e(C, 0.0), since(C, 0.0);
  double cluster = fabric_W;
  for (size_t st = 0; st < S; ++st) {
    if (!stl.level[st].empty()) cluster += contrib[st * L + stl.level[st][0]];
  }
  auto eval = [&](size_t ci, double t) {
    auto& c = classes[ci];
    const double sum = class_gpu_sum(c, stage_W, idle_W);
    const auto& br = cache[slot[ci]].at(sum);
    e[ci] += ac[ci] * (t - since[ci]);
    since[ci] = t;
    cluster += c.count * (br.ac_W - ac[ci]);
    ac[ci] = br.ac_W;
    if (br.ac_W > c.peak_ac_W) {
      c.peak_ac_W = br.ac_W;
      out.peak_sum[ci] = sum;
    }
    c.peak_dc_W = std::max(c.peak_dc_W, br.dc_W);
    c.min_ac_W = std::min(c.min_ac_W, br.ac_W);
  };
  for (int ci : multi) {
    slot[static_cast<size_t>(ci)] = cache.size();
    cache.emplace_back(classes[static_cast<size_t>(ci)], sm);
    eval(static_cast<size_t>(ci), 0.0);
  }

  // Every segment end with its stage and the level that follows (kNone after the last), in time
  // order (ties in stage order). Bucket k holds ends in
  // [k, k + 1) x step / K; placed stage by stage, so an insertion sort by time keeps ties in
  // stage order.
  std::vector<End> ends(K);
  {
    std::vector<uint32_t> start(K + 1, 0);
    const double scale = K > 0 && step > 0 ? static_cast<double>(K) / step : 0.0;
    auto bucket_of = [&](double t) {
      const double b = t * scale;
      return b >= static_cast<double>(K) ? K - 1 : static_cast<size_t>(std::max(0.0, b));
    };
    std::vector<uint32_t> bucket(K);
    for (size_t i = 0; const auto& tl : tls) {
      for (const auto& sg : tl.segments()) {
        bucket[i] = static_cast<uint32_t>(bucket_of(sg.t1_s));
        ++start[bucket[i++] + 1];
      }
    }
    for (size_t k = 0; k < K; ++k) start[k + 1] += start[k];
    for (size_t st = 0, i = 0; st < S; ++st) {
      const auto& sg = tls[st].segments();
      const auto& lev = stl.level[st];
      for (size_t k = 0; k < sg.size(); ++k) {
        const bool last = k + 1 == sg.size();
        ends[start[bucket[i++]]++] = {sg[k].t1_s, static_cast<uint32_t>(st),
                                      last ? kNone : static_cast<uint32_t>(lev[k + 1])};
      }
    }
    // Now start[k] is the end of bucket k. Small buckets (the usual: one end each on average)
    // by insertion, crowded ones (ends clustered in time) by a stable sort.
    const auto by_time = [](const End& a, const End& b) { return a.t < b.t; };
    for (size_t k = 0, b0 = 0; k < K; b0 = start[k++]) {
      const size_t b1 = start[k];
      if (b1 - b0 > 32) {
        std::stable_sort(ends.begin() + static_cast<std::ptrdiff_t>(b0),
                         ends.begin() + static_cast<std::ptrdiff_t>(b1), by_time);
        continue;
      }
      for (size_t i = b0 + 1; i < b1; ++i) {
        if (!(ends[i].t < ends[i - 1].t)) continue;
        const End x = ends[i];
        size_t j = i;
        for (; j > b0 && x.t < ends[j - 1].t; --j) ends[j] = ends[j - 1];
        ends[j] = x;
      }
    }
  }

  if (multi.empty()) {
    std::vector<double> cur(S, 0.0);
    for (size_t st = 0; st < S; ++st) {
      if (!stl.level[st].empty()) cur[st] = contrib[st * L + stl.level[st][0]];
    }
    const auto w = walk_single_stage(ends, contrib, L, cur, cluster, step);
    out.it_avg_W = w.energy_J / step;
    out.it_peak_W = w.peak_W;
    out.it_min_W = w.min_W;
    return out;
  }
  // Classes over several stages: the cluster walked instant by instant, those classes
  // re-evaluated at each of their stages' ends.
  out.it_peak_W = -1e300;
  out.it_min_W = 1e300;
  double it_e = 0, t = 0;
  std::vector<uint32_t> cur_level(S, 0);
  for (size_t st = 0; st < S; ++st) {
    if (!stl.level[st].empty()) cur_level[st] = stl.level[st][0];
  }
  // Ends closer than 1e-12 s form one instant: the cluster is recorded only between instants.
  for (size_t i = 0; i < K;) {
    const double t1 = std::min(ends[i].t, step);
    if (t1 > t) {
      // The cluster was constant over [t, t1).
      it_e += cluster * (t1 - t);
      out.it_peak_W = std::max(out.it_peak_W, cluster);
      out.it_min_W = std::min(out.it_min_W, cluster);
      t = t1;
    }
    if (t >= step) break;
    // Every stage whose segment ends here moves on, then the classes over several stages.
    size_t j = i;
    for (; j < K && ends[j].t <= t + 1e-12; ++j) {
      if (ends[j].next == kNone) continue;
      const size_t st = ends[j].stage;
      cluster += contrib[st * L + ends[j].next] - contrib[st * L + cur_level[st]];
      cur_level[st] = ends[j].next;
      stage_W[st] = stl.level_W[ends[j].next];
    }
    for (size_t q = i; q < j; ++q) {
      for (int ci : multi_of[ends[q].stage]) eval(static_cast<size_t>(ci), t);
    }
    i = j;
  }
  if (t < step) {
    it_e += cluster * (step - t);
    out.it_peak_W = std::max(out.it_peak_W, cluster);
    out.it_min_W = std::min(out.it_min_W, cluster);
  }
  for (int ci : multi) {
    const auto c = static_cast<size_t>(ci);
    e[c] += ac[c] * (step - since[c]);
    classes[c].avg_ac_W = e[c] / step;
  }
  out.it_avg_W = it_e / step;
  return out;
}

}  // namespace clustertwin::power
