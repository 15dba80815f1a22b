#include "clustertwin/collective/collective_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "clustertwin/base/check.h"
#include "clustertwin/collective/patterns.h"

namespace clustertwin::collective {
using base::fail;
using topology::LinkKind;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// The reference size flows are built with; times scale linearly with it.
constexpr double kRefBytes = 1e9;
/// NCCL_P2P_LL_THRESHOLD default (bytes per peer).
constexpr int64_t kP2pLLThreshold = 16384;

int ceil_log2(int v) {
  int k = 0;
  while ((1 << k) < v) ++k;
  return k;
}

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

uint64_t fingerprint(const Group& g) {
  uint64_t h = 1469598103934665603ULL ^ g.gpus.size();
  for (int x : g.gpus) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ULL;
  return h;
}

}  // namespace

base::Result<NetworkModelKind> parse_network_model(std::string_view s) {
  if (s == "analytical") return NetworkModelKind::kAnalytical;
  if (s == "flow") return NetworkModelKind::kFlow;
  return fail("unknown network model '" + std::string(s) + "' (known: analytical, flow)");
}

Estimate finish_estimate(Estimate e, Op op, int64_t bytes, int ranks) {
  const double t = e.time.base();
  const double algbw = t > 0 ? static_cast<double>(bytes) / t : 0.0;
  e.algbw = base::bytes_per_s(algbw);
  e.busbw = base::bytes_per_s(algbw * busbw_factor(op, ranks));
  return e;
}

CollectiveModel::CollectiveModel(const hardware::Catalog& catalog, const topology::Topology& topo,
                                 const Calibration& calibration, ModelOptions options)
    : catalog_(&catalog), topo_(&topo), cal_(&calibration), opt_(std::move(options)) {
  const auto& spec = topo.spec();
  auto sys = catalog.system(spec.system);
  CT_CHECK(sys.has_value(), "topology of an unknown system");
  gpu_ = (*sys)->gpu;
  tuner_ = resolve_tuner(opt_.tuner, calibration, gpu_);
  auto gpu = catalog.gpu(gpu_);
  auto nvsw = catalog.switch_spec((*sys)->nvswitch);
  if (nvsw) {
    nvswitch_ = (*nvsw)->display_name;
    // NVLS needs NVLink SHARP in the switch (NVSwitch 3 / NVLink 4 and later) and a Hopper or
    // later GPU (multimem instructions, sm_90).
    nvls_hw_ = contains((*nvsw)->in_network_reduction, "NVLink SHARP") && gpu &&
               (*gpu)->nvlink_generation >= 4;
  }
  auto so = catalog.switch_spec(spec.scale_out.switch_name);
  if (so) {
    scale_out_switch_ = (*so)->display_name;
    sharp_hw_ = contains((*so)->in_network_reduction, "SHARP") &&
                (*so)->kind == hardware::SwitchKind::kInfiniband;
  }
  sharp_ = sharp_hw_ && opt_.sharp.value_or(spec.scale_out.sharp);
  channels_ = opt_.channels > 0 ? opt_.channels : cal_->ring_channels(gpu_);
  // What NCCL's topology search sees (its units, src/graph/topo.h): NVLink as links x its
  // per-link figure (SM80 20.0, SM90 20.6, SM100 40.1 GB/s); the NIC at line rate; the GPU-NIC
  // PCIe path at NCCL's figure for the NIC's host interface (the NIC catalog's pcie_generation
  // and pcie_lanes, nccl_pci_gbs).
  if (gpu) {
    tuner_hw_.cc = compute_class((*gpu)->architecture);
    const double per_link = tuner_hw_.cc >= ComputeClass::kBlackwell ? 40.1
                            : tuner_hw_.cc >= ComputeClass::kHopper  ? 20.6
                                                                     : 20.0;
    tuner_hw_.nvlink_gbs = per_link * (*gpu)->nvlink_links;
  }
  if (auto cpu = catalog.cpu((*sys)->cpu)) tuner_hw_.cpu = cpu_vendor((*cpu)->display_name);
  if (auto nic = catalog.nic((*sys)->nic)) {
    tuner_hw_.nic_gbs = (*nic)->bandwidth.base() / 1e9;
    tuner_hw_.pci_gbs = nccl_pci_gbs((*nic)->pcie_generation, (*nic)->pcie_lanes);
  }
  const int domain_gpus = std::max(1, (*sys)->nvlink_domain_gpus);
  tuner_hw_.gpus_per_domain = domain_gpus;
  tuner_hw_.nics_per_domain =
      (*sys)->gpus_per_node > 0 ? (*sys)->nics_per_node * domain_gpus / (*sys)->gpus_per_node : 0;
}

base::Result<TunerKind> parse_tuner(std::string_view s) {
  if (s == "nccl") return TunerKind::kNccl;
  if (s == "fastest") return TunerKind::kFastest;
  return fail("unknown tuner '" + std::string(s) + "' (known: nccl, fastest)");
}

const char* tuner_name(TunerKind t) { return t == TunerKind::kNccl ? "nccl" : "fastest"; }

