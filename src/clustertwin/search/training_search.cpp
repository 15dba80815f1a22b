#include "clustertwin/search/training_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <ctime>
#include <map>
#include <optional>
#include <queue>
#include <system_error>
#include <thread>

#include "clustertwin/base/check.h"
#include "clustertwin/workload/memory.h"

namespace clustertwin::search {

namespace rm = workload::recompute_module;
using models::Recompute;

std::vector<RecomputeChoice> recompute_choices(const models::ModelSpec& m) {
  std::vector<RecomputeChoice> out = {{Recompute::kNone, 0},
                                      {Recompute::kSelective, rm::kCoreAttn}};
  std::vector<uint32_t> steps = {rm::kLayernorm};
  if (m.moe) steps.push_back(rm::kMoeAct);
  if (m.mla) steps.push_back(rm::kMlaUpProj);
  steps.push_back(rm::kCoreAttn);
  if (m.moe && m.moe->shared_experts > 0) steps.push_back(rm::kSharedExperts);
  if (m.layers > m.moe_layer_count()) steps.push_back(rm::kMlp);
  if (m.moe) steps.push_back(rm::kMoe);
  uint32_t bits = 0;
  for (uint32_t b : steps) {
    bits |= b;
    out.push_back({Recompute::kSelective, bits});
  }
  out.push_back({Recompute::kFull, 0});
  return out;
}

std::string TrainingCandidate::key() const {
  const auto& l = layout;
  std::string s = fmt::format("TP{} PP{}", l.tp, l.pp);
  if (l.vpp > 1) s += fmt::format(" VPP{}", l.vpp);
  if (l.cp > 1) s += fmt::format(" CP{}", l.cp);
  if (l.ep > 1) s += fmt::format(" EP{}", l.ep);
  s += fmt::format(" DP{} mb{} zero{} {} recompute ", l.dp, l.micro_batch, l.zero,
                   compute::dtype_name(l.dtype));
  if (l.recompute == Recompute::kSelective) {
    s += workload::recompute_modules_name(l.recompute_bits());
  } else {
    s += models::recompute_name(l.recompute);
  }
  return s;
}

execution::TrainingSetup setup_for(const execution::TrainingSetup& base, const TrainingSpace& space,
                                   const workload::TrainingLayout& l) {
  execution::TrainingSetup s = base;
  s.layout = l;
  s.gpus = space.gpus;
  for (const auto& p : space.precisions) {
    if (p.dtype == l.dtype) s.peak = p.peak;
  }
  return s;
}

namespace {

constexpr int kMaxKinds = 4;  // dense, moe, dense-local, moe-local (models::layer_kind)

// Decoder layers of each kind on one pipeline stage, and whether it holds the embedding / head.
struct StageShape {
  std::array<int, kMaxKinds> count{};
  bool embed = false, head = false;
  int layers = 0;
};

// What one stage holds and pays outside the micro-batches, per (tp, cp, ep, pp, vpp).
struct StageStatic {
  double dense = 0, expert = 0, lora = 0;  // parameters per GPU
  double reduce_ar = 0, reduce_rs = 0;     // gradient all-reduce (ZeRO 0) / reduce-scatter
  double gather = 0;                       // parameter all-gather (ZeRO >= 1)
  double opt_full = 0, opt_sharded = 0;    // Adam over all / the DP shard of the parameters
};

// ZeRO 3's per-part collectives over one split's DP group (execution/training.cpp
// zero3_exposed): the parameter all-gather and the gradient reduce-scatter of a decoder layer of
// each kind, the embedding, the output head and an MTP module.
struct Zero3Comm {
  std::array<double, kMaxKinds> ag{}, rs{};
  double embed_ag = 0, embed_rs = 0, output_ag = 0, output_rs = 0, mtp_ag = 0, mtp_rs = 0;
};

struct Model {
  const models::ModelSpec* m = nullptr;
  models::ParamCounts pc;
  std::vector<int> kind_of;  // layer -> kind index
  std::vector<int> rep;      // kind -> a layer of that kind
  std::vector<workload::LayerParams> kind_params;
  workload::LayerParams mtp_params;
};

Model describe(const models::ModelSpec& m) {
  Model d;
  d.m = &m;
  d.pc = models::count_params(m);
  std::map<std::string, int> ids;
  for (int i = 0; i < m.layers; ++i) {
    const std::string k = models::layer_kind(m, i);
    auto it = ids.find(k);
    if (it == ids.end()) {
      it = ids.emplace(k, static_cast<int>(d.rep.size())).first;
      d.rep.push_back(i);
      d.kind_params.push_back(workload::layer_params(m, i));
    }
    d.kind_of.push_back(it->second);
  }
  d.mtp_params = workload::layer_params(m, m.layers - 1);
  return d;
}

std::vector<StageShape> stage_shapes(const Model& d, int pp, int vpp) {
  const int chunks = pp * vpp;
  const auto split = workload::split_layers(d.m->layers, chunks);
  std::vector<StageShape> out(static_cast<size_t>(pp));
  int first = 0;
  for (int c = 0; c < chunks; ++c) {
    auto& st = out[static_cast<size_t>(c % pp)];
    const int n = split[static_cast<size_t>(c)];
    for (int i = 0; i < n; ++i)
      ++st.count[static_cast<size_t>(d.kind_of[static_cast<size_t>(first + i)])];
    st.layers += n;
    if (c == 0) st.embed = true;
    if (c == chunks - 1) st.head = true;
    first += n;
  }
  return out;
}

// The ranking order: step time, then the layout's axes (a total order: no ties left to chance).
using Tuple = std::array<int64_t, 10>;
struct Ranked {
  double step = 0;
  Tuple tuple{};
  TrainingCandidate cand;
};
struct Worse {
  bool operator()(const Ranked& a, const Ranked& b) const {
    if (a.step != b.step) return a.step < b.step;
    return a.tuple < b.tuple;
  }
};

struct Group {
  int tp = 1, cp = 1, ep = 1;
};

struct GroupOut {
  int64_t enumerated = 0, valid = 0, fitting = 0, tables = 0, ahead = 0;
  std::priority_queue<Ranked, std::vector<Ranked>, Worse> top;  // worst on top
};

struct Searcher {
  const execution::TrainingSetup& base;
  const TrainingSpace& space;
  const Model& d;
  const std::vector<PrecisionChoice>& precisions;
  const std::vector<RecomputeChoice>& recomputes;
  size_t keep;

