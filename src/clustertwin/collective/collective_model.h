#pragma once
/// How long a collective takes (docs/models/collectives.md). For an (op, algorithm, protocol):
///
///   t(S) = latency + x + min(ramp * x, fill)
///   latency = base + intra_steps * hop + inter_steps * (net_hop + fabric path latency)
///   x = S * max over the algorithm's steady-state flows of (bytes per byte of S / rate)
///
/// with NCCL's step counts per algorithm (src/graph/tuning.cc). The rates come from the network
/// model: the analytical model uses closed forms on an idle fabric (NVLink port rate and NIC rate
/// times the line's efficiencies); the flow model builds the algorithm's flows (patterns.h) and
/// solves them with max-min sharing, so oversubscription, ECMP collisions, degraded and failed
/// links and other groups show. `auto` picks the (algorithm, protocol) with the least predicted
/// time among those the hardware and the data type allow, as NCCL's tuner does; an explicit
/// choice the hardware lacks is an error that says why.

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/collective/calibration.h"
#include "clustertwin/collective/group.h"
#include "clustertwin/collective/nccl_tuner.h"
#include "clustertwin/collective/types.h"
#include "clustertwin/hardware/catalog.h"
#include "clustertwin/network/flow_sim.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::collective {

enum class NetworkModelKind { kAnalytical, kFlow };
base::Result<NetworkModelKind> parse_network_model(std::string_view s);

/// How `auto` picks across NVLink domains: `nccl` = what NCCL's own tuner picks (nccl_tuner.h;
/// what a user running NCCL gets), `fastest` = the line this model predicts fastest (what forcing
/// NCCL_ALGO/NCCL_PROTO to the best choice would get). Inside one NVLink domain both are the
/// fastest calibrated line: those lines were fitted to what NCCL ran there. Unset
/// (ModelOptions::tuner), CollectiveModel applies one rule for every caller (collective, train,
/// serve, sweep): `fastest` where a calibration profile is laid over the GPU (its lines are what
/// NCCL ran on the user's cluster: the fit took the fastest fitted line as the measured curve),
/// `nccl` otherwise (resolve_tuner).
enum class TunerKind { kNccl, kFastest };
base::Result<TunerKind> parse_tuner(std::string_view s);
const char* tuner_name(TunerKind t);

/// Channels of one collective, at most: NCCL's MAXCHANNELS (src/include/device.h; 32 in older
/// releases, 64 in current ones). More would only multiply flows (and once made a
/// `--channels 2147483647` run hang, issue 19).
inline constexpr int kMaxChannels = 64;

struct ModelOptions {
  NetworkModelKind network = NetworkModelKind::kAnalytical;
  network::Routing routing = network::Routing::kSpray;
  /// Degraded (or failed: 0) links; flow model only.
  std::vector<std::pair<topology::LinkId, BytesPerSecond>> capacity_overrides;
  /// Build intra-domain flows for one representative domain when the pattern allows it.
  bool symmetry = true;
  /// Ring/tree channels; 0 = the calibration's count for the GPU.
  int channels = 0;
  /// SHARP (CollNet, multi-node NVLS) on or off; unset = the cluster's scale_out.sharp. On
  /// where the switches lack SHARP is refused by the callers (sharp_supported()).
  std::optional<bool> sharp;
  /// Unset: resolve_tuner's rule (fastest under a profile, else NCCL's tuner).
  std::optional<TunerKind> tuner;
};

/// The tuner a model runs: `requested` when set, else `fastest` when `calibration` lays a profile
/// over `gpu` (Calibration::profile_for), else `nccl`.
TunerKind resolve_tuner(std::optional<TunerKind> requested, const Calibration& calibration,
                        std::string_view gpu);

struct Request {
  Op op = Op::kAllReduce;
  int64_t bytes = 0;  ///< nccl-tests size (see types.h for the per-op convention)
  Dtype dtype{"float", 4, true};
  Algorithm algorithm = Algorithm::kAuto;
  Protocol protocol = Protocol::kAuto;
};

struct Estimate {
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  Seconds time;
  Seconds latency;          ///< the latency terms
  Seconds wire;             ///< x: the bandwidth term
  Seconds fill;             ///< min(ramp * x, fill)
  BytesPerSecond algbw;     ///< size / time
  BytesPerSecond busbw;     ///< algbw * nccl-tests factor
  std::string bottleneck;   ///< "nvlink", "network" or "" (latency bound)
  bool calibrated = false;  ///< the line was fitted to measurements for this GPU
};

/// One algorithm's availability on a group: ok, or the reason it cannot run.
struct Availability {
  Algorithm algorithm;
  bool ok = false;
  std::string reason;
};

struct GroupResult {
  Estimate estimate;
  Seconds alone;        ///< the same group's time with the fabric to itself
  double slowdown = 1;  ///< estimate.time / alone
};

struct ConcurrentResult {
  std::vector<GroupResult> groups;
  bool symmetric = false;  ///< identical link-disjoint groups: one was simulated for all
  int64_t flows = 0;       ///< flows solved (after merging)
  double worst_slowdown = 1;
};

class CollectiveModel {
 public:
  /// The model for a cluster; `catalog` supplies the parts (NVLink switch, scale-out switch,
  /// GPU) that decide which algorithms exist, `calibration` the lines.
  CollectiveModel(const hardware::Catalog& catalog, const topology::Topology& topo,
                  const Calibration& calibration, ModelOptions options = {});