TunerKind resolve_tuner(std::optional<TunerKind> requested, const Calibration& calibration,
                        std::string_view gpu) {
  if (requested) return *requested;
  return calibration.profile_for(gpu) != nullptr ? TunerKind::kFastest : TunerKind::kNccl;
}

TunerInputs CollectiveModel::tuner_inputs(const Group& g) const {
  TunerHardware hw = tuner_hw_;
  // NCCL's topology holds the communicator's GPUs of each node and the NICs next to them.
  const int ppn = std::max(1, g.per_domain());
  hw.gpus_per_domain = ppn;
  hw.nics_per_domain =
      std::max(1, static_cast<int>(std::lround(static_cast<double>(tuner_hw_.nics_per_domain) *
                                               ppn / std::max(1, tuner_hw_.gpus_per_domain))));
  return derive_tuner_inputs(hw, g.ranks(), g.domains(), ppn, sharp_, nvls_hw_);
}

std::vector<Protocol> CollectiveModel::protocols(Algorithm a, Op op) {
  (void)op;
  switch (a) {
    case Algorithm::kRing:
    case Algorithm::kTree:
      return {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};
    case Algorithm::kDirect:
      return {Protocol::kLL, Protocol::kSimple};
    default:
      return {Protocol::kSimple};
  }
}

std::string CollectiveModel::unavailable(const Group& g, Op op, const Dtype& dt,
                                         Algorithm a) const {
  const int D = g.domains();
  const int p = g.per_domain();
  const bool p2p = op == Op::kAllToAll || op == Op::kSendRecv;
  const std::string opn = op_name(op);
  switch (a) {
    case Algorithm::kAuto:
      return {};
    case Algorithm::kDirect:
      if (!p2p) return "direct runs all_to_all and sendrecv only";
      return {};
    case Algorithm::kRing:
      if (p2p) return opn + " runs as direct point-to-point transfers, not a ring";
      return {};
    case Algorithm::kTree:
      if (op != Op::kAllReduce) return "NCCL runs tree for all_reduce only";
      return {};
    case Algorithm::kNvls:
    case Algorithm::kNvlsTree: {
      const char* name = algorithm_name(a);
      if (!nvls_hw_) {
        return std::string(name) +
               " needs NVLink SHARP (in-network reduction in the NVLink switch, "
               "Hopper or later); this cluster's NVLink switch is " +
               (nvswitch_.empty() ? std::string("unknown") : nvswitch_) + " without it";
      }
      if (a == Algorithm::kNvls && op != Op::kAllReduce && op != Op::kAllGather &&
          op != Op::kReduceScatter) {
        return "nvls runs all_reduce, all_gather and reduce_scatter only";
      }
      if (a == Algorithm::kNvlsTree && op != Op::kAllReduce)
        return "nvls_tree runs all_reduce only";
      if (reduces(op) && !dt.nvls_reducible) {
        return std::string(name) + " cannot reduce " + dt.name +
               " (NVLink SHARP reduces 16/32/64-bit floats and 32/64-bit integers)";
      }
      if (p < 2) return std::string(name) + " needs at least 2 GPUs in an NVLink domain";
      if (a == Algorithm::kNvlsTree && D < 2)
        return "nvls_tree needs at least 2 NVLink domains (use nvls inside one)";
      if (a == Algorithm::kNvls && D > 1) {
        if (op != Op::kAllReduce) return "nvls across NVLink domains runs all_reduce only";
        if (!sharp_hw_) {
          return "nvls across NVLink domains needs SHARP in the scale-out switches (NCCL pairs it "
                 "with "
                 "CollNet); " +
                 scale_out_switch_ + " has none: use nvls_tree";
        }
        if (!sharp_) {
          return "nvls across NVLink domains needs SHARP enabled (NCCL's SHARP plugin with "
                 "NCCL_COLLNET_ENABLE=1; cluster scale_out.sharp or {sharp} on); it is off: "
                 "nvls_tree runs instead";
        }
        if (!g.uniform())
          return "nvls across NVLink domains needs the same number of GPUs in every domain";
      }
      if (a == Algorithm::kNvlsTree && !g.uniform())
        return "nvls_tree needs the same number of GPUs in every domain";
      return {};
    }
    case Algorithm::kCollNet:
      if (op != Op::kAllReduce) return "collnet runs all_reduce only in this model";
      if (!sharp_hw_) {
        return "collnet needs in-network reduction (SHARP) in the scale-out switches; " +
               scale_out_switch_ + " has none";
      }
      if (!sharp_) {
        return "collnet needs SHARP enabled (NCCL's SHARP plugin with NCCL_COLLNET_ENABLE=1; "
               "cluster scale_out.sharp or {sharp} on); it is off";
      }
      if (D < 2) return "collnet needs at least 2 NVLink domains";
      if (!g.uniform()) return "collnet needs the same number of GPUs in every domain";
      return {};
    case Algorithm::kPat:
      if (op != Op::kAllGather && op != Op::kReduceScatter)
        return "pat runs all_gather and reduce_scatter only";
      if (p != 1)
        return "pat needs one GPU per NVLink domain (NCCL: 'PAT only supports 1 GPU per node'); "
               "use {gpus_per_domain} 1";
      return {};
    case Algorithm::kHierarchical:
      if (op != Op::kAllReduce) return "hierarchical runs all_reduce only";
      if (D < 2) return "hierarchical needs at least 2 NVLink domains";
      if (!g.uniform()) return "hierarchical needs the same number of GPUs in every domain";
      return {};
  }
  return "unknown algorithm";
}

