// Serving iteration time; equations, assumptions and sources in serving_step.h and
// docs/models/inference.md.

#include "clustertwin/execution/serving_step.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "clustertwin/base/check.h"
#include "clustertwin/collective/calibration.h"
#include "clustertwin/collective/collective_model.h"
#include "clustertwin/collective/group.h"
#include "clustertwin/models/ops.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::execution {
namespace {

using compute::Op;
using compute::OpKind;

// TensorRT-LLM custom all-reduce (strategy AUTO, bf16, inside a CUDA graph), microseconds at
// buffer sizes 256 B x 4^j (j = 0..11: 256 B .. 1 GiB) for 2, 4 and 8 GPUs of one node. From
// shared/reference/measured/<gpu>/custom_allreduce.csv (NVIDIA AIConfigurator 095f58a5,
// Apache-2.0, TensorRT-LLM 1.3.0rc20), converted: message_size elements x 2 B, latency ms -> us.
// GB200/GB300 were measured on one 4-GPU tray; their 8-GPU rows reuse B200/B300 (same NVLink 5
// switch).
struct AllReduceCurves {
  const char* gpu;
  std::array<std::array<double, 12>, 3> us;  // n = 2, 4, 8
};
constexpr AllReduceCurves kAllReduce[] = {
    {"h100",
     {{{2.662, 2.706, 2.868, 2.849, 3.063, 3.759, 6.104, 17.12, 78.53, 254.2, 887.9, 3243},
       {2.796, 2.906, 3.137, 3.271, 3.683, 5.478, 12.91, 39.74, 100.7, 329.2, 1192, 4534},
       {3.23, 3.169, 3.528, 3.559, 4.595, 10.17, 25.96, 51.9, 122.3, 322.5, 1090, 4008}}}},
    {"h200",
     {{{2.637, 2.69, 2.779, 2.827, 2.945, 3.589, 5.988, 16.57, 70.51, 250.4, 886.5, 3267},
       {2.791, 2.95, 3.156, 3.206, 3.611, 5.428, 12.85, 35.94, 99.82, 322.4, 1183, 4553},
       {3.047, 3.169, 3.511, 3.488, 4.58, 10.11, 25.74, 47.47, 121.4, 317.2, 1054, 4003}}}},
    {"b200",
     {{{4.582, 4.887, 4.947, 5.215, 5.146, 4.987, 6.419, 11.91, 44.29, 154.8, 533.7, 1893},
       {4.757, 5.043, 5.344, 5.524, 5.394, 5.786, 9.659, 26.79, 72.7, 188.7, 715.2, 2597},
       {5.04, 5.377, 5.783, 5.933, 5.986, 7.93, 17.78, 39.42, 84.76, 278.8, 718.7, 2580}}}},
    {"b300",
     {{{4.383, 4.599, 4.773, 5.089, 4.977, 5.017, 6.215, 11.52, 43.29, 153.4, 526.8, 1863},
       {4.171, 4.411, 4.764, 5.099, 5.381, 5.819, 9.507, 26.22, 72.31, 186, 673.6, 2520},
       {4.911, 5.187, 5.676, 5.784, 5.838, 7.623, 17.41, 39.34, 83.15, 279.1, 718.6, 2584}}}},
    {"gb200",
     {{{3.753, 3.803, 3.865, 4.535, 4.562, 4.624, 6, 11.56, 43.95, 156.4, 529.2, 1926},
       {4.64, 4.718, 4.903, 4.95, 4.989, 5.686, 9.467, 26.76, 74.79, 191, 715.1, 2571},
       {5.04, 5.377, 5.783, 5.933, 5.986, 7.93, 17.78, 39.42, 84.76, 278.8, 718.7, 2580}}}},
    {"gb300",
     {{{4.201, 4.291, 4.488, 4.537, 4.56, 4.603, 6.008, 11.58, 43.01, 151.8, 523.9, 1865},
       {4.881, 4.747, 4.881, 4.936, 4.92, 5.553, 9.414, 26.39, 73.55, 185.7, 677.3, 2538},
       {4.911, 5.187, 5.676, 5.784, 5.838, 7.623, 17.41, 39.34, 83.15, 279.1, 718.6, 2584}}}},
};

// Across the scale-out fabric (EP or TP beyond one NVLink domain; KV transfer between domains):
// the achievable NIC fraction and per-message latency of comm.h's analytical model.
constexpr double kNicFraction = 0.92;
constexpr double kNetAlpha = 25e-6;
// Point-to-point inside a domain (pipeline sends, KV transfer): NCCL send/recv reaches ~80% of
// NVLink (comm.h).
constexpr double kNvlinkP2pFraction = 0.8;
constexpr double kNvlinkP2pAlpha = 8e-6;

constexpr double kBf16 = 2.0;

// Dynamic FP8 activation scaling inside AIC's measured FP8 GEMMs (amax + scale, which a
// static-scale FP8 GEMM does not run): t = a + b x m x k, fitted to
// shared/reference/measured/<gpu>/quant_compute_scale.csv (AIC 095f58a5; median error 7-19%).
// The measured tables' README says to subtract it to approximate the static-scale FP8 GEMMs that
// MLPerf's calibrated checkpoints use.
struct ScaleOverhead {
  const char* gpu;
  double a_s, b_s_per_element;
};
constexpr ScaleOverhead kFp8DynamicScale[] = {
    {"h100", 6.95e-6, 1.145e-12}, {"h200", 6.87e-6, 1.097e-12},  {"b200", 8.06e-6, 0.577e-12},
    {"b300", 7.50e-6, 0.587e-12}, {"gb200", 7.73e-6, 0.566e-12}, {"gb300", 6.77e-6, 0.594e-12},
};

// NVFP4: AIC's measured nvfp4 GEMM quantises the bf16 activation to FP4 inside the call;
// TensorRT-LLM engines fuse that pass into the preceding norm or activation kernel
// (norm_quant_fusion in NVIDIA's v5.1 configs; without it, StepSetup::norm_quant_fusion, the
// norm-fed GEMMs keep it). Its cost is taken as one memory-bound
// quantisation pass over the activation, fitted to quant_scale_matrix.csv (static FP8
// quantisation of a bf16 [m, k] tensor; median error 3-7%).
constexpr ScaleOverhead kFp4ActivationQuant[] = {
    {"b200", 1.76e-6, 0.611e-12},
    {"b300", 1.40e-6, 0.622e-12},
    {"gb200", 1.77e-6, 0.578e-12},
    {"gb300", 1.74e-6, 0.573e-12},
};

template <size_t N>
double overhead_s(const ScaleOverhead (&table)[N], const std::string& gpu, int64_t m, int64_t k) {
  const ScaleOverhead* o = &table[0];
  for (const auto& x : table) {
    if (gpu == x.gpu) o = &x;
  }
  return o->a_s + o->b_s_per_element * static_cast<double>(m) * static_cast<double>(k);
}

const AllReduceCurves& curves_for(const std::string& gpu) {
  for (const auto& c : kAllReduce) {
    if (gpu == c.gpu) return c;
  }
  // Nearest family: Hopper-class and Ampere use H100's curves, Blackwell B200's.
  const bool blackwell = gpu.find('b') != std::string::npos && gpu != "h100";
  return blackwell ? kAllReduce[2] : kAllReduce[0];
}

bool is_attention_projection(const char* name) {
  for (const char* n : {"qkv_proj", "o_proj", "qkv_a_proj", "q_b_proj", "q_proj", "kv_b_proj"}) {
    if (std::strcmp(name, n) == 0) return true;
  }
  return false;
}

// GEMMs whose input is the output of an RMSNorm (the layer's input norm or its post-attention
// norm; MLA: the QKV down projection), which TensorRT-LLM's norm_quant_fusion quantises to NVFP4
// inside the norm kernel (models/ops.cpp names).
bool is_norm_fed(const char* name) {
  for (const char* n :
       {"qkv_proj", "qkv_a_proj", "q_proj", "mlp_gate_up", "mlp_up", "shared_gate_up"}) {
    if (std::strcmp(name, n) == 0) return true;
  }
  return false;
}

bool is_decode_only(const char* name) {
  return std::strcmp(name, "q_absorb") == 0 || std::strcmp(name, "v_absorb") == 0;
}

bool is_prefill_only(const char* name) { return std::strcmp(name, "kv_b_proj") == 0; }

std::vector<int64_t> token_grid(int64_t max) {
  std::vector<int64_t> g;
  int64_t t = 1;
  while (true) {
    g.push_back(t);
    if (t >= max) break;
    t = t < 16 ? t + 1
               : std::max(t + 1, static_cast<int64_t>(std::ceil(static_cast<double>(t) * 1.12)));
  }
  return g;
}

}  // namespace

