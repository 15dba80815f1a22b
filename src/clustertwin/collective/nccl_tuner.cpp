#include "clustertwin/collective/nccl_tuner.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace clustertwin::collective {
namespace {

// NCCL's indices (src/include/device.h): algorithms Tree, Ring, CollNetDirect, CollNetChain,
// NVLS, NVLSTree, PAT; protocols LL, LL128, Simple.
enum A { kTreeA, kRingA, kCnDirect, kCnChain, kNvlsA, kNvlsTreeA, kPatA, kNumA };
enum P { kLLP, kLL128P, kSimpleP, kNumP };
enum Hw { kNvlinkHw, kPciHw, kNetHw };

using Table = std::array<std::array<double, kNumP>, kNumA>;

// Tuner defaults, NCCL 2.28 src/graph/tuning.cc (ncclTunerConstantsDefaults), in us and GB/s.
constexpr Table kBaseLat = {{{6.8, 14.0, 8.4},
                             {6.6, 14.0, 8.4},
                             {0, 0, 0},
                             {0, 0, 0},
                             {0, 0, 0},
                             {0, 0, 0},
                             {8.0, 8.0, 8.0}}};
constexpr std::array<Table, 3> kHwLat = {{
    // NVLink
    {{{0.6, 1.25, 4.0},
      {0.6, 1.9, 3.4},
      {0, 0, 3.7},
      {0, 0, 2.8},
      {0, 0, 25},
      {0, 0, 25},
      {0, 0, 4.0}}},
    // PCI
    {{{1.0, 1.9, 4.0},
      {1.0, 2.5, 5.7},
      {0, 0, 3.7},
      {0, 0, 2.8},
      {0, 0, 0},
      {0, 0, 0},
      {0, 0, 4.0}}},
    // NET
    {{{5.0, 8.5, 14},
      {2.7, 4.0, 14.0},
      {0, 0, 31},
      {0, 0, 30},
      {0, 0, 18},
      {0, 0, 20.9},
      {0, 0, 14}}},
}};
// [compute class][index2: 1 node, 2 nodes, more]
using ByCc = std::array<std::array<double, 3>, 4>;
constexpr ByCc kLlMaxBw = {
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}}};
constexpr ByCc kPerChMaxRingLL128 = {
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}}};
constexpr ByCc kPerChMaxTreeLL128 = {
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
constexpr ByCc kPerChMaxTree = {
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};
constexpr ByCc kPerChMaxNvlsTree = {
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}}};
constexpr std::array<double, 4> kNvlsEfficiency = {0.0, 0.0, 0.85, 0.74};

// Trees off the model at medium sizes: NCCL's static correction by log2(size / 64 B).
constexpr std::array<std::array<double, 24>, 3> kTreeCorrection = {{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9},
}};

constexpr int kMaxChannels = 64;    // device.h MAXCHANNELS
constexpr int kMaxDirectArity = 7;  // device.h NCCL_MAX_DIRECT_ARITY
constexpr int kMaxNvlsArity = 32;   // device.h NCCL_MAX_NVLS_ARITY

int log2i(int64_t n) {
  int l = -1;
  while (n > 0) {
    n >>= 1;
    ++l;
  }
  return l;
}

Algorithm to_algorithm(int a) {
  switch (a) {
    case kTreeA:
      return Algorithm::kTree;
    case kRingA:
      return Algorithm::kRing;
    case kCnDirect:
    case kCnChain:
      return Algorithm::kCollNet;
    case kNvlsA:
      return Algorithm::kNvls;
    case kNvlsTreeA:
      return Algorithm::kNvlsTree;
    default:
      return Algorithm::kPat;
  }
}

Protocol to_protocol(int p) {
  return p == kLLP ? Protocol::kLL : p == kLL128P ? Protocol::kLL128 : Protocol::kSimple;
}

int algo_index(const TunerLine& l) {
  switch (l.algorithm) {
    case Algorithm::kTree:
      return kTreeA;
    case Algorithm::kRing:
      return kRingA;
    case Algorithm::kCollNet:
      return l.collnet_chain ? kCnChain : kCnDirect;
    case Algorithm::kNvls:
      return kNvlsA;
    case Algorithm::kNvlsTree:
      return kNvlsTreeA;
    default:
      return kPatA;
  }
}