std::vector<Availability> CollectiveModel::availability(const Group& g, Op op,
                                                        const Dtype& dt) const {
  std::vector<Availability> out;
  for (Algorithm a :
       {Algorithm::kRing, Algorithm::kTree, Algorithm::kNvls, Algorithm::kNvlsTree,
        Algorithm::kCollNet, Algorithm::kPat, Algorithm::kHierarchical, Algorithm::kDirect}) {
    auto why = unavailable(g, op, dt, a);
    out.push_back({a, why.empty(), why});
  }
  return out;
}

base::Status CollectiveModel::check(const Group& g, Op op, const Dtype& dt, Algorithm a,
                                    Protocol p) const {
  if (g.ranks() < 2)
    return fail("a collective needs at least 2 GPUs, got " + std::to_string(g.ranks()));
  if (auto why = unavailable(g, op, dt, a); !why.empty()) {
    return fail(std::string("{algo} ") + algorithm_name(a) + " cannot run here: " + why);
  }
  if (p != Protocol::kAuto && a != Algorithm::kHierarchical) {
    const auto ps = protocols(a, op);
    if (std::find(ps.begin(), ps.end(), p) == ps.end()) {
      std::string list;
      for (auto q : ps) list += std::string(list.empty() ? "" : ", ") + protocol_name(q);
      return fail(std::string("{protocol} ") + protocol_name(p) + " cannot run with " +
                  algorithm_name(a) + " (it runs " + list + ")");
    }
  }
  return {};
}

const network::SprayBundles* CollectiveModel::spray_bundles() {
  if (opt_.routing != network::Routing::kSpray) return nullptr;
  if (!bundles_)
    bundles_ = std::make_unique<network::SprayBundles>(network::SprayBundles::build(*topo_));
  return bundles_.get();
}

bool CollectiveModel::fabric_shares_nothing(std::span<const Group> groups) const {
  // Spraying (adaptive routing in the fluid limit) over a non-blocking fat tree: a leaf's
  // up-link bundle is as wide as its NICs, and so is every bundle above, so the fabric carries
  // whatever the NICs send. Contention is then only where two groups use one NIC or one NVLink
  // port, i.e. where they share a GPU or a NIC. Oversubscription, ECMP hashing, degraded links
  // or shared NICs break this, and the flows are solved together.
  if (!opt_.symmetry || opt_.network != NetworkModelKind::kFlow ||
      opt_.routing != network::Routing::kSpray || !opt_.capacity_overrides.empty() ||
      groups.size() < 2) {
    return false;
  }
  for (double o : topo_->spec().scale_out.oversubscription) {
    if (o > 1.0 + 1e-9) return false;
  }
  std::set<int> gpus, nics;
  for (size_t i = 0; i < groups.size(); ++i) {
    std::set<int> mine;
    for (int x : groups[i].gpus) {
      if (!gpus.insert(x).second) return false;
      mine.insert(topo_->nic_of(x));
    }
    for (int n : mine) {
      if (!nics.insert(n).second) return false;
    }
  }
  return true;
}

bool CollectiveModel::representative_ok() const {
  if (!opt_.symmetry) return false;
  for (const auto& [link, cap] : opt_.capacity_overrides) {
    const auto kind = topo_->link(link).kind;
    if (kind == LinkKind::kNvlink) return false;
  }
  return true;
}

double CollectiveModel::inter_path_us(const Group& g) const {
  if (g.domains() < 2) return 0;
  std::vector<topology::LinkId> path;
  const int a = g.by_domain[0][0], b = g.by_domain[1][0];
  topo_->path(a, b, 0, path);
  return topo_->latency(path).base() * 1e6;
}

double CollectiveModel::fill_s(const Group& g, Protocol p, const Line& l, double x) const {
  double f = std::min(l.ramp * x, l.fill_us * 1e-6);
  if (g.domains() > 1 && p == Protocol::kSimple) {
    const auto& s = cal_->scale(gpu_);
    if (s.cross_fill_us > 0) f = std::max(f, std::min(s.cross_ramp * x, s.cross_fill_us * 1e-6));
  }
  return f;
}

