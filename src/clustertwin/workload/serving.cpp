// Serving layouts and memory; equations in serving.h and docs/models/inference.md.

#include "clustertwin/workload/serving.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "clustertwin/base/number.h"
#include "clustertwin/config/reader.h"
#include "clustertwin/workload/memory.h"

namespace clustertwin::workload {
namespace {

using base::fail;

// Framework, allocator and communication buffers per GPU (as training's kFrameworkBufferBytes),
// plus the activations of one iteration: ~16 bf16 hidden-size vectors per token in flight
// (residual, norm output, attention and MLP intermediates, all-to-all staging).
constexpr double kActivationVectorsPerToken = 16.0;

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

base::Status validate_instance(const InstanceLayout& i, const models::ModelSpec& m,
                               const std::string& what) {
  auto err = [&](const std::string& msg) { return fail(what + ": " + msg); };
  if (i.tp < 1 || i.pp < 1 || i.ep < 1) return err("tp, pp and ep must be >= 1");
  if (i.max_batch < 1) return err("max batch must be >= 1, got " + std::to_string(i.max_batch));
  if (i.max_tokens < 1) return err("max tokens must be >= 1, got " + std::to_string(i.max_tokens));
  if (i.tp % i.ep != 0) {
    return err("ep = " + std::to_string(i.ep) + " must divide tp = " + std::to_string(i.tp) +
               " (experts are split over ep x expert-tp = tp GPUs)");
  }
  if (i.pp > m.layers) {
    return err("pp = " + std::to_string(i.pp) + " is more than the model's " +
               std::to_string(m.layers) + " layers");
  }
  if (i.redundant_experts < 0) {
    return err("redundant experts must be >= 0, got " + std::to_string(i.redundant_experts));
  }
  if (i.redundant_experts > 0 && (!m.moe || i.ep < 2)) {
    return err("redundant experts = " + std::to_string(i.redundant_experts) +
               " need a MoE model with ep >= 2 (the load balancer places copies on EP ranks)");
  }
  if (!m.moe && i.ep != 1) {
    return err("ep = " + std::to_string(i.ep) + " but model '" + m.name + "' has no experts");
  }
  if (m.moe) {
    const int slots = m.moe->experts + i.redundant_experts;
    if (slots % i.ep != 0) {
      const int extra = (i.ep - slots % i.ep) % i.ep;
      return err("experts = " + std::to_string(m.moe->experts) + " of model '" + m.name + "'" +
                 (i.redundant_experts > 0 ? " + " + std::to_string(i.redundant_experts) +
                                                " redundant = " + std::to_string(slots)
                                          : std::string()) +
                 " are not divisible by ep = " + std::to_string(i.ep) + " (" +
                 std::to_string(i.redundant_experts + extra) +
                 " redundant experts would make them divisible)");
    }
    const int etp = i.tp / i.ep;
    if (m.moe->expert_ffn % etp != 0) {
      return err(
          "expert_ffn = " + std::to_string(m.moe->expert_ffn) +
          " is not divisible by the expert tensor parallelism tp/ep = " + std::to_string(etp));
    }
  }
  if (i.adp_timeout_iters < 0 || i.adp_batching_wait_iters < 0) {
    return err("attention-DP balance iterations must be >= 0, got timeout " +
               std::to_string(i.adp_timeout_iters) + ", batching wait " +
               std::to_string(i.adp_batching_wait_iters));
  }
  if ((i.adp_timeout_iters > 0 || i.adp_batching_wait_iters > 0) && !i.dp_attention) {
    return err(
        "attention-DP balance (adp_timeout_iters, adp_batching_wait_iters) holds prompts until "
        "every attention-DP rank has one: it needs dp_attention");
  }
  if (i.adp_batching_wait_iters > 0 && i.adp_timeout_iters == 0) {
    return err("adp_batching_wait_iters = " + std::to_string(i.adp_batching_wait_iters) +
               " needs the balance on: give adp_timeout_iters > 0 (TensorRT-LLM "
               "attention_dp_config.timeout_iters)");
  }
  if (i.chunk_unit < 1) {
    return err("chunk_unit must be >= 1 token, got " + std::to_string(i.chunk_unit));
  }
  for (size_t k = 0; k < i.cuda_graph_batches.size(); ++k) {
    const int64_t b = i.cuda_graph_batches[k];
    if (b < 1 || (k > 0 && b <= i.cuda_graph_batches[k - 1])) {
      return err("CUDA-graph batch sizes must be positive and ascending, got " + std::to_string(b) +
                 " at position " + std::to_string(k + 1));
    }
  }
  if (i.two_batch_overlap && !i.dp_attention) {
    return err(
        "two-batch overlap splits an attention-DP rank's batch around the MoE exchange: "
        "it needs dp_attention");
  }
  if (i.dp_attention) {
    if (!m.moe) {
      return err("attention data parallelism needs a MoE model (use replicas for a dense model)");
    }
    if (i.ep != i.tp) {
      return err("attention data parallelism needs ep = tp (got tp = " + std::to_string(i.tp) +
                 ", ep = " + std::to_string(i.ep) + ")");
    }
    if (i.pp != 1) return err("attention data parallelism with pp > 1 is not modelled");
    return {};
  }
  if (m.heads % i.tp != 0) {
    return err("heads = " + std::to_string(m.heads) + " of model '" + m.name +
               "' are not divisible by tp = " + std::to_string(i.tp));
  }
  if (m.kv_heads % i.tp != 0 && i.tp % m.kv_heads != 0) {
    return err("tp = " + std::to_string(i.tp) +
               " is neither a divisor nor a multiple of kv_heads = " + std::to_string(m.kv_heads));
  }
  if (m.ffn > 0 && m.ffn % i.tp != 0) {
    return err("ffn = " + std::to_string(m.ffn) +
               " is not divisible by tp = " + std::to_string(i.tp));
  }
  return {};
}

}  // namespace

base::Result<std::vector<int64_t>> parse_graph_batches(std::string_view text) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find(',', pos), text.size());
    std::string_view item = text.substr(pos, end - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    int64_t v = 0;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc{} || p != item.data() + item.size() || v < 1 ||
        v > (int64_t{1} << 30) || (!out.empty() && v <= out.back())) {
      return base::fail(
          "CUDA-graph batch sizes: expected ascending integers in [1, 2^30] "
          "separated by commas, got '" +
          std::string(item) + "' in '" + std::string(text) + "'");
    }
    out.push_back(v);
    pos = end + 1;
  }
  return out;
}

