#include "clustertwin/workload/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "clustertwin/base/units_parse.h"

namespace clustertwin::workload {

std::vector<std::pair<std::string, Bytes>> MemoryBreakdown::terms() const {
  return {{"weights", weights},         {"gradients", gradients}, {"optimizer", optimizer},
          {"activations", activations}, {"logits", logits},       {"buffers", buffers}};
}

namespace {
LayerParams layer_params_from(const models::ParamCounts& pc, const models::ModelSpec& m,
                              int layer) {
  LayerParams p;
  const double layers = m.layers;
  p.attention = pc.attention / layers;
  p.norms = pc.norms / (layers + 1);
  const int moe_layers = m.moe_layer_count();
  const int dense_layers = m.layers - moe_layers;
  if (m.is_moe_layer(layer)) {
    p.routed = pc.routed_experts / moe_layers;
    p.shared = pc.shared_experts / moe_layers;
    p.router = pc.routers / moe_layers;
  } else if (dense_layers > 0) {
    p.mlp_dense = pc.dense_mlp / dense_layers;
  }
  return p;
}
}  // namespace

LayerParams layer_params(const models::ModelSpec& m, int layer) {
  return layer_params_from(models::count_params(m), m, layer);
}

double lora_layer_params(const models::ModelSpec& m, int layer, int rank) {
  if (rank <= 0) return 0;
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads);
  double dims = 0;  // sum over adapted linears of (in + out)
  if (m.mla) {
    const auto& x = *m.mla;
    const double dq = static_cast<double>(x.qk_nope_head_dim + x.qk_rope_head_dim);
    dims += h + static_cast<double>(x.q_lora_rank + x.kv_lora_rank + x.qk_rope_head_dim);
    dims += static_cast<double>(x.q_lora_rank) + a * dq;
    dims += static_cast<double>(x.kv_lora_rank) +
            a * static_cast<double>(x.qk_nope_head_dim + x.v_head_dim);
    dims += a * static_cast<double>(x.v_head_dim) + h;
  } else {
    const double d = static_cast<double>(m.head_dim);
    dims += h + (a + 2.0 * static_cast<double>(m.kv_heads)) * d;  // qkv
    dims += a * d + h;                                            // output projection
  }
  (void)layer;
  return rank * dims;
}