double CollectiveModel::nvls_cap_unit(const Group& g, Op op, Algorithm a) const {
  if (a != Algorithm::kNvls && a != Algorithm::kNvlsTree) return 0;
  const double per_channel = cal_->scale(gpu_).nvls_channel_bw.base();
  if (per_channel <= 0) return 0;
  // NCCL's NVLS model: bus bandwidth = channels x per-channel bandwidth, whatever the ranks
  // (tuning.cc). Inside a domain of p ranks, an all-reduce moves 2(p-1)/p of S per bus byte,
  // all-gather and reduce-scatter (p-1)/p.
  const int p = g.per_domain();
  if (p < 2) return 0;
  const double bus = op == Op::kAllReduce ? 2.0 * (p - 1) / p : (p - 1.0) / p;
  return bus / (cal_->nvls_channels(gpu_) * per_channel);
}

double CollectiveModel::latency_us(const Group& g, Op op, Algorithm a, const Line& l) const {
  const int n = g.ranks(), D = g.domains(), p = g.per_domain();
  const double net = D > 1 ? l.net_hop_us + inter_path_us(g) : 0.0;
  switch (a) {
    case Algorithm::kRing: {
      const int steps = op == Op::kAllReduce ? 2 * (n - 1) : n - 1;
      const int isteps = D > 1 ? (op == Op::kAllReduce ? 2 * (D - 1) : D - 1) : 0;
      return l.base_us + (steps - isteps) * l.hop_us + isteps * net;
    }
    case Algorithm::kTree:
      return l.base_us + 2.0 * ((p - 1) * l.hop_us + ceil_log2(D) * net);
    case Algorithm::kNvls:
      return l.base_us + (D > 1 ? net : 0.0);
    case Algorithm::kNvlsTree:
      return l.base_us + 2.0 * ceil_log2(D) * net;
    case Algorithm::kCollNet:
      // NCCL: CollNet Direct (up to 8 GPUs per domain) 2 (min(1, p-1) hwLat + 0.4 us (p-1)) +
      // interLat; CollNet Chain beyond, 2 (p-1) x 2.8 us (hwLat[NVLINK][CollNetChain]) + interLat.
      if (p <= 8) return l.base_us + 2.0 * (std::min(1, p - 1) * l.hop_us + 0.4 * (p - 1)) + net;
      return l.base_us + 2.0 * (p - 1) * 2.8 + net;
    case Algorithm::kPat:
      // NCCL: 8 us + log2(nNodes) * interLat / 3.5 + nRanks * 2.8 us.
      return l.base_us + ceil_log2(D) * net / 3.5 + n * l.hop_us;
    case Algorithm::kDirect:
      if (op == Op::kSendRecv) return l.base_us + l.hop_us + net;
      return l.base_us + (n - 1) * l.hop_us + net;
    default:
      return 0;
  }
}

double CollectiveModel::analytical_unit(const Group& g, Op op, Algorithm a, const Line& l,
                                        std::string* bottleneck) const {
  const int n = g.ranks(), D = g.domains(), p = g.per_domain();
  const int g0 = g.gpus.front();
  const double bi = topo_->link(topo_->nvlink_up(g0)).capacity.base() * l.nvlink_efficiency(p);
  const double bn = topo_->link(topo_->pcie_up(g0)).capacity.base() * l.net_efficiency;
  const int C = std::max(1, channels_);
  double intra = 0, inter = 0;
  switch (a) {
    case Algorithm::kRing: {
      const double w = ring_edge_factor(op, n);
      if (D == 1) {
        intra = w / bi;
        break;
      }
      // Channel c leaves each domain from local rank e_c - 1 (patterns.cpp): count exits.
      std::vector<int> exits(static_cast<size_t>(p), 0);
      const int stride = std::max(1, p / C);
      for (int c = 0; c < C; ++c) ++exits[static_cast<size_t>(((c * stride) % p + p - 1) % p)];
      const int lo = *std::min_element(exits.begin(), exits.end());
      const int hi = *std::max_element(exits.begin(), exits.end());
      intra = p > 1 ? w * (C - lo) / C / bi : 0.0;
      inter = w * hi / C / bn;
      break;
    }
    case Algorithm::kTree: {
      const int pairs = std::max(1, C / 2);
      // Chain: a middle GPU sends each pair's two channels up and down (4 flows of S/C).
      std::vector<int> w(static_cast<size_t>(p), 0), heads(static_cast<size_t>(p), 0);
      const int stride = std::max(1, p / pairs);
      for (int q = 0; q < pairs; ++q) {
        const int e = (q * stride) % p;
        ++heads[static_cast<size_t>(e)];
        for (int i = 0; i < p && p > 1; ++i) {
          const int r = (e + i) % p;
          w[static_cast<size_t>(r)] += (i == 0 || i == p - 1) ? 2 : 4;
        }
      }
      intra = p > 1 ? *std::max_element(w.begin(), w.end()) * 1.0 / (2 * pairs) / bi : 0.0;
      if (D > 1) {
        const int hmax = *std::max_element(heads.begin(), heads.end());
        inter = hmax * nccl_dtree_max_degree(D) * 1.0 / (2 * pairs) / bn;
      }
      break;
    }
    case Algorithm::kNvls:
      intra = nvls_port_factor(op, p) / bi;
      if (D > 1) inter = 1.0 / p / bn;
      break;
    case Algorithm::kNvlsTree:
      intra = nvls_port_factor(op, p) / bi;
      inter = nccl_dtree_max_degree(D) / (2.0 * p) / bn;
      break;
    case Algorithm::kCollNet:
      intra = p > 1 ? ring_edge_factor(op, p) / bi : 0.0;
      inter = 1.0 / p / bn;
      break;
    case Algorithm::kPat:
      inter = (n - 1.0) / n / bn;
      break;
    case Algorithm::kDirect:
      if (op == Op::kSendRecv) {
        intra = p > 1 ? 1.0 / bi : 0.0;
        inter = D > 1 ? 1.0 / bn : 0.0;
      } else {
        intra = (p - 1.0) / n / bi;
        inter = (n - p) * 1.0 / n / bn;
      }
      break;
    default:
      break;
  }
  if (bottleneck) *bottleneck = inter > intra ? "network" : "nvlink";
  return std::max(intra, inter);
}