double custom_allreduce_s(const std::string& gpu, int n, double bytes) {
  if (n <= 1 || bytes <= 0) return 0;
  const auto& c = curves_for(gpu);
  const int row = n <= 2 ? 0 : n <= 4 ? 1 : 2;
  const auto& us = c.us[static_cast<size_t>(row)];
  // Log-log interpolation between the measured sizes; linear in size beyond the largest.
  const double x = std::log(std::max(bytes, 256.0) / 256.0) / std::log(4.0);
  double t = 0;
  if (x >= 11) {
    const double slope =
        (us[11] - us[10]) / (256.0 * std::pow(4.0, 11) - 256.0 * std::pow(4.0, 10));
    t = us[11] + slope * (bytes - 256.0 * std::pow(4.0, 11));
  } else {
    const auto i = static_cast<size_t>(std::floor(x));
    const double f = x - static_cast<double>(i);
    t = std::exp(std::log(us[i]) * (1 - f) + std::log(us[i + 1]) * f);
  }
  // Groups larger than 8 inside one domain (NVL72): the ring's bus factor 2(n-1)/n over 8's.
  if (n > 8) t *= (2.0 * (n - 1) / n) / (2.0 * 7 / 8);
  return t * 1e-6;
}

double DomainNcclCurves::time(Kind k, int ranks, double bytes) const {
  if (curves.empty() || ranks <= 1 || bytes <= 0) return 0;
  const Curve* c = &curves.back();
  for (const Curve& x : curves) {
    if (x.ranks >= ranks) {
      c = &x;
      break;
    }
  }
  const auto& b = c->bytes;
  const auto& t = c->time[static_cast<size_t>(k)];
  if (bytes <= b.front()) return t.front();
  if (bytes >= b.back()) {
    const size_t n = b.size();
    return t[n - 1] + (t[n - 1] - t[n - 2]) / (b[n - 1] - b[n - 2]) * (bytes - b[n - 1]);
  }
  const size_t hi = static_cast<size_t>(std::upper_bound(b.begin(), b.end(), bytes) - b.begin());
  const size_t lo = hi - 1;
  const double f = std::log(bytes / b[lo]) / std::log(b[hi] / b[lo]);
  return std::exp(std::log(t[lo]) * (1 - f) + std::log(t[hi]) * f);
}