std::string InstanceLayout::label() const {
  std::string s = dp_attention ? "DEP" + std::to_string(tp) : "TP" + std::to_string(tp);
  if (!dp_attention && ep > 1) s += " EP" + std::to_string(ep);
  if (pp > 1) s += " PP" + std::to_string(pp);
  if (redundant_experts > 0) s += " +" + std::to_string(redundant_experts) + "r";
  if (two_batch_overlap) s += " TBO";
  if (adp_timeout_iters > 0) {
    s +=
        " bal " + std::to_string(adp_batching_wait_iters) + "/" + std::to_string(adp_timeout_iters);
  }
  return s;
}

const char* kv_policy_name(KvPolicy p) { return p == KvPolicy::kPreempt ? "preempt" : "reserve"; }

const char* runtime_name(ServingRuntime r) {
  return r == ServingRuntime::kPytorch ? "pytorch" : "trt-engine";
}

const char* dispatch_name(ServingDispatch d) {
  switch (d) {
    case ServingDispatch::kAuto:
      return "auto";
    case ServingDispatch::kLeastLoaded:
      return "least-loaded";
    case ServingDispatch::kRoundRobin:
      return "round-robin";
  }
  return "auto";
}

std::optional<ServingDispatch> dispatch_from_name(std::string_view name) {
  for (auto d :
       {ServingDispatch::kAuto, ServingDispatch::kLeastLoaded, ServingDispatch::kRoundRobin}) {
    if (name == dispatch_name(d)) return d;
  }
  return std::nullopt;
}