network::SteadyOptions CollectiveModel::steady_options(const Line& l, int p) const {
  network::SteadyOptions so;
  so.kind_scale[static_cast<size_t>(LinkKind::kNvlink)] = l.nvlink_efficiency(p);
  for (auto k : {LinkKind::kPcie, LinkKind::kNicUp, LinkKind::kNicDown, LinkKind::kFabricUp,
                 LinkKind::kFabricDown}) {
    so.kind_scale[static_cast<size_t>(k)] = l.net_efficiency;
  }
  return so;
}

namespace {

/// Solves a flow set phase by phase; per coupling group, the sum over phases of the slowest
/// transfer's bytes / rate (seconds for the set's byte counts). `slowest` gets the transfer that
/// set group 0's time in its last phase.
std::vector<double> solve_phases(
    const topology::Topology& topo, const FlowSet& fs, int groups, network::Routing routing,
    const std::vector<std::pair<topology::LinkId, BytesPerSecond>>& overrides,
    network::SteadyOptions so, bool couple, network::FlowSimStats& stats, int64_t& solves,
    size_t* slowest, const network::SprayBundles* bundles) {
  std::vector<double> total(static_cast<size_t>(groups), 0.0);
  int32_t phases = 0;
  for (int32_t ph : fs.phase) phases = std::max(phases, ph + 1);
  stats = {};
  for (int32_t ph = 0; ph < phases; ++ph) {
    network::FlowSimulator sim(topo, routing);
    if (bundles != nullptr) sim.share_bundles(bundles);
    std::vector<size_t> ids;
    std::vector<int32_t> grp;
    for (size_t t = 0; t < fs.transfers.size(); ++t) {
      if (fs.phase[t] != ph) continue;
      sim.add(fs.transfers[t]);
      ids.push_back(t);
      grp.push_back(fs.group[t]);
    }
    for (const auto& [link, cap] : overrides) sim.set_capacity(Seconds{}, link, cap);
    if (couple && groups > 1) so.group = grp;
    const auto st = sim.solve_steady(so);
    ++solves;
    stats.flows += sim.stats().flows;
    stats.subflows += sim.stats().subflows;
    stats.rate_solves += sim.stats().rate_solves;
    std::vector<double> worst(static_cast<size_t>(groups), 0.0);
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto& t = fs.transfers[ids[i]];
      const double time = st.rate[i] > 0 ? t.bytes.base() / st.rate[i] : kInf;
      auto& w = worst[static_cast<size_t>(grp[i])];
      if (time > w) {
        w = time;
        if (slowest && grp[i] == 0) *slowest = ids[i];
      }
    }
    for (size_t gi = 0; gi < total.size(); ++gi) total[gi] += worst[gi];
  }
  return total;
}

}  // namespace

base::Result<double> CollectiveModel::flow_unit(const Group& g, Op op, Algorithm a, const Line& l,
                                                std::string* bottleneck) {
  FlowSet fs;
  PatternOptions po{.channels = channels_,
                    .representative = representative_ok(),
                    .bytes = kRefBytes,
                    .merge_channels = opt_.routing != network::Routing::kEcmp};
  if (auto st = add_flows(fs, *topo_, g, op, a, po); !st) return fail(st.error());
  if (fs.transfers.empty()) return 0.0;
  size_t slowest = 0;
  auto times = solve_phases(*topo_, fs, 1, opt_.routing, opt_.capacity_overrides,
                            steady_options(l, g.per_domain()), false, stats_, solves_, &slowest,
                            spray_bundles());
  const double t = times[0];
  if (!std::isfinite(t)) {
    return fail(
        std::string(algorithm_name(a)) +
        ": a transfer of the collective has no working path (every path crosses a failed link)");
  }
  if (bottleneck) {
    const auto& tr = fs.transfers[slowest];
    *bottleneck = topo_->domain_of(tr.src) == topo_->domain_of(tr.dst) ? "nvlink" : "network";
  }
  return t / kRefBytes;
}

