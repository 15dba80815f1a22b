// Operator lists of a model; conventions in ops.h, equations in docs/models/models.md.

#include "clustertwin/models/ops.h"

#include <algorithm>
#include <string>

namespace clustertwin::models {
namespace {

using compute::AttentionShape;
using compute::AttentionVariant;
using compute::DType;
using compute::GemmShape;
using compute::MoeShape;
using compute::Op;
using compute::OpKind;
using compute::Pass;

constexpr double kAct = 2.0;  // bf16 activations

double d(int64_t v) { return static_cast<double>(v); }

int64_t div_up(int64_t a, int64_t b) { return b <= 1 ? a : (a + b - 1) / b; }

Op gemm(const char* name, GemmShape s, DType dtype, int64_t count = 1) {
  Op o{.name = name, .kind = OpKind::kGemm, .dtype = dtype};
  o.gemm = s;
  o.count = count;
  o.flops = base::flops(s.flops() * d(count));
  o.bytes = base::bytes(d(count) * (compute::weight_bytes(dtype) * d(s.n) * d(s.k) +
                                    kAct * d(s.m) * d(s.k) + kAct * d(s.m) * d(s.n)));
  return o;
}

Op memory(const char* name, double bytes) {
  Op o{.name = name, .kind = OpKind::kMemory};
  o.bytes = base::bytes(bytes);
  return o;
}

struct Dims {
  int64_t t;     // tokens through GEMMs and attention
  int64_t t_sp;  // tokens through element-wise kernels (sequence parallel)
  int64_t h;
  int64_t heads;  // local
  int64_t kv;     // local
  int64_t ffn;    // local dense width
  int64_t vocab;  // local
};

Dims dims(const ModelSpec& m, const PassSpec& p) {
  Dims x;
  x.t = p.tokens();
  x.t_sp = p.sequence_parallel ? div_up(x.t, p.tp) : x.t;
  x.h = m.hidden;
  x.heads = div_up(m.heads, p.tp);
  x.kv = std::max<int64_t>(1, div_up(m.kv_heads, p.tp));
  x.ffn = div_up(m.ffn, p.tp);
  x.vocab = div_up(m.vocab, p.tp);
  return x;
}

double norm_bytes(const Dims& x) {
  // Residual add and norm fused: read the branch output and the residual, write both.
  return kAct * 4.0 * d(x.t_sp) * d(x.h);
}

AttentionShape attention_shape(const ModelSpec& m, int layer, const PassSpec& p, const Dims& x) {
  AttentionShape a;
  a.batch = p.batch;
  a.heads = x.heads;
  a.kv_heads = x.kv;
  a.head_dim_qk = m.q_head_dim();
  a.head_dim_v = m.v_head_dim();
  a.kv_bytes = p.kv_bytes;
  a.fp8_math = p.fp8_attention;
  if (m.mla) {
    a.kv_lora_rank = m.mla->kv_lora_rank;
    a.rope_dim = m.mla->qk_rope_head_dim;
    a.variant =
        p.phase == Phase::kDecode ? AttentionVariant::kMlaDecode : AttentionVariant::kMlaPrefill;
  }
  if (p.phase == Phase::kDecode) {
    a.q_len = 1;
    a.kv_len = p.context + 1;
  } else if (p.cp > 1) {
    // Load-balanced ring attention: each rank does 1/cp of the causal work, s/cp queries over
    // (s+1)/2 keys on average (fewer in a local layer: ModelSpec::attended_keys).
    a.q_len = div_up(p.seq_len, p.cp);
    const auto keys = static_cast<int64_t>(m.attended_keys(layer, p.seq_len, true));
    a.kv_len =
        p.context + std::max<int64_t>(1, m.is_local_layer(layer) ? keys : (p.seq_len + 1) / 2);
    a.causal = false;
    return a;
  } else {
    a.q_len = p.seq_len;
    a.kv_len = p.context + p.seq_len;
  }
  if (m.is_local_layer(layer)) {
    a.window = m.local_attention->window;
    a.chunked = m.local_attention->kind == LocalAttention::kChunked;
  }
  return a;
}

void attention_block(const ModelSpec& m, int layer, const PassSpec& p, const Dims& x,
                     std::vector<Op>& ops) {
  ops.push_back(memory("input_norm", norm_bytes(x)));
  const AttentionShape a = attention_shape(m, layer, p, x);
  Op attn{.name = "attention", .kind = OpKind::kAttention};
  attn.attention = a;
  attn.flops = base::flops(a.flops());
  attn.bytes = base::bytes(a.bytes());
  if (!m.mla) {
    ops.push_back(gemm("qkv_proj", {x.t, (x.heads + 2 * x.kv) * m.head_dim, x.h}, p.dtype));
    if (m.qk_norm) {
      // Per-head RMSNorm of q and k (Qwen3, Gemma 3, GLM-4.5): read and write both.
      ops.push_back(memory("qk_norm", kAct * 2.0 * d(x.t) * d(x.heads + x.kv) * d(m.head_dim)));
    }
    if (p.phase == Phase::kTraining) {
      // RoPE on q and k (inference kernels fuse it into attention).
      ops.push_back(memory("rope", kAct * 2.0 * d(x.t) * d(x.heads + x.kv) * d(m.head_dim)));
    }
    ops.push_back(attn);
    ops.push_back(gemm("o_proj", {x.t, x.h, x.heads * m.head_dim}, p.dtype));
    return;
  }
  const MlaSpec& l = *m.mla;
  const int64_t latent = l.kv_lora_rank + l.qk_rope_head_dim;
  const int64_t qk = l.qk_nope_head_dim + l.qk_rope_head_dim;
  // Down projections (replicated over TP), fused as TensorRT-LLM and Megatron do.
  ops.push_back(gemm("qkv_a_proj", {x.t, l.q_lora_rank + latent, x.h}, p.dtype));
  ops.push_back(memory("q_kv_a_norm", kAct * 2.0 * d(x.t) * d(l.q_lora_rank + l.kv_lora_rank)));
  if (l.q_lora_rank > 0) {
    ops.push_back(gemm("q_b_proj", {x.t, x.heads * qk, l.q_lora_rank}, p.dtype));
  } else {
    ops.push_back(gemm("q_proj", {x.t, x.heads * qk, x.h}, p.dtype));
  }
  if (p.phase == Phase::kDecode) {
    // Absorbed MLA (DeepSeek-V2 §2.1.2): W_UK folded into the query, W_UV into the output, so
    // attention runs over the latent cache; two per-head batched GEMMs replace kv_b_proj.
    ops.push_back(
        gemm("q_absorb", {x.t, l.kv_lora_rank, l.qk_nope_head_dim}, DType::kBf16, x.heads));
    ops.push_back(attn);
    ops.push_back(gemm("v_absorb", {x.t, l.v_head_dim, l.kv_lora_rank}, DType::kBf16, x.heads));
  } else {
    ops.push_back(gemm("kv_b_proj",
                       {x.t, x.heads * (l.qk_nope_head_dim + l.v_head_dim), l.kv_lora_rank},
                       p.dtype));
    ops.push_back(attn);
  }
  ops.push_back(gemm("o_proj", {x.t, x.h, x.heads * l.v_head_dim}, p.dtype));
}

void dense_mlp(const ModelSpec& m, const PassSpec& p, const Dims& x, std::vector<Op>& ops) {
  if (m.mlp == MlpKind::kGelu) {
    ops.push_back(gemm("mlp_up", {x.t, x.ffn, x.h}, p.dtype));
    ops.push_back(memory("mlp_act", kAct * 2.0 * d(x.t) * d(x.ffn)));
  } else {
    ops.push_back(gemm("mlp_gate_up", {x.t, 2 * x.ffn, x.h}, p.dtype));
    ops.push_back(memory("mlp_act", kAct * 3.0 * d(x.t) * d(x.ffn)));
  }
  ops.push_back(gemm("mlp_down", {x.t, x.h, x.ffn}, p.dtype));
}

void moe_mlp(const ModelSpec& m, const PassSpec& p, const Dims& x, std::vector<Op>& ops) {
  const MoeSpec& e = *m.moe;
  ops.push_back(gemm("router", {x.t, e.experts, x.h}, DType::kBf16));
  ops.push_back(memory("router_topk", 4.0 * 2.0 * d(x.t) * e.experts));
  if (e.shared_experts > 0) {
    const int64_t f = div_up(e.shared_experts * m.shared_expert_ffn(), p.tp);
    ops.push_back(gemm("shared_gate_up", {x.t, 2 * f, x.h}, p.dtype));
    ops.push_back(memory("shared_act", kAct * 3.0 * d(x.t) * d(f)));
    ops.push_back(gemm("shared_down", {x.t, x.h, f}, p.dtype));
    if (e.shared_gate) ops.push_back(gemm("shared_expert_gate", {x.t, 1, x.h}, p.dtype));
  }
  Op experts{.name = "experts", .kind = OpKind::kMoe, .dtype = p.dtype};
  // MoeShape.tokens counts the tokens of the whole EP group (each of ep ranks brings T), so that
  // this GPU's share is T * topk pairs (compute/op.h). Training (Megatron-Core MoE parallel
  // folding) dispatches each rank's sequence-parallel tokens, gathered over the etp ranks that
  // split an expert's width: T = t_sp * etp.
  const int64_t t = p.phase == Phase::kTraining ? x.t_sp * p.etp : x.t;
  experts.moe = MoeShape{.tokens = t * p.ep,
                         .hidden = x.h,
                         .inter = e.expert_ffn,
                         .topk = e.topk,
                         .experts = e.experts,
                         .tp = p.etp,
                         .ep = p.ep,
                         .imbalance = p.moe_imbalance};
  experts.flops = base::flops(experts.moe.flops());
  experts.bytes = base::bytes(experts.moe.bytes(p.dtype));
  ops.push_back(experts);
}

void decoder_layer(const ModelSpec& m, int layer, const PassSpec& p, std::vector<Op>& ops) {
  const Dims x = dims(m, p);
  attention_block(m, layer, p, x, ops);
  ops.push_back(memory("post_attn_norm", norm_bytes(x)));
  if (m.is_moe_layer(layer)) {
    moe_mlp(m, p, x, ops);
  } else {
    dense_mlp(m, p, x, ops);
  }
}

void head(const ModelSpec& m, const PassSpec& p, std::vector<Op>& ops) {
  Dims x = dims(m, p);
  // Inference computes logits for the last position of each sequence only.
  const int64_t t = p.phase == Phase::kTraining ? x.t : p.batch;
  ops.push_back(
      memory("final_norm", kAct * 2.0 * d(p.phase == Phase::kTraining ? x.t_sp : t) * d(x.h)));
  ops.push_back(gemm("logits", {t, x.vocab, x.h}, DType::kBf16));
  if (p.phase == Phase::kTraining) {
    // Fused softmax cross-entropy: read the logits, write their gradient.
    ops.push_back(memory("loss", kAct * 2.0 * d(t) * d(x.vocab)));
  } else {
    ops.push_back(memory("sampling", kAct * d(t) * d(x.vocab)));
  }
}

void embedding(const ModelSpec& m, const PassSpec& p, std::vector<Op>& ops) {
  const Dims x = dims(m, p);
  const double rows = m.position == PositionKind::kLearned ? 2.0 : 1.0;  // token + position rows
  ops.push_back(memory("embedding", kAct * (rows + 1.0) * d(x.t_sp) * d(x.h)));
}

void mtp_module(const ModelSpec& m, const PassSpec& p, std::vector<Op>& ops) {
  const Dims x = dims(m, p);
  // DeepSeek-V3 §2.2: embed the shifted tokens (shared table), normalise both inputs, project
  // [h; e] (2h) to h, one decoder layer, then the shared output head.
  embedding(m, p, ops);
  ops.push_back(memory("mtp_norms", kAct * 4.0 * d(x.t_sp) * d(x.h)));
  ops.push_back(gemm("mtp_eh_proj", {x.t, x.h, 2 * x.h}, p.dtype));
  decoder_layer(m, m.layers - 1, p, ops);
  head(m, p, ops);
}

}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kTraining:
      return "training";
    case Phase::kPrefill:
      return "prefill";
    case Phase::kDecode:
      return "decode";
  }
  return "?";
}

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

