#include "clustertwin/power/serving_power.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "clustertwin/base/check.h"
#include "clustertwin/base/text.h"
#include "clustertwin/models/ops.h"
#include "clustertwin/power/energy.h"
#include "clustertwin/power/power_setup.h"

namespace clustertwin::power {
namespace {

using compute::Op;
using compute::OpKind;

std::string fmt_W(double w) { return base::format_quantity(w, base::Dimension::kWatts, 3); }

// Time at the default settings, time and energy under the settings, of some kernels on one GPU,
// and the highest demand of any of them at the default limit.
struct Kern {
  double t = 0, tc = 0, e = 0, peak = 0;
  Kern& operator+=(const Kern& o) {
    t += o.t;
    tc += o.tc;
    e += o.e;
    peak = std::max(peak, o.peak);
    return *this;
  }
  [[nodiscard]] Kern scaled(double k) const { return {t * k, tc * k, e * k, peak}; }
};

bool is_attention_projection(const char* name) {
  for (const char* n : {"qkv_proj", "o_proj", "qkv_a_proj", "q_b_proj", "q_proj", "kv_b_proj"}) {
    if (std::strcmp(name, n) == 0) return true;
  }
  return false;
}

// Kernel power tables of one instance kind, over a geometric grid of token counts: the dense part
// (every layer but the routed experts, attention at the run's mean context, embedding, and the
// head for decode) of one rank as a decode batch and as a prompt chunk, and the fused MoE of the
// group's tokens on one GPU. Times and energies are per GPU, over all layers; the serving step
// model (execution/serving_step.h) times the same ops, so the kernel time here follows its own.
class KernelTables {
 public:
  KernelTables(const execution::ServingSetup& s, const workload::InstanceLayout& inst,
               const GpuPowerModel& gm, const GpuSettings& g, double context)
      : gm_(gm), g_(g) {
    const auto& m = *s.model;
    const auto& cm = *s.compute;
    q_ = 1.0 + std::max(0, s.layout.mtp);
    dense_tp_ = inst.dp_attention ? 1 : inst.tp;
    ep_ = inst.dp_attention ? inst.tp : inst.ep;
    etp_ = inst.tp / std::max(1, ep_);
    const auto attn_dtype = workload::attention_dtype(m, s.layout.weights);
    const bool fp8_attn = s.layout.kv_bytes <= 1.0 && cm.supports(compute::DType::kFp8);
    const int64_t ctx = std::max<int64_t>(1, std::llround(context));
    auto pass = [&](models::Phase ph, int64_t t) {
      models::PassSpec p;
      p.phase = ph;
      if (ph == models::Phase::kDecode) {
        p.batch = t;
        p.context = ctx;
      } else {
        p.batch = 1;
        p.seq_len = t;
      }
      p.tp = dense_tp_;
      p.dtype = s.layout.weights;
      p.kv_bytes = s.layout.kv_bytes;
      p.fp8_attention = fp8_attn;
      return p;
    };
    auto op_kern = [&](Op o) {
      if (o.kind == OpKind::kGemm && is_attention_projection(o.name)) o.dtype = attn_dtype;
      if (o.kind == OpKind::kGemm && o.count > 1) {
        // A batched per-head BMM runs as one kernel (as the serving step model times it).
        o.gemm.n *= o.count;
        o.count = 1;
      }
      const OpPower op = gm_.op(cm, o);
      const Effect e = gm_.apply(op.demand_W, op.compute_bound, g_);
      return Kern{op.time_s, op.time_s * e.slowdown, op.time_s * e.slowdown * e.power_W,
                  op.time_s > 0 ? op.demand_W : 0.0};
    };
    int dense_ex = -1, moe_ex = -1;
    for (int i = 0; i < m.layers; ++i) {
      if (m.is_moe_layer(i)) {
        if (moe_ex < 0) moe_ex = i;
      } else if (dense_ex < 0) {
        dense_ex = i;
      }
    }
    const double n_moe = m.moe ? m.moe_layer_count() : 0;
    const double n_dense = m.layers - n_moe;
    auto dense_part = [&](models::Phase ph, int64_t t) {
      Kern k;
      for (const auto& [layer, count] : {std::pair{dense_ex, n_dense}, std::pair{moe_ex, n_moe}}) {
        if (layer < 0 || count <= 0) continue;
        Kern l;
        for (const Op& o : models::forward_ops(m, models::Part::kLayer, layer, pass(ph, t))) {
          if (o.kind != OpKind::kMoe) l += op_kern(o);
        }
        k += l.scaled(count);
      }
      for (const Op& o : models::forward_ops(m, models::Part::kEmbedding, 0, pass(ph, t)))
        k += op_kern(o);
      if (ph == models::Phase::kDecode) {
        for (const Op& o : models::forward_ops(m, models::Part::kHead, 0, pass(ph, t)))
          k += op_kern(o);
      }
      return k;
    };
    const int64_t max_seq = std::max<int64_t>(1, inst.max_batch);
    const int64_t t_max = std::max<int64_t>(
        inst.max_tokens, static_cast<int64_t>(static_cast<double>(max_seq) * q_) + 1);
    for (int64_t t = 1;;
         t = std::max(t + 1, static_cast<int64_t>(std::llround(static_cast<double>(t) * 1.3)))) {
      grid_.push_back(t);
      dec_.push_back(dense_part(models::Phase::kDecode, t));
      pre_.push_back(dense_part(models::Phase::kPrefill, t));
      if (t >= t_max) break;
    }
    if (m.moe && n_moe > 0) {
      const int64_t g_max = t_max * (inst.dp_attention ? inst.tp : 1);
      for (int64_t t = 1;;
           t = std::max(t + 1, static_cast<int64_t>(std::llround(static_cast<double>(t) * 1.3)))) {
        Op o{.name = "experts", .kind = OpKind::kMoe, .dtype = s.layout.weights};
        // Work is conserved across the EP group: the mean GPU's share of the pairs (imbalance 1)
        // sets the energy; the busiest GPU's extra time is waiting for the others.
        o.moe = compute::MoeShape{.tokens = t,
                                  .hidden = m.hidden,
                                  .inter = m.moe->expert_ffn,
                                  .topk = m.moe->topk,
                                  .experts = m.moe->experts,
                                  .tp = etp_,
                                  .ep = ep_,
                                  .imbalance = 1.0};
        o.flops = base::flops(o.moe.flops());
        o.bytes = base::bytes(o.moe.bytes(s.layout.weights));
        moe_grid_.push_back(t);
        moe_.push_back(op_kern(o).scaled(n_moe));
        if (t >= g_max) break;
      }
    }
  }