base::Result<double> CollectiveModel::unit_wire(const Group& g, Op op, Algorithm a, Protocol p,
                                                std::string* bottleneck) {
  const std::pair<uint64_t, Key> key{fingerprint(g), Key{op, a, p}};
  if (auto it = memo_.find(key); it != memo_.end()) {
    if (bottleneck) *bottleneck = it->second.second;
    return it->second.first;
  }
  const Line l = cal_->line(gpu_, op, a, p);
  std::string neck;
  double unit = 0;
  if (opt_.network == NetworkModelKind::kAnalytical) {
    unit = analytical_unit(g, op, a, l, &neck);
  } else {
    auto u = flow_unit(g, op, a, l, &neck);
    if (!u) return fail(u.error());
    unit = *u;
  }
  if (const double cap = nvls_cap_unit(g, op, a); cap > unit) {
    unit = cap;
    neck = "nvlink";
  }
  memo_[key] = {unit, neck};
  if (bottleneck) *bottleneck = neck;
  return unit;
}

base::Result<Estimate> CollectiveModel::evaluate(const Group& g, const Request& r, Algorithm a,
                                                 Protocol p) {
  if (a == Algorithm::kHierarchical) return hierarchical(g, r);
  const Line l = cal_->line(gpu_, r.op, a, p);
  Estimate e;
  e.algorithm = a;
  e.protocol = p;
  e.calibrated = l.calibrated;
  std::string neck;
  auto unit = unit_wire(g, r.op, a, p, &neck);
  if (!unit) return fail(unit.error());
  const double x = *unit * static_cast<double>(r.bytes);
  const double fill = fill_s(g, p, l, x);
  const double lat = latency_us(g, r.op, a, l) * 1e-6;
  e.latency = base::seconds(lat);
  e.wire = base::seconds(x);
  e.fill = base::seconds(fill);
  e.time = base::seconds(lat + x + fill);
  e.bottleneck = x + fill > lat ? neck : "";
  return finish_estimate(e, r.op, r.bytes, g.ranks());
}

base::Result<std::optional<Estimate>> CollectiveModel::nccl_pick(const Group& g, const Request& r) {
  const auto ranked = nccl_tuner_rank(tuner_inputs(g), r.op, r.bytes);
  for (const auto& line : ranked) {
    if (r.protocol != Protocol::kAuto && line.protocol != r.protocol) continue;
    if (!unavailable(g, r.op, r.dtype, line.algorithm).empty()) continue;
    const auto ps = protocols(line.algorithm, r.op);
    if (std::find(ps.begin(), ps.end(), line.protocol) == ps.end()) continue;
    auto e = evaluate(g, r, line.algorithm, line.protocol);
    if (!e) return fail(e.error());
    return std::optional<Estimate>(*e);
  }
  return std::optional<Estimate>();
}

base::Result<Estimate> CollectiveModel::best(const Group& g, const Request& r) {
  // Across NVLink domains `auto` is what NCCL's tuner would run (see TunerKind).
  if (r.algorithm == Algorithm::kAuto && tuner_ == TunerKind::kNccl && g.domains() > 1 &&
      r.op != Op::kAllToAll && r.op != Op::kSendRecv) {
    auto pick = nccl_pick(g, r);
    if (!pick) return fail(pick.error());
    if (*pick) return **pick;
  }
  std::vector<Algorithm> algos;
  if (r.algorithm != Algorithm::kAuto) {
    algos.push_back(r.algorithm);
  } else {
    // NCCL's candidates (hierarchical is not an NCCL algorithm: explicit only).
    for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kNvls, Algorithm::kNvlsTree,
                        Algorithm::kCollNet, Algorithm::kPat, Algorithm::kDirect}) {
      // Inside one NVLink domain NCCL's tree is a chain that its own model never prefers to the
      // ring; the calibration fits what NCCL ran there with ring and NVLS lines, so the
      // uncalibrated tree line is left out (explicit --algo tree still runs it).
      if (a == Algorithm::kTree && g.domains() == 1) continue;
      if (unavailable(g, r.op, r.dtype, a).empty()) algos.push_back(a);
    }
  }
  std::optional<Estimate> win;
  struct Candidate {
    Algorithm a;
    Protocol p;
    double bound;  // analytical time: a lower bound of the flow model's (contention only adds)
  };
  std::vector<Candidate> cands;
  for (Algorithm a : algos) {
    if (a == Algorithm::kHierarchical) {
      auto e = hierarchical(g, r);
      if (!e) return e;
      win = *e;
      continue;
    }
    for (Protocol p : protocols(a, r.op)) {
      if (r.protocol != Protocol::kAuto && p != r.protocol) continue;
      // NCCL has no tuner choice for point-to-point: chunks up to NCCL_P2P_LL_THRESHOLD (16 KiB)
      // per peer go with LL, larger ones with Simple (src/enqueue.cc).
      if (a == Algorithm::kDirect && r.protocol == Protocol::kAuto) {
        const int64_t per_peer = r.op == Op::kSendRecv ? r.bytes : r.bytes / std::max(1, g.ranks());
        if ((per_peer <= kP2pLLThreshold) != (p == Protocol::kLL)) continue;
      }
      cands.push_back({a, p, 0.0});
    }
  }
  const bool prune = opt_.network == NetworkModelKind::kFlow && cands.size() > 1;
  if (prune) {
    // Branch and bound: the flow model only adds contention to the analytical closed forms, so
    // candidates are solved in order of their analytical time until that bound alone exceeds
    // the best flow time found; on an idle fabric this is one or two flow solves, not nine.
    for (auto& c : cands) {
      const Line l = cal_->line(gpu_, r.op, c.a, c.p);
      const double x =
          std::max(analytical_unit(g, r.op, c.a, l, nullptr), nvls_cap_unit(g, r.op, c.a)) *
          static_cast<double>(r.bytes);
      c.bound = latency_us(g, r.op, c.a, l) * 1e-6 + x + fill_s(g, c.p, l, x);
    }
    std::stable_sort(cands.begin(), cands.end(),
                     [](const Candidate& x, const Candidate& y) { return x.bound < y.bound; });
  }
  for (const auto& c : cands) {
    if (prune && win && c.bound >= win->time.base()) break;
    auto e = evaluate(g, r, c.a, c.p);
    if (!e) return e;
    if (!win || e->time < win->time) win = *e;
  }
  if (!win) {
    return fail(std::string("no algorithm runs ") + op_name(r.op) + " with protocol " +
                protocol_name(r.protocol) + " here");
  }
  return *win;
}