const char* moe_comm_name(MoeComm c, bool prefill) {
  switch (c) {
    case MoeComm::kNone:
      return "none";
    case MoeComm::kAllGather:
      return "nccl all-gather + reduce-scatter";
    case MoeComm::kNcclAllToAll:
      return "nccl";
    case MoeComm::kNvlinkOneSided:
      return "nvlink-onesided";
    case MoeComm::kDeepEp:
      return prefill ? "deepep-normal" : "deepep-ll";
  }
  return "?";
}

namespace {
// NCCL curves of one system of the cluster (its NVLink domain) from the collective layer.
base::Result<std::shared_ptr<const DomainNcclCurves>> nccl_curves(
    const hardware::Catalog& catalog, const hardware::ClusterSpec& cluster) {
  hardware::ClusterSpec one = cluster;
  one.count = 1;
  auto topo = topology::Topology::build(catalog, one);
  if (!topo) return base::fail(topo.error());
  auto cal = collective::Calibration::load(catalog);
  if (!cal) return base::fail(cal.error());
  collective::CollectiveModel model(catalog, *topo, *cal);
  const int domain = std::min(topo->domain_size(), topo->gpus());
  std::vector<int> sizes_n;
  for (int n = 2; n < domain; n *= 2) sizes_n.push_back(n);
  if (domain >= 2) sizes_n.push_back(domain);
  std::vector<int64_t> bytes;
  for (int64_t b = 1024; b <= (int64_t{16} << 30); b *= 2) bytes.push_back(b);
  auto out = std::make_shared<DomainNcclCurves>();
  const collective::Dtype bf16{"bfloat16", 2, true};
  for (int n : sizes_n) {
    auto g = collective::place_first(*topo, n);
    if (!g) return base::fail(g.error());
    DomainNcclCurves::Curve c;
    c.ranks = n;
    c.bytes.assign(bytes.begin(), bytes.end());
    for (collective::Op op :
         {collective::Op::kAllGather, collective::Op::kReduceScatter, collective::Op::kAllToAll}) {
      auto e = model.sweep(*g, {.op = op, .dtype = bf16}, bytes);
      if (!e) return base::fail(e.error());
      std::vector<double> t;
      for (const auto& x : *e) t.push_back(std::max(x.time.base(), 1e-9));
      c.time.push_back(std::move(t));
    }
    out->curves.push_back(std::move(c));
  }
  return std::shared_ptr<const DomainNcclCurves>(std::move(out));
}
}  // namespace

base::Result<ServingFabric> serving_fabric(const hardware::Catalog& catalog,
                                           const hardware::ClusterSpec& cluster) {
  auto sys = catalog.system(cluster.system);
  if (!sys) return base::fail(sys.error());
  auto gpu = catalog.gpu((*sys)->gpu);
  if (!gpu) return base::fail(gpu.error());
  ServingFabric f;
  f.gpu = (*gpu)->name;
  f.domain_size = std::max(1, (*sys)->nvlink_domain_gpus);
  f.nvlink = (*gpu)->nvlink_bandwidth;
  f.sms = (*gpu)->sms;
  if (auto nic = catalog.nic((*sys)->nic)) {
    f.nic = (*nic)->bandwidth *
            (static_cast<double>((*sys)->nics_per_node) / std::max(1, (*sys)->gpus_per_node));
  } else {
    f.nic = base::gigabits_per_s(400);
  }
  auto a2a = collective::A2aParams::load(catalog);
  if (!a2a) return base::fail(a2a.error());
  using collective::A2aImpl;
  for (auto [impl, field] : {std::pair{A2aImpl::kDeepEpNormal, &f.deepep_normal},
                             std::pair{A2aImpl::kDeepEpLowLatency, &f.deepep_ll},
                             std::pair{A2aImpl::kNvlinkOneSided, &f.nvlink_onesided}}) {
    if (auto k = a2a->kernel(impl, f.gpu)) *field = *k;
  }
  auto curves = nccl_curves(catalog, cluster);
  if (!curves) return base::fail(curves.error());
  f.nccl = *curves;
  return f;
}

namespace {
// SMs DeepEP's normal (prefill) dispatch / combine kernels occupy: deep_ep/buffer.py
// Buffer.num_sms = 20, which SGLang's DeepEP dispatcher keeps (num_sms: int = 20); DeepSeek-V3
// technical report §3.2.2: 20 of the H800's 132 SMs.
constexpr int kDeepEpNormalSms = 20;

bool same_work(const RankBatch& a, const RankBatch& b) {
  return a.decode == b.decode && a.decode_context == b.decode_context &&
         a.prefill_tokens == b.prefill_tokens && a.prefill_seqs == b.prefill_seqs &&
         a.prefill_pairs == b.prefill_pairs && a.logits == b.logits;
}
}  // namespace

double causal_pairs(int64_t q, int64_t context) {
  const auto qd = static_cast<double>(q);
  return qd * static_cast<double>(context) + qd * (qd + 1.0) / 2.0;
}