namespace {

namespace rm = recompute_module;

// Stored activation bytes of one layer for one token, by how tensor / sequence parallelism
// divides them: `tp` always divided by tp (head- and width-sharded tensors), `sp` divided by tp
// only under sequence parallelism (hidden-sized tensors), `rep` never (MLA's latent, computed
// from the gathered sequence on every TP rank).
struct ActPerToken {
  double tp = 0, sp = 0, rep = 0;
  [[nodiscard]] double per_gpu(const TrainingLayout& l) const {
    const double t = l.tp;
    return tp / t + (l.sequence_parallel || l.tp == 1 ? sp / t : sp) + rep;
  }
};

// Busiest EP rank's routed copies per token, relative to topk: the imbalance of the routing,
// capped by the capacity factor when tokens beyond it are dropped.
double routed_load(const TrainingLayout& l) {
  double load = l.routing == MoeRouting::kMeasured ? moe_imbalance_measured(l.ep) : 1.0;
  if (l.capacity_factor > 0) load = std::min(load, l.capacity_factor);
  return load;
}

ActPerToken layer_activations(const models::ModelSpec& m, const TrainingLayout& l, int layer,
                              uint32_t bits) {
  const double h = static_cast<double>(m.hidden);
  const double a = static_cast<double>(m.heads);
  const bool fp8 = l.dtype != compute::DType::kBf16;
  const double e = fp8 ? 1.0 : 2.0;  // GEMM inputs as saved (TE caches the FP8 cast)
  const double mask = m.mlp == models::MlpKind::kGelu ? 1.0 : 0.0;  // GPT dropout masks
  ActPerToken t;
  // --- attention block
  t.sp += 2 * h + mask * h;                     // layer input (input norm), dropout mask
  if (!(bits & rm::kLayernorm)) t.sp += e * h;  // norm output = QKV / down-projection input
  double qkv = 0, dv = 0;
  if (m.mla) {
    const auto& x = *m.mla;
    const double dq = static_cast<double>(x.qk_nope_head_dim + x.qk_rope_head_dim);
    dv = static_cast<double>(x.v_head_dim);
    qkv = a * dq * 2 + a * dv;  // q, k (nope + rope) and v, expanded per head
    const double latent = static_cast<double>(x.q_lora_rank + x.kv_lora_rank);
    // Down-projection outputs (the q/kv norms' inputs, k_pe) and the norms' outputs (the up
    // projections' inputs).
    t.rep += 2 * (latent + static_cast<double>(x.qk_rope_head_dim)) + e * latent;
    if (bits & rm::kMlaUpProj) qkv = 0;
  } else {
    const double d = static_cast<double>(m.head_dim);
    dv = d;
    qkv = a * d + 2.0 * static_cast<double>(m.kv_heads) * d;
    if (m.qk_norm) {
      // Per-head RMSNorm of q and k (Qwen3, Gemma 3, GLM-4.5; Megatron-Core SelfAttention's
      // q_layernorm / k_layernorm, Transformer Engine RMSNorm): each keeps its bf16 input and an
      // fp32 1/rms per head row for its backward. Megatron's `layernorm` recompute module covers
      // the layer's input and pre-MLP norms only, so these stay.
      const double rows = a + static_cast<double>(m.kv_heads);
      t.tp += rows * (2.0 * d + 4.0);
    }
  }
  const double attn_bytes = l.fp8_attention ? 1.0 : 2.0;  // Q, K, V as FlashAttention keeps them
  t.tp += attn_bytes * qkv;
  // O: FlashAttention keeps it (bf16) for its backward; the output projection keeps its input,
  // the same tensor in bf16, an FP8 copy when training in FP8 (Transformer Engine). DeepSeek-V3
  // (§3.3.3) keeps one copy for both, in its 12-bit E5M6 format.
  const double o_flash = 2 * a * dv;
  if (l.fp8_attention) {
    t.tp += a * dv;  // FP8 O, the FP8 output projection's input as it is
  } else if (l.dtype == compute::DType::kFp8Block) {
    t.tp += 1.5 * a * dv;
  } else if (fp8) {
    t.tp += a * dv + ((bits & rm::kCoreAttn) ? 0.0 : o_flash);
  } else {
    t.tp += o_flash;
  }
  if (!l.flash_attention && !(bits & rm::kCoreAttn)) {
    // Unfused: scores, softmax output and dropout mask, 5 a s bytes per token (Korthikanti
    // Table 2).
    t.tp += 5.0 * a * static_cast<double>(l.seq_len) / l.cp;
  }
  // --- MLP or MoE block. Under LoRA the MLP GEMMs are frozen: no weight gradient, so their
  // inputs (e_in) are not kept, only what the activation's backward needs.
  const double e_in = l.lora_rank > 0 ? 0.0 : e;
  t.sp += 2 * h + mask * h;  // residual (pre-MLP norm input), dropout mask
  if (m.is_moe_layer(layer)) {
    const auto& x = *m.moe;
    const double fe = static_cast<double>(x.expert_ffn);
    if (!(bits & rm::kLayernorm)) t.sp += 2 * h;  // norm output: router input (bf16 GEMM)
    t.sp += 8.0 * x.experts;                      // fp32 router logits and scores
    if (!(bits & rm::kMoe)) {
      // Per routed copy on this rank: the sequence-parallel tokens go to the EP ranks as they
      // are, gathered over etp ranks that each hold 1/etp of the expert's width (the grouped
      // GEMM input and row map are whole per rank, the SwiGLU tensors 1/etp).
      const double etp = l.etp;
      const double act_in = (l.fp8_activation_store ? 1.0 : 2.0) * 2 * fe;  // SwiGLU input
      const double copy =
          etp * (e_in * h + 4.0) + act_in + ((bits & rm::kMoeAct) ? 0.0 : e_in * fe);  // + row map
      t.sp += x.topk * routed_load(l) * copy;
      if (x.shared_experts > 0 && !(bits & rm::kSharedExperts)) {
        const double fs = x.shared_experts * fe;
        t.sp += e_in * h;
        t.tp += 4 * fs + e_in * fs;
      }
    }
  } else if (bits & rm::kMlp) {
    t.sp += e * h;  // the checkpointed block's input
  } else {
    if (!(bits & rm::kLayernorm)) t.sp += e_in * h;
    const double f = static_cast<double>(m.ffn);
    const double act_in = (l.fp8_activation_store ? 1.0 : 2.0) *
                          (m.mlp == models::MlpKind::kGelu ? f : 2 * f);  // activation input
    t.tp += act_in + e_in * f;
  }
  return t;
}

struct StageLayers {
  std::vector<int> layers;  // decoder layers held by this rank
  bool embedding = false, head = false;
  int stages_held = 1;  // DualPipe: 2
};

std::vector<StageLayers> stage_layers(const models::ModelSpec& m, const TrainingLayout& l) {
  const int chunks = l.pp * l.vpp;
  const auto split = split_layers(m.layers, chunks);
  std::vector<int> first(static_cast<size_t>(chunks), 0);
  for (int c = 1; c < chunks; ++c) {
    first[static_cast<size_t>(c)] =
        first[static_cast<size_t>(c - 1)] + split[static_cast<size_t>(c - 1)];
  }
  std::vector<StageLayers> out(static_cast<size_t>(l.pp));
  auto add_chunk = [&](StageLayers& st, int c) {
    for (int i = 0; i < split[static_cast<size_t>(c)]; ++i) {
      st.layers.push_back(first[static_cast<size_t>(c)] + i);
    }
    if (c == 0) st.embedding = true;
    if (c == chunks - 1) st.head = true;
  };
  for (int s = 0; s < l.pp; ++s) {
    auto& st = out[static_cast<size_t>(s)];
    for (int v = 0; v < l.vpp; ++v) add_chunk(st, v * l.pp + s);
    if (l.schedule == PipelineSchedule::kDualPipe && l.pp - 1 - s != s) {
      add_chunk(st, l.pp - 1 - s);
      st.stages_held = 2;
    }
  }
  return out;
}

// Micro-batches of a stage's layers whose activations are held at the peak.
double inflight(const TrainingLayout& l, int s) {
  const double M = static_cast<double>(l.micro_batches());
  if (l.schedule == PipelineSchedule::kDualPipe) return std::min(M, l.pp + 1.0);
  if (l.vpp == 1) return std::min(M, static_cast<double>(l.pp - s));
  const double chunks =
      std::min(static_cast<double>((l.pp - s - 1) * 2 + (l.vpp - 1) * l.pp + 1), M * l.vpp);
  return chunks / l.vpp;
}

}  // namespace

