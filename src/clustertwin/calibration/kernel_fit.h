#pragma once
/// Fitting the compute model's roofline-efficiency grids to measured kernel tables
/// (AIConfigurator CSV layout; docs/models/compute.md, docs/models/calibration.md).
///
///   t(op)     = t0 + ideal(op) / r(op)
///   ideal(op) = max(flops / peak(dtype), bytes / hbm_bandwidth)
///   r at a grid point = median over the measured shapes that map to it of
///                       ideal / max(t_measured - t0, 0.02 t0), clamped to [1e-5, 2]
///   t0        = 0.9 x the table's fastest call (CUDA-graph replay floor)
///
/// Grid points without a measurement take the geometric mean of their measured neighbours
/// (repeated until every point has a value). Between points the compute layer interpolates
/// log r multilinearly in log(axis) (compute::EfficiencyGrid) and caps r at 1. Each family is
/// fitted on one subset of its shapes and its error is reported on the others (GEMM: power-of-two
/// n and k fitted, the others held out; attention: power-of-two head counts; MLA: batch 1, 4, 16,
/// 64, 256, 1024; MoE: power-of-two token counts). The grids, the fit / hold-out split and the
/// ops' FLOP and byte counts are those of compute::ComputeModel, so the errors reported are the
/// model's. This replaces tools/fit_compute.py (issue 16) and reproduces its figures.

#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/calibration/collective_fit.h"
#include "clustertwin/calibration/measurements.h"
#include "clustertwin/collective/sweep.h"
#include "clustertwin/compute/compute_model.h"
#include "clustertwin/hardware/catalog.h"