base::Result<StepModel> StepModel::build(const StepSetup& s) {
  if (!s.model || !s.compute)
    return base::fail("serving step: model and compute model are required");
  const models::ModelSpec& m = *s.model;
  const auto& inst = s.instance;
  StepModel sm;
  sm.s_ = s;
  sm.q_per_seq_ = 1.0 + std::max(0, s.mtp);
  sm.layers_ = m.layers;
  sm.moe_layers_ = m.moe ? m.moe_layer_count() : 0;
  if (s.moe_imbalance > 0) {
    sm.imbalance_ = s.moe_imbalance;
  } else {
    sm.imbalance_ = inst.ep <= 1 ? 1.0 : inst.ep > 8 ? 1.2 : 1.5;
  }
  const int dense_tp = inst.dp_attention ? 1 : inst.tp;
  const int64_t max_seq = std::max<int64_t>(1, inst.max_batch);
  const int64_t t_max =
      inst.max_tokens + static_cast<int64_t>(static_cast<double>(max_seq) * sm.q_per_seq_) + 16;
  sm.grid_ = token_grid(t_max);
  sm.group_grid_ = token_grid(t_max * (inst.dp_attention ? inst.tp : 1));
  sm.seq_grid_ =
      token_grid(static_cast<int64_t>(static_cast<double>(max_seq) * sm.q_per_seq_) + 16);

  const compute::DType attn_dtype = workload::attention_dtype(m, s.weights);
  const bool fp8_attn = s.kv_bytes <= 1.0 && s.compute->supports(compute::DType::kFp8);
  auto pass = [&](models::Phase phase, int64_t t) {
    models::PassSpec p;
    p.phase = phase;
    if (phase == models::Phase::kDecode) {
      p.batch = t;
      p.context = 1;
    } else {
      p.batch = 1;
      p.seq_len = t;
    }
    p.tp = dense_tp;
    p.dtype = s.weights;
    p.kv_bytes = s.kv_bytes;
    p.fp8_attention = fp8_attn;
    return p;
  };
  int dense_example = -1, moe_example = -1;
  for (int i = 0; i < m.layers; ++i) {
    if (m.is_moe_layer(i)) {
      if (moe_example < 0) moe_example = i;
    } else if (dense_example < 0) {
      dense_example = i;
    }
  }
  const double n_dense = m.layers - sm.moe_layers_;
  const double n_moe = sm.moe_layers_;
  auto op_time = [&](Op o) {
    if (o.kind == OpKind::kGemm && is_attention_projection(o.name)) o.dtype = attn_dtype;
    if (o.kind == OpKind::kGemm && o.count > 1) {
      // A batched per-head BMM (MLA's absorbed W_UK / W_UV) runs as one kernel: timed as one
      // GEMM with the same weights and FLOPs. AIC mla_bmm.csv (B200, 128 heads): 4.5-6.7 us at
      // 1-64 tokens, where 128 separate small GEMMs would take ~100 us.
      return s.compute->gemm({o.gemm.m, o.gemm.n * o.count, o.gemm.k}, o.dtype).base();
    }
    const double t = s.compute->op(o).base();
    if (o.kind != OpKind::kGemm) return t;
    const compute::DType e = s.compute->effective(o.dtype);
    if (e == compute::DType::kFp8) {
      return std::max(0.5 * t, t - overhead_s(kFp8DynamicScale, s.fabric.gpu, o.gemm.m, o.gemm.k));
    }
    if (e == compute::DType::kNvfp4) {
      // Without norm_quant_fusion a norm-fed GEMM quantises its input itself, as measured.
      if (!s.norm_quant_fusion && is_norm_fed(o.name)) return t;
      return std::max(0.5 * t,
                      t - overhead_s(kFp4ActivationQuant, s.fabric.gpu, o.gemm.m, o.gemm.k));
    }
    return t;
  };
  // Per-layer token-linear parts, one representative layer of each kind times its count.
  auto layer_parts = [&](int layer, double count, int64_t t, double& common, double& pre,
                         double& dec) {
    if (layer < 0 || count <= 0) return;
    for (const Op& o :
         models::forward_ops(m, models::Part::kLayer, layer, pass(models::Phase::kPrefill, t))) {
      if (o.kind == OpKind::kAttention || o.kind == OpKind::kMoe) continue;
      (is_prefill_only(o.name) ? pre : common) += count * op_time(o);
    }
    if (m.mla) {
      for (const Op& o :
           models::forward_ops(m, models::Part::kLayer, layer, pass(models::Phase::kDecode, t))) {
        if (o.kind == OpKind::kGemm && is_decode_only(o.name)) dec += count * op_time(o);
      }
    }
  };
  for (int64_t t : sm.grid_) {
    double common = 0, pre = 0, dec = 0;
    layer_parts(dense_example, n_dense, t, common, pre, dec);
    layer_parts(moe_example, n_moe, t, common, pre, dec);
    for (const Op& o :
         models::forward_ops(m, models::Part::kEmbedding, 0, pass(models::Phase::kPrefill, t))) {
      common += op_time(o);
    }
    sm.common_.push_back(common);
    sm.prefill_only_.push_back(pre);
    sm.decode_only_.push_back(dec);
  }
  for (int64_t b : sm.seq_grid_) {
    double h = 0;
    for (const Op& o :
         models::forward_ops(m, models::Part::kHead, 0, pass(models::Phase::kDecode, b))) {
      h += op_time(o);
    }
    sm.head_.push_back(h);
  }
  if (m.moe) {
    const int ep = inst.dp_attention ? inst.tp : inst.ep;
    const int etp = inst.tp / std::max(1, ep);
    for (int64_t t : sm.group_grid_) {
      compute::MoeShape ms{.tokens = t,
                           .hidden = m.hidden,
                           .inter = m.moe->expert_ffn,
                           .topk = m.moe->topk,
                           .experts = m.moe->experts + inst.redundant_experts,
                           .tp = etp,
                           .ep = ep,
                           .imbalance = sm.imbalance_};
      sm.moe_.push_back(n_moe * s.compute->moe(ms, s.weights).base());
    }
  }
  // MoE token exchange of attention-DP ranks: the kernel the framework selects (header).
  if (m.moe && inst.dp_attention && inst.tp > 1) {
    const int ep = inst.tp;
    const ServingFabric& f = s.fabric;
    if (ep > f.domain_size) {
      sm.moe_comm_ = MoeComm::kDeepEp;
      if (inst.two_batch_overlap && f.sms <= kDeepEpNormalSms)
        return base::fail("serving: two-batch overlap with DeepEP needs the SM count of " + f.gpu +
                          " (gpu key `sms` in its catalog file; DeepEP's normal kernels hold " +
                          std::to_string(kDeepEpNormalSms) + "), got " + std::to_string(f.sms));
      if (!f.deepep_ll || !f.deepep_normal)
        return base::fail("serving: EP" + std::to_string(ep) + " spans NVLink domains of " +
                          std::to_string(f.domain_size) + " GPUs, and " + f.gpu +
                          " has no DeepEP parameters in catalog/collectives/moe-a2a.yaml");
    } else if (ep <= m.moe->topk) {
      sm.moe_comm_ = MoeComm::kAllGather;
    } else if (f.nvlink_onesided) {
      sm.moe_comm_ = MoeComm::kNvlinkOneSided;
    } else {
      sm.moe_comm_ = MoeComm::kNcclAllToAll;
    }
    if ((sm.moe_comm_ == MoeComm::kAllGather || sm.moe_comm_ == MoeComm::kNcclAllToAll) && !f.nccl)
      return base::fail("serving: the fabric of " + f.gpu + " has no NCCL curves");
    for (int64_t t : sm.grid_) {
      auto d = sm.moe_comm_direct_s(t, false);
      if (!d) return base::fail(d.error());
      auto p = sm.moe_comm_direct_s(t, true);
      if (!p) return base::fail(p.error());
      sm.a2a_decode_.push_back(*d);
      sm.a2a_prefill_.push_back(*p);
    }
  }
  // Attention-core shapes (per layer) to be filled with each iteration's batch.
  const int example = moe_example >= 0 ? moe_example : std::max(dense_example, 0);
  for (const Op& o :
       models::forward_ops(m, models::Part::kLayer, example, pass(models::Phase::kDecode, 1))) {
    if (o.kind == OpKind::kAttention) {
      sm.decode_shape_ = o.attention;
      sm.has_attention_ = true;
    }
  }
  for (const Op& o :
       models::forward_ops(m, models::Part::kLayer, example, pass(models::Phase::kPrefill, 1))) {
    if (o.kind == OpKind::kAttention) sm.prefill_shape_ = o.attention;
  }
  // The shapes above are of a full-attention layer; local layers (sliding window, chunked)
  // attend to at most their window and are timed apart in rank_time.
  sm.decode_shape_.window = sm.prefill_shape_.window = 0;
  if (m.local_attention) {
    sm.local_layers_ = m.local_layer_count();
    sm.local_window_ = m.local_attention->window;
    sm.local_chunked_ = m.local_attention->kind == models::LocalAttention::kChunked;
  }
  sm.kv_token_bytes_ = models::kv_cache_bytes_per_token(m, s.kv_bytes);
  return sm;
}

