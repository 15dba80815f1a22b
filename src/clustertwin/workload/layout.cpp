#include "clustertwin/workload/layout.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

#include "clustertwin/base/number.h"

namespace clustertwin::workload {

const char* moe_dispatch_name(MoeDispatch d) {
  switch (d) {
    case MoeDispatch::kAuto:
      return "auto";
    case MoeDispatch::kAllToAll:
      return "alltoall";
    case MoeDispatch::kDedup:
      return "dedup";
    case MoeDispatch::kNvlinkOneSided:
      return "nvlink-onesided";
  }
  return "auto";
}

MoeDispatch resolve_moe_dispatch(MoeDispatch d, const models::MoeSpec& moe, int ep, int stride,
                                 int domain_gpus) {
  if (d != MoeDispatch::kAuto) return d;
  const int64_t span = static_cast<int64_t>(std::max(1, ep)) * std::max(1, stride);
  const bool one_domain = domain_gpus > 0 && span <= domain_gpus;
  if (one_domain && domain_gpus > 8) return MoeDispatch::kNvlinkOneSided;
  if (!one_domain && moe.groups > 0) return MoeDispatch::kDedup;
  return MoeDispatch::kAllToAll;
}

double moe_domains_per_token(const models::MoeSpec& e, int domains) {
  const double D = domains, E = e.experts, k = e.topk;
  if (domains <= 1 || e.experts <= 0 || e.topk <= 0) return 1.0;
  double R = D, s = E / D;
  if (e.groups > 0 && e.topk_groups > 0 && e.topk_groups < e.groups) {
    const double G = e.groups, M = e.topk_groups;
    if (D >= G) {
      R = M * D / G;
    } else {
      const double g = G / D;  // groups per domain
      double miss = 1.0;       // C(G - g, M) / C(G, M)
      for (int i = 0; i < e.topk_groups; ++i) miss *= std::max(0.0, (G - g - i) / (G - i));
      R = D * (1.0 - miss);
    }
    s = M * (E / G) / R;
  }
  double miss = 1.0;
  for (int i = 0; i < e.topk; ++i) miss *= std::max(0.0, (R * s - s - i) / (R * s - i));
  return std::min({R * (1.0 - miss), k, D});
}

base::Result<uint32_t> parse_recompute_modules(std::string_view csv) {
  namespace rm = recompute_module;
  static constexpr std::pair<const char*, uint32_t> kNames[] = {
      {"core_attn", rm::kCoreAttn},
      {"mlp", rm::kMlp},
      {"moe_act", rm::kMoeAct},
      {"layernorm", rm::kLayernorm},
      {"mla_up_proj", rm::kMlaUpProj},
      {"moe", rm::kMoe},
      {"shared_experts", rm::kSharedExperts}};
  uint32_t bits = 0;
  if (csv.empty() || csv == "none") return bits;
  size_t pos = 0;
  while (pos <= csv.size()) {
    const size_t end = std::min(csv.find(',', pos), csv.size());
    const std::string_view name = csv.substr(pos, end - pos);
    bool found = false;
    for (const auto& [n, b] : kNames) {
      if (name == n) {
        bits |= b;
        found = true;
      }
    }
    if (!found) {
      std::string known;
      for (const auto& [n, b] : kNames) known += std::string(known.empty() ? "" : ", ") + n;
      return base::fail("recompute module '" + std::string(name) + "' is not one of " + known);
    }
    pos = end + 1;
  }
  return bits;
}

std::string recompute_modules_name(uint32_t bits) {
  namespace rm = recompute_module;
  static constexpr std::pair<const char*, uint32_t> kNames[] = {
      {"core_attn", rm::kCoreAttn},
      {"mlp", rm::kMlp},
      {"moe_act", rm::kMoeAct},
      {"layernorm", rm::kLayernorm},
      {"mla_up_proj", rm::kMlaUpProj},
      {"moe", rm::kMoe},
      {"shared_experts", rm::kSharedExperts}};
  std::string out;
  for (const auto& [n, b] : kNames) {
    if (bits & b) out += std::string(out.empty() ? "" : ",") + n;
  }
  return out.empty() ? "none" : out;
}

uint32_t TrainingLayout::recompute_bits() const {
  if (recompute == Recompute::kFull) return recompute_module::kAll;
  if (recompute == Recompute::kSelective && recompute_modules == 0) {
    return recompute_module::kCoreAttn;
  }
  return recompute_modules;
}

const char* pipeline_schedule_name(PipelineSchedule s) {
  return s == PipelineSchedule::kDualPipe ? "dualpipe" : "1f1b";
}

std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view s) {
  if (s == "1f1b" || s == "interleaved") return PipelineSchedule::k1F1B;
  if (s == "dualpipe") return PipelineSchedule::kDualPipe;
  return std::nullopt;
}