int proto_index(Protocol p) {
  return p == Protocol::kLL ? kLLP : p == Protocol::kLL128 ? kLL128P : kSimpleP;
}

const TunerGraph& graph_of(const TunerInputs& in, int a) {
  switch (a) {
    case kTreeA:
      return in.tree;
    case kCnDirect:
      return in.collnet_direct;
    case kCnChain:
      return in.collnet_chain;
    case kNvlsA:
      return in.nvls_graph;
    case kNvlsTreeA:
      return in.nvls_tree_graph;
    default:
      return in.ring;  // ring and PAT
  }
}

}  // namespace

std::vector<TunerLine> nccl_tuner_lines(const TunerInputs& in, Op op) {
  std::vector<TunerLine> out;
  const int n = in.ranks;
  const int nodes = std::max(1, in.nodes);
  if (n <= 1) return out;
  if (op == Op::kAllToAll || op == Op::kSendRecv) return out;  // point-to-point: no tuner
  const bool ar = op == Op::kAllReduce;
  const bool agrs = op == Op::kAllGather || op == Op::kReduceScatter;
  const int cc = static_cast<int>(in.cc);
  const int index2 = nodes <= 2 ? nodes - 1 : 2;
  const int index1 = nodes == 1 ? cc : (in.cpu == CpuVendor::kAmd ? 1 : 0);
  const double ll_max = kLlMaxBw[index1][index2];
  const double tree_max = kPerChMaxTree[cc][index2];
  const double ring_ll128_max = kPerChMaxRingLL128[cc][index2];
  const double tree_ll128_max = kPerChMaxTreeLL128[cc][index2];
  const double nvls_tree_max = kPerChMaxNvlsTree[cc][index2];
  const double ppn = static_cast<double>(n) / nodes;
  const int local = static_cast<int>(std::ceil(ppn));
  const int nsteps = ar ? 2 * (n - 1) : agrs ? n - 1 : n;
  const bool pat_enabled = nodes == n && cc >= 0;

  for (int a = 0; a < kNumA; ++a) {
    if ((op == Op::kBroadcast || op == Op::kReduce) && a != kRingA) continue;
    if (agrs && a != kPatA && a != kRingA && a != kNvlsA && a != kCnDirect) continue;
    if (ar && a == kPatA) continue;
    // Algorithm enables (tuning.cc) and the cost-table filters (enqueue.cc updateCollCostTable).
    if (a == kNvlsTreeA && nodes == 1) continue;
    if (!in.collnet && (a == kCnDirect || a == kCnChain || (a == kNvlsA && nodes > 1))) continue;
    if (!in.nvswitch && a == kCnDirect) continue;
    if ((a == kCnDirect || a == kCnChain) && local > kMaxDirectArity + 1) continue;
    if ((a == kNvlsA || a == kNvlsTreeA) && (!in.nvls || (!ar && local > kMaxNvlsArity))) continue;
    if (a == kPatA && !pat_enabled) continue;
    const TunerGraph& g = graph_of(in, a);
    if (g.channels <= 0) continue;
    for (int p = 0; p < kNumP; ++p) {
      if ((a == kNvlsA || a == kNvlsTreeA || a == kPatA || a == kCnDirect || a == kCnChain) &&
          p != kSimpleP) {
        continue;
      }
      const bool collnet = a == kCnDirect || a == kCnChain;
      double bw = nodes <= 2 || collnet ? g.bw_intra : g.bw_inter;
      if (a == kNvlsA || a == kNvlsTreeA) {
        if (g.channels < 2) continue;
        double intra = g.bw_intra * kNvlsEfficiency[cc] * (g.channels - 1) / g.channels;
        intra *= ar ? 2.0 : (ppn - 1) / ppn;
        const double inter = g.bw_inter * ((nodes <= 2 && a == kNvlsTreeA) ? 2 : 1);
        bw = std::min(
            {intra, inter, a == kNvlsTreeA ? nvls_tree_max : std::numeric_limits<double>::max()});
      }
      double bus = g.channels * bw;
      if (a == kRingA && p == kLLP) bus = std::min(ll_max, bus * .5);
      if (a == kRingA && p == kLL128P) bus = std::min(bus * 0.92, g.channels * ring_ll128_max);
      if (a == kTreeA && ar) bus = std::min(bus * .92, g.channels * tree_max);
      if (a == kTreeA && p == kLLP) bus = std::min(bus * 1.0 / 3.8, ll_max);
      if (a == kTreeA && p == kLL128P) {
        bus = std::min(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), g.channels * tree_ll128_max);
      }
      if (a == kPatA) bus *= .75;
      if (a == kCnDirect) {
        if (agrs) {
          bus = ppn * std::min(g.bw_intra, g.bw_inter * 0.9);
        } else {
          double factor = ppn / g.channels;  // GPU/NIC ratio
          factor -= (factor - 1) / 2;
          bus /= factor;
          if (in.cc >= ComputeClass::kHopper) bus *= .85;
        }
      }
      // All-gather / reduce-scatter over NVLS or CollNet across nodes need the SHARP plugin's
      // collectives and one NIC head per local rank.
      if ((a == kNvlsA || a == kCnDirect) && agrs && nodes > 1) {
        if (!in.collnet || local > in.collnet_direct.channels) bus = 0;
      }
      if (!(a != kRingA && agrs)) {
        const double ratio =
            (a == kRingA || a == kNvlsA || a == kNvlsTreeA) ? static_cast<double>(n) / nsteps : .5;
        bus *= ratio;
      }
      if (bus <= 0) continue;

      const int intra_hw = g.nvlink_intra ? kNvlinkHw : kPciHw;
      const int hw = nodes == 1 ? intra_hw : kNetHw;
      double lat = kBaseLat[a][p];
      double intra_lat = kHwLat[intra_hw][a][p];
      const double inter_lat = ppn == 1 ? kHwLat[kNetHw][kTreeA][p] : kHwLat[kNetHw][a][p];
      if (a == kRingA) {
        if (op == Op::kReduce || op == Op::kBroadcast) {
          lat += kHwLat[hw][a][p];  // sameChannels
        } else {
          double net_overhead = 0;
          if (nodes > 1) {
            net_overhead = in.cpu == CpuVendor::kAmd ? 2.0 : 1.0;
            if (p == kSimpleP) net_overhead *= 3;
          }
          intra_lat = std::max(intra_lat, net_overhead);
          const int inter_steps = nodes == 1 ? 0 : ar ? 2 * (nodes - 1) : nodes - 1;
          lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
        }
      } else if (a == kTreeA) {
        if (ar) lat += 2 * ((ppn - 1) * intra_lat + log2i(nodes) * inter_lat);
      } else if (a == kCnDirect) {
        lat += 2 * (std::min(1.0, ppn - 1) * intra_lat + (ppn - 1) * 0.4) + inter_lat;
      } else if (a == kCnChain) {
        lat += 2 * (ppn - 1) * intra_lat + inter_lat;
      } else if (a == kNvlsA) {
        lat = intra_lat + (nodes > 1 ? inter_lat : 0);
      } else if (a == kNvlsTreeA) {
        lat += intra_lat + 2 * log2i(nodes) * inter_lat;
      } else if (a == kPatA) {
        lat += log2i(nodes) * (inter_lat / 3.5) + n * 2.8;
      }
      out.push_back({to_algorithm(a), to_protocol(p), a == kCnChain, bus, lat});
    }
  }
  return out;
}