std::optional<Recompute> parse_recompute(std::string_view s) {
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    if (s == recompute_name(r)) return r;
  }
  return std::nullopt;
}

const char* part_name(Part p) {
  switch (p) {
    case Part::kEmbedding:
      return "embedding";
    case Part::kLayer:
      return "layer";
    case Part::kHead:
      return "head";
    case Part::kMtp:
      return "mtp";
  }
  return "?";
}

int64_t PassSpec::tokens() const {
  if (phase == Phase::kDecode) return batch;
  return batch * div_up(seq_len, cp);
}

base::Status check_layout(const ModelSpec& m, const PassSpec& p) {
  auto must_divide = [&](int64_t what, int by, const char* name,
                         const char* by_name) -> base::Status {
    if (by < 1)
      return base::fail(std::string(by_name) + " must be >= 1, got " + std::to_string(by));
    if (what % by != 0) {
      return base::fail(std::string(name) + " = " + std::to_string(what) + " of model '" + m.name +
                        "' is not divisible by " + by_name + " = " + std::to_string(by));
    }
    return {};
  };
  for (auto st :
       {must_divide(m.heads, p.tp, "heads", "tp"), must_divide(p.seq_len, p.cp, "seq_len", "cp")}) {
    if (!st) return st;
  }
  if (m.kv_heads >= p.tp) {
    if (auto st = must_divide(m.kv_heads, p.tp, "kv_heads", "tp"); !st) return st;
  } else if (p.tp % m.kv_heads != 0) {
    return base::fail("tp = " + std::to_string(p.tp) +
                      " is neither a divisor nor a multiple of kv_heads = " +
                      std::to_string(m.kv_heads) + " of model '" + m.name + "'");
  }
  if (m.ffn > 0) {
    if (auto st = must_divide(m.ffn, p.tp, "ffn", "tp"); !st) return st;
  }
  if (m.moe) {
    if (auto st = must_divide(m.moe->experts, p.ep, "experts", "ep"); !st) return st;
    if (auto st = must_divide(m.moe->expert_ffn, p.etp, "expert_ffn", "etp"); !st) return st;
  } else if (p.ep != 1) {
    return base::fail("ep = " + std::to_string(p.ep) + " but model '" + m.name +
                      "' has no experts");
  }
  if (p.batch < 1 || p.seq_len < 1 || p.context < 0) {
    return base::fail("batch and seq_len must be >= 1 and context >= 0");
  }
  return {};
}