base::Result<Estimate> CollectiveModel::estimate(const Group& g, const Request& r) {
  if (r.bytes < 0) return fail("expected a size >= 0 bytes");
  if (r.algorithm != Algorithm::kAuto) {
    if (auto st = check(g, r.op, r.dtype, r.algorithm, r.protocol); !st) return fail(st.error());
  } else if (g.ranks() < 2) {
    return fail("a collective needs at least 2 GPUs, got " + std::to_string(g.ranks()));
  } else if (r.protocol != Protocol::kAuto) {
    // Auto algorithm with a fixed protocol: at least one algorithm must run it.
    bool any = false;
    for (auto av : availability(g, r.op, r.dtype)) {
      if (!av.ok || av.algorithm == Algorithm::kHierarchical) continue;
      auto ps = protocols(av.algorithm, r.op);
      any = any || std::find(ps.begin(), ps.end(), r.protocol) != ps.end();
    }
    if (!any)
      return fail(std::string("{protocol} ") + protocol_name(r.protocol) +
                  ": no algorithm runs it for " + op_name(r.op));
  }
  return best(g, r);
}

base::Result<std::vector<Estimate>> CollectiveModel::sweep(const Group& g, Request r,
                                                           std::span<const int64_t> sizes) {
  std::vector<Estimate> out;
  out.reserve(sizes.size());
  for (int64_t s : sizes) {
    r.bytes = s;
    auto e = estimate(g, r);
    if (!e) return fail(e.error());
    out.push_back(*e);
  }
  return out;
}

base::Result<Estimate> CollectiveModel::hierarchical(const Group& g, const Request& r) {
  if (auto why = unavailable(g, r.op, r.dtype, Algorithm::kHierarchical); !why.empty()) {
    return fail("{algo} hierarchical cannot run here: " + why);
  }
  const int p = g.per_domain();
  const int D = g.domains();
  // Phase 1 and 3 inside every domain at once (their NVLink ports are their own): one domain
  // stands for all.
  auto intra = make_group(*topo_, g.by_domain[0]);
  if (!intra) return fail(intra.error());
  double t_intra = 0;
  Protocol shown = Protocol::kSimple;
  if (p > 1) {
    Request rs{.op = Op::kReduceScatter, .bytes = r.bytes, .dtype = r.dtype};
    auto e1 = best(*intra, rs);
    if (!e1) return e1;
    Request ag{.op = Op::kAllGather, .bytes = r.bytes, .dtype = r.dtype};
    auto e3 = best(*intra, ag);
    if (!e3) return e3;
    t_intra = e1->time.base() + e3->time.base();
  }
  // Phase 2: p rail groups (local rank r of every domain) all-reduce S/p at the same time.
  std::vector<Group> rails;
  for (int k = 0; k < p; ++k) {
    std::vector<int> ids;
    for (int d = 0; d < D; ++d)
      ids.push_back(g.by_domain[static_cast<size_t>(d)][static_cast<size_t>(k)]);
    auto rg = make_group(*topo_, ids);
    if (!rg) return fail(rg.error());
    rails.push_back(std::move(*rg));
  }
  Request ar{.op = Op::kAllReduce, .bytes = r.bytes / p, .dtype = r.dtype};
  double t_inter = 0;
  if (opt_.network == NetworkModelKind::kFlow && p > 1) {
    auto c = concurrent(rails, ar);
    if (!c) return fail(c.error());
    for (const auto& gr : c->groups) {
      if (gr.estimate.time.base() > t_inter) {
        t_inter = gr.estimate.time.base();
        shown = gr.estimate.protocol;
      }
    }
  } else {
    auto e2 = best(rails[0], ar);
    if (!e2) return e2;
    t_inter = e2->time.base();
    shown = e2->protocol;
  }
  Estimate e;
  e.algorithm = Algorithm::kHierarchical;
  e.protocol = shown;
  e.time = base::seconds(t_intra + t_inter);
  e.wire = base::seconds(t_intra + t_inter);
  e.bottleneck = t_inter > t_intra ? "network" : "nvlink";
  e.calibrated = cal_->for_gpu(gpu_) != nullptr;
  return finish_estimate(e, r.op, r.bytes, g.ranks());
}