  [[nodiscard]] double comm(execution::CommOp op, double bytes, int group, int stride,
                            int concurrent, bool group_stride) const {
    if (group <= 1 || bytes <= 0) return 0.0;
    execution::CommRequest r{.op = op,
                             .bytes = base::bytes(bytes),
                             .group_size = group,
                             .first_gpu = base.first_gpu,
                             .stride = stride,
                             .concurrent = concurrent,
                             .group_stride = group_stride ? group * stride : 0};
    return base.comm->time(r).base();
  }

  // Parameters and the DP tail of every stage (execution/training.cpp stage_tail,
  // workload/memory.cpp training_memory).
  std::vector<StageStatic> statics(const workload::TrainingLayout& l,
                                   const std::vector<StageShape>& shapes) const {
    const auto& m = *d.m;
    const double tp = l.tp;
    const double ep_etp = static_cast<double>(l.ep) * l.etp;
    const double h = static_cast<double>(m.hidden);
    const int dp_group = l.dp * l.cp;
    const int concurrent = static_cast<int>(space.gpus / std::max(1, dp_group));
    std::vector<StageStatic> out(shapes.size());
    for (size_t s = 0; s < shapes.size(); ++s) {
      const auto& sh = shapes[s];
      auto& o = out[s];
      for (size_t k = 0; k < d.rep.size(); ++k) {
        const double n = sh.count[k];
        if (n == 0) continue;
        const auto& lp = d.kind_params[k];
        o.dense += n * ((lp.attention + lp.mlp_dense + lp.shared + lp.norms) / tp + lp.router);
        o.expert += n * (lp.routed / ep_etp);
        o.lora += n * (workload::lora_layer_params(m, d.rep[k], l.lora_rank) / tp);
      }
      if (sh.embed) o.dense += d.pc.embedding / tp;
      if (sh.head) {
        o.dense += d.pc.output / tp;
        const auto& mp = d.mtp_params;
        for (int i = 0; i < m.mtp_layers; ++i) {
          o.dense += (mp.attention + mp.mlp_dense + mp.shared + mp.norms) / tp + mp.router +
                     2.0 * h * h / tp;
          o.expert += mp.routed / ep_etp;
        }
      }
      const double trainable = l.lora_rank > 0 ? o.lora : o.dense + o.expert;
      const double grads = trainable * l.grad_bytes;
      if (dp_group > 1) {
        o.reduce_ar = comm(execution::CommOp::kAllReduce, grads, dp_group, l.tp, concurrent, false);
        o.reduce_rs =
            comm(execution::CommOp::kReduceScatter, grads, dp_group, l.tp, concurrent, false);
        o.gather =
            comm(execution::CommOp::kAllGather, trainable * 2.0, dp_group, l.tp, concurrent, false);
      }
      o.opt_full = base.compute->memory_bound(base::bytes(trainable * 30.0)).base();
      o.opt_sharded = base.compute->memory_bound(base::bytes(trainable / dp_group * 30.0)).base();
    }
    return out;
  }

