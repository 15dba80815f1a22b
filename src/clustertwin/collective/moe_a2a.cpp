#include "clustertwin/collective/moe_a2a.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>

#include "clustertwin/config/reader.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::collective {
using base::fail;
using config::Reader;
using Need = Reader::Need;

const char* a2a_impl_name(A2aImpl i) {
  switch (i) {
    case A2aImpl::kNccl:
      return "nccl";
    case A2aImpl::kDeepEpNormal:
      return "deepep-normal";
    case A2aImpl::kDeepEpLowLatency:
      return "deepep-ll";
    case A2aImpl::kNvlinkOneSided:
      return "nvlink-onesided";
  }
  return "?";
}

base::Result<A2aImpl> parse_a2a_impl(std::string_view s) {
  for (A2aImpl i : {A2aImpl::kNccl, A2aImpl::kDeepEpNormal, A2aImpl::kDeepEpLowLatency,
                    A2aImpl::kNvlinkOneSided}) {
    if (s == a2a_impl_name(i)) return i;
  }
  return fail("unknown all-to-all implementation '" + std::string(s) +
              "' (known: nccl, deepep-normal, deepep-ll, nvlink-onesided)");
}

namespace {

/// C(a, k) / C(b, k) for real a <= b: the chance that k draws without replacement from b items
/// all miss the b - a items of interest.
double miss(double a, double b, int k) {
  if (a < k) return 0.0;
  double r = 1;
  for (int i = 0; i < k; ++i) r *= (a - i) / (b - i);
  return r;
}

/// Hypergeometric P(j of the m chosen groups among the `mine` groups of a unit), G groups.
double hyper(int j, int mine, int G, int m) {
  auto lc = [](int n, int k) {
    return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
  };
  if (j > mine || m - j > G - mine || j < 0 || m - j < 0) return 0;
  return std::exp(lc(mine, j) + lc(G - mine, m - j) - lc(G, m));
}

/// Expected units (domains or ranks) a token reaches when `units` units hold the experts in
/// equal contiguous blocks.
double reach_units(const MoeRouting& r, int units) {
  const double E = r.experts;
  const int k = std::min(r.topk, r.experts);
  const bool limited = r.groups > 0 && r.topk_groups > 0 && r.topk_groups < r.groups;
  if (!limited || (units % r.groups != 0 && r.groups % units != 0)) {
    return units * (1 - miss(E - E / units, E, k));
  }
  const int G = r.groups, M = r.topk_groups;
  const double R = M * E / G;  // experts a token can reach
  if (units % G == 0) {        // each unit inside one group: reached only if its group is chosen
    return units * (static_cast<double>(M) / G) * (1 - miss(R - E / units, R, k));
  }
  const int mine = G / units;  // each unit holds whole groups
  double p = 0;
  for (int j = 1; j <= std::min(mine, M); ++j)
    p += hyper(j, mine, G, M) * (1 - miss(R - j * E / G, R, k));
  return units * p;
}

}  // namespace

MoeReach moe_reach(const MoeRouting& r, int domains, int per_domain) {
  if (r.balanced) {
    const int k = std::min(r.topk, r.experts);
    return {static_cast<double>(std::min(domains, k)),
            static_cast<double>(std::min(domains * per_domain, k))};
  }
  return {reach_units(r, domains), reach_units(r, domains * per_domain)};
}

base::Result<A2aParams> A2aParams::load(const hardware::Catalog& catalog) {
  A2aParams out;
  base::Errors errors;
  bool found = false;
  for (const auto& f : catalog.other_files()) {
    if (f.path != "collectives/moe-a2a.yaml") continue;
    found = true;
    auto doc = config::parse_document(f.text, "catalog/" + f.path);
    if (!doc) return fail(doc.error());
    config::ReadContext ctx{.file = doc->file};
    Reader top(doc->root, ctx);
    top.read_sources();
    for (auto& k : top.children("moe_all_to_all")) {
      A2aKernelParams p;
      A2aImpl impl = A2aImpl::kNccl;
      if (auto s = k.string("impl")) {
        auto i = parse_a2a_impl(*s);
        if (!i) {
          k.error(i.error().message, "impl");
        } else {
          impl = *i;
        }
      }
      p.gpus = k.strings("gpus").value_or(std::vector<std::string>{});
      if (auto e = k.cited_figure_entry("nvlink_efficiency", p.source)) {
        p.nvlink_efficiency = e->number("value", Need::kRequired, 0.05, 1.0).value_or(0.8);
        e->finish();
      }
      if (auto e = k.cited_figure_entry("rdma_efficiency", p.source)) {
        p.rdma_efficiency = e->number("value", Need::kRequired, 0.05, 1.0).value_or(0.9);
        e->finish();
      }
      if (auto e = k.cited_figure_entry("rdma_per_peer", p.source)) {
        p.rdma_per_peer = e->quantity<BytesPerSecond>("value").value_or(BytesPerSecond{});
        e->finish();
      }
      for (auto [key, field] : {std::pair{"dispatch_floor", &p.dispatch_floor},
                                std::pair{"combine_floor", &p.combine_floor},
                                std::pair{"dispatch_overlap", &p.dispatch_overlap},
                                std::pair{"combine_overlap", &p.combine_overlap}}) {
        if (auto e = k.cited_figure_entry(key, p.source)) {
          *field = e->quantity<Seconds>("value", Need::kRequired, true).value_or(Seconds{});
          e->finish();
        }
      }
      if (p.dispatch_overlap > p.dispatch_floor || p.combine_overlap > p.combine_floor)
        k.error("an overlap must not exceed its floor");
      k.allow("note");
      k.finish();
      out.entries_.emplace_back(impl, std::move(p));
    }
    top.finish();
    for (auto& e : ctx.errors.items) errors.add(e);
  }
  if (!found) errors.add({"catalog/collectives/moe-a2a.yaml is missing", {}, 0});
  if (!errors.empty()) return fail(errors.combined());
  return out;
}