double StepModel::lookup(const std::vector<int64_t>& grid, const std::vector<double>& v,
                         double t) const {
  if (v.empty() || t <= 0) return 0;
  if (t <= static_cast<double>(grid.front()))
    return v.front() * t / static_cast<double>(grid.front());
  const auto it = std::lower_bound(grid.begin(), grid.end(), static_cast<int64_t>(std::ceil(t)));
  size_t hi = it == grid.end() ? grid.size() - 1 : static_cast<size_t>(it - grid.begin());
  if (hi == 0) hi = 1;
  const size_t lo = hi - 1;
  const double x0 = static_cast<double>(grid[lo]), x1 = static_cast<double>(grid[hi]);
  return v[lo] + (v[hi] - v[lo]) * (t - x0) / (x1 - x0);
}

double StepModel::rank_time(const RankBatch& r, StepTime* parts) const {
  const double dec_tokens = static_cast<double>(r.decode) * q_per_seq_;
  double tokens = dec_tokens + static_cast<double>(r.prefill_tokens);
  if (tokens <= 0) tokens = 1;  // a padded dummy token keeps an idle ADP rank in step
  double dense = lookup(grid_, common_, tokens) + lookup(grid_, decode_only_, dec_tokens) +
                 lookup(grid_, prefill_only_, static_cast<double>(r.prefill_tokens));
  double attn = 0;
  const double layers = layers_ - local_layers_;
  // Local layers: the same kernel over at most their window of keys.
  auto local = [&](compute::AttentionShape a) {
    if (local_layers_ <= 0) return 0.0;
    a.window = local_window_;
    a.chunked = local_chunked_;
    return local_layers_ * s_.compute->attention(a).base();
  };
  if (has_attention_ && r.decode > 0) {
    compute::AttentionShape a = decode_shape_;
    a.batch = r.decode;
    a.q_len = static_cast<int64_t>(q_per_seq_);
    a.kv_len =
        static_cast<int64_t>(std::llround(r.decode_context / static_cast<double>(r.decode))) +
        a.q_len;
    constexpr size_t kMemo = 1 << 14;
    if (decode_memo_.empty()) decode_memo_.resize(kMemo);
    AttentionMemo& m = decode_memo_[(static_cast<size_t>(a.batch) * 0x9E3779B97F4A7C15ULL ^
                                     static_cast<size_t>(a.kv_len)) &
                                    (kMemo - 1)];
    if (m.batch != a.batch || m.kv_len != a.kv_len) {
      m = {.batch = a.batch, .kv_len = a.kv_len, .seconds = s_.compute->attention(a).base()};
    }
    attn += layers * m.seconds + local(a);
  }
  if (has_attention_ && r.prefill_seqs > 0 && r.prefill_tokens > 0) {
    compute::AttentionShape a = prefill_shape_;
    const double seqs = static_cast<double>(r.prefill_seqs);
    const double q = std::max(1.0, static_cast<double>(r.prefill_tokens) / seqs);
    const double pairs = std::max(r.prefill_pairs / seqs, q * (q + 1) / 2);
    const double kv = (pairs + q * (q - 1) / 2) / q;
    a.batch = r.prefill_seqs;
    a.q_len = static_cast<int64_t>(std::llround(q));
    a.kv_len = std::max(a.q_len, static_cast<int64_t>(std::llround(kv)));
    attn += layers * s_.compute->attention(a).base() + local(a);
  }
  const double head = lookup(seq_grid_, head_, static_cast<double>(std::max<int64_t>(r.logits, 0)));
  if (parts) {
    parts->dense = dense;
    parts->attention = attn;
    parts->head = head;
  }
  return dense + attn + head;
}

