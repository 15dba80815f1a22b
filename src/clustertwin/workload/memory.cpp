#include "clustertwin/workload/memory.h"

#include <algorithm>

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

namespace {

// Activation bytes of one layer for one token, split into the part sequence parallelism shards
// and the part it leaves replicated when off.
struct ActPerToken {
  double sharded = 0;
  double replicated = 0;
};

ActPerToken activation_bytes_per_token(const models::ModelSpec& m, const TrainingLayout& l,
                                       int layer) {
  const double h = static_cast<double>(m.hidden);
  const double a = static_cast<double>(m.heads);
  ActPerToken t;
  double qkv_widths = 0, attn_out = 0;
  if (m.mla) {
    const auto& x = *m.mla;
    const double dq = static_cast<double>(x.qk_nope_head_dim + x.qk_rope_head_dim);
    qkv_widths = static_cast<double>(x.q_lora_rank + x.kv_lora_rank + x.qk_rope_head_dim) +
                 a * dq * 2 + a * static_cast<double>(x.v_head_dim);
    attn_out = a * static_cast<double>(x.v_head_dim);
  } else {
    const double d = static_cast<double>(m.head_dim);
    qkv_widths = a * d + 2.0 * static_cast<double>(m.kv_heads) * d;
    attn_out = a * d;
  }
  // GEMM inputs saved for the backward pass are FP8 (1 B) when training in FP8 (Transformer
  // Engine caches the cast), bf16 (2 B) otherwise. Dropout masks (1 B) only where the model
  // family trains with dropout (GPT-style GELU models; Llama/DeepSeek recipes use none).
  const bool fp8 = l.dtype != compute::DType::kBf16;
  const double in = fp8 ? 1.0 : 2.0;
  const double mask = m.mlp == models::MlpKind::kGelu ? 1.0 : 0.0;
  // Attention: Q/K/V, the attention output (the output projection's input); the norm output
  // (the QKV GEMM's input) and the dropout mask are replicated without sequence parallelism.
  t.sharded += 2 * qkv_widths + 2 * attn_out;
  t.replicated += in * h + mask * h;
  if (!l.flash_attention && l.recompute == Recompute::kNone) {
    // Scores, softmax output and dropout mask: 5 a s bytes per token (Korthikanti Table 2).
    t.sharded += 5.0 * a * static_cast<double>(l.seq_len) / l.cp;
  }
  // MLP or MoE.
  if (m.is_moe_layer(layer)) {
    const double fe = static_cast<double>(m.moe->expert_ffn);
    t.sharded +=
        m.moe->topk * (in * h + 4 * fe + in * fe) + m.moe->shared_experts * (4 * fe + in * fe);
    t.replicated += in * h + mask * h;
  } else {
    // GELU: fc1 output (2f) + GELU output, the fc2 input (in*f); SwiGLU: gate and up outputs
    // (4f) + their product, the down projection's input (in*f).
    const double f = static_cast<double>(m.ffn);
    t.sharded += m.mlp == models::MlpKind::kGelu ? 2 * f + in * f : 4 * f + in * f;
    t.replicated += in * h + mask * h;
  }
  t.replicated += 4 * h;  // two norms' inputs (bf16)
  return t;
}

}  // namespace