std::vector<MemoryBreakdown> training_memory(const models::ModelSpec& m, const TrainingLayout& l) {
  const auto pc = models::count_params(m);
  const double tokens = static_cast<double>(l.micro_batch * l.seq_len / l.cp);
  const double tp = l.tp;
  const double dense_shard = static_cast<double>(l.dp) * l.cp;
  // MoE parallel folding: the experts' data-parallel size is tp*cp*dp / (etp*ep).
  const double expert_shard = dense_shard * tp / (static_cast<double>(l.ep) * l.etp);
  // Model weights as the GEMMs read them: bf16, or FP8 / NVFP4 primary weights when training in
  // low precision (Megatron-Core --fp8-param-gather: the fp32 master copy lives in the optimizer).
  double weight_bytes = 2.0;
  if (l.dtype == compute::DType::kFp8 || l.dtype == compute::DType::kFp8Block) weight_bytes = 1.0;
  if (l.dtype == compute::DType::kNvfp4) weight_bytes = 0.5625;
  const double optimizer_bytes = 4.0 + 2.0 * l.moment_bytes;
  const uint32_t bits = l.recompute_bits();
  const bool full = l.recompute == Recompute::kFull;
  const auto stages = stage_layers(m, l);
  // The MTP modules' decoder layer is shaped like the last layer.
  const auto mtp_act = layer_activations(m, l, m.layers - 1, full ? 0u : bits);
  const auto mtp_params = layer_params_from(pc, m, m.layers - 1);

  std::vector<MemoryBreakdown> out;
  for (int s = 0; s < l.pp; ++s) {
    const auto& st = stages[static_cast<size_t>(s)];
    MemoryBreakdown b;
    b.stage = s;
    double dense = 0, expert = 0, lora = 0, act_sum = 0, max_layer = 0;
    for (int layer : st.layers) {
      const auto lp = layer_params_from(pc, m, layer);
      dense += (lp.attention + lp.mlp_dense + lp.shared + lp.norms) / tp + lp.router;
      expert += lp.routed / (static_cast<double>(l.ep) * l.etp);
      lora += lora_layer_params(m, layer, l.lora_rank) / tp;
      const double all = layer_activations(m, l, layer, full ? 0u : bits).per_gpu(l);
      max_layer = std::max(max_layer, all);
      act_sum +=
          full ? 2.0 * static_cast<double>(m.hidden) / (l.sequence_parallel ? tp : 1.0) : all;
    }
    double per_micro = tokens * act_sum;
    if (st.embedding) {
      // Token ids (8 B) and, for GPT, the embedding dropout mask (Megatron's report).
      per_micro +=
          tokens *
          (8.0 + (m.mlp == models::MlpKind::kGelu ? static_cast<double>(m.hidden) / tp : 0.0));
      dense += pc.embedding / tp;
    }
    double logits_bytes = 0;
    if (st.head) {
      dense += pc.output / tp;
      // MTP modules: a projection, norms and one decoder layer each, on the last stage.
      for (int i = 0; i < m.mtp_layers; ++i) {
        dense +=
            (mtp_params.attention + mtp_params.mlp_dense + mtp_params.shared + mtp_params.norms) /
                tp +
            mtp_params.router +
            2.0 * static_cast<double>(m.hidden) * static_cast<double>(m.hidden) / tp;
        expert += mtp_params.routed / (static_cast<double>(l.ep) * l.etp);
        per_micro += tokens * (mtp_act.per_gpu(l) + 6.0 * static_cast<double>(m.hidden) / tp);
      }
      // bf16 logits + fp32 softmax for the micro-batch in the loss (vocab-parallel over tp), per
      // output head.
      logits_bytes = tokens * static_cast<double>(m.vocab) * 6.0 / tp * (1 + m.mtp_layers);
    }
    // DualPipe ranks run each micro-batch through one of their two stages: on average half of
    // what both hold.
    per_micro /= st.stages_held;
    b.params = dense + expert;
    b.trainable_params = l.lora_rank > 0 ? lora : b.params;
    const double trainable_dense = l.lora_rank > 0 ? lora : dense;
    const double trainable_expert = l.lora_rank > 0 ? 0.0 : expert;
    auto shard = [&](double d, double x, double bytes_per, int stage_from) {
      const bool sharded = l.zero >= stage_from;
      return d * bytes_per / (sharded ? dense_shard : 1.0) +
             x * bytes_per / (sharded ? expert_shard : 1.0);
    };
    b.weights = base::bytes(shard(dense, expert, weight_bytes, 3) + lora * 2.0);
    if (l.zero >= 3) {
      // Two layers' gathered weights in flight (prefetch).
      const double per_layer =
          b.params / static_cast<double>(std::max<size_t>(1, st.layers.size()));
      b.weights += base::bytes(2.0 * per_layer * weight_bytes);
    }
    b.gradients =
        base::bytes(shard(trainable_dense, trainable_expert, static_cast<double>(l.grad_bytes), 2));
    b.optimizer = base::bytes(shard(trainable_dense, trainable_expert, optimizer_bytes, 1));
    b.activation_bytes_per_micro_batch = per_micro;
    b.inflight_micro_batches = inflight(l, s);
    double act = per_micro * b.inflight_micro_batches;
    if (full) act += tokens * max_layer;  // the layer being recomputed
    if (l.offload_activations && b.inflight_micro_batches > 1) {
      // One micro-batch's activations stay in HBM (the one running, its layers streaming out
      // and back); the others wait in host memory.
      const double device = per_micro + (full ? tokens * max_layer : 0.0);
      b.offloaded = base::bytes(std::max(0.0, act - device));
      act = std::min(act, device);
    }
    b.activations = base::bytes(act);
    b.logits = base::bytes(logits_bytes);
    b.buffers = base::bytes(kTrainingBufferBytes);
    out.push_back(b);
  }
  return out;
}