const char* layer_kind(const ModelSpec& m, int layer) {
  const bool moe = m.is_moe_layer(layer);
  if (m.is_local_layer(layer)) return moe ? "moe-local" : "dense-local";
  return moe ? "moe" : "dense";
}

std::vector<Op> forward_ops(const ModelSpec& m, Part part, int index, const PassSpec& p) {
  std::vector<Op> ops;
  switch (part) {
    case Part::kEmbedding:
      embedding(m, p, ops);
      break;
    case Part::kLayer:
      decoder_layer(m, index, p, ops);
      break;
    case Part::kHead:
      head(m, p, ops);
      break;
    case Part::kMtp:
      if (index < m.mtp_layers) mtp_module(m, p, ops);
      break;
  }
  return ops;
}

std::vector<Op> backward_of(const std::vector<Op>& forward) {
  std::vector<Op> out;
  out.reserve(forward.size() * 2);
  // Gradients flow from the last op to the first.
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    const Op& f = *it;
    switch (f.kind) {
      case OpKind::kGemm: {
        Op dg = gemm(f.name, compute::dgrad_shape(f.gemm), f.dtype, f.count);
        dg.pass = Pass::kDgrad;
        Op wg = gemm(f.name, compute::wgrad_shape(f.gemm), f.dtype, f.count);
        wg.pass = Pass::kWgrad;
        out.push_back(dg);
        out.push_back(wg);
        break;
      }
      case OpKind::kAttention: {
        Op b = f;
        b.kind = OpKind::kAttentionBackward;
        b.pass = Pass::kBackward;
        b.flops = f.flops * 2.5;
        b.bytes = f.bytes * 2.0;
        out.push_back(b);
        break;
      }
      case OpKind::kMoe: {
        Op b = f;
        b.kind = OpKind::kMoeBackward;
        b.pass = Pass::kBackward;
        b.flops = f.flops * 2.0;
        b.bytes = f.bytes * 2.0;
        out.push_back(b);
        break;
      }
      case OpKind::kAttentionBackward:
      case OpKind::kMoeBackward:
        break;
      case OpKind::kMemory: {
        Op b = f;
        b.pass = Pass::kBackward;
        b.bytes = f.bytes * 2.0;
        out.push_back(b);
        break;
      }
    }
  }
  return out;
}

