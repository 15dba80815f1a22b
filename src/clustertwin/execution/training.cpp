#include "clustertwin/execution/training.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <numeric>

#include "clustertwin/base/check.h"
#include "clustertwin/base/number.h"
#include "clustertwin/models/ops.h"

namespace clustertwin::execution {
namespace {

using compute::OpKind;
using models::Part;

struct ChunkCost {
  double fwd_compute = 0, bwd_compute = 0, recompute = 0;
  double tp = 0, cp = 0, ep = 0, zero3 = 0;  // exposed, per micro-batch, forward + backward
  double offload = 0;                        // exposed host traffic, forward + backward
  double wgrad = 0;                          // weight-gradient GEMMs inside bwd_compute
  double host_fwd = 0, host_bwd = 0;         // GPU idle while the host issues kernels
  double fwd = 0, bwd = 0;                   // totals per micro-batch
  int layers = 0;
};

struct Context {
  const TrainingSetup& s;
  const models::ModelSpec& m;
  const workload::TrainingLayout& l;
  models::PassSpec pass;
  int64_t gpus;
  /// The MoE dispatch kernel `auto` resolved to (workload::resolve_moe_dispatch).
  workload::MoeDispatch dispatch = workload::MoeDispatch::kAllToAll;
};

workload::MoeDispatch pc_dispatch(const Context& c) { return c.dispatch; }

// Unfused attention (Megatron-LM 2021-22): the full score matrix is computed (no causal
// skipping: 2x the fused kernel's math) and scores, probabilities and the dropout mask go
// through HBM: ~9 bytes per score element forward (write scores, read, write probabilities,
// mask, read for PV), twice that backward.
double unfused_attention_time(const Context& c, const compute::Op& op) {
  const auto& a = op.attention;
  const double scores = static_cast<double>(a.batch) * static_cast<double>(a.heads) *
                        static_cast<double>(a.q_len) * static_cast<double>(a.kv_len);
  const bool bwd = op.kind == OpKind::kAttentionBackward;
  return 2.0 * c.s.compute->op(op).base() +
         c.s.compute->memory_bound(base::bytes(scores * (bwd ? 18.0 : 9.0))).base();
}

double op_time(const Context& c, const std::vector<compute::Op>& ops, double* gemm = nullptr,
               double* attention = nullptr, double* wgrad = nullptr) {
  double t = 0;
  for (const auto& op : ops) {
    const bool attn = op.kind == OpKind::kAttention || op.kind == OpKind::kAttentionBackward;
    double x =
        attn && !c.l.flash_attention ? unfused_attention_time(c, op) : c.s.compute->op(op).base();
    // Low-precision training quantises each GEMM's activation input before the GEMM (Transformer
    // Engine cast / cast-transpose kernels): read bf16, write FP8 = 3 bytes per element; the
    // measured GEMM tables time the GEMM alone.
    if (op.kind == OpKind::kGemm && op.dtype != compute::DType::kBf16) {
      const double elems = static_cast<double>(op.gemm.m) * static_cast<double>(op.gemm.k) *
                           static_cast<double>(op.count);
      x += c.s.compute->memory_bound(base::bytes(3.0 * elems)).base();
    }
    if (op.dtype == compute::DType::kFp8 &&
        (op.kind == OpKind::kGemm || op.kind == OpKind::kMoe || op.kind == OpKind::kMoeBackward)) {
      x *= 1.0 + c.s.fp8_overhead;
    }
    t += x;
    if (wgrad && op.pass == compute::Pass::kWgrad) *wgrad += x;
    if (wgrad && op.kind == OpKind::kMoeBackward) *wgrad += x / 2;  // dgrad + wgrad halves
    if (gemm && (op.kind == OpKind::kGemm || op.kind == OpKind::kMoe)) *gemm += x;
    if (attention && (op.kind == OpKind::kAttention || op.kind == OpKind::kAttentionBackward)) {
      *attention += x;
    }
  }
  return t * (1.0 + c.s.framework_overhead) * c.s.cap_slowdown;
}

double comm(const Context& c, CommOp op, double bytes, int group, int stride, int concurrent) {
  if (group <= 1 || bytes <= 0) return 0.0;
  CommRequest r{.op = op,
                .bytes = base::bytes(bytes),
                .group_size = group,
                .first_gpu = c.s.first_gpu,
                .stride = stride,
                .concurrent = concurrent,
                .group_stride = group * stride};
  return c.s.comm->time(r).base();
}

// Ops re-run in the backward pass: the whole forward under full recomputation, else the ops of
// the modules named by Megatron's --recompute-modules (workload/layout.h). moe_act re-runs the
// experts' SwiGLU: read its 2 f_e inputs, write f_e outputs per routed copy (bf16).
std::vector<compute::Op> recomputed_ops(const Context& c, Part part, int index) {
  namespace rm = workload::recompute_module;
  const auto& l = c.l;
  if (l.recompute == models::Recompute::kFull) {
    return models::recompute_ops(c.m, part, index, c.pass, models::Recompute::kFull);
  }
  const uint32_t bits = l.recompute_bits();
  if (bits == 0 || (part != Part::kLayer && part != Part::kMtp)) return {};
  auto in = [](std::string_view n, std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  std::vector<compute::Op> out;
  for (compute::Op o : models::forward_ops(c.m, part, index, c.pass)) {
    const std::string_view n = o.name;
    bool re = false;
    if ((bits & rm::kCoreAttn) && o.kind == OpKind::kAttention) re = true;
    if ((bits & rm::kLayernorm) && in(n, {"input_norm", "post_attn_norm"})) re = true;
    if ((bits & rm::kMlaUpProj) && in(n, {"q_b_proj", "kv_b_proj", "q_kv_a_norm"})) re = true;
    if ((bits & rm::kMlp) && in(n, {"mlp_up", "mlp_gate_up", "mlp_act", "mlp_down"})) re = true;
    if ((bits & rm::kSharedExperts) && in(n, {"shared_gate_up", "shared_act", "shared_down"})) {
      re = true;
    }
    if ((bits & rm::kMoe) &&
        (in(n, {"router", "router_topk", "shared_gate_up", "shared_act", "shared_down"}) ||
         o.kind == OpKind::kMoe)) {
      re = true;
    }
    if ((bits & rm::kMoeAct) && !(bits & rm::kMoe) && o.kind == OpKind::kMoe) {
      compute::Op act{.name = "moe_act", .kind = OpKind::kMemory};
      act.bytes = base::bytes(o.moe.pairs() * static_cast<double>(o.moe.inter) /
                              std::max(1, o.moe.tp) * 3.0 * 2.0);
      act.pass = compute::Pass::kRecompute;
      out.push_back(act);
    }
    if (!re) continue;
    o.pass = compute::Pass::kRecompute;
    out.push_back(o);
  }
  return out;
}

// ZeRO 3 / FSDP (Rajbhandari et al., ZeRO, SC20 §5.3; Zhao et al., PyTorch FSDP, VLDB 2023):
// every part's parameters stay sharded over the data-parallel group and are all-gathered before
// its forward and again before its backward (freed in between: FSDP reshard_after_forward,
// DeepSpeed's stage 3), and its gradients are reduce-scattered right after its backward, in every
// micro-batch (FSDP2's and DeepSpeed's default under gradient accumulation: sharded gradients are
// the point of the stage). The collectives run on their own stream, prefetched a part ahead
// (PyTorch FSDP notes, "FSDP Prefetch Nuances"), so a part's gather hides behind the compute of
// the part next to it; parts of one kind cost the same, so what shows is the excess of the
// part's communication over its compute: forward max(0, AG - F), backward max(0, AG + RS - B),
// all of it without DP overlap. The group and bytes are the step-end DP collectives' (stage_tail:
// dp x cp ranks, tp apart; bf16 parameters, gradients in grad_bytes).
struct Zero3Exposed {
  double fwd = 0, bwd = 0;
};

Zero3Exposed zero3_exposed(const Context& c, Part part, int index, double fwd_compute,
                           double bwd_compute) {
  const auto& l = c.l;
  const auto& m = c.m;
  const double tp = l.tp;
  const double ep_etp = static_cast<double>(l.ep) * l.etp;
  double params = 0, trainable = 0;
  auto layer = [&](const workload::LayerParams& lp) {
    return (lp.attention + lp.mlp_dense + lp.shared + lp.norms) / tp + lp.router +
           lp.routed / ep_etp;
  };
  if (part == Part::kLayer) {
    params = layer(workload::layer_params(m, index));
    trainable = l.lora_rank > 0 ? workload::lora_layer_params(m, index, l.lora_rank) / tp : params;
  } else {
    const auto pc = models::count_params(m);
    if (part == Part::kEmbedding) params = pc.embedding / tp;
    if (part == Part::kHead) params = pc.output / tp;
    if (part == Part::kMtp) {
      const double h = static_cast<double>(m.hidden);
      params = layer(workload::layer_params(m, m.layers - 1)) + 2.0 * h * h / tp;
    }
    trainable = l.lora_rank > 0 ? 0.0 : params;
  }
  const int group = l.dp * l.cp;
  if (group <= 1) return {};
  CommRequest r{.op = CommOp::kAllGather,
                .bytes = base::bytes(params * 2.0),
                .group_size = group,
                .first_gpu = c.s.first_gpu,
                .stride = l.tp,
                .concurrent = static_cast<int>(c.gpus / group)};
  const double ag = c.s.comm->time(r).base();
  r.op = CommOp::kReduceScatter;
  r.bytes = base::bytes(trainable * l.grad_bytes);
  const double rs = trainable > 0 ? c.s.comm->time(r).base() : 0.0;
  if (!l.dp_overlap) return {ag, ag + rs};
  return {std::max(0.0, ag - fwd_compute), std::max(0.0, ag + rs - bwd_compute)};
}

// Costs of one part (embedding, a decoder layer, the head, an MTP module) for one micro-batch.
// Decoder layers of the same kind (dense / MoE) cost the same, so each kind is computed once:
// a 126-layer model costs two op-list evaluations, not 126 (the estimate's speed for search).
struct PartCost {
  double fwd = 0, bwd = 0, recompute = 0, tp = 0, ep = 0, cp = 0, wgrad = 0;
  double host_fwd = 0, host_bwd = 0;    // GPU idle while eager PyTorch issues kernels
  double zero3_fwd = 0, zero3_bwd = 0;  // exposed FSDP gathers / reduce-scatter (ZeRO 3)
};
using PartCache = std::map<std::pair<int, std::string>, PartCost>;

// Host issue in eager PyTorch (Megatron-Core without CUDA graphs; docs/models/training.md, "Host
// issue"). Python issues a decoder layer's kernels one by one; launches are asynchronous, so the
// host runs ahead of the GPU and the GPU waits only where issuing is slower than running.
// - A layer's forward takes the host TrainingSetup::eager_host_per_layer (the serving model's
//   fitted eager figure), its backward as long (autograd replays the recorded ops), its
//   recomputation the recomputed share of the forward's ops (counted on the op lists).
// - Each local expert adds the issue of its own GEMMs, host_per_expert_gemm each: Transformer
//   Engine's GroupedLinear (TEGroupedMLP) runs one cuBLAS GEMM per expert on its multi-stream
//   path, with per-expert Python lists of inputs, weights and quantizers, and in the backward a
//   dgrad and a wgrad GEMM per expert, a per-weight gradient placeholder and Megatron's DDP hook
//   on every expert weight. fc1 and fc2: 2 per local expert forward, 4 backward, 2 again when
//   `moe` is recomputed.
// - A dropless MoE layer stops the host once per forward: the grouped GEMMs need the per-expert
//   token counts on the host (token_dispatcher.py: the alltoall dispatcher copies its splits and
//   tokens_per_expert .to("cpu") and _maybe_dtoh_and_synchronize("before_ep_alltoall") syncs the
//   stream; the flex dispatcher waits for DeepEP's received counts likewise). The host's lead is
//   lost there, so that layer's forward lasts max(GPU, host) and its backward max(GPU, host) too
//   (the next forward's sync takes whatever lead the backward built). Without a sync the lead
//   carries over: only a layer whose forward, backward and recomputation together issue slower
//   than they run waits.
// - CUDA graphs (TrainingSetup::cuda_graphs) replay what they capture without issuing it;
//   capturing moe_preprocess keeps the counts on the device (no sync).
void host_issue(const Context& c, Part part, int index, bool moe, PartCost& pc) {
  namespace cg = cuda_graph;
  const uint32_t g = c.s.cuda_graphs;
  if (part != Part::kLayer || (g & (cg::kLayer | cg::kFullIteration))) return;
  auto in = [](std::string_view n, std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  auto captured = [&](const compute::Op& o) {
    const std::string_view n = o.name;
    if ((g & cg::kAttn) &&
        (o.kind == OpKind::kAttention ||
         in(n, {"input_norm", "qkv_proj", "q_proj", "qk_norm", "rope", "o_proj", "qkv_a_proj",
                "q_b_proj", "kv_b_proj", "q_kv_a_norm", "post_attn_norm"}))) {
      return true;
    }
    return (g & cg::kMoeRouter) && in(n, {"router", "router_topk"});
  };
  const auto fops = models::forward_ops(c.m, part, index, c.pass);
  if (fops.empty()) return;
  auto eager = [&](const std::vector<compute::Op>& ops) {
    return static_cast<double>(
        std::count_if(ops.begin(), ops.end(), [&](const compute::Op& o) { return !captured(o); }));
  };
  const double per_op = c.s.eager_host_per_layer.base() / static_cast<double>(fops.size());
  double h_f = per_op * eager(fops);
  double h_b = h_f;
  double h_r = per_op * eager(recomputed_ops(c, part, index));
  if (moe) {
    const double local = static_cast<double>(c.m.moe->experts) / std::max(1, c.l.ep);
    const double gemm = c.s.host_per_expert_gemm.base();
    h_f += local * 2 * gemm;
    h_b += local * 4 * gemm;
    if (c.l.recompute_bits() & workload::recompute_module::kMoe) h_r += local * 2 * gemm;
  }
  const double comm_half = (pc.tp + pc.ep + pc.cp) / 2;
  const double g_f = pc.fwd + comm_half;
  const double g_b = pc.bwd + pc.recompute + comm_half;
  if (moe && !(g & cg::kMoePreprocess)) {
    pc.host_fwd = std::max(0.0, h_f - g_f);
    pc.host_bwd = std::max(0.0, h_b + h_r - g_b);
  } else {
    pc.host_bwd = std::max(0.0, h_f + h_b + h_r - g_f - g_b);
  }
}

ChunkCost chunk_cost(const Context& c, int first_layer, int layers, bool embed, bool head,
                     PartCache& cache) {
  ChunkCost k;
  k.layers = layers;
  const auto& l = c.l;
  const auto& m = c.m;
  const double T = static_cast<double>(c.pass.tokens());
  const double h = static_cast<double>(m.hidden);
  const double act = T * h * 2.0;  // bf16 activations of the micro-batch on one TP group
  const int tp_groups = static_cast<int>(c.gpus / l.tp);
  auto part_cost = [&](Part part, int index) {
    PartCost pc;
    double gemm_f = 0, attn_f = 0, gemm_b = 0, attn_b = 0;
    pc.fwd = op_time(c, models::forward_ops(m, part, index, c.pass), &gemm_f, &attn_f);
    auto bwd_ops = models::backward_ops(m, part, index, c.pass);
    if (l.lora_rank > 0) {
      // LoRA: frozen base weights get no weight gradients (the rank-r adapters' GEMMs are
      // r/h of the base's and left out).
      std::erase_if(bwd_ops, [](const compute::Op& o) { return o.pass == compute::Pass::kWgrad; });
    }
    pc.bwd = op_time(c, bwd_ops, &gemm_b, &attn_b, &pc.wgrad);
    pc.recompute = op_time(c, recomputed_ops(c, part, index));
    if (part != Part::kLayer) return pc;
    // Tensor parallel: per layer 2 (AG + RS) with SP or 2 AR, forward and again backward.
    const bool moe = m.is_moe_layer(index);
    const int pairs = moe && l.ep > 1 ? 1 : 2;  // the MoE MLP talks over EP instead
    double tp = 0;
    if (l.tp > 1) {
      if (l.sequence_parallel) {
        tp = pairs * (comm(c, CommOp::kAllGather, act, l.tp, 1, tp_groups) +
                      comm(c, CommOp::kReduceScatter, act, l.tp, 1, tp_groups));
      } else {
        tp = pairs * comm(c, CommOp::kAllReduce, act, l.tp, 1, tp_groups);
      }
      tp *= 2;  // backward
      if (l.tp_comm_overlap) tp = std::max(0.1 * tp, tp - 0.9 * (gemm_f + gemm_b));
    }
    pc.tp = tp;
    const double local_tokens = l.sequence_parallel ? T / l.tp : T;
    if (moe) {
      // Token permutation (Megatron-Core token_dispatcher.py with --moe-permute-fusion): before
      // the dispatch each rank copies its tokens into expert order, one row per routed copy
      // (read t h, write t k h); after the combine it sums the copies back, weighted by the
      // router's probabilities (read t k h, write t h). The all-to-all dispatcher with more than
      // one local expert also regroups the received rows by local expert after the dispatch and
      // back before the combine (sort_chunks_by_idxs: read and write t k h each). bf16 rows; the
      // backward pass runs the mirror of each kernel over the same bytes. Memory-bound passes,
      // absent from the fused inference MoE kernel tables the grouped GEMMs are timed with.
      const double copies = m.moe->topk * c.pass.moe_imbalance;
      const double row = h * 2.0;
      const auto& cm = *c.s.compute;
      double perm = 2.0 * cm.memory_bound(base::bytes(local_tokens * row * (1 + copies))).base();
      const int local_experts = m.moe->experts / std::max(1, l.ep);
      if (l.ep > 1 && local_experts > 1 && pc_dispatch(c) == workload::MoeDispatch::kAllToAll) {
        perm += 2.0 * cm.memory_bound(base::bytes(2.0 * local_tokens * row * copies)).base();
      }
      pc.fwd += perm;
      pc.bwd += perm;
      if (l.recompute_bits() & workload::recompute_module::kMoe) pc.recompute += perm;
      // Biased experts (GPT-OSS): Megatron-Core's TEGroupedMLP builds fc2 with skip_bias_add
      // and adds its bias, weighted by each row's router probability, in _apply_bias: a Python
      // loop over the local experts of unfused PyTorch ops (torch.split, t + b * p, torch.cat).
      // Per local expert of n rows, the forward runs b * p (writes n h) and the add (reads 2 n h,
      // writes n h), then one cat over all rows (reads and writes them); autograd runs, per
      // expert, grad * p and its sum over rows (the bias gradient) and grad * b and its sum over
      // the width (the probabilities' gradient: the router is trained, and forced balance's
      // random logits pass gradients straight through, moe_utils.RandomSTE). Counted in bf16,
      // a lower bound when the probabilities are fp32. Each op a streaming kernel of its own.
      if (m.moe->expert_bias) {
        const int experts_here = std::max(1, local_experts);
        const double n = local_tokens * copies / experts_here;
        auto pass = [&](double elements) {
          return cm.memory_bound(base::bytes(elements * 2.0)).base();
        };
        const double bias_f =
            experts_here * (pass(n * h) + pass(3 * n * h)) + pass(2 * n * experts_here * h);
        const double bias_b = experts_here * 2.0 * (pass(2 * n * h) + pass(n * h));
        pc.fwd += bias_f;
        pc.bwd += bias_b;
        if (l.recompute_bits() & workload::recompute_module::kMoe) pc.recompute += bias_f;
      }
    }
    // Expert parallel: dispatch + combine forward, and their mirrors backward.
    if (moe && l.ep > 1) {
      const double bytes = local_tokens * m.moe->topk * h * 2.0;
      // MoE parallel folding: the experts' grid is ordered etp-ep-edp-pp (Megatron-Core's
      // expert rank generator), so an EP group is ep ranks etp GPUs apart, spanning TP and CP.
      const int stride = l.etp;
      double ep = comm(c, CommOp::kAllToAll, bytes, l.ep, stride, static_cast<int>(c.gpus / l.ep));
      const int dsize = c.s.comm->domain_size();
      const auto impl = pc_dispatch(c);
      const int per_domain = dsize > 0 ? std::clamp(dsize / stride, 1, l.ep) : l.ep;
      const int domains = (l.ep + per_domain - 1) / per_domain;
      const collective::A2aKernelParams* kp = nullptr;
      if (c.s.moe_fabric && impl == workload::MoeDispatch::kDedup && domains > 1 &&
          c.s.moe_fabric->deepep_normal) {
        kp = &*c.s.moe_fabric->deepep_normal;
      }
      if (c.s.moe_fabric && impl == workload::MoeDispatch::kNvlinkOneSided &&
          c.s.moe_fabric->nvlink_onesided) {
        kp = &*c.s.moe_fabric->nvlink_onesided;
      }
      if (kp) {
        // The collective layer's kernel (collective/moe_a2a.h): DeepEP normal across domains,
        // NVLink one-sided inside one NVL72 domain, with the routing's reach (group-limited
        // routing sends a token to fewer domains). DeepSeek-style block FP8 dispatches FP8
        // tokens with their 1x128 scales (DeepSeek-V3 §3.3.2) and combines in bf16.
        const bool fp8_dispatch = l.dtype == compute::DType::kFp8Block;
        collective::MoeA2aRequest r{
            .impl = impl == workload::MoeDispatch::kDedup ? collective::A2aImpl::kDeepEpNormal
                                                          : collective::A2aImpl::kNvlinkOneSided,
            .tokens_per_rank = std::max<int64_t>(1, static_cast<int64_t>(local_tokens)),
            .routing = {.experts = m.moe->experts,
                        .topk = m.moe->topk,
                        .groups = m.moe->groups,
                        .topk_groups = m.moe->topk_groups}};
        double pair = 0;
        for (bool combine : {false, true}) {
          r.combine = combine;
          r.token_bytes = static_cast<int64_t>(
              combine || !fp8_dispatch ? h * 2.0 : h + std::ceil(h / 128.0) * 4.0);
          auto e = collective::moe_a2a_kernel(*kp, r, domains, per_domain, c.s.moe_fabric->nvlink,
                                              c.s.moe_fabric->nic);
          if (e) pair += e->time.base();
        }
        // Forward dispatch + combine; the backward pass runs their mirrors (a combine-shaped
        // and a dispatch-shaped exchange). Written as 4 x one exchange for the code below.
        ep = pair / 2.0;
      } else if (impl == workload::MoeDispatch::kDedup && domains > 1) {
        // Without the kernel table: the deduplicated dispatch in closed form (DeepSeek-V3
        // §3.2.2, DeepEP): a token crosses the network once per destination domain, to the GPU
        // of the same in-domain index, which forwards it over NVLink to its experts there; the
        // two legs pipeline, so the slower one sets the time.
        const double copies = workload::moe_domains_per_token(*m.moe, domains);
        const double remote = copies * (domains - 1) / domains;
        // all-to-all convention: a rank's buffer, of which (n-1)/n leaves it
        const double net_bytes = local_tokens * h * 2.0 * remote * domains / (domains - 1);
        const double net = comm(c, CommOp::kAllToAll, net_bytes, domains, per_domain * stride,
                                static_cast<int>(c.gpus / domains));
        const double nvl = comm(c, CommOp::kAllToAll, bytes, per_domain, stride,
                                static_cast<int>(c.gpus / per_domain));
        ep = std::max(net, nvl);
      }
      // The busiest EP rank receives its experts' share of the routed rows (the routing skew the
      // experts are timed with, pass.moe_imbalance: 1 under forced balance) and sends as many
      // back in the combine; an exchange ends when that rank's rows have crossed its links, so
      // a skewed exchange takes that much longer (receiver-bound; the kernels above time a
      // uniform exchange).
      ep *= 4 * c.pass.moe_imbalance;
      // Recomputing the whole MoE block re-runs its dispatch and combine.
      if (l.recompute_bits() & workload::recompute_module::kMoe) ep *= 1.5;
      if (l.ep_overlap || l.schedule == workload::PipelineSchedule::kDualPipe) {
        ep = std::max(0.0, ep - 0.9 * (gemm_f + gemm_b));
      }
      pc.ep = ep;
    }
    // Context parallel: ring attention passes K and V around cp ranks, hidden behind attention.
    if (l.cp > 1) {
      const double kv_width = m.mla ? static_cast<double>(m.heads) *
                                          static_cast<double>(m.q_head_dim() + m.v_head_dim())
                                    : 2.0 * static_cast<double>(m.kv_heads * m.head_dim);
      const double bytes = T * kv_width * 2.0 / l.tp;
      const double step = comm(c, CommOp::kSendRecv, bytes, 2, l.tp, static_cast<int>(c.gpus / 2));
      const double fwd = (l.cp - 1) * step, bwd = 2 * fwd;
      pc.cp = std::max(0.0, fwd - attn_f) + std::max(0.0, bwd - attn_b);
    }
    host_issue(c, part, index, moe, pc);
    return pc;
  };
  double zero3_fwd = 0, zero3_bwd = 0;
  auto add_part = [&](Part part, int index) {
    const std::string kind = part == Part::kLayer ? models::layer_kind(m, index) : "";
    const auto key = std::make_pair(static_cast<int>(part), kind);
    auto it = cache.find(key);
    if (it == cache.end()) {
      PartCost pc = part_cost(part, index);
      if (l.zero >= 3) {
        // Hidden behind the part's own compute (TrainingPartCost's fwd_compute and
        // bwd_compute + recompute: what layout search combines it with).
        const auto z = zero3_exposed(c, part, index, pc.fwd, pc.bwd + pc.recompute);
        pc.zero3_fwd = z.fwd;
        pc.zero3_bwd = z.bwd;
      }
      it = cache.emplace(key, pc).first;
    }
    const PartCost& pc = it->second;
    k.fwd_compute += pc.fwd;
    k.bwd_compute += pc.bwd;
    k.recompute += pc.recompute;
    k.tp += pc.tp;
    k.ep += pc.ep;
    k.cp += pc.cp;
    k.wgrad += pc.wgrad;
    k.host_fwd += pc.host_fwd;
    k.host_bwd += pc.host_bwd;
    zero3_fwd += pc.zero3_fwd;
    zero3_bwd += pc.zero3_bwd;
  };
  if (embed) add_part(Part::kEmbedding, 0);
  for (int i = 0; i < layers; ++i) add_part(Part::kLayer, first_layer + i);
  if (head) {
    add_part(Part::kHead, 0);
    for (int i = 0; i < m.mtp_layers; ++i) add_part(Part::kMtp, i);
  }
  k.zero3 = zero3_fwd + zero3_bwd;
  k.fwd = k.fwd_compute + (k.tp + k.ep + k.cp) / 2 + zero3_fwd + k.host_fwd;
  k.bwd = k.bwd_compute + k.recompute + (k.tp + k.ep + k.cp) / 2 + zero3_bwd + k.host_bwd;
  return k;
}

}  // namespace

models::PassSpec training_pass(const models::ModelSpec& m, const workload::TrainingLayout& l) {
  models::PassSpec pass{.phase = models::Phase::kTraining,
                        .batch = l.micro_batch,
                        .seq_len = l.seq_len,
                        .tp = l.tp,
                        .sequence_parallel = l.sequence_parallel,
                        .cp = l.cp,
                        .ep = l.ep,
                        .etp = l.etp,
                        .dtype = l.dtype,
                        .fp8_attention = l.fp8_attention};
  // The busiest EP rank's share (workload/memory.cpp routed_load): measured routing skew, capped
  // at the capacity factor when tokens beyond it are dropped.
  if (m.moe && l.routing == workload::MoeRouting::kMeasured) {
    pass.moe_imbalance = workload::moe_imbalance_measured(l.ep);
    if (l.capacity_factor > 0) pass.moe_imbalance = std::min(pass.moe_imbalance, l.capacity_factor);
  }
  return pass;
}

namespace {

struct Prepared {
  std::vector<ChunkCost> chunks;
  std::vector<double> p2p;
  workload::MemoryBreakdown memory;
  std::vector<workload::MemoryBreakdown> stage_memory;
  int64_t gpus = 0;
};

base::Result<Prepared> prepare(const TrainingSetup& s, bool explain) {
  CT_CHECK(s.model && s.compute && s.comm, "training setup needs a model, compute and comm model");
  const auto& m = *s.model;
  const auto& l = s.layout;
  Prepared p;
  p.gpus = s.gpus > 0 ? s.gpus : l.gpus();
  if (auto st = workload::validate(l, m, p.gpus); !st) return base::fail(st.error());
  const models::PassSpec pass = training_pass(m, l);
  if (auto st = models::check_layout(m, pass); !st) return base::fail(st.error());
  auto mem = workload::check_memory(m, l, s.memory_capacity, s.host_memory, explain);
  if (!mem) return base::fail(mem.error());
  p.memory = *mem;
  p.stage_memory = workload::training_memory(m, l);
  Context c{s, m, l, pass, p.gpus};
  if (m.moe && l.ep > 1) {
    const int dsize = s.comm->domain_size();
    c.dispatch = workload::resolve_moe_dispatch(l.moe_dispatch, *m.moe, l.ep, l.etp, dsize);
    const int64_t span = static_cast<int64_t>(l.ep) * l.etp;
    if (c.dispatch == workload::MoeDispatch::kNvlinkOneSided && (dsize <= 0 || span > dsize)) {
      return base::fail("moe_dispatch nvlink-onesided: the EP group (" + std::to_string(l.ep) +
                        " ranks, " + std::to_string(span) +
                        " GPUs wide) spans more than one NVLink domain of " +
                        std::to_string(dsize) + " GPUs; use alltoall or deepep");
    }
    if (c.dispatch == workload::MoeDispatch::kNvlinkOneSided && s.moe_fabric &&
        !s.moe_fabric->nvlink_onesided) {
      return base::fail("moe_dispatch nvlink-onesided: " + s.moe_fabric->gpu +
                        " has no NVLink one-sided parameters in catalog/collectives/moe-a2a.yaml");
    }
  }
  const int chunks = l.pp * l.vpp;
  const auto split = workload::split_layers(m.layers, chunks);
  PartCache cache;
  int first = 0;
  for (int ch = 0; ch < chunks; ++ch) {
    p.chunks.push_back(
        chunk_cost(c, first, split[static_cast<size_t>(ch)], ch == 0, ch == chunks - 1, cache));
    first += split[static_cast<size_t>(ch)];
  }
  if (l.offload_activations && s.host_bandwidth.base() > 0) {
    // Offloaded activations cross the CPU<->GPU link out in the forward pass and back in the
    // backward pass, overlapped with that pass's compute (TE / Megatron CPU offloading).
    for (int ch = 0; ch < chunks; ++ch) {
      auto& k = p.chunks[static_cast<size_t>(ch)];
      const auto& sm = p.stage_memory[static_cast<size_t>(ch % l.pp)];
      int stage_layers = 0;
      for (int v = 0; v < l.vpp; ++v)
        stage_layers += split[static_cast<size_t>(v * l.pp + ch % l.pp)];
      const double bytes =
          sm.activation_bytes_per_micro_batch * k.layers / std::max(1, stage_layers);
      const double t = bytes / s.host_bandwidth.base();
      const double f = std::max(0.0, t - k.fwd_compute);
      const double b = std::max(0.0, t - k.bwd_compute - k.recompute);
      k.offload = f + b;
      k.fwd += f;
      k.bwd += b;
    }
  }
  // Pipeline sends: the micro-batch's activations (SP-sharded over tp), every pipeline at once.
  const double act = static_cast<double>(pass.tokens()) * static_cast<double>(m.hidden) * 2.0 /
                     (l.sequence_parallel ? l.tp : 1);
  // One stage (pp = 1, any vpp): the chunks share the GPUs and nothing is sent.
  const int stage_stride = static_cast<int>(p.gpus / l.pp);
  const double send =
      l.pp > 1 ? comm(c, CommOp::kSendRecv, act, 2, stage_stride, static_cast<int>(p.gpus / l.pp))
               : 0.0;
  p.p2p.assign(static_cast<size_t>(std::max(0, chunks - 1)), send);
  // The step on the engine's integer-nanosecond clock: it ends before the sum of its tasks and
  // transfers (every micro-batch's forward and backward of every chunk, each boundary crossed
  // twice), so a sum within base::kMaxSimSeconds keeps every tick in range. Past it, a kernel
  // time is absurd (a calibration profile's efficiency of 1e-300 made a 1e299 s step, which
  // aborted in engine::to_ticks); refused here, for the event model and the estimate alike.
  double per_micro_batch = 0;
  for (const auto& k : p.chunks) per_micro_batch += k.fwd + k.bwd;
  for (double x : p.p2p) per_micro_batch += 2 * x;
  const double bound = static_cast<double>(l.micro_batches()) * per_micro_batch;
  if (!(bound <= base::kMaxSimSeconds)) {
    return base::fail(fmt::format(
        "the training step would take up to {:.3g} s ({} x {:.3g} s of forward, backward and "
        "pipeline sends per micro-batch), more than the limit of simulated time ({:.0f} s, 100 "
        "years): a kernel time is absurd; check the GPU's rates and the calibration profile's "
        "efficiencies",
        bound, l.micro_batches(), per_micro_batch, base::kMaxSimSeconds));
  }
  return p;
}

// Data-parallel reduction, optimizer and parameter gather of one stage.
struct StageTail {
  double reduce = 0, gather = 0, optimizer = 0;
};

StageTail stage_tail(const TrainingSetup& s, const workload::MemoryBreakdown& mem, int64_t gpus) {
  const auto& l = s.layout;
  StageTail t;
  const int dp_group = l.dp * l.cp;
  const int concurrent = static_cast<int>(gpus / std::max(1, dp_group));
  CommRequest r{.bytes = base::bytes(mem.trainable_params * l.grad_bytes),
                .group_size = dp_group,
                .first_gpu = s.first_gpu,
                .stride = l.tp,
                .concurrent = concurrent};
  // ZeRO 3 reduce-scatters each part's gradients in every micro-batch's backward and gathers
  // parameters before each use (zero3_exposed): nothing is left for the step's end.
  if (dp_group > 1 && l.zero < 3) {
    r.op = l.zero >= 1 ? CommOp::kReduceScatter : CommOp::kAllReduce;
    t.reduce = s.comm->time(r).base();
    if (l.zero >= 1) {
      r.op = CommOp::kAllGather;
      r.bytes = base::bytes(mem.trainable_params * 2.0);
      t.gather = s.comm->time(r).base();
    }
  }
  // Adam over this GPU's optimizer shard: read fp32 master, m, v, grad and write master, m, v
  // and the bf16 weight: ~30 bytes per parameter, streaming through HBM.
  const double shard = l.zero >= 1 ? mem.trainable_params / dp_group : mem.trainable_params;
  t.optimizer = s.compute->memory_bound(base::bytes(shard * 30.0)).base();
  return t;
}

double model_flops(const TrainingSetup& s, bool hardware) {
  const auto& l = s.layout;
  const double tokens = static_cast<double>(l.tokens_per_step());
  double f = models::training_flops_per_token(*s.model, l.seq_len, /*causal=*/false) * tokens;
  if (hardware && l.recompute == models::Recompute::kFull) {
    f += models::forward_flops_per_token(*s.model, l.seq_len, false) * tokens;
  }
  return f;
}

// grads_ready[stage][v]: when chunk v of the stage has its final gradients (its last
// micro-batch's backward ended); empty for the closed-form estimate.
TrainingResult finish(const TrainingSetup& s, const Prepared& p,
                      const std::vector<double>& last_end, const std::vector<double>& busy,
                      const std::vector<std::vector<double>>& grads_ready) {
  const auto& l = s.layout;
  TrainingResult r;
  const double M = static_cast<double>(l.micro_batches());
  double worst = -1;
  for (int st = 0; st < l.pp; ++st) {
    const auto tail = stage_tail(s, p.stage_memory[static_cast<size_t>(st)], p.gpus);
    double window = 0;
    for (int v = 0; v < l.vpp; ++v) window += p.chunks[static_cast<size_t>(v * l.pp + st)].bwd;
    double first_fwd = 0;
    for (int v = 0; v < l.vpp; ++v) first_fwd += p.chunks[static_cast<size_t>(v * l.pp + st)].fwd;
    double reduce_exposed = tail.reduce;
    if (l.dp_overlap && !grads_ready.empty()) {
      // Megatron-Core overlap_grad_reduce: each chunk's gradient buckets are reduced as soon as
      // its last backward ends, one reduction at a time on the DP communicator.
      const auto& ready = grads_ready[static_cast<size_t>(st)];
      std::vector<std::pair<double, double>> work;  // (ready, duration share)
      int stage_layers = 0;
      for (int v = 0; v < l.vpp; ++v)
        stage_layers += p.chunks[static_cast<size_t>(v * l.pp + st)].layers;
      for (int v = 0; v < l.vpp; ++v) {
        const double share =
            stage_layers > 0
                ? static_cast<double>(p.chunks[static_cast<size_t>(v * l.pp + st)].layers) /
                      stage_layers
                : 1.0 / l.vpp;
        work.emplace_back(ready[static_cast<size_t>(v)], share * tail.reduce);
      }
      std::sort(work.begin(), work.end());
      double t = 0;
      for (const auto& [r0, d] : work) t = std::max(t, r0) + d;
      reduce_exposed = std::max(0.0, t - last_end[static_cast<size_t>(st)]);
    } else if (l.dp_overlap) {
      reduce_exposed = std::max(0.0, tail.reduce - window);
    }
    const double dp =
        reduce_exposed + (l.dp_overlap ? std::max(0.0, tail.gather - first_fwd) : tail.gather);
    StageTime t{.stage = st,
                .pipeline_end_s = last_end[static_cast<size_t>(st)],
                .busy_s = busy[static_cast<size_t>(st)],
                .dp_exposed_s = dp,
                .optimizer_s = tail.optimizer};
    t.end_s = t.pipeline_end_s + dp + tail.optimizer;
    for (int v = 0; v < l.vpp; ++v) t.layers += p.chunks[static_cast<size_t>(v * l.pp + st)].layers;
    worst = std::max(worst, t.end_s);
    r.stages.push_back(t);
  }
  r.step_time_s = worst + s.host_time.base();
  // The breakdown explains the step through its bottleneck: the stage with the most work. Its
  // idle time (pipeline fill/drain, waiting on slower neighbours, sends) is the bubble, so the
  // terms add up to the step time.
  int busiest = 0;
  for (int st = 0; st < l.pp; ++st) {
    if (r.stages[static_cast<size_t>(st)].busy_s > r.stages[static_cast<size_t>(busiest)].busy_s)
      busiest = st;
  }
  const auto& ws = r.stages[static_cast<size_t>(busiest)];
  auto& b = r.breakdown;
  for (int v = 0; v < l.vpp; ++v) {
    const auto& k = p.chunks[static_cast<size_t>(v * l.pp + busiest)];
    b.forward_compute += M * k.fwd_compute;
    b.backward_compute += M * k.bwd_compute;
    b.recompute += M * k.recompute;
    b.tp_comm += M * k.tp;
    b.cp_comm += M * k.cp;
    b.ep_comm += M * k.ep;
    b.offload += M * k.offload;
    b.host_issue += M * (k.host_fwd + k.host_bwd);
  }
  b.host = s.host_time.base();
  b.bubble = r.step_time_s - b.host - ws.busy_s - ws.dp_exposed_s - ws.optimizer_s;
  b.pp_comm = l.pp > 1 ? p.p2p.front() * 2.0 * M : 0.0;  // sends of this stage (inside the bubble)
  // DP communication: the step-end reduction and gather, and ZeRO 3's per-part collectives.
  b.dp_comm = ws.dp_exposed_s;
  for (int v = 0; v < l.vpp; ++v)
    b.dp_comm += M * p.chunks[static_cast<size_t>(v * l.pp + busiest)].zero3;
  b.optimizer = ws.optimizer_s;
  r.memory = p.memory;
  r.tokens_per_step = static_cast<double>(l.tokens_per_step());
  r.tokens_per_s = r.tokens_per_step / r.step_time_s;
  r.model_flops_per_step = model_flops(s, false);
  r.hardware_flops_per_step = model_flops(s, true);
  const double g = static_cast<double>(p.gpus);
  r.model_tflops_per_gpu = r.model_flops_per_step / r.step_time_s / g / 1e12;
  r.hardware_tflops_per_gpu = r.hardware_flops_per_step / r.step_time_s / g / 1e12;
  r.mfu = r.model_flops_per_step / r.step_time_s / g / s.peak.base();
  for (const auto& k : p.chunks) {
    r.chunk_forward_s.push_back(k.fwd);
    r.chunk_backward_s.push_back(k.bwd);
  }
  r.notes.push_back("communication model: " + s.comm->name());
  if (l.recompute == models::Recompute::kSelective) {
    const uint32_t bits = l.recompute_bits();
    std::string n = "recomputed modules: " + workload::recompute_modules_name(bits);
    if (bits == workload::recompute_module::kCoreAttn && l.flash_attention &&
        l.dtype == compute::DType::kBf16) {
      n += " (with FlashAttention in bf16 this saves no memory beyond none)";
    }
    r.notes.push_back(n);
  }
  if (l.schedule == workload::PipelineSchedule::kDualPipe) {
    r.notes.push_back(
        "DualPipe: closed form of DeepSeek-V3 Table 2 (bubble (pp/2-1)(F&B+B-3W), EP and PP "
        "communication hidden); the timeline alternates each rank's forward and backward");
  }
  if (s.model->moe) {
    r.notes.push_back(std::string("MoE routing: ") + workload::moe_routing_name(l.routing) +
                      (l.capacity_factor > 0
                           ? ", capacity factor " + std::to_string(l.capacity_factor).substr(0, 4)
                           : ", dropless"));
  }
  if (b.host_issue > 0) {
    const std::string graphs = s.cuda_graphs == cuda_graph::kNone
                                   ? std::string("eager PyTorch (no CUDA graphs)")
                                   : "PyTorch with CUDA graphs of " +
                                         cuda_graphs_name(s.cuda_graphs) + " (the rest eager)";
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  ": the GPU waits %.3f s per step for the host to issue kernels (%.2f ms per "
                  "layer forward, %.0f us per expert GEMM, fitted)",
                  b.host_issue, s.eager_host_per_layer.base() * 1e3,
                  s.host_per_expert_gemm.base() * 1e6);
    r.notes.push_back(graphs + buf);
  }
  r.notes.push_back("framework and communication buffers: " +
                    std::to_string(static_cast<int>(workload::kTrainingBufferBytes / 1e9)) +
                    " GB per GPU assumed (allocator headroom: physical minus usable HBM)");
  return r;
}

// DualPipe (DeepSeek-V3 §3.2.1, Table 2): rank s holds stages s and pp-1-s; half the
// micro-batches enter at each end, so every micro-batch passes each rank once, through one of
// its two stages. Per rank: M x (the mean of its two stages' F + B) of work, plus a bubble of
// (pp/2 - 1)(F&B + B - 3W) with F&B = F + B (a forward and a backward chunk overlapped), B the
// input-gradient part of the backward and W the weight-gradient part; EP and PP communication
// hide behind the overlapped chunks. The timeline lays each rank's micro-batches back to back
// after half its bubble.
struct DualPipeRun {
  std::vector<double> last_end, busy;
  std::vector<TaskRecord> tasks;
};

DualPipeRun run_dualpipe(const workload::TrainingLayout& l, const Prepared& p, bool timeline) {
  DualPipeRun out;
  const int64_t M = l.micro_batches();
  double F = 0, B = 0, W = 0;
  for (const auto& k : p.chunks) {
    F += k.fwd;
    B += k.bwd;
    W += k.wgrad;
  }
  F /= l.pp;
  B /= l.pp;
  W /= l.pp;
  const double bubble = std::max(0.0, (l.pp / 2.0 - 1.0) * ((F + B) + (B - W) - 3.0 * W));
  std::vector<double> work(static_cast<size_t>(l.pp));
  for (int st = 0; st < l.pp; ++st) {
    const auto& a = p.chunks[static_cast<size_t>(st)];
    const auto& b = p.chunks[static_cast<size_t>(l.pp - 1 - st)];
    work[static_cast<size_t>(st)] = (a.fwd + a.bwd + b.fwd + b.bwd) / 2.0;
  }
  const double slowest = *std::max_element(work.begin(), work.end());
  for (int st = 0; st < l.pp; ++st) {
    out.busy.push_back(static_cast<double>(M) * work[static_cast<size_t>(st)]);
    out.last_end.push_back(static_cast<double>(M) * slowest + bubble);
    if (!timeline) continue;
    double t = bubble / 2;
    for (int64_t mb = 0; mb < M; ++mb) {
      const int chunk = mb % 2 == 0 ? st : l.pp - 1 - st;
      const auto& k = p.chunks[static_cast<size_t>(chunk)];
      const auto tick = [](double x) { return engine::to_ticks(base::seconds(x)); };
      out.tasks.push_back({st, chunk, mb, true, tick(t), tick(t + k.fwd)});
      t += k.fwd;
      out.tasks.push_back({st, chunk, mb, false, tick(t), tick(t + k.bwd)});
      t += k.bwd;
    }
  }
  return out;
}

}  // namespace

namespace {
constexpr std::pair<const char*, uint32_t> kCudaGraphScopes[] = {
    {"attn", cuda_graph::kAttn},
    {"moe_router", cuda_graph::kMoeRouter},
    {"moe_preprocess", cuda_graph::kMoePreprocess},
    {"full", cuda_graph::kLayer},
    {"full_iteration", cuda_graph::kFullIteration}};
}  // namespace

base::Result<uint32_t> parse_cuda_graphs(std::string_view csv) {
  uint32_t bits = cuda_graph::kNone;
  if (csv.empty() || csv == "none") return bits;
  size_t pos = 0;
  while (pos <= csv.size()) {
    const size_t end = std::min(csv.find(',', pos), csv.size());
    const std::string_view name = csv.substr(pos, end - pos);
    const auto* it = std::find_if(std::begin(kCudaGraphScopes), std::end(kCudaGraphScopes),
                                  [&](const auto& e) { return name == e.first; });
    if (it == std::end(kCudaGraphScopes)) {
      std::string known = "none";
      for (const auto& [n, b] : kCudaGraphScopes) known += std::string(", ") + n;
      return base::fail("CUDA graph scope '" + std::string(name) + "' is not one of " + known);
    }
    bits |= it->second;
    pos = end + 1;
  }
  return bits;
}

std::string cuda_graphs_name(uint32_t bits) {
  std::string out;
  for (const auto& [n, b] : kCudaGraphScopes) {
    if (bits & b) out += std::string(out.empty() ? "" : ",") + n;
  }
  return out.empty() ? "none" : out;
}

base::Result<TrainingResult> simulate_training_step(const TrainingSetup& s) {
  auto p = prepare(s, /*explain=*/true);
  if (!p) return base::fail(p.error());
  const auto& l = s.layout;
  if (l.schedule == workload::PipelineSchedule::kDualPipe) {
    auto run = run_dualpipe(l, *p, true);
    std::vector<std::vector<double>> ready(static_cast<size_t>(l.pp), std::vector<double>(1, 0.0));
    for (const auto& t : run.tasks) {
      if (t.forward) continue;
      auto& x = ready[static_cast<size_t>(t.stage)][0];
      x = std::max(x, engine::to_seconds(t.end).base());
    }
    auto r = finish(s, *p, run.last_end, run.busy, ready);
    r.events = static_cast<int64_t>(run.tasks.size());
    r.tasks = std::move(run.tasks);
    return r;
  }
  PipelineInput in{.pp = l.pp, .vpp = l.vpp, .micro_batches = l.micro_batches()};
  for (const auto& k : p->chunks) {
    in.forward.push_back(base::seconds(k.fwd));
    in.backward.push_back(base::seconds(k.bwd));
  }
  for (double x : p->p2p) in.p2p.push_back(base::seconds(x));
  auto run = run_pipeline(in);
  std::vector<double> last_end, busy;
  for (int st = 0; st < l.pp; ++st) {
    last_end.push_back(engine::to_seconds(run.last_end[static_cast<size_t>(st)]).base());
    busy.push_back(engine::to_seconds(run.busy[static_cast<size_t>(st)]).base());
  }
  std::vector<std::vector<double>> ready(static_cast<size_t>(l.pp),
                                         std::vector<double>(static_cast<size_t>(l.vpp), 0.0));
  for (const auto& t : run.tasks) {
    if (t.forward) continue;
    auto& x = ready[static_cast<size_t>(t.stage)][static_cast<size_t>(t.chunk / l.pp)];
    x = std::max(x, engine::to_seconds(t.end).base());
  }
  auto r = finish(s, *p, last_end, busy, ready);
  r.tasks = std::move(run.tasks);
  r.events = run.events;
  return r;
}

base::Result<TrainingResult> estimate_training_step(const TrainingSetup& s) {
  // The estimate serves layout search: a refusal need not say how to fix the layout.
  auto p = prepare(s, /*explain=*/false);
  if (!p) return base::fail(p.error());
  const auto& l = s.layout;
  if (l.schedule == workload::PipelineSchedule::kDualPipe) {
    auto run = run_dualpipe(l, *p, false);
    return finish(s, *p, run.last_end, run.busy, {});
  }
  const double M = static_cast<double>(l.micro_batches());
  // Closed form of (interleaved) 1F1B: the slowest stage's work plus a bubble of (pp-1)/v
  // average micro-batch-stage times, plus the sends on the fill and drain paths.
  std::vector<double> per_stage(static_cast<size_t>(l.pp), 0.0);
  for (int c = 0; c < l.pp * l.vpp; ++c) {
    const auto& k = p->chunks[static_cast<size_t>(c)];
    per_stage[static_cast<size_t>(c % l.pp)] += k.fwd + k.bwd;
  }
  const double avg = std::accumulate(per_stage.begin(), per_stage.end(), 0.0) / l.pp;
  const double send = p->p2p.empty() ? 0.0 : p->p2p.front();
  std::vector<double> last_end, busy;
  for (int st = 0; st < l.pp; ++st) {
    const double b = M * per_stage[static_cast<size_t>(st)];
    busy.push_back(b);
    last_end.push_back(M * *std::max_element(per_stage.begin(), per_stage.end()) +
                       (l.pp - 1) * avg / l.vpp + 2.0 * (l.pp - 1) * send);
  }
  return finish(s, *p, last_end, busy, {});
}

base::Result<TrainingPartCosts> training_part_costs(const TrainingSetup& s) {
  CT_CHECK(s.model && s.compute && s.comm, "training setup needs a model, compute and comm model");
  const auto& m = *s.model;
  const auto& l = s.layout;
  const models::PassSpec pass = training_pass(m, l);
  if (auto st = models::check_layout(m, pass); !st) return base::fail(st.error());
  Context c{s, m, l, pass, s.gpus > 0 ? s.gpus : l.gpus()};
  PartCache cache;
  auto part = [](const ChunkCost& k) {
    return TrainingPartCost{.fwd_compute = k.fwd_compute,
                            .bwd_compute = k.bwd_compute,
                            .recompute = k.recompute,
                            .tp = k.tp,
                            .ep = k.ep,
                            .cp = k.cp,
                            .host_fwd = k.host_fwd,
                            .host_bwd = k.host_bwd};
  };
  TrainingPartCosts out;
  out.embedding = part(chunk_cost(c, 0, 0, true, false, cache));
  out.head = part(chunk_cost(c, 0, 0, false, true, cache));
  // The head's parts one by one (each its own ZeRO 3 unit), from the costs just computed.
  auto cached = [&](Part p) {
    const auto it = cache.find(std::make_pair(static_cast<int>(p), std::string()));
    if (it == cache.end()) return TrainingPartCost{};
    const PartCost& pc = it->second;
    return TrainingPartCost{.fwd_compute = pc.fwd,
                            .bwd_compute = pc.bwd,
                            .recompute = pc.recompute,
                            .tp = pc.tp,
                            .ep = pc.ep,
                            .cp = pc.cp,
                            .host_fwd = pc.host_fwd,
                            .host_bwd = pc.host_bwd};
  };
  out.output = cached(Part::kHead);
  out.mtp = cached(Part::kMtp);
  out.layers.reserve(static_cast<size_t>(m.layers));
  std::map<std::string, TrainingPartCost> kinds;
  for (int i = 0; i < m.layers; ++i) {
    const std::string kind = models::layer_kind(m, i);
    auto it = kinds.find(kind);
    if (it == kinds.end())
      it = kinds.emplace(kind, part(chunk_cost(c, i, 1, false, false, cache))).first;
    out.layers.push_back(it->second);
  }
  return out;
}

}  // namespace clustertwin::execution