  // Per GPU: decode batch of `tokens` tokens per rank, prompt chunk of `tokens`, MoE of the
  // group's tokens.
  [[nodiscard]] Kern decode(double tokens) const { return at(grid_, dec_, tokens); }
  [[nodiscard]] Kern prefill(double tokens) const { return at(grid_, pre_, tokens); }
  [[nodiscard]] Kern moe(double group_tokens) const {
    return moe_.empty() ? Kern{} : at(moe_grid_, moe_, group_tokens);
  }
  [[nodiscard]] double tokens_per_seq() const { return q_; }

 private:
  static Kern at(const std::vector<int64_t>& grid, const std::vector<Kern>& v, double x) {
    if (v.empty() || x <= 0) return {};
    const double x0 = static_cast<double>(grid.front());
    if (x <= x0) return v.front().scaled(x / x0);
    const auto it = std::lower_bound(grid.begin(), grid.end(), static_cast<int64_t>(std::ceil(x)));
    if (it == grid.end()) return v.back().scaled(x / static_cast<double>(grid.back()));
    const size_t hi = std::max<size_t>(1, static_cast<size_t>(it - grid.begin())), lo = hi - 1;
    const double a = static_cast<double>(grid[lo]), b = static_cast<double>(grid[hi]);
    const double f = (x - a) / (b - a);
    const Kern &p = v[lo], &q = v[hi];
    return {p.t + f * (q.t - p.t), p.tc + f * (q.tc - p.tc), p.e + f * (q.e - p.e),
            std::max(p.peak, q.peak)};
  }