  [[nodiscard]] Zero3Comm zero3_comm(const workload::TrainingLayout& l) const {
    const auto& m = *d.m;
    const double tp = l.tp;
    const double ep_etp = static_cast<double>(l.ep) * l.etp;
    const double h = static_cast<double>(m.hidden);
    const int group = l.dp * l.cp;
    const int concurrent = static_cast<int>(space.gpus / std::max(1, group));
    auto ag = [&](double params) {
      return comm(execution::CommOp::kAllGather, params * 2.0, group, l.tp, concurrent, false);
    };
    auto rs = [&](double trainable) {
      return comm(execution::CommOp::kReduceScatter, trainable * l.grad_bytes, group, l.tp,
                  concurrent, false);
    };
    auto layer = [&](const workload::LayerParams& lp) {
      return (lp.attention + lp.mlp_dense + lp.shared + lp.norms) / tp + lp.router +
             lp.routed / ep_etp;
    };
    const bool lora = l.lora_rank > 0;
    Zero3Comm z;
    for (size_t k = 0; k < d.rep.size(); ++k) {
      const double p = layer(d.kind_params[k]);
      z.ag[k] = ag(p);
      z.rs[k] = rs(lora ? workload::lora_layer_params(m, d.rep[k], l.lora_rank) / tp : p);
    }
    z.embed_ag = ag(d.pc.embedding / tp);
    z.embed_rs = lora ? 0.0 : rs(d.pc.embedding / tp);
    z.output_ag = ag(d.pc.output / tp);
    z.output_rs = lora ? 0.0 : rs(d.pc.output / tp);
    if (m.mtp_layers > 0) {
      const double p = layer(d.mtp_params) + 2.0 * h * h / tp;
      z.mtp_ag = ag(p);
      z.mtp_rs = lora ? 0.0 : rs(p);
    }
    return z;
  }