double StepModel::allreduce_s(double bytes) const {
  const int n = s_.instance.tp;
  if (n <= 1) return 0;
  const ServingFabric& f = s_.fabric;
  if (n <= f.domain_size) return custom_allreduce_s(f.gpu, n, bytes);
  // Hierarchical across domains: reduce inside each domain, ring over the NICs between the
  // domains' shards, gather inside.
  const int p = f.domain_size;
  const double m = std::ceil(static_cast<double>(n) / p);
  const double inter =
      2 * (m - 1) / m * (bytes / p) / (f.nic.base() * kNicFraction) + 2 * (m - 1) * kNetAlpha;
  return custom_allreduce_s(f.gpu, p, bytes) + inter;
}

base::Result<double> StepModel::moe_comm_direct_s(int64_t tokens, bool prefill) const {
  const models::ModelSpec& m = *s_.model;
  const int ep = s_.instance.tp;
  const ServingFabric& f = s_.fabric;
  const auto hidden = static_cast<double>(m.hidden);
  // Dispatch payload per token: NVFP4 values + one FP8 scale per 16; FP8 values + one fp32
  // scale per 128 (DeepEP's FP8 dispatch); else bf16. Combine: bf16.
  const compute::DType w = s_.compute->effective(s_.weights);
  const double disp = w == compute::DType::kNvfp4 ? hidden * (0.5 + 1.0 / 16)
                      : w == compute::DType::kFp8 ? hidden * (1.0 + 4.0 / 128)
                                                  : hidden * kBf16;
  const double comb = hidden * kBf16;
  const double T = static_cast<double>(tokens);
  const int k = m.moe->topk;
  switch (moe_comm_) {
    case MoeComm::kNone:
      return 0.0;
    case MoeComm::kAllGather:
      // TensorRT-LLM pads every rank to the busiest rank's tokens (all_rank_num_tokens).
      return f.nccl->time(DomainNcclCurves::kAllGather, ep, ep * T * disp) +
             f.nccl->time(DomainNcclCurves::kReduceScatter, ep, ep * T * comb);
    case MoeComm::kNcclAllToAll:
      return f.nccl->time(DomainNcclCurves::kAllToAll, ep, T * k * disp) +
             f.nccl->time(DomainNcclCurves::kAllToAll, ep, T * k * comb);
    case MoeComm::kNvlinkOneSided:
    case MoeComm::kDeepEp:
      break;
  }
  const bool deepep = moe_comm_ == MoeComm::kDeepEp;
  const collective::A2aKernelParams& kp = !deepep   ? *f.nvlink_onesided
                                          : prefill ? *f.deepep_normal
                                                    : *f.deepep_ll;
  const collective::A2aImpl impl = !deepep   ? collective::A2aImpl::kNvlinkOneSided
                                   : prefill ? collective::A2aImpl::kDeepEpNormal
                                             : collective::A2aImpl::kDeepEpLowLatency;
  const int D = deepep ? (ep + f.domain_size - 1) / f.domain_size : 1;
  const int p = (ep + D - 1) / D;
  collective::MoeA2aRequest r{.impl = impl,
                              .tokens_per_rank = std::max<int64_t>(1, tokens),
                              .routing = {.experts = m.moe->experts,
                                          .topk = k,
                                          .groups = m.moe->groups,
                                          .topk_groups = m.moe->topk_groups}};
  double t = 0;
  for (bool combine : {false, true}) {
    r.combine = combine;
    r.token_bytes = static_cast<int64_t>(std::ceil(combine ? comb : disp));
    auto e = collective::moe_a2a_kernel(kp, r, D, p, f.nvlink, f.nic);
    if (!e) return base::fail(e.error());
    t += e->time.base();
  }
  return t;
}

