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
#include "clustertwin/power/racks.h"

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

// The pools of a deployment and their kernel tables (the decode context: prompt + half the
// output on average); the simulated instances stand for `symmetry` identical replicas each.
struct Pools {
  std::vector<PoolDef> defs;
  std::vector<int> pool_of;  // per simulated instance
  double context = 0;
  int symmetry = 1;
  [[nodiscard]] const PoolDef& of(const execution::IterationRecord& it) const {
    return defs[static_cast<size_t>(pool_of[static_cast<size_t>(it.instance)])];
  }
};

Pools make_pools(const execution::ServingSetup& s, const execution::ServingResult& base_run,
                 const GpuPowerModel& gm, const GpuSettings& g) {
  Pools P;
  const auto& l = s.layout;
  P.context = base_run.mean_input_tokens + 0.5 * base_run.mean_output_tokens;
  P.symmetry = std::max(1, base_run.symmetry);
  int next = 0;
  auto add_pool = [&](std::string name, const workload::InstanceLayout& inst, int replicas) {
    PoolDef p;
    p.name = std::move(name);
    p.inst = &inst;
    p.gpus = static_cast<int64_t>(replicas) * inst.gpus();
    for (int i = 0; i < replicas / P.symmetry; ++i) p.instances.push_back(next++);
    p.tables = std::make_unique<KernelTables>(s, inst, gm, g, P.context);
    P.defs.push_back(std::move(p));
  };
  if (l.disaggregated) {
    add_pool("prefill", l.prefill, l.prefill_replicas);
    add_pool("decode", l.instance, l.replicas);
  } else {
    add_pool("instances", l.instance, l.replicas);
  }
  P.pool_of.assign(static_cast<size_t>(next), 0);
  for (size_t pi = 0; pi < P.defs.size(); ++pi) {
    for (int i : P.defs[pi].instances) P.pool_of[static_cast<size_t>(i)] = static_cast<int>(pi);
  }
  return P;
}

// The run under the settings: the caller's run with every iteration kept (simulated again with a
// trace when it has none); its kernel-time slowdown along the iterations' critical paths; when
// that binds, fed back to execution (ServingSetup::cap_slowdown) and the run simulated again at
// the same arrival rate.
base::Status run_under_settings(ServingPowerResult& R, const execution::ServingSetup& s0,
                                const execution::ServingResult& base_run, const Pools& pools,
                                bool feedback) {
  auto traced = [&]() -> base::Result<execution::ServingResult> {
    if (!base_run.trace.empty() &&
        static_cast<int64_t>(base_run.trace.size()) >= base_run.iterations)
      return base_run;
    execution::ServingSetup t = s0;
    t.rate_qps = base_run.rate_qps;
    t.trace_iterations = std::max<int64_t>(1, base_run.iterations) + 1;
    return execution::simulate_serving(t);
  };
  auto run0 = traced();
  if (!run0) return base::fail(run0.error());
  double t = 0, tc = 0;
  for (const auto& it : run0->trace) {
    const auto w = iteration_work(it, pools.of(it));
    t += w.critical_t;
    tc += w.critical_tc;
  }
  R.kernel_slowdown = t > 0 ? tc / t : 1.0;
  if (!feedback || R.kernel_slowdown <= 1 + 1e-6) {
    R.serving = std::move(*run0);
    return {};
  }
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
  return {};
}

// Per-phase figures at the run's mean load: a decode iteration of the decode (or aggregated)
// pool at its mean batch, under the settings and at the default limit; a full prompt chunk.
void phase_figures(ServingPowerResult& R, const Pools& pools, const execution::ServingSetup& s0,
                   const GpuPowerModel& gm) {
  const auto& p = pools.defs.back();
  const auto& kt = *p.tables;
  const double b = std::max(1.0, R.serving.mean_decode_batch) * kt.tokens_per_seq();
  const double ranks = p.inst->dp_attention ? p.inst->tp : 1;
  Kern kd = kt.decode(b);
  kd += kt.moe(b * ranks);
  R.gpu_decode_W = kd.tc > 0 ? kd.e / kd.tc : 0;
  R.decode_slowdown = kd.t > 0 ? kd.tc / kd.t : 1;
  const auto d0 = KernelTables(s0, *p.inst, gm, GpuSettings{}, pools.context);
  Kern k0 = d0.decode(b);
  k0 += d0.moe(b * ranks);
  R.decode_demand_W = k0.t > 0 ? k0.e / k0.t : 0;
  R.decode_peak_demand_W = k0.peak;
  const auto& pp = pools.defs.front();
  const auto& kp_t = *pp.tables;
  const double chunk = static_cast<double>(pp.inst->max_tokens);
  const double pr = pp.inst->dp_attention ? pp.inst->tp : 1;
  Kern kp = kp_t.prefill(chunk);
  kp += kp_t.moe(chunk * pr);
  R.gpu_prefill_W = kp.tc > 0 ? kp.e / kp.tc : 0;
  R.prefill_slowdown = kp.t > 0 ? kp.tc / kp.t : 1;
}