std::vector<Op> backward_ops(const ModelSpec& m, Part part, int index, const PassSpec& p) {
  if (p.phase != Phase::kTraining) return {};
  return backward_of(forward_ops(m, part, index, p));
}

std::vector<Op> recompute_ops(const ModelSpec& m, Part part, int index, const PassSpec& p,
                              Recompute r) {
  if (p.phase != Phase::kTraining || r == Recompute::kNone) return {};
  if (part != Part::kLayer && part != Part::kMtp) return {};
  std::vector<Op> ops;
  for (Op o : forward_ops(m, part, index, p)) {
    if (r == Recompute::kSelective && o.kind != OpKind::kAttention) continue;
    o.pass = Pass::kRecompute;
    ops.push_back(o);
  }
  return ops;
}

std::vector<Op> model_forward_ops(const ModelSpec& m, const PassSpec& p) {
  std::vector<Op> ops = forward_ops(m, Part::kEmbedding, 0, p);
  for (int i = 0; i < m.layers; ++i) {
    auto layer = forward_ops(m, Part::kLayer, i, p);
    ops.insert(ops.end(), layer.begin(), layer.end());
  }
  auto h = forward_ops(m, Part::kHead, 0, p);
  ops.insert(ops.end(), h.begin(), h.end());
  return ops;
}

}  // namespace clustertwin::models
