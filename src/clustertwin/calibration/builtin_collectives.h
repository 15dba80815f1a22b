#pragma once
/// The built-in collective calibration (catalog/collectives/<name>.yaml), produced by the same fit
/// a user runs (`clustertwin calibrate`, collective_fit.h) on the measured single-node nccl-tests
/// tables of the reference set: `clustertwin calibrate --builtin collectives --reference DIR`
/// (docs/models/calibration.md, docs/models/collectives.md). The recipe
/// catalog/calibration/collectives.yaml names, per catalog file, the table, the cluster it was
/// measured on, the GPUs the file applies to, the parameters held at NCCL's values and the
/// parameters shared across op families. Starts and prior: NCCL's own tuning constants
/// (catalog/collectives/defaults.yaml), never the file being regenerated, so a rerun on the same
/// tables writes the same bytes.

#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/calibration/collective_fit.h"
#include "clustertwin/calibration/kernel_fit.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::calibration {

/// One op family's fit of one file of the recipe, for the report.
struct BuiltinCollectiveFit {
  std::string file;  ///< the recipe's name ("h100")
  CollectiveFit fit;
  std::vector<CollectiveRun> runs;  ///< the runs it was fitted on
};

struct BuiltinCollectives {
  /// catalog/collectives/<name>.yaml and tests/validation/data/collective/<name>_nccl.csv (the
  /// measured rows in bytes and microseconds, which the validation tests compare against).
  std::vector<GeneratedFile> files;
  std::vector<std::string> summary;        ///< per file and op: rows, rms and worst error
  std::vector<BuiltinCollectiveFit> fits;  ///< per file and op family, in fitting order
  std::vector<InputFile> inputs;           ///< every table read, with its SHA-256
};

/// Fits every file of the recipe; every error of every table is reported together, and nothing
/// is returned unless every fit succeeded and its file reads back through the collective layer.
/// `only`: fit just these files (names of the recipe; empty: all).
base::Result<BuiltinCollectives> builtin_collectives(const hardware::Catalog& catalog,
                                                     const std::string& reference_dir,
                                                     const std::vector<std::string>& only = {});

}  // namespace clustertwin::calibration