ServingDispatch resolve_dispatch(ServingDispatch d, ServingScenario s) {
  if (d != ServingDispatch::kAuto) return d;
  return s == ServingScenario::kInteractive ? ServingDispatch::kRoundRobin
                                            : ServingDispatch::kLeastLoaded;
}

int64_t ServingLayout::gpus() const {
  int64_t g = static_cast<int64_t>(replicas) * instance.gpus();
  if (disaggregated) g += static_cast<int64_t>(prefill_replicas) * prefill.gpus();
  return g;
}

std::string ServingLayout::label() const {
  if (!disaggregated) return instance.label() + " x" + std::to_string(replicas);
  return "ctx " + prefill.label() + " x" + std::to_string(prefill_replicas) + " + gen " +
         instance.label() + " x" + std::to_string(replicas);
}

double ServingLayout::tokens_per_step() const {
  double t = 1.0, p = 1.0;
  for (int i = 0; i < mtp; ++i) {
    p *= std::clamp(mtp_acceptance, 0.0, 1.0);
    t += p;
  }
  return t;
}

base::Status validate(const ServingLayout& l, const models::ModelSpec& m, int64_t gpus) {
  if (l.replicas < 1) return fail("replicas must be >= 1, got " + std::to_string(l.replicas));
  if (auto st = validate_instance(l.instance, m, l.disaggregated ? "decode instance" : "instance");
      !st)
    return st;
  if (l.disaggregated) {
    if (l.prefill_replicas < 1) return fail("a disaggregated layout needs >= 1 prefill instance");
    if (auto st = validate_instance(l.prefill, m, "prefill instance"); !st) return st;
  }
  if (l.mtp < 0 || l.mtp > 8)
    return fail("mtp draft tokens must be in 0..8, got " + std::to_string(l.mtp));
  if (l.mtp > 0 && m.mtp_layers == 0) {
    return fail("speculative decoding with MTP needs a model with an MTP module; '" + m.name +
                "' has none");
  }
  if (l.mtp_acceptance < 0 || l.mtp_acceptance > 1) return fail("mtp acceptance must be in [0, 1]");
  if (l.kv_bytes != 1.0 && l.kv_bytes != 2.0)
    return fail("kv cache bytes must be 1 (fp8) or 2 (bf16)");
  if (l.kv_fraction <= 0 || l.kv_fraction > 1) return fail("kv fraction must be in (0, 1]");
  if (l.gpus() != gpus) {
    return fail("layout " + l.label() + " uses " + std::to_string(l.gpus()) +
                " GPUs but the deployment has " + std::to_string(gpus) +
                " (instances x tp x pp must equal the GPUs)");
  }
  return {};
}

compute::DType attention_dtype(const models::ModelSpec& m, compute::DType weights) {
  if (m.mla && weights == compute::DType::kNvfp4) return compute::DType::kFp8;
  return weights;
}