double nccl_tuner_time_us(const TunerInputs& in, Op op, const TunerLine& line, int64_t bytes) {
  double bw = line.bw;
  double lat = line.latency_us;
  if (bw <= 0) return -1;
  const int a = algo_index(line);
  const int p = proto_index(line.protocol);
  const int log_size = log2i(bytes >> 6);
  if (a == kTreeA && op == Op::kAllReduce && log_size >= 0 && log_size < 23) {
    bw *= kTreeCorrection[p][log_size];
  }
  if (a == kNvlsTreeA && op == Op::kAllReduce && log_size >= 0 && log_size < 24 &&
      in.cc >= ComputeClass::kBlackwell && in.cpu != CpuVendor::kArm) {
    bw *= kTreeCorrection[p][log_size];
  }
  // The ring's plateau: comm->nChannels counts the rings after NCCL duplicates them
  // (connect.cc ncclTopoPostset).
  const int64_t comm_channels = std::min(kMaxChannels, 2 * std::max(1, in.ring.channels));
  if (a == kRingA && p == kSimpleP && in.nodes > 1 && op == Op::kAllReduce &&
      bytes / (comm_channels * in.ranks) >= 64) {
    lat *= in.cc < ComputeClass::kAmpere ? 1.9 : 1.4;
  }
  return lat + static_cast<double>(bytes) / (1000.0 * bw);
}