  /// One collective of one group.
  base::Result<Estimate> estimate(const Group& g, const Request& r);
  /// The same request at many sizes (bandwidth terms are solved once per algorithm/protocol).
  base::Result<std::vector<Estimate>> sweep(const Group& g, Request r,
                                            std::span<const int64_t> sizes);
  /// Many groups running the same collective at once, sharing the fabric (e.g. all data-parallel
  /// groups' reduce-scatter over the spine). Identical groups on link-disjoint GPUs cost one.
  base::Result<ConcurrentResult> concurrent(std::span<const Group> groups, const Request& r);

  /// Every algorithm of NCCL (and hierarchical) for this op: can it run here, and if not, why.
  [[nodiscard]] std::vector<Availability> availability(const Group& g, Op op,
                                                       const Dtype& dt) const;
  /// Protocols an algorithm runs (NVLS, NVLS-tree, CollNet and PAT: simple only).
  static std::vector<Protocol> protocols(Algorithm a, Op op);

  [[nodiscard]] const std::string& gpu_name() const { return gpu_; }
  /// How `auto` picks across NVLink domains here (ModelOptions::tuner resolved).
  [[nodiscard]] TunerKind tuner() const { return tuner_; }
  /// The scale-out switches have SHARP (whether or not it is enabled).
  [[nodiscard]] bool sharp_supported() const { return sharp_hw_; }
  [[nodiscard]] bool sharp_enabled() const { return sharp_; }
  [[nodiscard]] int channels() const { return channels_; }
  /// What NCCL's tuner knows about this group (its graphs as NCCL's search would find them).
  [[nodiscard]] TunerInputs tuner_inputs(const Group& g) const;
  [[nodiscard]] const network::FlowSimStats& last_flow_stats() const { return stats_; }
  [[nodiscard]] int64_t flow_solves() const { return solves_; }

 private:
  struct Key {
    Op op;
    Algorithm a;
    Protocol p;
    auto operator<=>(const Key&) const = default;
  };
  /// Seconds of bandwidth term per byte of S for one group (memoised per group in `memo_`).
  base::Result<double> unit_wire(const Group& g, Op op, Algorithm a, Protocol p,
                                 std::string* bottleneck);
  [[nodiscard]] double analytical_unit(const Group& g, Op op, Algorithm a, const Line& l,
                                       std::string* bottleneck) const;
  base::Result<double> flow_unit(const Group& g, Op op, Algorithm a, const Line& l,
                                 std::string* bottleneck);
  [[nodiscard]] double latency_us(const Group& g, Op op, Algorithm a, const Line& l) const;
  [[nodiscard]] double inter_path_us(const Group& g) const;
  /// The pipeline fill on top of the bandwidth term x (seconds): the line's own chunked fill,
  /// or across domains the at-scale fill between the intra- and inter-domain phases when larger
  /// (Simple protocol; LL and LL128 have no fill).
  [[nodiscard]] double fill_s(const Group& g, Protocol p, const Line& l, double x) const;
  /// The NVLS channel cap as seconds per byte of S (0 when the GPU family has none).
  [[nodiscard]] double nvls_cap_unit(const Group& g, Op op, Algorithm a) const;
  base::Status check(const Group& g, Op op, const Dtype& dt, Algorithm a, Protocol p) const;
  [[nodiscard]] std::string unavailable(const Group& g, Op op, const Dtype& dt, Algorithm a) const;
  base::Result<Estimate> evaluate(const Group& g, const Request& r, Algorithm a, Protocol p);
  base::Result<Estimate> hierarchical(const Group& g, const Request& r);
  base::Result<Estimate> best(const Group& g, const Request& r);
  /// NCCL's pick across domains: the first line of NCCL's ranking this model can run.
  base::Result<std::optional<Estimate>> nccl_pick(const Group& g, const Request& r);
  [[nodiscard]] network::SteadyOptions steady_options(const Line& l, int per_domain) const;
  [[nodiscard]] bool representative_ok() const;
  /// Groups that cannot contend anywhere (see the definition): solved one per shape.
  [[nodiscard]] bool fabric_shares_nothing(std::span<const Group> groups) const;

  const hardware::Catalog* catalog_;
  const topology::Topology* topo_;
  const Calibration* cal_;
  ModelOptions opt_;
  std::string gpu_;
  bool nvls_hw_ = false;   // NVLink switch with in-network reduction, Hopper or later
  bool sharp_hw_ = false;  // scale-out switch with SHARP
  bool sharp_ = false;     // ... and SHARP enabled (cluster setting or ModelOptions::sharp)
  std::string nvswitch_, scale_out_switch_;
  int channels_ = 16;
  TunerHardware tuner_hw_;
  TunerKind tuner_ = TunerKind::kNccl;
  std::map<std::pair<uint64_t, Key>, std::pair<double, std::string>> memo_;  // by group fingerprint
  network::FlowSimStats stats_;
  int64_t solves_ = 0;
  /// The topology's spray bundles, built on the first flow solve and shared by every solve after
  /// it (a FlowSimulator of its own would build them again each time).
  std::unique_ptr<network::SprayBundles> bundles_;
  const network::SprayBundles* spray_bundles();
};

/// Bus bandwidth and algorithm bandwidth of a time (nccl-tests convention, GB = 1e9).
Estimate finish_estimate(Estimate e, Op op, int64_t bytes, int ranks);

}  // namespace clustertwin::collective