std::vector<MemoryBreakdown> training_memory(const models::ModelSpec& m, const TrainingLayout& l) {
  const auto pc = models::count_params(m);
  const int chunks = l.pp * l.vpp;
  const auto split = split_layers(m.layers, chunks);
  std::vector<int> first_layer(static_cast<size_t>(chunks), 0);
  for (int c = 1; c < chunks; ++c) {
    first_layer[static_cast<size_t>(c)] =
        first_layer[static_cast<size_t>(c - 1)] + split[static_cast<size_t>(c - 1)];
  }
  const double tokens = static_cast<double>(l.micro_batch * l.seq_len / l.cp);
  const double tp = l.tp;
  const double dense_shard = static_cast<double>(l.dp) * l.cp;
  const double expert_shard = dense_shard / l.ep;
  // Model weights as the GEMMs read them: bf16, or FP8 / NVFP4 primary weights when training in
  // low precision (Megatron-Core --fp8-param-gather: the fp32 master copy lives in the optimizer).
  double weight_bytes = 2.0;
  if (l.dtype == compute::DType::kFp8 || l.dtype == compute::DType::kFp8Block) weight_bytes = 1.0;
  if (l.dtype == compute::DType::kNvfp4) weight_bytes = 0.5625;
  const double nmb = static_cast<double>(l.micro_batches());

  std::vector<MemoryBreakdown> out;
  for (int s = 0; s < l.pp; ++s) {
    MemoryBreakdown b;
    b.stage = s;
    double dense = 0, expert = 0, act_layer_sum = 0;
    double max_layer_act = 0;
    for (int v = 0; v < l.vpp; ++v) {
      const int c = v * l.pp + s;
      for (int i = 0; i < split[static_cast<size_t>(c)]; ++i) {
        const int layer = first_layer[static_cast<size_t>(c)] + i;
        const auto lp = layer_params_from(pc, m, layer);
        dense += (lp.attention + lp.mlp_dense + lp.shared + lp.norms) / tp + lp.router;
        expert += lp.routed / l.ep;
        const auto a = activation_bytes_per_token(m, l, layer);
        const double per_token = l.sequence_parallel || l.tp == 1 ? (a.sharded + a.replicated) / tp
                                                                  : a.sharded / tp + a.replicated;
        max_layer_act = std::max(max_layer_act, per_token);
        act_layer_sum +=
            l.recompute == Recompute::kFull ? 2.0 * static_cast<double>(m.hidden) / tp : per_token;
      }
    }
    if (s == 0) dense += pc.embedding / tp;
    if (s == l.pp - 1) dense += pc.output / tp;
    b.params = dense + expert;
    auto shard = [&](double bytes_per, int stage_from) {
      const bool sharded = l.zero >= stage_from;
      return dense * bytes_per / (sharded ? dense_shard : 1.0) +
             expert * bytes_per / (sharded ? expert_shard : 1.0);
    };
    b.weights = base::bytes(shard(weight_bytes, 3));
    if (l.zero >= 3) {
      // Two layers' gathered weights in flight (prefetch).
      b.weights += base::bytes(2.0 * (dense + expert) / std::max(1, m.layers / (l.pp * l.vpp)) *
                               weight_bytes / static_cast<double>(std::max(1, l.pp)));
    }
    b.gradients = base::bytes(shard(static_cast<double>(l.grad_bytes), 2));
    b.optimizer = base::bytes(shard(12.0, 1));
    // In-flight chunk-micro-batches: warm-up of the (interleaved) 1F1B schedule plus one.
    const double inflight_chunks =
        std::min(static_cast<double>((l.pp - s - 1) * 2 + (l.vpp - 1) * l.pp + 1), nmb * l.vpp);
    const double per_chunk_layers = act_layer_sum / l.vpp;
    b.activations = base::bytes(tokens * per_chunk_layers * inflight_chunks);
    if (l.recompute == Recompute::kFull) b.activations += base::bytes(tokens * max_layer_act);
    if (l.vpp == 1) {
      b.activations =
          base::bytes(tokens * act_layer_sum * std::min(static_cast<double>(l.pp - s), nmb));
      if (l.recompute == Recompute::kFull) b.activations += base::bytes(tokens * max_layer_act);
    }
    if (s == l.pp - 1) {
      // bf16 logits + fp32 softmax for the micro-batch in the loss (vocab-parallel over tp).
      b.logits = base::bytes(tokens * static_cast<double>(m.vocab) * 6.0 / tp);
    }
    b.buffers = base::bytes(kFrameworkBufferBytes);
    out.push_back(b);
  }
  return out;
}

base::Result<MemoryBreakdown> check_memory(const models::ModelSpec& m, const TrainingLayout& l,
                                           Bytes capacity) {
  auto stages = training_memory(m, l);
  const MemoryBreakdown* worst = &stages.front();
  for (const auto& s : stages) {
    if (s.total() > worst->total()) worst = &s;
  }
  if (worst->total() > capacity) {
    auto terms = worst->terms();
    auto big = std::max_element(terms.begin(), terms.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });
    return base::fail("the layout does not fit in GPU memory: stage " +
                      std::to_string(worst->stage) + " needs " + base::format(worst->total()) +
                      " per GPU, the GPU has " + base::format(capacity) +
                      " usable; biggest term: " + big->first + " " + base::format(big->second) +
                      " (try more tp/pp, zero >= 1, recompute full or a smaller micro batch)");
  }
  return *worst;
}

}  // namespace clustertwin::workload
