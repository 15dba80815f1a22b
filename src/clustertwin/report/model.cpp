#include "clustertwin/report/model.h"

#include <map>
#include <sstream>

#include "clustertwin/base/text.h"
#include "clustertwin/base/units_parse.h"
#include "clustertwin/models/ops.h"
#include "clustertwin/report/table.h"

namespace clustertwin::report {
namespace {

std::string sig(double v, int digits = 4) { return base::format_sig(v, digits); }
std::string billions(double v) { return sig(v / 1e9, 4) + " B"; }
std::string bytes(double v) { return base::format(base::bytes(v), 3); }

std::string op_shape(const compute::Op& o) {
  std::ostringstream s;
  switch (o.kind) {
    case compute::OpKind::kGemm:
      s << "m=" << o.gemm.m << " n=" << o.gemm.n << " k=" << o.gemm.k;
      if (o.count > 1) s << " x" << o.count;
      break;
    case compute::OpKind::kAttention:
    case compute::OpKind::kAttentionBackward:
      s << "heads=" << o.attention.heads << " kv_heads=" << o.attention.kv_heads
        << " q=" << o.attention.q_len << " kv=" << o.attention.kv_len;
      break;
    case compute::OpKind::kMoe:
    case compute::OpKind::kMoeBackward:
      s << "experts=" << o.moe.experts << " top" << o.moe.topk << " inter=" << o.moe.inter;
      break;
    case compute::OpKind::kMemory:
      s << "-";
      break;
  }
  return s.str();
}

}  // namespace

ModelPage model_page(const models::ModelSpec& m, int64_t seq_len) {
  const auto c = models::count_params(m);
  const int64_t s = seq_len;
  const double fwd = models::forward_flops_per_token(m, s, true);
  const double fwd_nc = models::forward_flops_per_token(m, s, false);
  const double train = models::training_flops_per_token(m, s, true);
  Json j;
  j["name"] = m.name;
  j["display_name"] = m.display_name;
  j["origin"] = m.origin;
  j["family"] = m.family;
  j["layers"] = m.layers;
  j["moe_layers"] = m.moe_layer_count();
  j["hidden"] = m.hidden;
  j["heads"] = m.heads;
  j["kv_heads"] = m.kv_heads;
  j["head_dim"] = m.head_dim;
  j["ffn"] = m.ffn;
  j["vocab"] = m.vocab;
  j["max_seq_len"] = m.max_seq_len;
  j["mlp"] = models::mlp_kind_name(m.mlp);
  j["norm"] = models::norm_kind_name(m.norm);
  j["position"] = models::position_kind_name(m.position);
  j["tied_embeddings"] = m.tied_embeddings;
  if (m.mla) {
    j["mla"] = {{"q_lora_rank", m.mla->q_lora_rank},
                {"kv_lora_rank", m.mla->kv_lora_rank},
                {"qk_nope_head_dim", m.mla->qk_nope_head_dim},
                {"qk_rope_head_dim", m.mla->qk_rope_head_dim},
                {"v_head_dim", m.mla->v_head_dim}};
  }
  if (m.moe) {
    j["moe"] = {{"experts", m.moe->experts},
                {"shared_experts", m.moe->shared_experts},
                {"topk", m.moe->topk},
                {"expert_ffn", m.moe->expert_ffn},
                {"first_dense_layers", m.moe->first_dense_layers}};
  }
  if (m.local_attention) {
    j["local_attention"] = {{"kind", models::local_attention_name(m.local_attention->kind)},
                            {"window", m.local_attention->window},
                            {"full_every", m.local_attention->full_every},
                            {"local_layers", m.local_layer_count()}};
    j["kv_cache_bytes_per_sequence_at_max_seq_len"] = {
        {"bf16", models::kv_cache_bytes(m, m.max_seq_len, 2.0)},
        {"fp8", models::kv_cache_bytes(m, m.max_seq_len, 1.0)}};
  }
  j["mtp_layers"] = m.mtp_layers;
  j["params"] = {{"total", c.total},
                 {"active", c.active},
                 {"embedding", c.embedding},
                 {"output", c.output},
                 {"non_embedding", c.non_embedding},
                 {"attention", c.attention},
                 {"dense_mlp", c.dense_mlp},
                 {"routed_experts", c.routed_experts},
                 {"shared_experts", c.shared_experts},
                 {"mtp", c.mtp}};
  if (m.published_params) j["params"]["published_total"] = *m.published_params;
  if (m.published_active_params) j["params"]["published_active"] = *m.published_active_params;
  j["flops_per_token"] = {{"seq_len", s},
                          {"forward", round_sig(fwd)},
                          {"forward_noncausal", round_sig(fwd_nc)},
                          {"training", round_sig(train)},
                          {"training_noncausal", round_sig(3 * fwd_nc)}};
  j["weight_bytes"] = {
      {"bf16", models::weight_bytes(m, 2.0)},
      {"fp8", models::weight_bytes(m, 1.0)},
      {"nvfp4", models::weight_bytes(m, compute::weight_bytes(compute::DType::kNvfp4))}};
  j["kv_cache_bytes_per_token"] = {{"bf16", models::kv_cache_bytes_per_token(m, 2.0)},
                                   {"fp8", models::kv_cache_bytes_per_token(m, 1.0)}};

  // Layer structure: one op table per distinct layer kind, FLOPs per token of a training pass.
  const models::PassSpec pass{.batch = 1, .seq_len = s};
  const double tokens = static_cast<double>(pass.tokens());
  std::vector<std::pair<std::string, int>> kinds;  // kind, first layer
  std::map<std::string, int> counts;
  for (int i = 0; i < m.layers; ++i) {
    const std::string k = models::layer_kind(m, i);
    if (counts[k]++ == 0) kinds.emplace_back(k, i);
  }
  Json blocks = Json::array();
  std::ostringstream layers_text;
  auto add_block = [&](const std::string& title, const std::string& kind, int count, int first,
                       const std::vector<compute::Op>& ops) {
    Table t({"op", "kind", "shape (tp=1, one sequence)", "GFLOP/token", "bytes/token"},
            {true, true, true, false, false});
    Json jops = Json::array();
    for (const auto& op : ops) {
      t.add({op.name, compute::op_kind_name(op.kind), op_shape(op),
             sig(op.flops.base() / tokens / 1e9, 4), bytes(op.bytes.base() / tokens)});
      jops.push_back({{"name", op.name},
                      {"kind", compute::op_kind_name(op.kind)},
                      {"shape", op_shape(op)},
                      {"flops_per_token", round_sig(op.flops.base() / tokens)},
                      {"bytes_per_token", round_sig(op.bytes.base() / tokens)}});
    }
    blocks.push_back({{"kind", kind}, {"count", count}, {"first_layer", first}, {"ops", jops}});
    layers_text << "  " << title << "\n" << t.render(4);
  };
  add_block("embedding", "embedding", 1, -1,
            models::forward_ops(m, models::Part::kEmbedding, 0, pass));
  for (const auto& [kind, first] : kinds) {
    add_block(kind + " layer x" + std::to_string(counts[kind]) + " (first: layer " +
                  std::to_string(first) + ")",
              kind, counts[kind], first, models::forward_ops(m, models::Part::kLayer, first, pass));
  }
  add_block("head", "head", 1, -1, models::forward_ops(m, models::Part::kHead, 0, pass));
  if (m.mtp_layers > 0) {
    add_block("mtp module x" + std::to_string(m.mtp_layers), "mtp", m.mtp_layers, -1,
              models::forward_ops(m, models::Part::kMtp, 0, pass));
  }
  j["layer_structure"] = blocks;

  std::ostringstream out;
  out << m.name << ": " << m.display_name << " (" << m.origin << ")\n";
  out << "  architecture   " << m.layers << " layers";
  if (m.moe) out << " (" << m.moe_layer_count() << " MoE)";
  out << ", hidden " << m.hidden << ", " << m.heads << " heads";
  if (m.mla) {
    out << " with MLA (q_lora " << m.mla->q_lora_rank << ", kv_lora " << m.mla->kv_lora_rank << ")";
  } else {
    out << " / " << m.kv_heads << " KV heads of " << m.head_dim;
  }
  const int dense_layers = m.layers - m.moe_layer_count();
  if (dense_layers > 0) {
    out << ", " << models::mlp_kind_name(m.mlp) << " MLP " << m.ffn;
    if (m.moe && dense_layers == m.moe->first_dense_layers) {
      out << " (first " << m.moe->first_dense_layers << " layers)";
    } else if (m.moe) {
      out << " (" << dense_layers << " layers)";
    }
  }
  if (m.moe) {
    out << "; " << m.moe->experts << " routed";
    if (m.moe->shared_experts > 0) out << " + " << m.moe->shared_experts << " shared";
    out << " experts of " << m.moe->expert_ffn << ", top-" << m.moe->topk;
  }
  out << ", vocab " << m.vocab << ", context " << m.max_seq_len;
  if (m.mtp_layers > 0) out << ", MTP " << m.mtp_layers;
  out << "\n";
  if (m.local_attention) {
    const auto& l = *m.local_attention;
    out << "  local attention " << models::local_attention_name(l.kind) << " window " << l.window
        << " on " << m.local_layer_count() << " of " << m.layers << " layers";
    if (l.full_every > 0) out << " (1 full layer in every " << l.full_every << ")";
    out << "\n";
  }
  out << "  parameters     total " << billions(c.total);
  if (m.published_params) out << " (published " << billions(*m.published_params) << ")";
  out << ", active " << billions(c.active) << " per token";
  if (m.published_active_params)
    out << " (published " << billions(*m.published_active_params) << ")";
  out << "\n                 embedding " << billions(c.embedding) << ", output head "
      << billions(c.output) << ", non-embedding " << billions(c.non_embedding);
  if (c.mtp > 0) out << ", MTP module " << billions(c.mtp) << " (not in total)";
  out << "\n";
  out << "  FLOPs/token    forward " << sig(fwd / 1e9) << " GFLOP at seq " << s << " (causal; "
      << sig(fwd_nc / 1e9) << " non-causal), training " << sig(train / 1e9)
      << " GFLOP (3x forward)\n";
  out << "  weights        bf16 " << bytes(models::weight_bytes(m, 2.0)) << ", fp8 "
      << bytes(models::weight_bytes(m, 1.0)) << ", nvfp4 "
      << bytes(models::weight_bytes(m, compute::weight_bytes(compute::DType::kNvfp4))) << "\n";
  out << "  KV cache       " << bytes(models::kv_cache_bytes_per_token(m, 2.0))
      << " per token (bf16), " << bytes(models::kv_cache_bytes_per_token(m, 1.0)) << " (fp8)";
  if (m.local_attention) {
    out << "; a " << m.max_seq_len << "-token sequence "
        << bytes(models::kv_cache_bytes(m, m.max_seq_len, 2.0))
        << " (bf16: local layers keep their window)";
  }
  out << "\n";
  out << "  layer structure (forward, per token of a " << s << "-token sequence):\n"
      << layers_text.str();
  return {j, out.str()};
}

}  // namespace clustertwin::report