// A pool's GPU energy and busy GPU-time per waveform bin, and its GPU-time by kind of work.
struct PoolBins {
  std::vector<double> e, busy;
  double dec_s = 0, pre_s = 0, other_s = 0, busy_s = 0;
};

// Each iteration's kernel energy from the tables (scaled to the iteration when the tables' kernel
// time exceeds it), the rest of its GPU-time at the communication power, spread over its bins.
std::vector<PoolBins> bin_iterations(const execution::ServingResult& run, const Pools& pools,
                                     double comm_W, double T, double dt, size_t nb) {
  std::vector<PoolBins> out(pools.defs.size());
  for (auto& pb : out) {
    pb.e.assign(nb, 0.0);
    pb.busy.assign(nb, 0.0);
  }
  for (const auto& it : run.trace) {
    auto& a = out[static_cast<size_t>(pools.pool_of[static_cast<size_t>(it.instance)])];
    const auto w = iteration_work(it, pools.of(it));
    const double kern = w.decode.tc + w.prefill.tc;
    const double k = kern > w.busy_gpu_s && kern > 0 ? w.busy_gpu_s / kern : 1.0;
    const double rest = std::max(0.0, w.busy_gpu_s - kern * k);
    const double e = k * (w.decode.e + w.prefill.e) + rest * comm_W;
    a.dec_s += k * w.decode.tc;
    a.pre_s += k * w.prefill.tc;
    a.other_s += rest;
    a.busy_s += w.busy_gpu_s;
    const double t0 = it.start_s, t1 = std::min(T, it.start_s + it.duration_s);
    if (!(t1 > t0)) continue;
    const double pw = e / (t1 - t0), bw = w.busy_gpu_s / (t1 - t0);
    for (auto b = static_cast<size_t>(t0 / dt); b < nb && static_cast<double>(b) * dt < t1; ++b) {
      const double x0 = std::max(t0, static_cast<double>(b) * dt);
      const double x1 = std::min(t1, static_cast<double>(b + 1) * dt);
      if (x1 <= x0) continue;
      a.e[b] += pw * (x1 - x0);
      a.busy[b] += bw * (x1 - x0);
    }
  }
  return out;
}

double bin_length(double T, double dt, size_t b) {
  return std::min(T, static_cast<double>(b + 1) * dt) - static_cast<double>(b) * dt;
}

// The deployment over the run, per bin: the mean GPU, the hottest pool's rack, the IT share; and
// each pool's GPU power per bin when asked (for smoothing).
struct DeploymentSamples {
  std::vector<double> gpu, rack, it;
  std::vector<std::vector<double>> pool_gpu_W;
  size_t hottest = 0;
  double gpu_J = 0, it_J = 0, worst_dc_W = 0;
};