std::vector<TunerLine> nccl_tuner_rank(const TunerInputs& in, Op op, int64_t bytes) {
  auto lines = nccl_tuner_lines(in, op);
  std::vector<std::pair<double, size_t>> t;
  t.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    t.emplace_back(nccl_tuner_time_us(in, op, lines[i], bytes), i);
  }
  // NCCL keeps the first strictly smaller time in its (algorithm, protocol) order: a stable
  // sort on time over lines built in that order ranks the same way.
  std::stable_sort(t.begin(), t.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<TunerLine> out;
  out.reserve(lines.size());
  for (const auto& [time, i] : t) out.push_back(lines[i]);
  return out;
}

namespace {

// NCCL's speed arrays for the inter-node search (search.cc), GB/s per channel.
constexpr std::array<double, 19> kSpeedInter = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0,
                                                12.0, 10.0, 9.0,  7.0,  6.0,  5.0,  4.0,
                                                3.0,  2.4,  1.2,  0.24, 0.12};
constexpr std::array<double, 17> kSpeedInterSm90 = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0,
                                                    22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                                                    3.0,  2.4,  1.2,  0.24, 0.12};
constexpr std::array<double, 20> kSpeedInterSm100 = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0,
                                                     30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0,
                                                     6.0,  3.0,  2.4,  1.2,  0.24, 0.12};

struct Found {
  int channels = 0;
  double bw = 0;
};

/// The search over speeds, as ncclTopoCompute's first pass does it: from the highest speed the
/// GPU-NIC path allows, each speed with as many channels as fit (`fit(s)`), keeping the best
/// channels x speed, going down while the next speed is above 0.49 of the best; stopping at a
/// "perfect" graph (max channels).
template <class Fit>
Found search_speeds(const std::vector<double>& speeds, double max_bw, int max_channels, Fit fit) {
  Found best;
  for (double s : speeds) {
    if (s > max_bw + 1e-9) continue;
    if (best.channels > 0 && s / best.bw <= .49) break;
    const int ch = std::min(max_channels, fit(s));
    if (ch <= 0) continue;
    if (ch * s > best.channels * best.bw + 1e-9) best = {ch, s};
    if (ch == max_channels) break;
  }
  return best;
}

/// ncclTopoDupChannels.
TunerGraph dup_channels(TunerGraph g, ComputeClass cc, int max_channels) {
  if (g.channels == 0 || g.bw_intra < 25.0) return g;
  if (cc >= ComputeClass::kHopper && g.bw_intra < 50.0 && g.channels > 4) return g;
  const int dup = std::min(g.channels * 2, max_channels);
  const int div = (dup + g.channels - 1) / g.channels;
  g.bw_intra /= div;
  g.bw_inter /= div;
  g.channels = dup;
  return g;
}

}  // namespace