base::Result<ConcurrentResult> CollectiveModel::concurrent(std::span<const Group> groups,
                                                           const Request& r) {
  ConcurrentResult out;
  if (groups.empty()) return out;
  if (fabric_shares_nothing(groups)) {
    // No link is shared: each group runs as if alone, and groups of the same shape (ranks per
    // domain, domains) see the same rates wherever they sit, so one is solved per shape.
    std::vector<std::pair<std::pair<int, int>, Estimate>> shapes;
    for (const auto& g : groups) {
      const std::pair<int, int> shape{g.domains(), g.per_domain()};
      auto it = std::find_if(shapes.begin(), shapes.end(),
                             [&](const auto& s) { return s.first == shape && g.uniform(); });
      if (it == shapes.end()) {
        auto e = estimate(g, r);
        if (!e) return fail(e.error());
        if (!g.uniform()) {
          out.groups.push_back({*e, e->time, 1.0});
          continue;
        }
        shapes.emplace_back(shape, *e);
        it = std::prev(shapes.end());
      }
      out.groups.push_back({it->second, it->second.time, 1.0});
    }
    out.symmetric = true;
    return out;
  }
  // Each group alone first: its algorithm choice and its reference time.
  std::vector<Estimate> alone;
  for (const auto& g : groups) {
    auto e = estimate(g, r);
    if (!e) return fail(e.error());
    alone.push_back(*e);
  }
  // Symmetry: groups inside single NVLink domains on distinct GPUs share no link (each GPU's
  // NVLink ports are its own and the switch is non-blocking), so each runs as if alone.
  bool disjoint_intra = representative_ok();
  std::set<int> used;
  for (const auto& g : groups) {
    disjoint_intra = disjoint_intra && g.domains() == 1;
    for (int x : g.gpus) disjoint_intra = disjoint_intra && used.insert(x).second;
  }
  const bool no_contention = opt_.network == NetworkModelKind::kAnalytical;
  bool any_hier = false;
  for (const auto& e : alone) any_hier = any_hier || e.algorithm == Algorithm::kHierarchical;
  if (disjoint_intra || no_contention || groups.size() == 1 || any_hier) {
    out.symmetric = disjoint_intra;
    for (const auto& e : alone) out.groups.push_back({e, e.time, 1.0});
    return out;
  }
  FlowSet fs;
  const bool rep = representative_ok();
  for (size_t i = 0; i < groups.size(); ++i) {
    PatternOptions po{.channels = channels_,
                      .representative = rep,
                      .bytes = kRefBytes,
                      .group_id = static_cast<int32_t>(i),
                      .merge_channels = opt_.routing != network::Routing::kEcmp};
    if (auto st = add_flows(fs, *topo_, groups[i], r.op, alone[i].algorithm, po); !st)
      return fail(st.error());
  }
  out.flows = static_cast<int64_t>(fs.transfers.size());
  // One solve; efficiencies of the first group's line (groups of one request share the GPU type
  // and, when symmetric, the algorithm).
  const Line l = cal_->line(gpu_, r.op, alone[0].algorithm, alone[0].protocol);
  auto times = solve_phases(*topo_, fs, static_cast<int>(groups.size()), opt_.routing,
                            opt_.capacity_overrides, steady_options(l, groups[0].per_domain()),
                            true, stats_, solves_, nullptr, spray_bundles());
  for (size_t i = 0; i < groups.size(); ++i) {
    const Line li = cal_->line(gpu_, r.op, alone[i].algorithm, alone[i].protocol);
    Estimate e = alone[i];
    const double x =
        std::max(times[i] / kRefBytes, nvls_cap_unit(groups[i], r.op, alone[i].algorithm)) *
        static_cast<double>(r.bytes);
    if (!std::isfinite(x)) return fail("a group's transfer has no working path (failed links)");
    const double fill = fill_s(groups[i], alone[i].protocol, li, x);
    e.wire = base::seconds(x);
    e.fill = base::seconds(fill);
    e.time = e.latency + e.wire + e.fill;
    e = finish_estimate(e, r.op, r.bytes, groups[i].ranks());
    const double slow = alone[i].time.base() > 0 ? e.time.base() / alone[i].time.base() : 1.0;
    out.groups.push_back({e, alone[i].time, slow});
    out.worst_slowdown = std::max(out.worst_slowdown, slow);
  }
  return out;
}

}  // namespace clustertwin::collective