// Each pool's GPUs per bin (simulated instances' GPUs; idle GPU-time at idle power), its racks
// (racks.h pool_rack_power) and its IT share; the pools' figures into R.pools.
DeploymentSamples pool_racks(ServingPowerResult& R, const Pools& pools,
                             const std::vector<PoolBins>& bins, const SystemPowerModel& sm,
                             double T, double dt, int64_t dep_gpus, bool per_pool) {
  const size_t nb = bins.front().e.size();
  DeploymentSamples d;
  d.gpu.assign(nb, 0.0);
  d.it.assign(nb, R.fabric_share_W);
  d.pool_gpu_W.resize(pools.defs.size());
  for (size_t pi = 0; pi < pools.defs.size(); ++pi) {
    const auto& p = pools.defs[pi];
    const auto& a = bins[pi];
    const double gsim = static_cast<double>(p.instances.size()) * p.inst->gpus();
    ServingPool out{.name = p.name, .layout = p.inst->label(), .gpus = p.gpus, .gpu_min_W = 1e300};
    double pe = 0, re = 0, ie = 0;
    std::vector<double> rack_w(nb);
    for (size_t b = 0; b < nb; ++b) {
      const double len = bin_length(T, dt, b);
      const double idle = std::max(0.0, gsim * len - a.busy[b]);
      const double w = (a.e[b] + idle * R.gpu_idle_W) / (gsim * len);
      if (per_pool) d.pool_gpu_W[pi].push_back(w);
      const auto rk = pool_rack_power(sm, R.systems_per_rack, w, R.gpu_idle_W, p.gpus);
      const double it = pool_it_share_W(sm, R.systems_per_rack, w, p.gpus);
      rack_w[b] = rk.ac_W;
      d.worst_dc_W = std::max(d.worst_dc_W, rk.dc_W);
      out.gpu_peak_W = std::max(out.gpu_peak_W, w);
      out.gpu_min_W = std::min(out.gpu_min_W, w);
      out.rack_peak_W = std::max(out.rack_peak_W, rk.ac_W);
      out.it_peak_W = std::max(out.it_peak_W, it);
      pe += w * len;
      re += rk.ac_W * len;
      ie += it * len;
      d.gpu[b] += w * static_cast<double>(p.gpus) / static_cast<double>(dep_gpus) * len;
      d.it[b] += it;
    }
    out.gpu_avg_W = pe / T;
    out.rack_avg_W = re / T;
    out.it_avg_W = ie / T;
    const double all = gsim * T;
    out.decode_share = a.dec_s / all;
    out.prefill_share = a.pre_s / all;
    out.other_share = a.other_s / all;
    out.idle_share = std::max(0.0, 1 - a.busy_s / all);
    d.gpu_J += out.gpu_avg_W * static_cast<double>(p.gpus) * T;
    d.it_J += ie;
    if (pi == 0 || out.rack_peak_W > R.pools[d.hottest].rack_peak_W) {
      d.hottest = pi;
      d.rack = std::move(rack_w);
    }
    R.pools.push_back(out);
  }
  for (size_t b = 0; b < nb; ++b) d.gpu[b] /= bin_length(T, dt, b);
  d.it_J += R.fabric_share_W * T;
  const auto& hp = R.pools[d.hottest];
  R.rack_avg_W = hp.rack_avg_W;
  R.rack_peak_W = hp.rack_peak_W;
  R.gpu_avg_W = d.gpu_J / (static_cast<double>(dep_gpus) * T);
  R.gpu_peak_W = *std::max_element(d.gpu.begin(), d.gpu.end());
  R.gpu_min_W = *std::min_element(d.gpu.begin(), d.gpu.end());
  R.cluster_avg_W = d.it_J / T;
  R.cluster_peak_W = *std::max_element(d.it.begin(), d.it.end());
  return d;
}

// Energy over the run (energy.h): per output token (MLPerf's definition), IT and facility; per
// GPU, request and iteration of the (decode) instance.
void energy_figures(ServingPowerResult& R, const DeploymentSamples& d) {
  const auto& run = R.serving;
  const double T = run.duration_s;
  R.duration_s = T;
  R.output_tokens = run.tokens_per_s * T;
  R.requests = static_cast<double>(run.requests);
  R.iterations = static_cast<double>(run.iterations);
  R.energy_J = d.it_J;
  R.gpu_energy_J = d.gpu_J;
  const auto per_token = energy_per_token(d.it_J, R.output_tokens, R.facility.pue);
  R.energy_per_token_J = per_token.it_J;
  R.facility_energy_per_token_J = per_token.facility_J;
  R.gpu_energy_per_token_J = energy_per_token(d.gpu_J, R.output_tokens, 1).it_J;
  if (R.requests > 0) R.energy_per_request_J = d.it_J / R.requests;
  R.energy_per_iteration_J = R.cluster_avg_W * run.mean_step.total;
}