ServingMemory serving_weights(const models::ModelSpec& m, const InstanceLayout& inst,
                              const ServingLayout& l) {
  ServingMemory out;
  const double tp = inst.tp;
  const double shard = inst.dp_attention ? 1.0 : tp;  // replicated parts under ADP
  const double wb = compute::weight_bytes(l.weights);
  const double ab = compute::weight_bytes(attention_dtype(m, l.weights));
  constexpr double kBf16 = 2.0;
  double params = 0, bytes = 0;
  auto add = [&](double p, double b, double div) {
    params += p / div;
    bytes += p * b / div;
  };
  // Redundant expert copies (EPLB) add their weights to the routed experts.
  const double slot_share =
      m.moe ? static_cast<double>(m.moe->experts + inst.redundant_experts) / m.moe->experts : 1.0;
  double all_params = 0, layer_bytes = 0;
  for (int i = 0; i < m.layers; ++i) {
    const LayerParams p = layer_params(m, i);
    params = bytes = 0;
    add(p.attention, ab, shard);
    add(p.norms, kBf16, 1.0);
    add(p.mlp_dense, wb, shard);
    add(p.shared, wb, shard);
    add(p.routed * slot_share, wb, tp);
    add(p.router, kBf16, 1.0);
    all_params += params;
    layer_bytes += bytes;
  }
  // The heaviest stage: ceil(L/pp) layers plus the embedding or the head.
  const double stage_share =
      static_cast<double>(ceil_div(m.layers, inst.pp)) / static_cast<double>(m.layers);
  const auto pc = models::count_params(m);
  params = bytes = 0;
  if (inst.pp == 1) {
    add(pc.embedding, kBf16, shard);
    add(pc.output, kBf16, shard);
  } else {
    add(std::max(pc.embedding, pc.output), kBf16, shard);
  }
  if (l.mtp > 0 && m.mtp_layers > 0) {
    const LayerParams p = layer_params(m, m.layers - 1);
    add(p.attention + 2.0 * static_cast<double>(m.hidden * m.hidden), ab, shard);
    add(p.mlp_dense + p.shared, wb, shard);
    add(p.routed, wb, tp);
  }
  out.params = all_params * stage_share + params;
  out.weights = base::bytes(layer_bytes * stage_share + bytes);
  return out;
}

ServingMemory serving_memory(const models::ModelSpec& m, const InstanceLayout& inst,
                             const ServingLayout& l, Bytes usable, const ServingMemory& weights) {
  ServingMemory out;
  out.usable = usable;
  out.params = weights.params;
  out.weights = weights.weights;
  const double tp = inst.tp;
  constexpr double kBf16 = 2.0;
  out.buffers = base::bytes(kFrameworkBufferBytes + static_cast<double>(inst.max_tokens) *
                                                        static_cast<double>(m.hidden) * kBf16 *
                                                        kActivationVectorsPerToken);
  const double free = usable.base() - out.weights.base() - out.buffers.base();
  out.kv_cache = base::bytes(std::max(0.0, free) * l.kv_fraction);
  const double stage_layers = ceil_div(m.layers, inst.pp);
  double per_layer = 0;
  if (m.mla) {
    per_layer = static_cast<double>(m.mla->kv_lora_rank + m.mla->qk_rope_head_dim);
  } else {
    const double kv = inst.dp_attention ? static_cast<double>(m.kv_heads)
                                        : std::max(1.0, static_cast<double>(m.kv_heads) / tp);
    per_layer = 2.0 * kv * static_cast<double>(m.head_dim);
  }
  out.kv_bytes_per_token = per_layer * l.kv_bytes * stage_layers;
  double tokens = out.kv_cache.base() / out.kv_bytes_per_token;
  const int local = m.local_layer_count();
  if (local > 0 && local < m.layers) {
    // Local layers (sliding window, chunked) keep at most their window per sequence (vLLM's
    // hybrid KV-cache manager): reserve that for every batch slot, and count the tokens the
    // full-attention layers can hold in the rest.
    const double share = stage_layers / static_cast<double>(m.layers);
    const double local_token = per_layer * l.kv_bytes * local * share;
    const double full_token = out.kv_bytes_per_token - local_token;
    const double reserve = local_token * static_cast<double>(m.local_attention->window) *
                           static_cast<double>(inst.max_batch);
    if (reserve < out.kv_cache.base()) {
      out.kv_bytes_per_token = full_token;
      tokens = (out.kv_cache.base() - reserve) / full_token;
    }
  }
  if (!inst.dp_attention && inst.pp > 1) tokens /= inst.pp;  // pipeline slots share the pool
  out.kv_tokens_per_rank = static_cast<int64_t>(tokens);
  return out;
}