base::Result<A2aKernelParams> A2aParams::kernel(A2aImpl impl, std::string_view gpu) const {
  const A2aKernelParams* any = nullptr;
  for (const auto& [i, p] : entries_) {
    if (i != impl) continue;
    if (std::find(p.gpus.begin(), p.gpus.end(), gpu) != p.gpus.end()) return p;
    if (std::find(p.gpus.begin(), p.gpus.end(), "*") != p.gpus.end()) any = &p;
  }
  if (any) return *any;
  return fail(std::string(a2a_impl_name(impl)) + " has no parameters for " + std::string(gpu) +
              " in catalog/collectives/moe-a2a.yaml");
}

namespace {
/// The reported rates of an estimate (logical, DeepEP's RDMA and NVLink figures).
void fill_rates(MoeA2aEstimate& e, const MoeA2aRequest& r, int n, int D) {
  const double T = static_cast<double>(r.tokens_per_rank);
  const double b = static_cast<double>(r.token_bytes);
  const int k = r.routing.topk;
  const double t = e.time.base();
  e.logical_bw = base::bytes_per_s(T * std::min(n, k) * b / t);
  if (r.impl == A2aImpl::kDeepEpLowLatency) {
    e.rdma_bw = base::bytes_per_s(T * k * b / t);
  } else if (D > 1) {
    e.rdma_bw = base::bytes_per_s(T * b * e.reach.domains / t);
  }
  e.nvl_bw = base::bytes_per_s(T * b * e.reach.ranks / t);
}
}  // namespace

namespace {
// NVLinkOneSided writes into peers' buffers over NVLink loads/stores: one NVLink domain only.
std::optional<std::string> onesided_spans_domains(A2aImpl impl, int domains) {
  if (impl != A2aImpl::kNvlinkOneSided || domains <= 1) return std::nullopt;
  return "nvlink-onesided runs inside one NVLink domain; the group spans " +
         std::to_string(domains) + " domains";
}
}  // namespace