namespace clustertwin::calibration {

/// The roofline the efficiencies are fractions of.
struct KernelRoofline {
  double bf16_flops = 0, fp8_flops = 0, fp4_flops = 0;  ///< FLOP/s; 0 = the GPU has none
  double hbm_Bps = 0;
};

/// r on a grid; values last axis fastest.
struct KernelGrid {
  std::vector<std::string> axis_names;
  std::vector<std::vector<double>> axes;
  std::vector<double> values;
  /// Interpolated r (log r multilinear in log axis, constant beyond the edges), at most 1.
  [[nodiscard]] double at(std::span<const double> point) const;
};

/// Accuracy of a family's fit: |predicted / measured - 1| statistics.
struct ErrorStats {
  size_t n = 0;
  double median = 0, p90 = 0, max = 0;
  [[nodiscard]] std::string to_string() const;
};

/// One measured shape of a table with the fitted model's time (for the report).
struct KernelPoint {
  std::string shape;  ///< "m=64 n=1024 k=8192", as the table's columns name it
  double measured_s = 0, predicted_s = 0;
  bool held_out = false;  ///< not among the shapes the grid was fitted on
};

/// One fitted table: a family (gemm, attention_prefill, ...) at one dtype.
struct KernelTableFit {
  std::string dtype;  ///< "bf16", "fp8", "fp8_block", "nvfp4"
  KernelGrid grid;
  double t0_s = 0;
  double unaligned_m_penalty = 0;  ///< GEMM only (0 elsewhere)
  std::string table;               ///< the measured table's file, as read
  ErrorStats fit_error, held_out_error;
  size_t measured = 0;              ///< rows read
  std::vector<KernelPoint> points;  ///< every row compared, fitted and held out
};

struct KernelFamilyFit {
  std::string family;  ///< gemm, attention_prefill, attention_decode, mla_prefill, mla_decode, moe
  std::vector<KernelTableFit> tables;
};

/// Held-out rows kept for the compute layer's validation tests (tests/validation/data/).
struct HoldoutTable {
  std::string file;  ///< "compute_gemm_holdout.csv"
  std::string source_table;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  ///< without the GPU column
};

struct KernelFit {
  std::vector<KernelFamilyFit> families;  ///< every family, in the compute file's order
  std::vector<std::string> summary;       ///< one line per fitted table
  std::vector<HoldoutTable> holdouts;     ///< one per family, in the same order
};

/// Fits every family the tables hold. Errors (file:line) for shape cells that are not whole
/// numbers, a family table that leaves grid points unreachable, or no table at all.
base::Result<KernelFit> fit_kernels(std::span<const KernelTable> tables,
                                    const KernelRoofline& roofline);

/// What the compute calibration file says about where its figures come from.
struct ComputeProfileMeta {
  std::string gpu;            ///< catalog GPU name (the file is catalog/compute/<gpu>.yaml)
  std::string device;         ///< the measured device's name
  std::string tables_dir;     ///< where the tables were read ("shared/reference/measured/h100/")
  std::string tables_origin;  ///< "ai-dynamo/aiconfigurator commit 095f58a5 (Apache-2.0)"
  std::string spec_source;    ///< citation of the roofline peaks
  double hbm_efficiency = 0;  ///< achievable / peak HBM bandwidth
  std::string hbm_source;     ///< its citation
  std::string derived_from;   ///< non-empty: the GPU whose tables these are
  std::string derived_why;    ///< why the curves of another GPU apply
  std::string generated_by;   ///< the command, for the header
  /// Non-empty: the citation of each table by its file (a user's files with their SHA-256),
  /// instead of tables_dir + the table's name.
  std::map<std::string, std::string> table_cite;
};

/// The catalog compute file (catalog/compute/<gpu>.yaml format, read by
/// compute::ComputeModel::parse) of `fit` against `roofline`. Derived GPUs without FP8 keep only
/// the bf16 tables. Deterministic.
std::string compute_profile_yaml(const KernelFit& fit, const KernelRoofline& roofline,
                                 const ComputeProfileMeta& meta);

/// A calibration profile of `fit` (what `calibrate` writes from a user's kernel tables): the
/// `profile:` record (kind compute, cluster, stack, every input with its SHA-256, every table's
/// fit and held-out error), `collectives:` naming the GPU (no lines: the catalog's stay), the
/// `compute:` mapping in the catalog file's format and its sources. Read by
/// compute::ComputeModel::parse_profile; deterministic.
std::string kernel_profile_yaml(const KernelFit& fit, const KernelRoofline& roofline,
                                const ComputeProfileMeta& compute_meta,
                                std::span<const InputFile> inputs, const ProfileMeta& meta);

/// The `compute:` mapping of the profile given as `--calibration FILE|NAME` (read once,
/// collective::read_profile_source), for `gpu`'s own
/// peaks (lay it over the catalog's model with compute::ComputeModel::with_profile): nullopt
/// for a built-in name (not a readable file) or a profile without one; a profile fitted on
/// another GPU is refused (`where` names the flag or the scenario's file:line), a bad mapping
/// at the profile's file:line.
base::Result<std::optional<compute::ComputeModel>> compute_calibration_of(
    const collective::ProfileSource& source, const hardware::GpuSpec& gpu,
    const std::string& where);

/// The note a run prints when a profile's kernel tables ran: which tables, from which profile.
std::string compute_calibration_note(const compute::ComputeModel& profile, const std::string& path);

/// A held-out table as CSV, one `gpu` column first, under a `# note` line.
std::string holdout_csv(const std::string& note,
                        std::span<const std::pair<std::string, const HoldoutTable*>> per_gpu);

/// A file the built-in calibration writes, relative to the repository root.
struct GeneratedFile {
  std::string path;
  std::string text;
};
struct BuiltinCompute {
  std::vector<GeneratedFile> files;
  std::vector<std::string> summary;
  std::vector<std::pair<std::string, KernelFit>> fits;  ///< per measured GPU, for the report
  std::vector<InputFile> inputs;                        ///< every table read, with its SHA-256
};

/// The built-in compute calibration: reads the recipe catalog/calibration/compute.yaml from
/// `catalog`, the tables under `reference_dir`, fits every GPU and returns
/// catalog/compute/<gpu>.yaml and the held-out validation tables. Every file is read back through
/// compute::ComputeModel.
base::Result<BuiltinCompute> builtin_compute(const hardware::Catalog& catalog,
                                             const std::string& reference_dir,
                                             const std::string& generated_by);

/// The roofline of a GPU from its catalog entry (dense peaks and HBM bandwidth).
KernelRoofline roofline_of(const hardware::GpuSpec& gpu);

/// "%.*g" as C and Python print it.
std::string format_g(double x, int digits);

}  // namespace clustertwin::calibration