const char* moe_routing_name(MoeRouting r) {
  return r == MoeRouting::kMeasured ? "measured" : "balanced";
}

std::optional<MoeRouting> parse_moe_routing(std::string_view s) {
  if (s == "balanced") return MoeRouting::kBalanced;
  if (s == "measured") return MoeRouting::kMeasured;
  return std::nullopt;
}

double moe_imbalance_measured(int ep) {
  // ep = 1, 2, 4, ..., 256 (layout.h gives the derivation from the measured MoE tables).
  static constexpr double kRatio[] = {1.00, 1.02, 1.09, 1.19, 1.28, 1.45, 1.54, 1.68, 1.81};
  if (ep <= 1) return 1.0;
  const double x = std::log2(static_cast<double>(ep));
  const int n = static_cast<int>(std::size(kRatio));
  if (x >= n - 1) return kRatio[n - 1];
  const int i = static_cast<int>(x);
  const double f = x - i;
  return kRatio[i] * (1 - f) + kRatio[i + 1] * f;
}

std::optional<MoeDispatch> parse_moe_dispatch(std::string_view s) {
  if (s == "auto") return MoeDispatch::kAuto;
  if (s == "alltoall" || s == "nccl") return MoeDispatch::kAllToAll;
  if (s == "dedup" || s == "deepep" || s == "deepep-normal") return MoeDispatch::kDedup;
  if (s == "nvlink-onesided") return MoeDispatch::kNvlinkOneSided;
  return std::nullopt;
}

base::Result<int64_t> model_parallel_size(const TrainingLayout& l) {
  return base::checked_product({{"tp", l.tp}, {"pp", l.pp}, {"cp", l.cp}}, base::kMaxGpus, "GPUs");
}

base::Result<int64_t> default_global_batch(const TrainingLayout& l) {
  return base::checked_product(
      {{"micro_batch", l.micro_batch}, {"dp", l.dp}, {"4*pp", 4 * static_cast<int64_t>(l.pp)}},
      base::kMaxBatch, "sequences (give {global_batch})");
}

/// Micro-batch passes of one training step: micro-batches x pipeline chunks (pp x vpp). The
/// event model schedules a forward and a backward for each and holds them all (~150 bytes a
/// pass), so 2^22 is ~0.6 GB and about a second; a global batch of 2^30 one-token sequences in
/// micro-batches of one once asked for 2^28 passes and tens of GB before anything was said.
constexpr int64_t kMaxPipelinePasses = int64_t{1} << 22;