base::Result<MoeA2aEstimate> moe_a2a_kernel(const A2aKernelParams& kp, const MoeA2aRequest& r,
                                            int domains, int per_domain, BytesPerSecond nvlink,
                                            BytesPerSecond nic_rate) {
  const int D = domains, p = per_domain, n = D * p;
  if (n < 2) return fail("an all-to-all needs at least 2 ranks");
  if (r.tokens_per_rank < 1) return fail("tokens per rank: expected >= 1");
  if (r.token_bytes < 1) return fail("token bytes: expected >= 1");
  if (r.routing.topk < 1 || r.routing.experts < r.routing.topk)
    return fail("routing: expected 1 <= topk <= experts");
  if (r.impl == A2aImpl::kNccl) return fail("moe_a2a_kernel: nccl needs the collective model");
  if (auto why = onesided_spans_domains(r.impl, D)) return fail(*why);
  MoeA2aEstimate e;
  e.impl = r.impl;
  e.reach = moe_reach(r.routing, D, p);
  const double T = static_cast<double>(r.tokens_per_rank);
  const double b = static_cast<double>(r.token_bytes);
  const int k = r.routing.topk;
  const double b_nvl = nvlink.base() * kp.nvlink_efficiency;
  double b_net = nic_rate.base() * kp.rdma_efficiency;
  const Seconds floor = r.combine ? kp.combine_floor : kp.dispatch_floor;
  const double overlap = (r.combine ? kp.combine_overlap : kp.dispatch_overlap).base();
  double net = 0, nvl = 0;
  switch (r.impl) {
    case A2aImpl::kDeepEpNormal:
      // Once per destination domain over the network (to the same local rank there), then
      // forwarded over NVLink to the distinct ranks holding the token's experts.
      net = D > 1 ? T * b * e.reach.domains * (D - 1) / D : 0.0;
      nvl = T * b * e.reach.ranks * (p - 1) / p;
      if (kp.rdma_per_peer.base() > 0 && D > 1)
        b_net = std::min(b_net, (D - 1) * kp.rdma_per_peer.base());
      break;
    case A2aImpl::kDeepEpLowLatency:
      net = T * k * b * (n - p) / n;
      nvl = T * k * b * (p - 1) / n;
      break;
    case A2aImpl::kNvlinkOneSided:
      nvl = T * std::min(n, k) * b * (n - 1) / n;
      break;
    case A2aImpl::kNccl:
      break;
  }
  const double t_net = net > 0 ? net / b_net : 0.0;
  const double t_nvl = nvl > 0 ? nvl / b_nvl : 0.0;
  e.floor = floor;
  e.time = base::seconds(floor.base() - overlap + std::max(overlap, std::max(t_net, t_nvl)));
  e.network_bytes = base::bytes(net);
  e.nvlink_bytes = base::bytes(nvl);
  e.bottleneck = std::max(t_net, t_nvl) < std::max(overlap, 0.5 * floor.base()) ? ""
                 : t_net > t_nvl                                                ? "network"
                                                                                : "nvlink";
  fill_rates(e, r, n, D);
  return e;
}

base::Result<MoeA2aEstimate> estimate_moe_a2a(CollectiveModel& model,
                                              const topology::Topology& topo,
                                              const A2aParams& params, const Group& g,
                                              const MoeA2aRequest& r) {
  if (g.ranks() < 2) return fail("an all-to-all needs at least 2 ranks");
  if (r.tokens_per_rank < 1) return fail("tokens per rank: expected >= 1");
  if (r.token_bytes < 1) return fail("token bytes: expected >= 1");
  if (r.routing.topk < 1 || r.routing.experts < r.routing.topk)
    return fail("routing: expected 1 <= topk <= experts");
  const int n = g.ranks(), D = g.domains(), p = g.per_domain();
  if (!g.uniform())
    return fail("MoE all-to-all: expected the same number of ranks in every domain");
  MoeA2aEstimate e;
  e.impl = r.impl;
  e.reach = moe_reach(r.routing, D, p);
  const double T = static_cast<double>(r.tokens_per_rank);
  const double b = static_cast<double>(r.token_bytes);
  const int k = r.routing.topk;
  if (r.impl == A2aImpl::kNccl) {
    // ncclAllToAll of each rank's routed copies: T k b bytes per rank, spread evenly.
    Request req{.op = Op::kAllToAll,
                .bytes = static_cast<int64_t>(T * k * b),
                .dtype = Dtype{"bfloat16", 2, true}};
    auto est = model.estimate(g, req);
    if (!est) return fail(est.error());
    e.time = est->time;
    e.floor = est->latency;
    e.network_bytes = base::bytes(T * k * b * (n - p) / n);
    e.nvlink_bytes = base::bytes(T * k * b * (p - 1) / n);
    e.bottleneck = est->bottleneck;
  } else {
    // The topology limit first: it holds on every GPU, the kernel table only names some.
    if (auto why = onesided_spans_domains(r.impl, D)) return fail(*why);
    auto kp = params.kernel(r.impl, model.gpu_name());
    if (!kp) return fail(kp.error());
    const int g0 = g.gpus.front();
    return moe_a2a_kernel(*kp, r, D, p, topo.link(topo.nvlink_up(g0)).capacity,
                          topo.link(topo.pcie_up(g0)).capacity);
  }
  fill_rates(e, r, n, D);
  return e;
}

base::Result<MoeSweepResult> run_moe_sweep(const hardware::Catalog& catalog,
                                           const MoeSweepSpec& spec) {
  auto cluster = hardware::resolve_cluster(catalog, spec.cluster);
  if (!cluster) return fail(cluster.error());
  auto topo = topology::Topology::build(catalog, *cluster);
  if (!topo) return fail(topo.error());
  auto cal = Calibration::load(catalog);
  if (!cal) return fail(cal.error());
  auto params = A2aParams::load(catalog);
  if (!params) return fail(params.error());
  const int n = spec.gpus > 0 ? spec.gpus : topo->gpus();
  auto group = place_first(*topo, n, spec.gpus_per_domain);
  if (!group) return fail(group.error());
  CollectiveModel model(catalog, *topo, *cal, {.network = NetworkModelKind::kFlow});
  MoeSweepResult out;
  out.spec = spec;
  out.cluster_name = cluster->name;
  out.gpu = model.gpu_name();
  out.ranks = group->ranks();
  out.domains = group->domains();
  out.per_domain = group->per_domain();
  if (spec.request.impl != A2aImpl::kNccl) {
    auto kp = params->kernel(spec.request.impl, out.gpu);
    if (!kp) return fail(kp.error());
    out.source = kp->source;
  }
  for (int64_t t : spec.tokens) {
    MoeA2aRequest r = spec.request;
    r.tokens_per_rank = t;
    auto e = estimate_moe_a2a(model, *topo, *params, *group, r);
    if (!e) return fail(e.error());
    out.rows.emplace_back(t, *e);
  }
  return out;
}