  const GpuPowerModel& gm_;
  GpuSettings g_;
  double q_ = 1;
  int dense_tp_ = 1, ep_ = 1, etp_ = 1;
  std::vector<int64_t> grid_, moe_grid_;
  std::vector<Kern> dec_, pre_, moe_;
};

// One iteration's GPU work over all the GPUs of its group (GPU-seconds and joules).
struct IterWork {
  Kern decode, prefill;    // kernels of decode tokens and of prompt tokens (incl. their MoE)
  double critical_t = 0;   // default kernel time along the iteration's critical path
  double critical_tc = 0;  // under the settings
  double busy_gpu_s = 0;   // GPU-seconds the iteration holds
};

struct PoolDef {
  std::string name;
  const workload::InstanceLayout* inst = nullptr;
  std::vector<int> instances;  // simulated instance indices
  int64_t gpus = 0;            // deployment GPUs of the pool
  std::unique_ptr<KernelTables> tables;
};

IterWork iteration_work(const execution::IterationRecord& it, const PoolDef& p) {
  const auto& inst = *p.inst;
  const auto& kt = *p.tables;
  const int ranks = inst.dp_attention ? inst.tp : 1;  // ranks stepping together in one group
  const int groups = inst.dp_attention ? 1 : inst.ranks();
  const double gpus_per_rank_op = inst.dp_attention ? 1.0 : inst.tp;  // GPUs running a rank's op
  const double dec_tokens = it.decode * kt.tokens_per_seq(), pre_tokens = it.prefill_tokens;
  const double d = dec_tokens / ranks, pf = pre_tokens / ranks;
  IterWork w;
  const Kern kd = kt.decode(d), kp = kt.prefill(pf);
  const Kern km = kt.moe(dec_tokens + pre_tokens);
  // The MoE kernel's share by tokens.
  const double tot = dec_tokens + pre_tokens;
  const double fd = tot > 0 ? dec_tokens / tot : 0;
  w.decode = kd.scaled(ranks * gpus_per_rank_op);
  w.decode += km.scaled(fd * inst.tp);
  w.prefill = kp.scaled(ranks * gpus_per_rank_op);
  w.prefill += km.scaled((1 - fd) * inst.tp);
  w.critical_t = kd.t + kp.t + km.t;
  w.critical_tc = kd.tc + kp.tc + km.tc;
  w.busy_gpu_s = it.duration_s * static_cast<double>(inst.gpus()) / groups;
  return w;
}

}  // namespace

base::Result<ServingPowerResult> analyze_serving_power(const ServingPowerInput& in,
                                                       const ServingPowerOptions& o) {
  CT_CHECK(in.catalog && in.power && in.cluster && in.topology && in.setup && in.result &&
               in.setup->model && in.setup->compute,
           "serving power needs catalog, power catalog, cluster, topology, setup and result");
  const auto& cat = *in.catalog;
  // Settings: the system, its GPU and their power models; cap, clock lock, smoothing, cooling
  // (the stage training shares: power_setup.h).
  auto ps = resolve_power_setup(cat, *in.power, *in.cluster,
                                {.gpu = o.gpu, .smoothing = o.smoothing, .cooling = o.cooling});
  if (!ps) return base::fail(ps.error());
  const auto& sys = *ps->system;
  const auto& gpu = *ps->gpu;
  const auto* sp = ps->system_params;
  const auto& fp = *ps->facility;
  const GpuPowerModel& gm = ps->gm();
  const SystemPowerModel& sm = ps->sm();
  const GpuSettings g = ps->settings;
  if (o.resolution_s <= 0 || o.resolution_s > 10) {
    return base::fail(fmt::format("{{resolution}} {:g} s: expected a positive step of at most 10 s",
                                  o.resolution_s));
  }
  const std::optional<SmoothingSettings>& smoothing = ps->smoothing;

  ServingPowerResult R;
  R.system = sys.name;
  R.systems_per_rack = sp->systems_per_rack;
  R.cap_W = ps->cap_W();
  R.cap_reason = ps->cap_reason;
  R.clock_lock_MHz = g.clock_lock_MHz;
  R.gpu_tgp_W = gpu.tgp.base();
  R.gpu_idle_W = gm.idle_W();
  R.gpu_comm_W = gm.apply(gm.comm_W(1), false, g).power_W;
  const auto& base_run = *in.result;
  R.baseline_tokens_per_s = base_run.tokens_per_s;
  R.baseline_tpot_p99_s = base_run.tpot_s.p99;
  R.baseline_ttft_p99_s = base_run.ttft_s.p99;

  // Pools and their kernel tables (the decode context: prompt + half the output on average).
  const auto& s0 = *in.setup;
  const auto& l = s0.layout;
  const double context = base_run.mean_input_tokens + 0.5 * base_run.mean_output_tokens;
  const int sym = std::max(1, base_run.symmetry);
  std::vector<PoolDef> pools;
  int next = 0;
  auto add_pool = [&](std::string name, const workload::InstanceLayout& inst, int replicas) {
    PoolDef p;
    p.name = std::move(name);
    p.inst = &inst;
    p.gpus = static_cast<int64_t>(replicas) * inst.gpus();
    for (int i = 0; i < replicas / sym; ++i) p.instances.push_back(next++);
    p.tables = std::make_unique<KernelTables>(s0, inst, gm, g, context);
    pools.push_back(std::move(p));
  };
  if (l.disaggregated) {
    add_pool("prefill", l.prefill, l.prefill_replicas);
    add_pool("decode", l.instance, l.replicas);
  } else {
    add_pool("instances", l.instance, l.replicas);
  }
  std::vector<int> pool_of(static_cast<size_t>(next), 0);
  for (size_t pi = 0; pi < pools.size(); ++pi) {
    for (int i : pools[pi].instances) pool_of[static_cast<size_t>(i)] = static_cast<int>(pi);
  }

  // The run with every iteration kept (the caller's when it already has them).
  auto traced_run =
      [&](const execution::ServingSetup& s,
          const execution::ServingResult& r) -> base::Result<execution::ServingResult> {
    if (!r.trace.empty() && static_cast<int64_t>(r.trace.size()) >= r.iterations) return r;
    execution::ServingSetup t = s;
    t.rate_qps = r.rate_qps;
    t.trace_iterations = std::max<int64_t>(1, r.iterations) + 1;
    return execution::simulate_serving(t);
  };
  auto run0 = traced_run(s0, base_run);
  if (!run0) return base::fail(run0.error());

  // Cap feedback: the run's kernel-time slowdown along the iterations' critical paths.
  {
    double t = 0, tc = 0;
    for (const auto& it : run0->trace) {
      const auto& p = pools[static_cast<size_t>(pool_of[static_cast<size_t>(it.instance)])];
      const auto w = iteration_work(it, p);
      t += w.critical_t;
      tc += w.critical_tc;
    }
    R.kernel_slowdown = t > 0 ? tc / t : 1.0;
  }
  if (o.feedback && R.kernel_slowdown > 1 + 1e-6) {
    execution::ServingSetup s1 = s0;
    s1.cap_slowdown = R.kernel_slowdown;
    s1.rate_qps = base_run.rate_qps;
    s1.trace_iterations = std::max<int64_t>(1, run0->iterations) * 2 + 1;
    auto r1 = execution::simulate_serving(s1);
    if (!r1) return base::fail(r1.error());
    R.serving = std::move(*r1);
    R.notes.push_back(fmt::format(
        "cap/clock slow the kernels by {:.1f}% (prompt chunks compute-bound, decode batches "
        "memory-bound); run simulated again at the same arrival rate: {:.0f} -> {:.0f} tokens/s, "
        "TPOT p99 {:.1f} -> {:.1f} ms, TTFT p99 {:.2f} -> {:.2f} s",
        100 * (R.kernel_slowdown - 1), base_run.tokens_per_s, R.serving.tokens_per_s,
        1e3 * base_run.tpot_s.p99, 1e3 * R.serving.tpot_s.p99, base_run.ttft_s.p99,
        R.serving.ttft_s.p99));
  } else {
    R.serving = std::move(*run0);
  }
  const auto& run = R.serving;

  // Per-phase figures at the run's mean load.
  {
    const auto& p = pools.back();  // the decode (or aggregated) pool
    const auto& kt = *p.tables;
    const double b = std::max(1.0, run.mean_decode_batch) * kt.tokens_per_seq();
    const double ranks = p.inst->dp_attention ? p.inst->tp : 1;
    Kern kd = kt.decode(b);
    kd += kt.moe(b * ranks);
    R.gpu_decode_W = kd.tc > 0 ? kd.e / kd.tc : 0;
    R.decode_slowdown = kd.t > 0 ? kd.tc / kd.t : 1;
    const auto d0 = KernelTables(s0, *p.inst, gm, GpuSettings{}, context);
    Kern k0 = d0.decode(b);
    k0 += d0.moe(b * ranks);
    R.decode_demand_W = k0.t > 0 ? k0.e / k0.t : 0;
    R.decode_peak_demand_W = k0.peak;
    const auto& pp = pools.front();
    const auto& kp_t = *pp.tables;
    const double chunk = static_cast<double>(pp.inst->max_tokens);
    const double pr = pp.inst->dp_attention ? pp.inst->tp : 1;
    Kern kp = kp_t.prefill(chunk);
    kp += kp_t.moe(chunk * pr);
    R.gpu_prefill_W = kp.tc > 0 ? kp.e / kp.tc : 0;
    R.prefill_slowdown = kp.t > 0 ? kp.tc / kp.t : 1;
  }

  // Energy of each pool over the run, binned for the waveforms.
  const double T = run.duration_s;
  if (!(T > 0)) return base::fail("serving power: the run has no duration (no requests?)");
  const double dt = std::max(o.resolution_s, T / 5e6);
  const auto nb = static_cast<size_t>(std::ceil(T / dt - 1e-9));
  std::vector<std::vector<double>> e_bin(pools.size(), std::vector<double>(nb, 0.0)),
      busy_bin(pools.size(), std::vector<double>(nb, 0.0));
  struct Acc {
    double dec_s = 0, pre_s = 0, other_s = 0, busy_s = 0, e = 0;
  };
  std::vector<Acc> acc(pools.size());
  for (const auto& it : run.trace) {
    const size_t pi = static_cast<size_t>(pool_of[static_cast<size_t>(it.instance)]);
    const auto& p = pools[pi];
    auto w = iteration_work(it, p);
    // The tables' kernel time follows the step model's; scale to the iteration if they disagree.
    const double kern = w.decode.tc + w.prefill.tc;
    const double k = kern > w.busy_gpu_s && kern > 0 ? w.busy_gpu_s / kern : 1.0;
    const double rest = std::max(0.0, w.busy_gpu_s - kern * k);
    const double e = k * (w.decode.e + w.prefill.e) + rest * R.gpu_comm_W;
    auto& a = acc[pi];
    a.dec_s += k * w.decode.tc;
    a.pre_s += k * w.prefill.tc;
    a.other_s += rest;
    a.busy_s += w.busy_gpu_s;
    a.e += e;
    // Spread over the bins the iteration covers.
    const double t0 = it.start_s, t1 = std::min(T, it.start_s + it.duration_s);
    if (!(t1 > t0)) continue;
    const double pw = e / (t1 - t0), bw = w.busy_gpu_s / (t1 - t0);
    for (auto b = static_cast<size_t>(t0 / dt); b < nb && static_cast<double>(b) * dt < t1; ++b) {
      const double x0 = std::max(t0, static_cast<double>(b) * dt);
      const double x1 = std::min(t1, static_cast<double>(b + 1) * dt);
      if (x1 <= x0) continue;
      e_bin[pi][b] += pw * (x1 - x0);
      busy_bin[pi][b] += bw * (x1 - x0);
    }
  }

  // Per-GPU waveforms of each pool (simulated instances' GPUs; idle GPU-time at idle power).
  R.fabric = fabric_power(cat, *in.topology, fp);
  const int64_t cluster_gpus = in.topology->gpus();
  const int per_rack = sys.gpus() * R.systems_per_rack;
  const int64_t dep_gpus = l.gpus();
  R.fabric_share_W =
      R.fabric.ac_W * static_cast<double>(dep_gpus) / static_cast<double>(cluster_gpus);
  R.racks = static_cast<double>(dep_gpus) / per_rack;
  R.rack_limit_W = sm.usable_W();
  R.rack_limit_ac_W = sm.usable_ac_W();
  R.rack_limit_basis = sm.usable_basis();
  // A rack of a pool: its GPUs (at most a rack's worth, packed into its systems) at the pool's
  // power; the rest of the rack's GPUs idle, systems without any of them idle. `dc_W` of the
  // result is the busiest system's (the PSU limit is per system).
  struct RackDraw {
    double ac_W = 0, dc_W = 0;  ///< the rack at its PSU inputs; its busiest system's DC
    double dc_total_W = 0;      ///< all its systems' DC
  };
  auto rack_at = [&](double gpu_W, int64_t pool_gpus) {
    const int per_sys = sys.gpus();
    const auto n = static_cast<int>(std::min<int64_t>(pool_gpus, per_rack));
    const int full = n / per_sys, part = n % per_sys;
    const int idle_sys = R.systems_per_rack - full - (part > 0 ? 1 : 0);
    RackDraw r;
    auto add = [&](int count, int busy) {
      if (count <= 0) return;
      const auto b = sm.at(busy * gpu_W + (per_sys - busy) * R.gpu_idle_W, busy > 0);
      r.ac_W += count * b.ac_W;
      r.dc_W = std::max(r.dc_W, b.dc_W);
      r.dc_total_W += count * b.dc_W;
    };
    add(full, per_sys);
    add(part > 0 ? 1 : 0, part);
    add(idle_sys, 0);
    return r;
  };
  // The pool's IT share: a full rack's power per GPU x its GPUs.
  auto share_at = [&](double gpu_W, int64_t pool_gpus) {
    return sm.ac_W(gpu_W * sys.gpus(), true) * R.systems_per_rack / per_rack *
           static_cast<double>(pool_gpus);
  };
  std::vector<double> w_gpu(nb, 0.0), w_rack, w_it(nb, R.fabric_share_W);
  std::vector<std::vector<double>> pool_gpu_W(pools.size());  // per pool, per bin (smoothing)
  size_t hottest = 0;
  double dep_gpu_e = 0, it_e = 0, worst_dc = 0;
  for (size_t pi = 0; pi < pools.size(); ++pi) {
    auto& p = pools[pi];
    const double gsim = static_cast<double>(p.instances.size()) * p.inst->gpus();
    ServingPool out;
    out.name = p.name;
    out.layout = p.inst->label();
    out.gpus = p.gpus;
    out.gpu_peak_W = 0;
    out.gpu_min_W = 1e300;
    out.rack_peak_W = 0;
    out.it_peak_W = 0;
    double pe = 0, re = 0, ie = 0;
    std::vector<double> rack_w(nb);
    for (size_t b = 0; b < nb; ++b) {
      const double len = std::min(T, static_cast<double>(b + 1) * dt) - static_cast<double>(b) * dt;
      const double idle = std::max(0.0, gsim * len - busy_bin[pi][b]);
      const double w = (e_bin[pi][b] + idle * R.gpu_idle_W) / (gsim * len);
      if (smoothing) pool_gpu_W[pi].push_back(w);  // nb of them
      const auto rk = rack_at(w, p.gpus);
      const double it = share_at(w, p.gpus);
      rack_w[b] = rk.ac_W;
      worst_dc = std::max(worst_dc, rk.dc_W);
      out.gpu_peak_W = std::max(out.gpu_peak_W, w);
      out.gpu_min_W = std::min(out.gpu_min_W, w);
      out.rack_peak_W = std::max(out.rack_peak_W, rk.ac_W);
      out.it_peak_W = std::max(out.it_peak_W, it);
      pe += w * len;
      re += rk.ac_W * len;
      ie += it * len;
      w_gpu[b] += w * static_cast<double>(p.gpus) / static_cast<double>(dep_gpus) * len;
      w_it[b] += it;
    }
    out.gpu_avg_W = pe / T;
    out.rack_avg_W = re / T;
    out.it_avg_W = ie / T;
    const auto& a = acc[pi];
    const double all = gsim * T;
    out.decode_share = a.dec_s / all;
    out.prefill_share = a.pre_s / all;
    out.other_share = a.other_s / all;
    out.idle_share = std::max(0.0, 1 - a.busy_s / all);
    dep_gpu_e += out.gpu_avg_W * static_cast<double>(p.gpus) * T;
    it_e += ie;
    if (pi == 0 || out.rack_peak_W > R.pools[hottest].rack_peak_W) {
      hottest = pi;
      w_rack = std::move(rack_w);
    }
    R.pools.push_back(out);
  }
  for (size_t b = 0; b < nb; ++b) {
    const double len = std::min(T, static_cast<double>(b + 1) * dt) - static_cast<double>(b) * dt;
    w_gpu[b] /= len;
  }
  const auto& hp = R.pools[hottest];
  R.rack_avg_W = hp.rack_avg_W;
  R.rack_peak_W = hp.rack_peak_W;
  R.gpu_avg_W = dep_gpu_e / (static_cast<double>(dep_gpus) * T);
  R.gpu_peak_W = *std::max_element(w_gpu.begin(), w_gpu.end());
  R.gpu_min_W = *std::min_element(w_gpu.begin(), w_gpu.end());
  it_e += R.fabric_share_W * T;
  R.cluster_avg_W = it_e / T;
  R.cluster_peak_W = *std::max_element(w_it.begin(), w_it.end());
  if (worst_dc > R.rack_limit_W * (1 + 1e-9)) {
    if (o.enforce_rack_limit) {
      // The largest per-GPU cap whose power-limited kernels fit the usable PSU capacity
      // (power_setup.h), and the run again under it: what the limit costs.
      const double cap = ps->rack_limit_cap_W(R.cap_W);
      ServingPowerOptions o2 = o;
      o2.gpu.cap = base::watts(cap);
      o2.enforce_rack_limit = false;
      auto r2 = analyze_serving_power(in, o2);
      if (!r2) return r2;
      r2->rack_limit_binds = true;
      r2->cap_reason = "rack limit";
      r2->rack_limit_message = fmt::format(
          "rack limit binds: a {} serving needs {} DC at its peak, over the {} usable PSU "
          "capacity; GPUs capped at {} each, tokens/s {:.0f} -> {:.0f}, TPOT p99 {:.1f} -> {:.1f} "
          "ms",
          sys.name, fmt_W(worst_dc), fmt_W(R.rack_limit_W), fmt_W(cap), R.serving.tokens_per_s,
          r2->serving.tokens_per_s, 1e3 * R.serving.tpot_s.p99, 1e3 * r2->serving.tpot_s.p99);
      r2->warnings.insert(r2->warnings.begin(), r2->rack_limit_message);
      return r2;
    }
    R.rack_limit_binds = true;
    R.rack_limit_message = fmt::format(
        "rack over its limit: a {} serving needs {} DC at its peak, over the {} usable PSU "
        "capacity",
        sys.name, fmt_W(worst_dc), fmt_W(R.rack_limit_W));
    R.warnings.push_back(R.rack_limit_message);
  }

  // Cooling and facility, sized at the hottest rack's peak.
  R.cooling_plan = ps->cooling_plan;
  const double fl = sp->liquid_fraction;
  std::vector<RackLoad> loads;
  for (const auto& p : R.pools) {
    loads.push_back({static_cast<double>(p.gpus) / per_rack, p.rack_peak_W, p.rack_avg_W});
  }
  // The same sizing as training (power/cooling.h size_facility): serving now warns, as training
  // did, when one rack's liquid heat exceeds a CDU's capacity.
  auto sized = size_facility(fp, R.cooling_plan, fl, {1, R.rack_peak_W, R.rack_avg_W}, loads,
                             R.cluster_avg_W, R.cluster_peak_W);
  R.rack_cooling = sized.hottest_rack;
  R.cluster_flow_L_per_min = sized.flow_L_per_min;
  R.facility = sized.at_average;
  R.facility_peak_W = sized.peak_W;
  for (auto& w : sized.warnings) R.warnings.push_back(std::move(w));

  // Energy per output token (MLPerf's definition) over the run.
  R.duration_s = T;
  R.output_tokens = run.tokens_per_s * T;
  R.requests = static_cast<double>(run.requests);
  R.iterations = static_cast<double>(run.iterations);
  R.energy_J = it_e;
  R.gpu_energy_J = dep_gpu_e;
  const auto per_token = energy_per_token(it_e, R.output_tokens, R.facility.pue);
  R.energy_per_token_J = per_token.it_J;
  R.facility_energy_per_token_J = per_token.facility_J;
  R.gpu_energy_per_token_J = energy_per_token(dep_gpu_e, R.output_tokens, 1).it_J;
  if (R.requests > 0) R.energy_per_request_J = it_e / R.requests;
  // One iteration of the (decode) instance: the deployment's IT power x the mean step time.
  R.energy_per_iteration_J = R.cluster_avg_W * run.mean_step.total;

  // Power smoothing (docs/models/power.md §3): each pool's racks through the controller, with
  // the pool's GPUs held at the floor while the deployment serves (it always does in the run).
  std::vector<double> w_rack_s;
  if (smoothing) {
    auto& S = R.smoothing;
    S.enabled = true;
    S.settings = *smoothing;
    const double floor_W = smoothing->floor * gpu.tgp.base();
    const double gpus_in = static_cast<double>(per_rack);
    for (size_t pi = 0; pi < pools.size(); ++pi) {
      const double racks = static_cast<double>(pools[pi].gpus) / per_rack;
      const double pool_rack_gpus =
          static_cast<double>(std::min<int64_t>(pools[pi].gpus, per_rack));
      Smoother ctl = smoother_for(*smoothing, gpus_in);
      std::vector<double> grid(nb);
      double grid_e = 0;
      for (size_t b = 0; b < nb; ++b) {
        const double len =
            std::min(T, static_cast<double>(b + 1) * dt) - static_cast<double>(b) * dt;
        const double w = pool_gpu_W[pi][b], wf = std::max(w, floor_W);
        S.floor_burn_J += racks * pool_rack_gpus * (wf - w) * len;
        const double g_dc = ctl.step(rack_at(wf, pools[pi].gpus).dc_total_W, len);
        grid[b] = R.systems_per_rack * sm.psu_input_W(g_dc / R.systems_per_rack);
        grid_e += grid[b] * len;
      }
      S.extra_energy_J += racks * (grid_e - R.pools[pi].rack_avg_W * T);
      add_totals(S, racks, ctl.totals());
      S.storage_J += racks * smoothing->storage_per_gpu_J * gpus_in;
      if (pi == hottest) w_rack_s = std::move(grid);
    }
    S.throttle_slowdown = dep_gpu_e > 0 ? S.unserved_J / dep_gpu_e : 0;
    const auto [raw_lo, raw_hi] = std::minmax_element(w_rack.begin(), w_rack.end());
    const auto [sm_lo, sm_hi] = std::minmax_element(w_rack_s.begin(), w_rack_s.end());
    S.peak_reduction = *raw_hi > 0 ? 1 - *sm_hi / *raw_hi : 0;
    S.swing_reduction = *raw_hi > *raw_lo ? 1 - (*sm_hi - *sm_lo) / (*raw_hi - *raw_lo) : 0;
  }

  // Waveforms.
  auto add = [&](std::string name, std::vector<double> w, double limit) {
    Waveform wf;
    wf.name = std::move(name);
    wf.dt_s = dt;
    wf.limit_W = limit;
    wf.stats = waveform_stats(w, dt, false);
    wf.power_W = std::move(w);
    R.waveforms.push_back(std::move(wf));
  };
  add("gpu (deployment mean)", std::move(w_gpu), R.cap_W);
  const double rack_limit_ac = R.systems_per_rack == 1 ? sm.psu_input_W(R.rack_limit_W) : 0;
  add("rack (" + hp.name + ")", std::move(w_rack), rack_limit_ac);
  if (smoothing) add("rack (" + hp.name + "), smoothed", std::move(w_rack_s), rack_limit_ac);
  add("deployment IT", std::move(w_it), 0);

  R.notes.push_back(fmt::format(
      "GPU power per iteration from its decode and prompt tokens (kernel power tables on {}, "
      "decode at the mean context of {:.0f} tokens); communication and waits at {}, no "
      "iteration at idle ({})",
      gpu.name, context, fmt_W(R.gpu_comm_W), fmt_W(R.gpu_idle_W)));
  R.notes.push_back(
      "energy per token = the deployment's IT energy (its racks' share and fabric share) over the "
      "run / output tokens; facility x PUE");
  if (sym > 1) {
    R.notes.push_back(fmt::format(
        "{} identical replicas per simulated instance draw the same power at the same times: "
        "peaks are an upper bound (independent replicas would average out)",
        sym));
  }
  return R;
}

}  // namespace clustertwin::power
