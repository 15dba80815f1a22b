#pragma once
/// `clustertwin collective` as a library call: a size sweep of one collective on a cluster, and
/// its rendering as the nccl-tests table (text), CSV and JSON. The CLI verb and scenario files
/// (`workload: {collective: ...}`) both build a SweepSpec and call run_sweep().

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/collective/collective_model.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::collective {

struct SweepSpec {
  std::string cluster = "azure-ndv6-gb300";  ///< catalog name, YAML file or SYSTEM*COUNT
  int gpus = 0;                              ///< 0: every GPU of the cluster
  int gpus_per_domain = 0;                   ///< 0: fill each NVLink domain
  Op op = Op::kAllReduce;
  int64_t min_bytes = 8;
  int64_t max_bytes = int64_t{16} << 30;
  double step_factor = 2;  ///< multiply (nccl-tests -f); used when step_bytes == 0
  int64_t step_bytes = 0;  ///< add (nccl-tests -i)
  Dtype dtype{"float", 4, true};
  Algorithm algorithm = Algorithm::kAuto;
  Protocol protocol = Protocol::kAuto;
  NetworkModelKind model = NetworkModelKind::kAnalytical;
  network::Routing routing = network::Routing::kSpray;
  int channels = 0;  ///< 0: the calibration's
  /// A calibration profile laid over the catalog's (`clustertwin calibrate --out`): a file, or
  /// the name of a built-in one (catalog/collectives/<name>.yaml); empty: the catalog's.
  std::string calibration;
  /// SHARP on/off; unset: the cluster's scale_out.sharp (off unless the cluster enables it).
  std::optional<bool> sharp;
  /// How `auto` picks across NVLink domains; unset: resolve_tuner's rule (fastest under a
  /// calibration profile, else NCCL's tuner).
  std::optional<TunerKind> tuner;
};

struct SweepRow {
  int64_t size = 0;   ///< bytes (nccl-tests "size")
  int64_t count = 0;  ///< elements (nccl-tests "count")
  Estimate estimate;
};

struct SweepResult {
  SweepSpec spec;
  std::string cluster_name, system, gpu;
  int ranks = 0, domains = 0, per_domain = 0, domain_size = 0;
  bool calibrated = false;  ///< the GPU type has a fitted calibration file
  std::string profile;      ///< the profile laid over it (SweepSpec::calibration), or empty
  bool sharp = false;       ///< SHARP enabled (and present) for this run
  TunerKind tuner = TunerKind::kNccl;  ///< the tuner that ran (SweepSpec::tuner resolved)
  std::vector<SweepRow> rows;
  std::vector<Availability> availability;
  double avg_busbw_GBps = 0;
  network::FlowSimStats flow_stats;  ///< of the last flow solve (flow model)
  int64_t flow_solves = 0;
};

/// The sizes nccl-tests runs for -b min -e max -f factor (or -i step): min, min*f, ... <= max.
base::Result<std::vector<int64_t>> sweep_sizes(int64_t min_bytes, int64_t max_bytes, double factor,
                                               int64_t step_bytes);

/// Resolves the cluster, places the GPUs and runs the sweep. Bad input (unknown cluster, more
/// GPUs than the cluster has, an algorithm the hardware lacks) comes back as an error.
base::Result<SweepResult> run_sweep(const hardware::Catalog& catalog, const SweepSpec& spec);

/// The nccl-tests table (out-of-place columns) with the chosen algorithm and protocol per size.
std::string render_table(const SweepResult& r);
std::string render_csv(const SweepResult& r);
/// Stable keys with units in their names (docs/models/collectives.md lists them).
nlohmann::json to_json(const SweepResult& r);

/// A catalog file of collective lines (a profile), as opposed to the at-scale and MoE
/// all-to-all parameter files beside them in catalog/collectives/.
bool is_line_file(const hardware::CatalogFile& f);
/// A calibration profile as given (--calibration NAME|FILE, a scenario's `calibration:`), read
/// once: every reader of a job (collective lines, kernel tables, training scale, serving
/// constants) takes these bytes, so a pipe or a process substitution (`--calibration <(...)`),
/// which can be read only once, gives all of them the same profile. A built-in profile's name
/// (catalog/collectives/<name>.yaml) comes before a file of that name (`./h100` names the file).
struct ProfileSource {
  std::string name;      ///< as given: the built-in name or the path (for messages)
  bool builtin = false;  ///< names a catalog/collectives/ profile
  /// The file's bytes (at most base::kMaxInputBytes); none for a built-in name or a path that
  /// cannot be opened (each reader says what it takes).
  std::optional<std::string> text;
};
/// Reads `name_or_path` once (see ProfileSource). A file that opens but cannot be read (a
/// directory, more than 1 GiB) is an error opening with `where`.
base::Result<ProfileSource> read_profile_source(const hardware::Catalog& catalog,
                                                const std::string& name_or_path,
                                                const std::string& where = "{calibration}");
/// A calibration profile's collective lines: the built-in profile or the file read.
/// `where` opens the message when it is neither: the field ("{calibration}", which the CLI writes
/// as its flag) or a file:line ("run.yaml:7: calibration").
base::Result<CalibrationFile> load_profile(const hardware::Catalog& catalog,
                                           const ProfileSource& source,
                                           const std::string& where = "{calibration}");
/// The same, reading `name_or_path` first (read_profile_source).
base::Result<CalibrationFile> load_profile(const hardware::Catalog& catalog,
                                           const std::string& name_or_path,
                                           const std::string& where = "{calibration}");
/// The catalog's calibration with a profile (load_profile) laid over it for a cluster whose GPU
/// is `gpu`; a profile for other GPUs is refused (`where` names the flag or file:line it came
/// from). What `collective`, `train`, `power` and scenario files run.
base::Result<Calibration> calibration_with_profile(const hardware::Catalog& catalog,
                                                   std::string_view gpu,
                                                   const ProfileSource& source,
                                                   const std::string& where = "{calibration}");

}  // namespace clustertwin::collective