ServingMemory serving_memory(const models::ModelSpec& m, const InstanceLayout& inst,
                             const ServingLayout& l, Bytes usable) {
  return serving_memory(m, inst, l, usable, serving_weights(m, inst, l));
}

base::Result<ServingMemory> check_serving_memory(const models::ModelSpec& m,
                                                 const InstanceLayout& inst, const ServingLayout& l,
                                                 Bytes usable, int64_t max_sequence_tokens,
                                                 const ServingMemory* weights) {
  ServingMemory mem =
      weights ? serving_memory(m, inst, l, usable, *weights) : serving_memory(m, inst, l, usable);
  const double need = mem.weights.base() + mem.buffers.base();
  if (need > usable.base()) {
    // The GPUs one instance would need at this precision if the sharded part split further.
    const double per_instance = mem.weights.base() * inst.gpus();
    const double room = usable.base() - mem.buffers.base();
    const int at_least = room > 0 ? static_cast<int>(std::ceil(per_instance / room)) : 0;
    return fail("model '" + m.name + "' does not fit " + inst.label() + " at " +
                compute::dtype_name(l.weights) + ": weights " + gb(mem.weights.base()) +
                " + buffers " + gb(mem.buffers.base()) + " per GPU exceed the " +
                gb(usable.base()) + " usable by " + gb(need - usable.base()) +
                (at_least > 0 ? "; an instance needs at least ~" + std::to_string(at_least) +
                                    " GPUs (larger tp/pp) or a smaller precision"
                              : ""));
  }
  if (mem.kv_tokens_per_rank < max_sequence_tokens) {
    return fail("model '" + m.name + "' on " + inst.label() + " leaves " + gb(mem.kv_cache.base()) +
                " of KV cache per GPU: " + std::to_string(mem.kv_tokens_per_rank) +
                " tokens per rank, less than one " + std::to_string(max_sequence_tokens) +
                "-token sequence (larger tp/pp, FP8 KV or a smaller precision)");
  }
  return mem;
}

namespace {

std::optional<InstanceLayout> read_instance(config::Reader& r) {
  using Need = config::Reader::Need;
  InstanceLayout l;
  // The bounds of `serve`'s flags for the same fields (scenario/serving.cpp's field table): the
  // named limits of base/number.h, so a layout file and the flags accept the same values.
  l.tp = static_cast<int>(r.integer("tp", Need::kOptional, 1, base::kMaxGpus).value_or(1));
  l.pp = static_cast<int>(r.integer("pp", Need::kOptional, 1, base::kMaxGpus).value_or(1));
  l.ep = static_cast<int>(r.integer("ep", Need::kOptional, 1, base::kMaxGpus).value_or(1));
  l.dp_attention = r.boolean("dp_attention", Need::kOptional).value_or(false);
  l.max_batch = r.integer("max_batch", Need::kOptional, 1, base::kMaxBatch).value_or(256);
  l.max_tokens =
      r.integer("max_tokens", Need::kOptional, 1, base::kMaxTokensPerStep).value_or(8192);
  l.chunked_prefill = r.boolean("chunked_prefill", Need::kOptional).value_or(true);
  l.chunk_unit = static_cast<int>(r.integer("chunk_unit", Need::kOptional, 1, 1 << 16).value_or(1));
  l.pp_chunk_overlap = r.boolean("pp_chunk_overlap", Need::kOptional).value_or(false);
  l.redundant_experts =
      static_cast<int>(r.integer("redundant_experts", Need::kOptional, 0, 1 << 16).value_or(0));
  l.two_batch_overlap = r.boolean("two_batch_overlap", Need::kOptional).value_or(false);
  l.adp_timeout_iters =
      static_cast<int>(r.integer("adp_timeout_iters", Need::kOptional, 0, 1 << 20).value_or(0));
  l.adp_batching_wait_iters = static_cast<int>(
      r.integer("adp_batching_wait_iters", Need::kOptional, 0, 1 << 20).value_or(0));
  if (auto g = r.strings("cuda_graph_batches", Need::kOptional)) {
    std::string joined;
    for (const auto& item : *g) joined += (joined.empty() ? "" : ",") + item;
    auto v = parse_graph_batches(joined);
    if (v) {
      l.cuda_graph_batches = *v;
    } else {
      r.error(v.error().message, "cuda_graph_batches");
    }
  }
  r.finish();
  return l;
}

}  // namespace

