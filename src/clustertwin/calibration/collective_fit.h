#pragma once
/// Fitting the collective time model (docs/models/collectives.md) to a user's nccl-tests runs
/// (docs/models/calibration.md). The model callback is the collective layer's own
/// CollectiveModel on the user's cluster, with the parameter vector written into a calibration
/// profile laid over the catalog's: what is fitted is exactly what `clustertwin collective
/// --calibration` then runs, so the fitted profile reproduces the measured curves as far as the
/// model can.
///
/// Parameters, named "<op>/<algorithm>/<protocol>.<field>" (fields of collective::Line: base,
/// hop, efficiency, small_n, ramp, fill), for every line NCCL could run on a measured
/// communicator (the same candidates `auto` considers), plus "net.efficiency" and "net.hop"
/// (every line's NIC/fabric efficiency and per-step network latency) when a run spans NVLink
/// domains. Starts: the catalog's calibration of the cluster's GPU (else NCCL's defaults).
/// Fields no measured communicator can show are not offered (small_n with one domain size,
/// NVLink efficiency with one GPU per domain); those the data cannot separate are reported
/// unconstrained by the fitter and held at the catalog's value.

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clustertwin/calibration/fitter.h"
#include "clustertwin/calibration/measurements.h"
#include "clustertwin/collective/calibration.h"
#include "clustertwin/collective/collective_model.h"
#include "clustertwin/hardware/catalog.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::calibration {

struct CollectiveFitOptions {
  collective::NetworkModelKind network = collective::NetworkModelKind::kFlow;
  FitOptions fit;
  /// Parameters not offered to the fit: held at the start calibration's value. Names as the
  /// fit names them ("all_reduce/nvls/simple.base"); an op of "*" matches every op family
  /// ("*/ring/ll.small_n").
  std::vector<std::string> held;
  /// Line fields fitted as one parameter across op families ("*/ring/simple.efficiency": one
  /// large-ring asymptote for all_reduce, all_gather and reduce_scatter), named by the pattern.
  std::vector<std::string> shared;
  /// Start (and prior) values other than the start calibration's, by the same patterns.
  std::vector<std::pair<std::string, double>> starts;
};

/// Whether a parameter name matches a held / shared pattern (exact, or "*/" for any op).
bool parameter_matches(std::string_view pattern, std::string_view name);

struct CollectiveFit {
  std::string gpu;     ///< catalog GPU the fit applies to
  std::string device;  ///< as the logs name it
  std::vector<Parameter> parameters;
  std::vector<Observation> observations;  ///< one per measured size, time in us
  struct Where {
    size_t run = 0, row = 0;
  };
  std::vector<Where> where;  ///< run and row of each observation
  FitResult result;
  /// The fitted lines: every parameter's value (held ones at their start; the fit result says
  /// which); lines and fields without a parameter stay the catalog's.
  collective::CalibrationFile profile;
};

/// Checks every run against the cluster (ranks, hosts, GPUs per host, GPU model: errors name
/// file:line and the expected value) and fits.
base::Result<CollectiveFit> fit_collectives(const hardware::Catalog& catalog,
                                            const hardware::ClusterSpec& cluster,
                                            const topology::Topology& topo,
                                            const collective::Calibration& base,
                                            std::span<const CollectiveRun> runs,
                                            const CollectiveFitOptions& options = {});

/// Everything a profile records about where it came from.
struct ProfileMeta {
  std::string cluster;  ///< as given to --cluster
  std::string stack;    ///< software stack label (--stack), may be empty
  std::string name;     ///< profile name (collectives.name)
  collective::NetworkModelKind network = collective::NetworkModelKind::kFlow;
};

/// The profile as YAML: a `profile:` record (inputs with content hashes, cluster, stack, fit
/// quality, every parameter with its uncertainty and what constrains it) and the
/// `collectives:` lines the collective layer reads (collective::Calibration::read_profile).
/// Deterministic: the same fit gives the same bytes.
std::string profile_yaml(const CollectiveFit& fit, std::span<const InputFile> inputs,
                         std::span<const CollectiveRun> runs, const FitOptions& options,
                         const ProfileMeta& meta);

}  // namespace clustertwin::calibration