double StepModel::moe_comm_s(double tokens, bool prefill) const {
  if (moe_comm_ == MoeComm::kNone) return 0;
  return lookup(grid_, prefill ? a2a_prefill_ : a2a_decode_, tokens);
}

double StepModel::send_s(double bytes) const {
  const auto& inst = s_.instance;
  if (inst.pp <= 1) return 0;
  const ServingFabric& f = s_.fabric;
  double t = 0;
  for (int stage = 1; stage < inst.pp; ++stage) {
    const int a = s_.first_gpu + stage * inst.tp - 1;
    const int b = a + 1;
    const bool same = a / f.domain_size == b / f.domain_size;
    t += same ? kNvlinkP2pAlpha + bytes / (f.nvlink.base() * kNvlinkP2pFraction)
              : kNetAlpha + bytes / (f.nic.base() * kNicFraction);
  }
  return t;
}

StepTime StepModel::time(std::span<const RankBatch> ranks) const {
  bool eager = false;
  StepTime out = time_on_gpu(ranks, &eager);
  out.eager = eager;
  if (eager && s_.runtime == workload::ServingRuntime::kPytorch) {
    // Eager iteration (header comment): the host issues every layer's kernels (the MTP module's
    // draft passes are a layer each); the GPU waits where that is slower than running them.
    const double issue =
        s_.calibration.eager_host_per_layer_s * static_cast<double>(layers_ + s_.mtp);
    const double gpu = out.total - out.host;
    if (issue > gpu) {
      out.host += issue - gpu;
      out.total = gpu + out.host;
    }
  }
  return out;
}

StepTime StepModel::time_on_gpu(std::span<const RankBatch> ranks, bool* eager) const {
  const auto& graphs = s_.instance.cuda_graph_batches;
  int64_t largest = 0;
  bool prompts = false;
  for (const RankBatch& r : ranks) {
    largest = std::max(largest, r.decode);
    prompts = prompts || r.prefill_tokens > 0;
  }
  // No captured sizes listed: every decode-only batch replays a graph of its own size (no
  // padding); listed: only those up to the largest.
  *eager = prompts || (!graphs.empty() && largest > graphs.back());
  if (!graphs.empty()) {
    // CUDA-graph padding (InstanceLayout::cuda_graph_batches): a decode-only iteration replays
    // the smallest captured graph that holds its largest rank batch, every rank padded to it.
    auto g = std::lower_bound(graphs.begin(), graphs.end(), largest);
    if (!prompts && largest > 0 && g != graphs.end() && *g > largest) {
      std::vector<RankBatch> padded(ranks.begin(), ranks.end());
      for (RankBatch& r : padded) {
        // Dummy sequences: one token of context each, a token of GEMM / MoE work and a logit.
        r.decode_context += static_cast<double>(*g - r.decode);
        r.logits += *g - r.decode;
        r.decode = *g;
      }
      return time_unpadded(padded);
    }
  }
  return time_unpadded(ranks);
}

StepTime StepModel::time_unpadded(std::span<const RankBatch> ranks) const {
  StepTime out = kernel_time(ranks);
  if (s_.instance.two_batch_overlap && s_.instance.dp_attention && out.comm > 0 &&
      moe_layers_ > 0) {
    // Two-batch overlap (DeepSeek profile-data; LMSYS 2025-05-05 "Two-batch Overlap"): each
    // rank's batch runs as two micro-batches of half its sequences and prompt tokens; in every
    // MoE layer one micro-batch's dispatch / combine runs while the other computes. Per layer
    // the two streams alternate, so the pass takes 2 x max(C_h, M_h) plus one layer's fill,
    // C_h and M_h being one micro-batch's computation and exchange. The half batches are timed
    // by the same kernel tables: small decode batches gain little (their GEMMs read the
    // weights twice), large prefill batches hide most of the exchange.
    std::vector<RankBatch> half(ranks.begin(), ranks.end());
    bool splittable = false;
    for (RankBatch& r : half) {
      const int64_t seqs = r.decode + r.prefill_seqs;
      if (seqs >= 2 || r.prefill_tokens >= 2) splittable = true;
      r.decode = (r.decode + 1) / 2;
      r.decode_context /= 2;
      r.prefill_tokens = (r.prefill_tokens + 1) / 2;
      r.prefill_seqs = (r.prefill_seqs + 1) / 2;
      r.prefill_pairs /= 2;
      r.logits = (r.logits + 1) / 2;
    }
    if (splittable) {
      const StepTime h = kernel_time(half);
      const double comm_h = h.comm;
      const double compute_plain = h.total - h.comm - h.host;
      double compute_h = compute_plain;
      bool any_prefill = false;
      for (const RankBatch& r : ranks) any_prefill = any_prefill || r.prefill_tokens > 0;
      if (moe_comm_ == MoeComm::kDeepEp && any_prefill) {
        // DeepEP's normal kernels hold kDeepEpNormalSms SMs for their whole run, so the
        // computation that overlaps them runs on the others: it is slower by S / (S - s) while
        // they overlap (LMSYS 2025-05-05, TBO ablation: per-kernel times with TBO are slower
        // "from reduced SMs"). The low-latency kernels of decode use SMs only to send and
        // receive, not while in flight, and slow nothing (same source).
        const double S = s_.fabric.sms;
        compute_h += std::min(compute_h, comm_h) * kDeepEpNormalSms / (S - kDeepEpNormalSms);
      }
      const double fill = std::min(compute_h, comm_h) / std::max(1, layers_);
      const double total = 2.0 * std::max(compute_h, comm_h) + fill;
      const double work = out.total - out.host;
      if (total < work) {
        // Report the computation as two micro-batches' and, as communication, what the
        // exchange still costs: its exposed part and the SMs it takes from the computation.
        out.attention = 2 * h.attention;
        out.dense = 2 * h.dense;
        out.moe = 2 * h.moe;
        out.head = 2 * h.head;
        out.mtp = 2 * h.mtp;
        out.comm = std::max(0.0, total - 2 * compute_plain);
        out.total = total + out.host;
      }
    }
  }
  return out;
}