base::Result<ServingLayout> parse_serving_yaml(std::string_view text, const std::string& file,
                                               double default_tp_overlap) {
  using Need = config::Reader::Need;
  auto doc = config::parse_document(text, file);
  if (!doc) return fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  config::Reader top(doc->root, ctx);
  ServingLayout l;
  l.replicas = 0;
  l.tp_overlap = default_tp_overlap;
  auto r = top.child("serving");
  if (!r) return fail(ctx.errors.combined());
  if (auto p =
          r->choice("precision", {"bf16", "fp8", "fp8_block", "fp4", "nvfp4"}, Need::kOptional)) {
    l.weights = *compute::parse_dtype(*p);
  }
  if (auto k = r->choice("kv_cache", {"fp8", "bf16"}, Need::kOptional)) {
    l.kv_bytes = *k == "fp8" ? 1.0 : 2.0;
  }
  if (auto i = r->child("instance")) l.instance = read_instance(*i).value_or(InstanceLayout{});
  l.replicas =
      static_cast<int>(r->integer("replicas", Need::kOptional, 1, base::kMaxGpus).value_or(0));
  if (auto p = r->child("prefill", Need::kOptional)) {
    l.disaggregated = true;
    l.prefill = read_instance(*p).value_or(InstanceLayout{});
    l.prefill_replicas = static_cast<int>(
        r->integer("prefill_replicas", Need::kRequired, 1, base::kMaxGpus).value_or(1));
  }
  if (auto m = r->child("mtp", Need::kOptional)) {
    l.mtp = static_cast<int>(m->integer("draft_tokens", Need::kRequired, 0, 8).value_or(0));
    l.mtp_acceptance = m->number("acceptance", Need::kRequired, 0.0, 1.0).value_or(0.0);
    m->finish();
  }
  if (auto k = r->choice("kv_policy", {"preempt", "reserve"}, Need::kOptional)) {
    l.kv_policy = *k == "preempt" ? KvPolicy::kPreempt : KvPolicy::kReserve;
  }
  l.kv_fraction = r->number("kv_fraction", Need::kOptional, 0.01, 1.0).value_or(l.kv_fraction);
  l.tp_overlap = r->number("tp_overlap", Need::kOptional, 0.0, 1.0).value_or(l.tp_overlap);
  l.norm_quant_fusion =
      r->boolean("norm_quant_fusion", Need::kOptional).value_or(l.norm_quant_fusion);
  l.adp_balance = r->boolean("adp_balance", Need::kOptional).value_or(l.adp_balance);
  if (auto rt = r->choice("runtime", {"pytorch", "trt-engine"}, Need::kOptional)) {
    l.runtime = *rt == "pytorch" ? ServingRuntime::kPytorch : ServingRuntime::kTrtEngine;
  }
  l.stream_interval = static_cast<int>(
      r->integer("stream_interval", Need::kOptional, 1, 100000).value_or(l.stream_interval));
  if (auto d = r->choice("dispatch", {"auto", "least-loaded", "round-robin"}, Need::kOptional)) {
    l.dispatch = dispatch_from_name(*d).value_or(ServingDispatch::kAuto);
  }
  r->finish();
  top.finish();
  if (!ctx.errors.empty()) return fail(ctx.errors.combined());
  return l;
}

}  // namespace clustertwin::workload