// Power smoothing (smoothing.h): each pool's racks through the controller, the pool's GPUs held
// at the floor while the deployment serves (it always does in the run). Returns the hottest
// pool's smoothed rack.
std::vector<double> smooth_pools(ServingPowerResult& R, const SmoothingSettings& s,
                                 const Pools& pools, const DeploymentSamples& d,
                                 const SystemPowerModel& sm, double T, double dt) {
  const size_t nb = d.gpu.size();
  const int per_rack = sm.gpus() * R.systems_per_rack;
  const double gpus_in = static_cast<double>(per_rack);
  RackSmoothing rs(s, R.gpu_tgp_W);
  std::vector<double> w_rack_s;
  double extra = 0;
  for (size_t pi = 0; pi < pools.defs.size(); ++pi) {
    const auto& p = pools.defs[pi];
    const double racks = static_cast<double>(p.gpus) / per_rack;
    const double pool_rack_gpus = static_cast<double>(std::min<int64_t>(p.gpus, per_rack));
    const size_t unit = rs.add(racks, gpus_in);
    std::vector<double> grid(nb);
    double grid_e = 0;
    for (size_t b = 0; b < nb; ++b) {
      const double len = bin_length(T, dt, b);
      const double w = d.pool_gpu_W[pi][b], wf = rs.floored_W(w);
      rs.add_floor_burn(racks * pool_rack_gpus * (wf - w) * len);
      const auto load = pool_rack_power(sm, R.systems_per_rack, wf, R.gpu_idle_W, p.gpus);
      const double g_dc = rs.step(unit, load.dc_total_W, len);
      grid[b] = R.systems_per_rack * sm.psu_input_W(g_dc / R.systems_per_rack);
      grid_e += grid[b] * len;
    }
    extra += racks * (grid_e - R.pools[pi].rack_avg_W * T);
    if (pi == d.hottest) w_rack_s = std::move(grid);
  }
  R.smoothing = rs.summary(d.gpu_J);
  R.smoothing.extra_energy_J = extra;
  R.smoothing.peak_reduction = peak_reduction(d.rack, w_rack_s);
  R.smoothing.swing_reduction = swing_reduction(d.rack, w_rack_s);
  return w_rack_s;
}

// A rack over its usable PSU capacity with the limit enforced: the GPUs capped at the largest
// limit that fits (power_setup.h) and the view again under it; says what the limit costs.
base::Result<ServingPowerResult> under_rack_limit(const ServingPowerResult& R,
                                                  const ServingPowerInput& in,
                                                  const ServingPowerOptions& o,
                                                  const PowerSetup& ps, double worst_dc_W) {
  const double cap = ps.rack_limit_cap_W(R.cap_W);
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
      ps.system->name, fmt_W(worst_dc_W), fmt_W(R.rack_limit_W), fmt_W(cap), R.serving.tokens_per_s,
      r2->serving.tokens_per_s, 1e3 * R.serving.tpot_s.p99, 1e3 * r2->serving.tpot_s.p99);
  r2->warnings.insert(r2->warnings.begin(), r2->rack_limit_message);
  return r2;
}

// The waveforms over the run: the deployment's mean GPU, the hottest pool's rack (smoothed too
// when asked), the deployment's IT share.
void add_waveforms(ServingPowerResult& R, DeploymentSamples& d, std::vector<double>& w_rack_s,
                   const SystemPowerModel& sm, double dt) {
  auto add = [&](std::string name, std::vector<double>& w, double limit_W) {
    R.waveforms.push_back(
        {.name = std::move(name), .dt_s = dt, .power_W = std::move(w), .limit_W = limit_W});
    R.waveforms.back().stats = waveform_stats(R.waveforms.back().power_W, dt, false);
  };
  add("gpu (deployment mean)", d.gpu, R.cap_W);
  const double rack_limit_ac = R.systems_per_rack == 1 ? sm.psu_input_W(R.rack_limit_W) : 0;
  const std::string rack = "rack (" + R.pools[d.hottest].name + ")";
  add(rack, d.rack, rack_limit_ac);
  if (R.smoothing.enabled) add(rack + ", smoothed", w_rack_s, rack_limit_ac);
  add("deployment IT", d.it, 0);
}

// The notes: how GPU power was found, what energy per token counts, the replicas' symmetry.
void add_notes(ServingPowerResult& R, const std::string& gpu, const Pools& pools) {
  R.notes.push_back(fmt::format(
      "GPU power per iteration from its decode and prompt tokens (kernel power tables on {}, "
      "decode at the mean context of {:.0f} tokens); communication and waits at {}, no "
      "iteration at idle ({})",
      gpu, pools.context, fmt_W(R.gpu_comm_W), fmt_W(R.gpu_idle_W)));
  R.notes.push_back(
      "energy per token = the deployment's IT energy (its racks' share and fabric share) over the "
      "run / output tokens; facility x PUE");
  if (pools.symmetry > 1) {
    R.notes.push_back(fmt::format(
        "{} identical replicas per simulated instance draw the same power at the same times: "
        "peaks are an upper bound (independent replicas would average out)",
        pools.symmetry));
  }
}

}  // namespace