StepTime StepModel::kernel_time(std::span<const RankBatch> ranks) const {
  StepTime out;
  if (ranks.empty()) return out;
  const auto& inst = s_.instance;
  const models::ModelSpec& m = *s_.model;
  const double f = s_.calibration.gpu_factor * s_.cap_slowdown;
  double slowest = 0, group_tokens = 0, max_tokens = 0, max_decode = 0;
  bool any_prefill = false;
  StepTime parts;
  // Ranks with the same work take the same time: the steady-state estimate passes identical
  // ranks, and idle ADP ranks repeat; reusing the previous rank's time is exact.
  const RankBatch* prev = nullptr;
  StepTime p;
  double t = 0;
  for (const RankBatch& r : ranks) {
    if (!prev || !same_work(*prev, r)) {
      p = StepTime{};
      t = rank_time(r, &p);
      prev = &r;
    }
    double tokens =
        static_cast<double>(r.decode) * q_per_seq_ + static_cast<double>(r.prefill_tokens);
    if (tokens <= 0) tokens = 1;
    group_tokens += tokens;
    max_tokens = std::max(max_tokens, tokens);
    max_decode = std::max(max_decode, static_cast<double>(r.decode));
    any_prefill = any_prefill || r.prefill_tokens > 0;
    if (t > slowest) {
      slowest = t;
      parts = p;
    }
  }
  out.attention = f * parts.attention;
  out.dense = f * parts.dense;
  out.head = f * parts.head;
  out.moe = f * lookup(group_grid_, moe_, group_tokens);
  double comm = 0;
  const double act_bytes = max_tokens * static_cast<double>(m.hidden) * kBf16;
  if (inst.dp_attention) {
    comm = moe_layers_ * moe_comm_s(max_tokens, any_prefill);
  } else {
    const double ar = 2.0 * layers_ * allreduce_s(act_bytes);
    // Fused GEMM + all-reduce hides the reduction behind the GEMMs of the layer.
    comm = ar - std::min(std::clamp(s_.tp_overlap, 0.0, 1.0) * ar, out.dense) + send_s(act_bytes);
  }
  out.comm = comm;
  if (s_.mtp > 0 && max_decode > 0) {
    // k draft passes, each one decoder layer's share of the pass plus the head.
    const double per_layer = (out.attention + out.dense + out.moe + comm) / std::max(1, layers_);
    out.mtp = s_.mtp * (per_layer + f * lookup(seq_grid_, head_, max_decode));
  }
  out.host = s_.calibration.host_s;
  // The C++ executor's time between two engine iterations (StepCalibration).
  if (s_.runtime == workload::ServingRuntime::kTrtEngine) {
    out.host += s_.calibration.engine_host_per_iteration_s;
  }
  out.total = out.attention + out.dense + out.head + out.moe + out.comm + out.mtp + out.host;
  return out;
}

StepTime StepModel::uniform(int64_t b, double context, double prefill_tokens, int64_t chunk) const {
  const int n = s_.instance.dp_attention ? s_.instance.tp : 1;
  RankBatch r;
  r.decode = b;
  r.decode_context = static_cast<double>(b) * context;
  r.logits = b;
  std::vector<RankBatch> ranks(static_cast<size_t>(n), r);
  StepTime base = time(ranks);
  if (prefill_tokens <= 0 || chunk <= 0) return base;
  RankBatch p = r;
  p.prefill_tokens = chunk;
  p.prefill_seqs = 1;
  p.prefill_pairs = causal_pairs(chunk, 0);
  p.logits = b + 1;
  std::vector<RankBatch> with(static_cast<size_t>(n), p);
  const StepTime full = time(with);
  const double w = prefill_tokens / static_cast<double>(chunk);
  StepTime out;
  auto mix = [&](double a, double c) { return a + w * (c - a); };
  out.attention = mix(base.attention, full.attention);
  out.dense = mix(base.dense, full.dense);
  out.moe = mix(base.moe, full.moe);
  out.head = mix(base.head, full.head);
  out.mtp = mix(base.mtp, full.mtp);
  out.comm = mix(base.comm, full.comm);
  out.host = mix(base.host, full.host);
  out.total = mix(base.total, full.total);
  return out;
}

double StepModel::kv_transfer_s(int64_t tokens, bool same_domain) const {
  // Each of the sender's tp GPUs ships its shard in parallel.
  const double bytes = static_cast<double>(tokens) * kv_token_bytes_ /
                       std::max(1, s_.instance.dp_attention ? 1 : s_.instance.tp);
  const ServingFabric& f = s_.fabric;
  if (same_domain) return kNvlinkP2pAlpha + bytes / (f.nvlink.base() * kNvlinkP2pFraction);
  return kNetAlpha + bytes / (f.nic.base() * kNicFraction);
}

}  // namespace clustertwin::execution