base::Status validate(const TrainingLayout& l, const models::ModelSpec& m, int64_t gpus) {
  base::Errors e;
  auto err = [&](std::string s) { e.add(base::Error{std::move(s), {}, 0}); };
  auto s = [](int64_t v) { return std::to_string(v); };
  for (auto [name, v] : {std::pair{"tp", l.tp},
                         {"pp", l.pp},
                         {"dp", l.dp},
                         {"cp", l.cp},
                         {"ep", l.ep},
                         {"etp", l.etp},
                         {"vpp", l.vpp}}) {
    if (v < 1) err(std::string("parallelism: ") + name + " must be >= 1, got " + s(v));
  }
  if (l.micro_batch < 1) err("micro_batch must be >= 1, got " + s(l.micro_batch));
  if (l.seq_len < 1) err("seq_len must be >= 1, got " + s(l.seq_len));
  if (l.zero < 0 || l.zero > 3) err("zero must be 0, 1, 2 or 3, got " + s(l.zero));
  if (l.global_batch < 1) err("global_batch must be >= 1, got " + s(l.global_batch));
  if (!e.empty()) return base::fail(e.combined());
  // Sizes of work before any arithmetic on them (base/number.h): a product that wraps in int64
  // once slipped past the divisibility checks below and divided by zero (issue 19).
  for (auto r :
       {base::checked_product({{"tp", l.tp}, {"pp", l.pp}, {"dp", l.dp}, {"cp", l.cp}},
                              base::kMaxGpus, "GPUs"),
        base::checked_product({{"micro_batch", l.micro_batch}, {"dp", l.dp}}, base::kMaxBatch,
                              "sequences"),
        base::checked_product({{"global_batch", l.global_batch}}, base::kMaxBatch, "sequences"),
        base::checked_product({{"global_batch", l.global_batch}, {"seq_len", l.seq_len}},
                              base::kMaxTokensPerStep, "tokens per step"),
        base::checked_product({{"pp", l.pp}, {"vpp", l.vpp}}, base::kMaxLayers,
                              "pipeline chunks")}) {
    if (!r) e.add(r.error());
  }
  if (!e.empty()) return base::fail(e.combined());
  if (l.gpus() != gpus) {
    err("parallelism: tp*pp*dp*cp = " + s(l.tp) + "*" + s(l.pp) + "*" + s(l.dp) + "*" + s(l.cp) +
        " = " + s(l.gpus()) + " does not match gpus = " + s(gpus));
  }
  if (m.heads % l.tp != 0) {
    err("tp = " + s(l.tp) + " does not divide the model's " + s(m.heads) + " attention heads");
  }
  if (!m.mla && m.kv_heads % l.tp != 0 && l.tp % m.kv_heads != 0) {
    err("tp = " + s(l.tp) + " and the model's " + s(m.kv_heads) +
        " KV heads: neither divides the other");
  }
  // MoE parallel folding (Megatron-Core parallel_state.py): the world size must divide by
  // etp*ep*pp, i.e. etp*ep divides tp*cp*dp (the GPUs of one pipeline stage).
  const int64_t stage_gpus = static_cast<int64_t>(l.tp) * l.cp * l.dp;
  if (stage_gpus % (static_cast<int64_t>(l.ep) * l.etp) != 0) {
    err("etp*ep = " + s(l.etp) + "*" + s(l.ep) + " = " + s(static_cast<int64_t>(l.etp) * l.ep) +
        " does not divide tp*cp*dp = " + s(stage_gpus) +
        " (the experts' etp x ep x edp grid folds onto one pipeline stage's GPUs)");
  }
  if (m.moe && m.moe->expert_ffn % l.etp != 0) {
    err("etp = " + s(l.etp) + " does not divide the experts' width " + s(m.moe->expert_ffn));
  }
  if (m.moe && l.tp > 1 && !l.sequence_parallel && l.ep > 1) {
    err("tp = " + s(l.tp) + " with ep = " + s(l.ep) +
        " needs sequence parallelism (Megatron-Core: MoE with EP and TP requires it)");
  }
  if (l.ep > 1 && !m.moe) err("ep = " + s(l.ep) + " but model '" + m.name + "' has no experts");
  if (m.moe && m.moe->experts % l.ep != 0) {
    err("ep = " + s(l.ep) + " does not divide the model's " + s(m.moe->experts) + " experts");
  }
  // The event model holds every (micro-batch, chunk) pass of a step: bounded before it is built.
  if (auto passes = base::checked_product(
          {{"micro-batches", l.micro_batches()}, {"pp", l.pp}, {"vpp", l.vpp}}, kMaxPipelinePasses,
          "micro-batch passes per step (use a larger "
          "{micro_batch} or a smaller {global_batch})");
      !passes) {
    e.add(passes.error());
  }
  if (l.global_batch % (l.micro_batch * l.dp) != 0) {
    err("micro_batch*dp = " + s(l.micro_batch) + "*" + s(l.dp) + " = " + s(l.micro_batch * l.dp) +
        " does not divide global_batch = " + s(l.global_batch));
  }
  if (l.seq_len % l.cp != 0) err("cp = " + s(l.cp) + " does not divide seq_len = " + s(l.seq_len));
  if (l.seq_len % (2 * l.cp) != 0 && l.cp > 1) {
    err("seq_len = " + s(l.seq_len) + " must split into 2*cp = " + s(2 * l.cp) +
        " chunks for load-balanced ring attention");
  }
  // The first and the last chunk may hold only the embedding / the output head (Megatron's
  // --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split).
  if (l.pp * l.vpp > m.layers + 2) {
    err("pp*vpp = " + s(l.pp * l.vpp) + " pipeline chunks exceed the model's " + s(m.layers) +
        " layers + embedding + output head");
  }
  if (l.schedule == PipelineSchedule::kDualPipe) {
    if (l.pp < 2 || l.pp % 2 != 0) err("dualpipe needs an even pp >= 2, got pp = " + s(l.pp));
    if (l.vpp != 1)
      err("dualpipe holds two stages per rank itself: vpp must be 1, got " + s(l.vpp));
    if (l.micro_batches() < 2 * l.pp) {
      err("dualpipe needs at least 2*pp = " + s(2 * l.pp) + " micro-batches per step, got " +
          s(l.micro_batches()));
    }
  }
  if (l.capacity_factor < 0) err("capacity_factor must be >= 0 (0 = dropless)");
  if (l.lora_rank < 0) err("lora_rank must be >= 0, got " + s(l.lora_rank));
  if (l.moment_bytes != 2 && l.moment_bytes != 4) {
    err("moment_bytes must be 2 (bf16) or 4 (fp32), got " + s(l.moment_bytes));
  }
  if (l.vpp > 1 && l.pp == 1) err("vpp = " + s(l.vpp) + " needs pp > 1 (interleaving)");
  if (l.vpp > 1 && l.micro_batches() % l.pp != 0) {
    err("interleaved schedule: micro-batches = " + s(l.micro_batches()) +
        " must be a multiple of pp = " + s(l.pp));
  }
  if (!e.empty()) return base::fail(e.combined());
  return {};
}