TunerInputs derive_tuner_inputs(const TunerHardware& hw, int ranks, int nodes, int ppn,
                                bool collnet, bool nvls) {
  TunerInputs in;
  in.ranks = ranks;
  in.nodes = nodes;
  in.cc = hw.cc;
  in.cpu = hw.cpu;
  in.collnet = collnet;
  in.nvswitch = true;
  in.nvls = nvls;
  std::vector<double> speeds;
  if (hw.cc >= ComputeClass::kBlackwell) {
    speeds.assign(kSpeedInterSm100.begin(), kSpeedInterSm100.end());
  } else if (hw.cc >= ComputeClass::kHopper) {
    speeds.assign(kSpeedInterSm90.begin(), kSpeedInterSm90.end());
  } else {
    speeds.assign(kSpeedInter.begin(), kSpeedInter.end());
  }
  const double path = std::min(hw.nic_gbs, hw.pci_gbs > 0 ? hw.pci_gbs : hw.nic_gbs);
  const int nics = std::max(1, hw.nics_per_domain);
  const int ring_max = kMaxChannels / 2;
  // Ring: a channel enters and leaves the node through one NIC (crossNic 0) and crosses every
  // GPU's NVLink once each way.
  auto ring_fit = [&](double s, double nvlink_scale) {
    int ch = nics * static_cast<int>(std::floor(path / s + 1e-9));
    if (ppn > 1 && hw.nvlink_gbs > 0) {
      ch = std::min(ch, static_cast<int>(std::floor(hw.nvlink_gbs * nvlink_scale / s + 1e-9)));
    }
    return ch;
  };
  const Found ring =
      search_speeds(speeds, path, ring_max, [&](double s) { return ring_fit(s, 1); });
  in.ring = dup_channels({ring.channels, ring.bw, ring.bw, true}, hw.cc, ring_max);
  // Trees need not close back to the starting NIC: NCCL lets NVLink carry ndevs/(ndevs-1) more.
  const double tree_scale = ppn > 1 ? static_cast<double>(ppn) / (ppn - 1) : 1.0;
  const Found tree =
      search_speeds(speeds, path, ring_max, [&](double s) { return ring_fit(s, tree_scale); });
  in.tree = dup_channels({tree.channels, tree.bw, tree.bw, true}, hw.cc, ring_max);
  // Pass 2 for trees (search.cc, "increase bwIntra for trees (2 nodes or collnet)"): the
  // intra-node speed rises, channels kept, while NVLink carries it and it stays below twice the
  // inter-node speed.
  for (auto it = std::find(speeds.rbegin(), speeds.rend(), in.tree.bw_intra); it != speeds.rend();
       ++it) {
    const double s = *it;
    if (s <= in.tree.bw_intra) continue;
    if (in.tree.bw_intra >= 2 * in.tree.bw_inter) break;
    const int fits = ppn > 1 && hw.nvlink_gbs > 0
                         ? static_cast<int>(std::floor(hw.nvlink_gbs * tree_scale / s + 1e-9))
                         : ring_max;
    if (fits < in.tree.channels) break;
    in.tree.bw_intra = s;
  }
  in.collnet_chain = in.tree;
  // NVLS and CollNet Direct: one head per NIC, at most NCCL_MAX_NVLS_ARITY (NCCL_MAX_DIRECT_ARITY
  // + 1) heads, no duplication.
  auto heads = [&](double s) { return nics * static_cast<int>(std::floor(path / s + 1e-9)); };
  const int nvls_max = std::min(kMaxNvlsArity, std::max(1, hw.gpus_per_domain));
  const Found nv = search_speeds(speeds, path, nvls_max, heads);
  in.nvls_graph = {nv.channels, nv.bw, nv.bw, true};
  in.nvls_tree_graph = in.nvls_graph;
  const int direct_max = std::min(kMaxDirectArity + 1, std::max(1, hw.gpus_per_domain));
  const Found cd = search_speeds(speeds, path, direct_max, heads);
  in.collnet_direct = {cd.channels, cd.bw, cd.bw, true};
  return in;
}

double nccl_pci_gbs(int generation, int lanes) {
  // kvDictPciGen, x100 Mb/s per lane; anything else falls back to Gen3 as NCCL's table does.
  static constexpr int kRate[] = {15, 30, 60, 120, 240, 480};
  const int rate = generation >= 1 && generation <= 6 ? kRate[generation - 1] : 60;
  return lanes * rate / 80.0;
}

ComputeClass compute_class(const std::string& architecture) {
  if (architecture.find("Blackwell") != std::string::npos) return ComputeClass::kBlackwell;
  if (architecture.find("Hopper") != std::string::npos) return ComputeClass::kHopper;
  if (architecture.find("Ampere") != std::string::npos) return ComputeClass::kAmpere;
  return ComputeClass::kVolta;
}

CpuVendor cpu_vendor(const std::string& cpu_display_name) {
  if (cpu_display_name.find("AMD") != std::string::npos) return CpuVendor::kAmd;
  if (cpu_display_name.find("Intel") != std::string::npos) return CpuVendor::kIntel;
  return CpuVendor::kArm;
}

}  // namespace clustertwin::collective