namespace {

const MemoryBreakdown& worst_stage(const std::vector<MemoryBreakdown>& stages) {
  const MemoryBreakdown* worst = &stages.front();
  for (const auto& s : stages) {
    if (s.total() > worst->total()) worst = &s;
  }
  return *worst;
}

std::string gb(Bytes b) { return base::format(b); }

}  // namespace

std::optional<MemoryFix> cheapest_memory_fix(const models::ModelSpec& m, const TrainingLayout& l,
                                             Bytes capacity, Bytes host_capacity) {
  // Candidates in order of their cost in step time: recomputing element-wise modules first
  // (norms, the experts' activation), then projections, whole blocks, fewer tokens per
  // micro-batch (smaller GEMMs), offloading (host-link traffic), sharding gradients / weights
  // (more DP traffic), full recomputation (a third more compute).
  std::vector<std::pair<std::string, TrainingLayout>> cands;
  if (l.recompute != Recompute::kFull) {
    std::vector<std::pair<const char*, uint32_t>> steps = {{"layernorm", rm::kLayernorm}};
    if (m.moe) steps.push_back({"moe_act", rm::kMoeAct});
    if (m.mla) steps.push_back({"mla_up_proj", rm::kMlaUpProj});
    if (!l.flash_attention || l.dtype != compute::DType::kBf16) {
      steps.push_back({"core_attn", rm::kCoreAttn});
    }
    if (m.moe && m.moe->shared_experts > 0) steps.push_back({"shared_experts", rm::kSharedExperts});
    if (m.layers > m.moe_layer_count()) steps.push_back({"mlp", rm::kMlp});
    if (m.moe) steps.push_back({"moe", rm::kMoe});
    uint32_t bits = l.recompute_bits();
    for (const auto& [name, bit] : steps) {
      if (bits & bit) continue;
      bits |= bit;
      TrainingLayout c = l;
      c.recompute = Recompute::kSelective;
      c.recompute_modules = bits;
      cands.emplace_back("{recompute_modules} " + recompute_modules_name(bits), c);
    }
  }
  for (int64_t mb = l.micro_batch / 2; mb >= 1; mb /= 2) {
    TrainingLayout c = l;
    c.micro_batch = mb;
    cands.emplace_back("{micro_batch} " + std::to_string(mb) + " (" +
                           std::to_string(c.micro_batches()) + " micro-batches per step)",
                       c);
  }
  if (l.vpp > 1 && l.schedule == PipelineSchedule::k1F1B) {
    // Fewer micro-batches in flight: interleaved 1F1B warms up with (pp - 1) * 2 + (v - 1) * pp
    // + 1 chunk-micro-batches on the first stage (Megatron-Core schedules.py,
    // get_pp_rank_microbatches, with the default microbatch_group_size_per_vp_stage = pp), plain
    // 1F1B with pp micro-batches of the stage's layers; the price is the larger bubble,
    // (pp - 1) / M instead of (pp - 1) / (v M).
    // The message counts them on the stage that is over (the last stage holds the most
    // interleaved chunks relative to plain 1F1B's one micro-batch).
    TrainingLayout c = l;
    c.vpp = 1;
    const int s = worst_stage(training_memory(m, l)).stage;
    char buf[112];
    std::snprintf(buf, sizeof buf,
                  " (no interleaving: %.3g instead of %.3g micro-batches in flight on stage %d)",
                  inflight(c, s), inflight(l, s), s);
    cands.emplace_back("{vpp} 1" + std::string(buf), c);
  }
  if (!l.offload_activations && host_capacity.base() > 0) {
    TrainingLayout c = l;
    c.offload_activations = true;
    cands.emplace_back("{offload} (activations to host memory)", c);
  }
  for (int z = l.zero + 1; z <= 3; ++z) {
    TrainingLayout c = l;
    c.zero = z;
    cands.emplace_back("{zero} " + std::to_string(z), c);
  }
  if (l.recompute != Recompute::kFull) {
    TrainingLayout c = l;
    c.recompute = Recompute::kFull;
    cands.emplace_back("{recompute} full", c);
  }
  for (const auto& [change, c] : cands) {
    auto stages = training_memory(m, c);
    const auto& w = worst_stage(stages);
    bool host_ok = true;
    for (const auto& st : stages) host_ok = host_ok && st.offloaded <= host_capacity;
    if (w.total() <= capacity && host_ok) return MemoryFix{change, c, w};
  }
  return std::nullopt;
}