std::vector<int> split_layers(int layers, int chunks) {
  const int ceil = (layers + chunks - 1) / chunks;
  std::vector<int> out(static_cast<size_t>(chunks), ceil);
  int deficit = chunks * ceil - layers;
  int lo = 0, hi = chunks - 1;
  bool front = true;
  while (deficit > 0) {
    const int i = front ? lo++ : hi--;
    --out[static_cast<size_t>(i)];
    --deficit;
    front = !front;
    if (lo > hi) {
      lo = 0;
      hi = chunks - 1;
    }
  }
  return out;
}

RankCoord coord_of(const TrainingLayout& l, int64_t rank) {
  RankCoord c{};
  c.tp = static_cast<int>(rank % l.tp);
  rank /= l.tp;
  c.cp = static_cast<int>(rank % l.cp);
  rank /= l.cp;
  c.dp = static_cast<int>(rank % l.dp);
  rank /= l.dp;
  c.pp = static_cast<int>(rank);
  return c;
}

int64_t rank_of(const TrainingLayout& l, RankCoord c) {
  return c.tp +
         static_cast<int64_t>(l.tp) *
             (c.cp + static_cast<int64_t>(l.cp) * (c.dp + static_cast<int64_t>(l.dp) * c.pp));
}

}  // namespace clustertwin::workload
