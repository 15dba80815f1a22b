#pragma once
/// The built-in at-scale calibration: the figures of catalog/collectives/at-scale.yaml (the
/// collective model beyond one NVLink domain: NIC fraction per platform, SHARP efficiency,
/// cross-domain pipeline fill, NVLS per-channel rate) and catalog/collectives/moe-a2a.yaml (the
/// DeepEP and NVLink one-sided MoE kernels), fitted on the measured at-scale cases
/// (tests/validation/data/collective/at_scale.csv and moe_a2a.csv, copied from
/// shared/reference/calibration-at-scale.csv) by `clustertwin calibrate --builtin at-scale`.
///
/// The recipe catalog/calibration/at-scale.yaml names each figure, the list entries it is set
/// in, its start and bounds, and the sources whose `fit` rows set it; rows of other sources, and
/// rows of role `check`, are held out. Figures with the same sources are one fit (the fitter of
/// fitter.h on log residuals, the simplex stage first), the groups in the recipe's order, each
/// seeing the ones before it as written (4 significant digits). The model is the catalog's own
/// with the two files rewritten (collective::run_sweep and run_moe_sweep, NCCL's tuner picking
/// `auto`), so what is fitted is exactly what ships. Then each source is left out in turn: the
/// figures only it sets are dropped from the files (the model runs without them), figures it
/// shares with other sources are refitted without it, and its rows are predicted.
///
/// Deterministic: every figure starts from the recipe, never from the file being rewritten, and
/// only the figures' values change in the files (every other byte stays), so a rerun on the
/// same cases and catalog writes the same bytes.

#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/calibration/kernel_fit.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::calibration {

struct AtScaleCaseResult {
  std::string id, source, role;  ///< role: fit, check or degraded
  std::string what, size, unit;  ///< for the table: "all_reduce busbw", "16G", " GB/s"
  std::string ran;               ///< algorithm/protocol or the kernel's bottleneck
  double measured = 0, predicted = 0;
  bool has_loso = false;
  double loso_predicted = 0;  ///< with the row's source left out of every fit
};

struct BuiltinAtScale {
  /// catalog/collectives/at-scale.yaml and moe-a2a.yaml with the fitted values.
  std::vector<GeneratedFile> files;
  std::vector<AtScaleCaseResult> cases;
  std::vector<std::string> summary;  ///< per group: its figures with uncertainty; the totals
  std::vector<InputFile> inputs;     ///< the case files, with their SHA-256
};

/// Reads the recipe and the cases under `cases_dir`, fits, and returns the rewritten files
/// (nothing is written here). Every error of the recipe and of the cases at once, each at its
/// file:line.
base::Result<BuiltinAtScale> builtin_at_scale(const hardware::Catalog& catalog,
                                              const std::string& cases_dir);

/// The cases as a Markdown table (docs/models/collectives.md) and the totals line.
std::vector<std::string> at_scale_table(const BuiltinAtScale& b);

/// The report's section (`calibrate --builtin at-scale --report`): measured vs predicted of
/// every case (fitted rows blue, held-out rows orange), the residual histogram of the fitted
/// rows, the figures with their uncertainty, and every case with its leave-one-source-out
/// prediction.
std::string at_scale_html_section(const BuiltinAtScale& b);

}  // namespace clustertwin::calibration