base::Result<MemoryBreakdown> check_memory(const models::ModelSpec& m, const TrainingLayout& l,
                                           Bytes capacity, Bytes host_capacity, bool suggest) {
  auto stages = training_memory(m, l);
  const MemoryBreakdown& worst = worst_stage(stages);
  Bytes offloaded;
  for (const auto& s : stages) offloaded = std::max(offloaded, s.offloaded);
  if (l.offload_activations && host_capacity.base() > 0 && offloaded > host_capacity) {
    return base::fail("offloaded activations need " + gb(offloaded) +
                      " of host memory per GPU, the host has " + gb(host_capacity) + " per GPU");
  }
  if (worst.total() > capacity) {
    auto terms = worst.terms();
    auto big = std::max_element(terms.begin(), terms.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });
    std::string msg =
        "the layout does not fit in GPU memory: stage " + std::to_string(worst.stage) + " needs " +
        gb(worst.total()) + " per GPU, the GPU has " + gb(capacity) + " usable (over by " +
        gb(worst.total() - capacity) + "); biggest term: " + big->first + " " + gb(big->second);
    if (!suggest) return base::fail(msg);
    if (auto fix = cheapest_memory_fix(m, l, capacity, host_capacity)) {
      msg += "; the cheapest change that fits: " + fix->change + " (" + gb(fix->memory.total()) +
             " per GPU)";
    } else {
      msg += "; no recompute, micro-batch, offload or ZeRO change fits: use more tp, pp or ep";
    }
    return base::fail(msg);
  }
  return worst;
}

double layer_activation_bytes_per_token(const models::ModelSpec& m, const TrainingLayout& l,
                                        int layer) {
  const bool full = l.recompute == Recompute::kFull;
  return layer_activations(m, l, layer, full ? 0u : l.recompute_bits()).per_gpu(l);
}

double inflight_micro_batches(const TrainingLayout& l, int stage) { return inflight(l, stage); }

}  // namespace clustertwin::workload