std::string render_moe_table(const MoeSweepResult& r) {
  std::ostringstream os;
  const auto& q = r.spec.request;
  os << "# clustertwin MoE " << (q.combine ? "combine" : "dispatch") << ": "
     << a2a_impl_name(q.impl) << " on " << r.ranks << " GPUs of " << r.cluster_name << " (" << r.gpu
     << "; " << r.domains << " NVLink domain" << (r.domains == 1 ? "" : "s") << ", " << r.per_domain
     << " ranks each)\n";
  os << "# routing: " << q.routing.experts << " experts, top-" << q.routing.topk;
  if (q.routing.groups > 0)
    os << ", " << q.routing.topk_groups << " of " << q.routing.groups << " groups";
  os << (q.routing.balanced ? ", balanced (perfect router)" : ", uniform")
     << (r.spec.routing_from.empty() ? "" : " (" + r.spec.routing_from + ")") << "; "
     << q.token_bytes << " B per token; GB/s = 1e9 B/s\n";
  if (!r.source.empty()) os << "# parameters: " << r.source << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "# %8s %10s %9s %9s %9s %9s %9s %8s  %s\n", "tokens", "time(us)",
                "floor", "net MB", "nvl MB", "logical", "rdma", "nvl", "bottleneck");
  os << line;
  for (const auto& [t, e] : r.rows) {
    std::snprintf(line, sizeof line, "  %8lld %10.1f %9.1f %9.2f %9.2f %9.1f %9.1f %8.1f  %s\n",
                  static_cast<long long>(t), e.time.base() * 1e6, e.floor.base() * 1e6,
                  e.network_bytes.base() / 1e6, e.nvlink_bytes.base() / 1e6,
                  e.logical_bw.base() / 1e9, e.rdma_bw.base() / 1e9, e.nvl_bw.base() / 1e9,
                  e.bottleneck.empty() ? "latency" : e.bottleneck.c_str());
    os << line;
  }
  os << "# logical = tokens x min(ranks, topk) x bytes / time (TensorRT-LLM); rdma, nvl = DeepEP's "
        "test figures (own domain and own rank included)\n";
  return os.str();
}

nlohmann::json moe_to_json(const MoeSweepResult& r) {
  const auto& q = r.spec.request;
  auto sig = [](double v) { return std::round(v * 1e4) / 1e4; };
  nlohmann::json j;
  j["cluster"] = r.cluster_name;
  j["gpu"] = r.gpu;
  j["op"] = "all_to_all";
  j["impl"] = a2a_impl_name(q.impl);
  j["phase"] = q.combine ? "combine" : "dispatch";
  j["ranks"] = r.ranks;
  j["nvlink_domains"] = r.domains;
  j["gpus_per_domain"] = r.per_domain;
  j["routing"] = {{"experts", q.routing.experts},   {"topk", q.routing.topk},
                  {"groups", q.routing.groups},     {"topk_groups", q.routing.topk_groups},
                  {"balanced", q.routing.balanced}, {"from", r.spec.routing_from}};
  j["token_bytes"] = q.token_bytes;
  j["parameters_source"] = r.source;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [t, e] : r.rows) {
    rows.push_back({{"tokens_per_rank", t},
                    {"time_us", sig(e.time.base() * 1e6)},
                    {"floor_us", sig(e.floor.base() * 1e6)},
                    {"network_bytes_per_rank", sig(e.network_bytes.base())},
                    {"nvlink_bytes_per_rank", sig(e.nvlink_bytes.base())},
                    {"distinct_domains_per_token", sig(e.reach.domains)},
                    {"distinct_ranks_per_token", sig(e.reach.ranks)},
                    {"logical_bw_GBps", sig(e.logical_bw.base() / 1e9)},
                    {"rdma_bw_GBps", sig(e.rdma_bw.base() / 1e9)},
                    {"nvl_bw_GBps", sig(e.nvl_bw.base() / 1e9)},
                    {"bottleneck", e.bottleneck}});
  }
  j["results"] = rows;
  return j;
}

}  // namespace clustertwin::collective