base::Result<ServingPowerResult> analyze_serving_power(const ServingPowerInput& in,
                                                       const ServingPowerOptions& o) {
  CT_CHECK(in.catalog && in.power && in.cluster && in.topology && in.setup && in.result &&
               in.setup->model && in.setup->compute,
           "serving power needs catalog, power catalog, cluster, topology, setup and result");
  // 1. Settings (power_setup.h, the stage training shares): the system, its GPU and their power
  //    models; cap, clock lock, smoothing, cooling.
  auto ps = resolve_power_setup(*in.catalog, *in.power, *in.cluster,
                                {.gpu = o.gpu, .smoothing = o.smoothing, .cooling = o.cooling});
  if (!ps) return base::fail(ps.error());
  if (o.resolution_s <= 0 || o.resolution_s > 10) {
    return base::fail(fmt::format("{{resolution}} {:g} s: expected a positive step of at most 10 s",
                                  o.resolution_s));
  }
  const auto& sys = *ps->system;
  const GpuPowerModel& gm = ps->gm();
  const SystemPowerModel& sm = ps->sm();
  const auto& base_run = *in.result;
  ServingPowerResult R;
  R.system = sys.name;
  R.systems_per_rack = ps->system_params->systems_per_rack;
  R.cap_W = ps->cap_W();
  R.cap_reason = ps->cap_reason;
  R.clock_lock_MHz = ps->settings.clock_lock_MHz;
  R.gpu_tgp_W = ps->gpu->tgp.base();
  R.gpu_idle_W = gm.idle_W();
  R.gpu_comm_W = gm.apply(gm.comm_W(1), false, ps->settings).power_W;
  R.baseline_tokens_per_s = base_run.tokens_per_s;
  R.baseline_tpot_p99_s = base_run.tpot_s.p99;
  R.baseline_ttft_p99_s = base_run.ttft_s.p99;

  // 2. Pools and their kernel tables; the run under the settings (cap feedback) and its phases.
  const auto pools = make_pools(*in.setup, base_run, gm, ps->settings);
  if (auto s = run_under_settings(R, *in.setup, base_run, pools, o.feedback); !s)
    return base::fail(s.error());
  phase_figures(R, pools, *in.setup, gm);

  // 3. Each pool's energy over the run, binned; its racks (racks.h) and the deployment's IT share.
  const double T = R.serving.duration_s;
  if (!(T > 0)) return base::fail("serving power: the run has no duration (no requests?)");
  const double dt = std::max(o.resolution_s, T / 5e6);
  const auto nb = static_cast<size_t>(std::ceil(T / dt - 1e-9));
  const auto bins = bin_iterations(R.serving, pools, R.gpu_comm_W, T, dt, nb);
  R.fabric = fabric_power(*in.catalog, *in.topology, *ps->facility);
  const int64_t dep_gpus = in.setup->layout.gpus();
  R.fabric_share_W =
      R.fabric.ac_W * static_cast<double>(dep_gpus) / static_cast<double>(in.topology->gpus());
  R.racks = static_cast<double>(dep_gpus) / (sys.gpus() * R.systems_per_rack);
  const RackLimit limit = rack_limit(sm);
  R.rack_limit_W = limit.dc_W;
  R.rack_limit_ac_W = limit.ac_W;
  R.rack_limit_basis = limit.basis;
  auto d = pool_racks(R, pools, bins, sm, T, dt, dep_gpus, ps->smoothing.has_value());

  // 4. The rack limit (racks.h).
  if (limit.exceeded_by(d.worst_dc_W)) {
    if (o.enforce_rack_limit) return under_rack_limit(R, in, o, *ps, d.worst_dc_W);
    R.rack_limit_binds = true;
    R.rack_limit_message = fmt::format(
        "rack over its limit: a {} serving needs {} DC at its peak, over the {} usable PSU "
        "capacity",
        sys.name, fmt_W(d.worst_dc_W), fmt_W(R.rack_limit_W));
    R.warnings.push_back(R.rack_limit_message);
  }

  // 5. Cooling and facility sized at the racks' peaks (cooling.h), then energy (energy.h).
  R.cooling_plan = ps->cooling_plan;
  const double per_rack = sys.gpus() * R.systems_per_rack;
  std::vector<RackLoad> loads;
  for (const auto& p : R.pools)
    loads.push_back({static_cast<double>(p.gpus) / per_rack, p.rack_peak_W, p.rack_avg_W});
  auto sized =
      size_facility(*ps->facility, R.cooling_plan, ps->system_params->liquid_fraction,
                    {1, R.rack_peak_W, R.rack_avg_W}, loads, R.cluster_avg_W, R.cluster_peak_W);
  record_facility(R, sized);
  energy_figures(R, d);

  // 6. Smoothing (smoothing.h), the waveforms and notes.
  std::vector<double> w_rack_s;
  if (ps->smoothing) w_rack_s = smooth_pools(R, *ps->smoothing, pools, d, sm, T, dt);
  add_waveforms(R, d, w_rack_s, sm, dt);
  add_notes(R, ps->gpu->name, pools);
  return R;
}

}  // namespace clustertwin::power