  void run(const Group& g, GroupOut& out) const {
    const auto& m = *d.m;
    const auto& b = base.layout;
    const int64_t gpus = space.gpus;
    const double h = static_cast<double>(m.hidden);
    const int64_t per_tc = gpus / (static_cast<int64_t>(g.tp) * g.cp);
    const int64_t inner = static_cast<int64_t>(space.zeros.size()) *
                          static_cast<int64_t>(precisions.size()) *
                          static_cast<int64_t>(recomputes.size());
    // Pipeline splits of this (tp, cp, ep): each with its shapes and statics, built once.
    struct Split {
      int pp, vpp, dp;
      std::vector<StageShape> shapes;
      std::vector<StageStatic> statics;
      std::vector<int64_t> mbs;  // micro-batch sizes the layout rules accept
      Zero3Comm z3;              // when ZeRO 3 is searched
    };
    const bool with_zero3 =
        std::find(space.zeros.begin(), space.zeros.end(), 3) != space.zeros.end();
    std::vector<Split> splits;
    for (int64_t pp64 = 1; pp64 <= std::min<int64_t>(per_tc, space.max_pp); ++pp64) {
      if (per_tc % pp64 != 0) continue;
      const int pp = static_cast<int>(pp64);
      const int dp = static_cast<int>(per_tc / pp64);
      for (int vpp : space.vpps) {
        Split sp{pp, vpp, dp, {}, {}, {}, {}};
        for (int64_t mb : space.micro_batches) {
          out.enumerated += inner;
          workload::TrainingLayout l = b;
          l.tp = g.tp;
          l.cp = g.cp;
          l.ep = g.ep;
          l.pp = pp;
          l.vpp = vpp;
          l.dp = dp;
          l.micro_batch = mb;
          l.schedule = workload::PipelineSchedule::k1F1B;
          l.offload_activations = false;
          if (!workload::validate(l, m, gpus)) continue;
          out.valid += inner;
          sp.mbs.push_back(mb);
        }
        if (sp.mbs.empty()) continue;
        workload::TrainingLayout l = b;
        l.tp = g.tp;
        l.cp = g.cp;
        l.ep = g.ep;
        l.pp = pp;
        l.vpp = vpp;
        l.dp = dp;
        sp.shapes = stage_shapes(d, pp, vpp);
        sp.statics = statics(l, sp.shapes);
        if (with_zero3) sp.z3 = zero3_comm(l);
        splits.push_back(std::move(sp));
      }
    }
    if (splits.empty()) return;
    const double capacity = base.memory_capacity.base();
    const double optimizer_bytes = 4.0 + 2.0 * b.moment_bytes;
    const double buffers = workload::kTrainingBufferBytes;
    const size_t kinds = d.rep.size();
    std::vector<double> stage_f, stage_b, per_micro, max_layer;
    for (int64_t mb : space.micro_batches) {
      for (size_t pi = 0; pi < precisions.size(); ++pi) {
        const auto dtype = precisions[pi].dtype;
        double weight_bytes = 2.0;
        if (dtype == compute::DType::kFp8 || dtype == compute::DType::kFp8Block) weight_bytes = 1.0;
        if (dtype == compute::DType::kNvfp4) weight_bytes = 0.5625;
        for (size_t ri = 0; ri < recomputes.size(); ++ri) {
          workload::TrainingLayout a = b;  // the (tp, cp, ep, mb, precision, recompute) key
          a.tp = g.tp;
          a.cp = g.cp;
          a.ep = g.ep;
          a.micro_batch = mb;
          a.dtype = dtype;
          a.recompute = recomputes[ri].mode;
          a.recompute_modules = recomputes[ri].modules;
          a.schedule = workload::PipelineSchedule::k1F1B;
          a.offload_activations = false;
          const bool full = a.recompute == Recompute::kFull;
          // Stored activations per token of each layer kind (training_memory's terms).
          std::array<double, kMaxKinds> act{}, all{};
          for (size_t k = 0; k < kinds; ++k) {
            all[k] = workload::layer_activation_bytes_per_token(m, a, d.rep[k]);
            act[k] = full ? 2.0 * h / (a.sequence_parallel ? a.tp : 1.0) : all[k];
          }
          const double tokens = static_cast<double>(a.micro_batch * a.seq_len / a.cp);
          const double embed_act =
              tokens * (8.0 + (m.mlp == models::MlpKind::kGelu ? h / a.tp : 0.0));
          const double head_act =
              m.mtp_layers *
              (tokens *
               (workload::layer_activation_bytes_per_token(m, a, m.layers - 1) + 6.0 * h / a.tp));
          const double logits =
              tokens * static_cast<double>(m.vocab) * 6.0 / a.tp * (1 + m.mtp_layers);
          std::optional<execution::TrainingPartCosts> costs;
          bool refused = false;
          std::array<double, kMaxKinds> kf{}, kb{}, kfc{}, kbc{};
          const double send_bytes = static_cast<double>(mb * ((a.seq_len + a.cp - 1) / a.cp)) * h *
                                    2.0 / (a.sequence_parallel ? a.tp : 1);
          for (const auto& sp : splits) {
            if (std::find(sp.mbs.begin(), sp.mbs.end(), mb) == sp.mbs.end()) continue;
            if (refused) break;
            workload::TrainingLayout l = a;
            l.pp = sp.pp;
            l.vpp = sp.vpp;
            l.dp = sp.dp;
            const size_t np = static_cast<size_t>(sp.pp);
            per_micro.assign(np, 0.0);
            max_layer.assign(np, 0.0);
            for (size_t s = 0; s < np; ++s) {
              const auto& sh = sp.shapes[s];
              double sum = 0, mx = 0;
              for (size_t k = 0; k < kinds; ++k) {
                if (sh.count[k] == 0) continue;
                sum += sh.count[k] * act[k];
                mx = std::max(mx, all[k]);
              }
              double pm = tokens * sum;
              if (sh.embed) pm += embed_act;
              if (sh.head) pm += head_act;
              per_micro[s] = pm;
              max_layer[s] = mx;
            }
            const double dense_shard = static_cast<double>(sp.dp) * a.cp;
            const double expert_shard = dense_shard * a.tp / (static_cast<double>(a.ep) * a.etp);
            std::vector<double> act_mem(np);
            for (size_t s = 0; s < np; ++s) {
              double x = per_micro[s] * workload::inflight_micro_batches(l, static_cast<int>(s));
              if (full) x += tokens * max_layer[s];
              act_mem[s] = x + (sp.shapes[s].head ? logits : 0.0) + buffers;
            }
            bool timed_split = false, timed_zero3 = false;
            double last_end = 0, last_end3 = 0;
            for (int zero : space.zeros) {
              // Memory first: the stage with the most must fit.
              double worst = 0;
              for (size_t s = 0; s < np && worst <= capacity; ++s) {
                const auto& st = sp.statics[s];
                const double td = a.lora_rank > 0 ? st.lora : st.dense;
                const double tx = a.lora_rank > 0 ? 0.0 : st.expert;
                auto shard = [&](double dd, double xx, double per, int from) {
                  const bool sh = zero >= from;
                  return dd * per / (sh ? dense_shard : 1.0) + xx * per / (sh ? expert_shard : 1.0);
                };
                double w = shard(st.dense, st.expert, weight_bytes, 3) + st.lora * 2.0;
                if (zero >= 3) {
                  w += 2.0 *
                       ((st.dense + st.expert) /
                        static_cast<double>(std::max(1, sp.shapes[s].layers))) *
                       weight_bytes;
                }
                const double total = w + shard(td, tx, static_cast<double>(a.grad_bytes), 2) +
                                     shard(td, tx, optimizer_bytes, 1) + act_mem[s];
                worst = std::max(worst, total);
              }
              if (worst > capacity) continue;
              // Then the time.
              if (!costs) {
                auto c = execution::training_part_costs(setup_for(base, space, l));
                ++out.tables;
                if (!c) {
                  refused = true;
                  break;
                }
                costs = std::move(*c);
                for (size_t k = 0; k < kinds; ++k) {
                  const auto& pc = costs->layers[static_cast<size_t>(d.rep[k])];
                  kf[k] = pc.fwd();
                  kb[k] = pc.bwd();
                  kfc[k] = pc.fwd_compute;
                  kbc[k] = pc.bwd_compute + pc.recompute;
                }
              }
              if (!timed_split) {
                stage_f.assign(np, 0.0);
                stage_b.assign(np, 0.0);
                double mx = 0, sum = 0;
                for (size_t s = 0; s < np; ++s) {
                  const auto& sh = sp.shapes[s];
                  double f = 0, bw = 0;
                  for (size_t k = 0; k < kinds; ++k) {
                    f += sh.count[k] * kf[k];
                    bw += sh.count[k] * kb[k];
                  }
                  if (sh.embed) {
                    f += costs->embedding.fwd();
                    bw += costs->embedding.bwd();
                  }
                  if (sh.head) {
                    f += costs->head.fwd();
                    bw += costs->head.bwd();
                  }
                  stage_f[s] = f;
                  stage_b[s] = bw;
                  mx = std::max(mx, f + bw);
                  sum += f + bw;
                }
                const int stride = static_cast<int>(gpus / sp.pp);
                const double send = sp.pp > 1 ? comm(execution::CommOp::kSendRecv, send_bytes, 2,
                                                     stride, stride, true)
                                              : 0.0;
                const double M = static_cast<double>(l.micro_batches());
                last_end = M * mx + (sp.pp - 1) * (sum / sp.pp) / sp.vpp + 2.0 * (sp.pp - 1) * send;
                timed_split = true;
              }
              if (zero >= 3 && !timed_zero3) {
                // ZeRO 3: each part's gathers and reduce-scatter beyond its own compute, per
                // micro-batch (execution/training.cpp zero3_exposed); no step-end DP tail.
                const auto& z = sp.z3;
                auto fwd = [&](double ag, double compute) {
                  return b.dp_overlap ? std::max(0.0, ag - compute) : ag;
                };
                auto bwd = [&](double ag, double rs, double compute) {
                  return b.dp_overlap ? std::max(0.0, ag + rs - compute) : ag + rs;
                };
                std::array<double, kMaxKinds> zk{};
                for (size_t k = 0; k < kinds; ++k) {
                  zk[k] = fwd(z.ag[k], kfc[k]) + bwd(z.ag[k], z.rs[k], kbc[k]);
                }
                auto part = [&](const execution::TrainingPartCost& pc, double ag, double rs) {
                  return fwd(ag, pc.fwd_compute) + bwd(ag, rs, pc.bwd_compute + pc.recompute);
                };
                const double embed = part(costs->embedding, z.embed_ag, z.embed_rs);
                const double head = part(costs->output, z.output_ag, z.output_rs) +
                                    m.mtp_layers * part(costs->mtp, z.mtp_ag, z.mtp_rs);
                double mx = 0, sum = 0;
                for (size_t s = 0; s < np; ++s) {
                  const auto& sh = sp.shapes[s];
                  double x = stage_f[s] + stage_b[s];
                  for (size_t k = 0; k < kinds; ++k) x += sh.count[k] * zk[k];
                  if (sh.embed) x += embed;
                  if (sh.head) x += head;
                  mx = std::max(mx, x);
                  sum += x;
                }
                const int stride = static_cast<int>(gpus / sp.pp);
                const double send = sp.pp > 1 ? comm(execution::CommOp::kSendRecv, send_bytes, 2,
                                                     stride, stride, true)
                                              : 0.0;
                const double M = static_cast<double>(l.micro_batches());
                last_end3 =
                    M * mx + (sp.pp - 1) * (sum / sp.pp) / sp.vpp + 2.0 * (sp.pp - 1) * send;
                timed_zero3 = true;
              }
              double step = 0;
              for (size_t s = 0; s < np; ++s) {
                const auto& st = sp.statics[s];
                if (zero >= 3) {
                  step = std::max(step, last_end3 + st.opt_sharded);
                  continue;
                }
                const double reduce = zero >= 1 ? st.reduce_rs : st.reduce_ar;
                const double gather = zero >= 1 ? st.gather : 0.0;
                const double opt = zero >= 1 ? st.opt_sharded : st.opt_full;
                const double dp = b.dp_overlap ? std::max(0.0, reduce - stage_b[s]) +
                                                     std::max(0.0, gather - stage_f[s])
                                               : reduce + gather;
                step = std::max(step, last_end + dp + opt);
              }
              ++out.fitting;
              if (step < space.rank_step_s) ++out.ahead;
              Ranked r;
              r.step = step;
              r.tuple = {l.tp,
                         l.pp,
                         l.dp,
                         l.cp,
                         l.ep,
                         l.vpp,
                         l.micro_batch,
                         zero,
                         static_cast<int64_t>(pi),
                         static_cast<int64_t>(ri)};
              if (out.top.size() >= keep && !Worse{}(r, out.top.top())) continue;
              r.cand.layout = l;
              r.cand.layout.zero = zero;
              r.cand.step_time_s = step;
              r.cand.memory_B = worst;
              out.top.push(std::move(r));
              if (out.top.size() > keep) out.top.pop();
            }
          }
        }
      }
    }
  }
};

std::vector<int> divisors(int64_t n, int64_t max) {
  std::vector<int> out;
  for (int64_t x = 1; x <= std::min(n, max); ++x) {
    if (n % x == 0) out.push_back(static_cast<int>(x));
  }
  return out;
}

}  // namespace

base::Result<TrainingSearchResult> search_training(const execution::TrainingSetup& base,
                                                   const TrainingSpace& space, int top,
                                                   int threads) {
  CT_CHECK(base.model && base.compute && base.comm, "search needs a model, compute and comm model");
  if (space.gpus < 1)
    return base::fail("search: gpus must be >= 1, got " + std::to_string(space.gpus));
  if (space.cps.empty() || space.vpps.empty() || space.micro_batches.empty() ||
      space.zeros.empty()) {
    return base::fail("search: every axis needs at least one value");
  }
  if (top < 1) return base::fail("search: top must be >= 1, got " + std::to_string(top));
  const auto wall0 = std::chrono::steady_clock::now();
  const std::clock_t cpu0 = std::clock();
  const auto& m = *base.model;
  const Model d = describe(m);
  if (d.rep.size() > static_cast<size_t>(kMaxKinds)) {
    return base::fail("search: model '" + m.name + "' has more layer kinds than " +
                      std::to_string(kMaxKinds));
  }
  std::vector<PrecisionChoice> precisions = space.precisions;
  if (precisions.empty()) precisions.push_back({base.layout.dtype, base.peak});
  std::vector<RecomputeChoice> recomputes =
      space.recomputes.empty() ? recompute_choices(m) : space.recomputes;

  std::vector<Group> groups;
  const int max_tp = static_cast<int>(std::min<int64_t>(space.domain_size, m.heads));
  for (int tp = 1; tp <= max_tp; tp *= 2) {  // powers of two, as frameworks use
    if (space.gpus % tp != 0) continue;
    for (int cp : space.cps) {
      if (cp < 1 || space.gpus % (static_cast<int64_t>(tp) * cp) != 0) continue;
      std::vector<int> eps = {1};
      if (m.moe) eps = divisors(m.moe->experts, m.moe->experts);
      for (int ep : eps) groups.push_back({tp, cp, ep});
    }
  }
  Searcher searcher{base, space, d, precisions, recomputes, static_cast<size_t>(top)};
  std::vector<GroupOut> outs(groups.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < groups.size(); i = next++) searcher.run(groups[i], outs[i]);
  };
  const int n_threads = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int t = 1; t < n_threads; ++t) {
    // A thread the system will not start leaves its share to the others: same result, slower.
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
  for (auto& t : pool) t.join();

  TrainingSearchResult r;
  std::vector<Ranked> all;
  for (auto& o : outs) {
    r.enumerated += o.enumerated;
    r.valid += o.valid;
    r.fitting += o.fitting;
    r.cost_tables += o.tables;
    r.ahead_of += o.ahead;
    while (!o.top.empty()) {
      all.push_back(o.top.top());
      o.top.pop();
    }
  }
  std::sort(all.begin(), all.end(), Worse{});
  if (all.size() > static_cast<size_t>(top)) all.resize(static_cast<size_t>(top));
  for (auto& x : all) r.best.push_back(std::move(x.cand));
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  r.cpu_s = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  return r;
}

std::vector<ConfirmedLayout> confirm_with_event_model(const execution::TrainingSetup& base,
                                                      const std::vector<TrainingCandidate>& c,
                                                      const TrainingSpace& space) {
  std::vector<ConfirmedLayout> out;
  for (const auto& x : c) {
    auto r = execution::simulate_training_step(setup_for(base, space, x.layout));
    if (!r) continue;
    out.push_back({x, std::move(*r)});
  }
  std::stable_sort(out.begin(), out.end(), [](const ConfirmedLayout& a, const ConfirmedLayout& b) {
    return a.simulated.step_time_s < b.simulated.step_time_s;
  });
  return out;
}

}  // namespace clustertwin::search
