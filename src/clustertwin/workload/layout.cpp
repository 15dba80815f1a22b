#include "clustertwin/workload/layout.h"

#include <algorithm>
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
  }
  return "auto";
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

std::optional<MoeDispatch> parse_moe_dispatch(std::string_view s) {
  if (s == "auto") return MoeDispatch::kAuto;
  if (s == "alltoall") return MoeDispatch::kAllToAll;
  if (s == "dedup" || s == "deepep") return MoeDispatch::kDedup;
  return std::nullopt;
}

base::Result<int64_t> model_parallel_size(const TrainingLayout& l) {
  return base::checked_product({{"tp", l.tp}, {"pp", l.pp}, {"cp", l.cp}}, base::kMaxGpus, "GPUs");
}

base::Result<int64_t> default_global_batch(const TrainingLayout& l) {
  return base::checked_product(
      {{"micro_batch", l.micro_batch}, {"dp", l.dp}, {"4*pp", 4 * static_cast<int64_t>(l.pp)}},
      base::kMaxBatch, "sequences (give --global-batch)");
}

base::Status validate(const TrainingLayout& l, const models::ModelSpec& m, int64_t gpus) {
  base::Errors e;
  auto err = [&](std::string s) { e.add(base::Error{std::move(s), {}, 0}); };
  auto s = [](int64_t v) { return std::to_string(v); };
  for (auto [name, v] : {std::pair{"tp", l.tp},
                         {"pp", l.pp},
                         {"dp", l.dp},
                         {"cp", l.cp},
                         {"ep", l.ep},
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
  if ((static_cast<int64_t>(l.dp) * l.cp) % l.ep != 0) {
    err("ep = " + s(l.ep) + " does not divide dp*cp = " + s(static_cast<int64_t>(l.dp) * l.cp) +
        " (experts are carved from the data-parallel ranks)");
  }
  if (l.ep > 1 && !m.moe) err("ep = " + s(l.ep) + " but model '" + m.name + "' has no experts");
  if (m.moe && m.moe->experts % l.ep != 0) {
    err("ep = " + s(l.ep) + " does not divide the model's " + s(m.moe->experts) + " experts");
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
  if (l.pp * l.vpp > m.layers) {
    err("pp*vpp = " + s(l.pp * l.vpp) + " pipeline chunks exceed the model's " + s(m.layers) +
        " layers");
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
