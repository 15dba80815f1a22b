#pragma once
/// A roofline-efficiency table on a log-spaced grid of up to three axes (GEMM m, n, k; attention
/// isl and batch x heads; ...), interpolated multilinearly in log(axis) space of log(efficiency)
/// and held constant beyond the grid's edges. calibration/kernel_fit.h (`clustertwin calibrate`)
/// fits the grid points and uses the same interpolation, so that its error figures are the C++
/// model's (docs/models/compute.md).

#include <array>
#include <cstddef>
#include <vector>

namespace clustertwin::compute {

/// The range of a grid point's efficiency (time at the roofline / measured time, less the launch
/// overhead): what `clustertwin calibrate` writes (calibration/kernel_fit.cpp clamps a fitted
/// point to it) and what a profile is read with. The floor is a kernel 10^5 times slower than its
/// roofline (the slowest shipped point is 4.6e-5, a B300 decode attention of one token); above 1
/// are grid points whose measured kernel beat the roofline with L2-resident operands (up to 2.0
/// in the shipped tables), which shape the interpolation between points while at() caps the
/// result at 1.
inline constexpr double kMinEfficiency = 1e-5;
inline constexpr double kMaxEfficiency = 2.0;

class EfficiencyGrid {
 public:
  static constexpr size_t kMaxAxes = 3;

  EfficiencyGrid() = default;
  /// `axes`: 1 to 3 strictly increasing positive coordinate lists; `values`: the efficiency at
  /// every grid point, last axis fastest, all > 0. The caller validates (see compute_model.cpp).
  EfficiencyGrid(std::vector<std::vector<double>> axes, const std::vector<double>& values);

  [[nodiscard]] bool empty() const { return log_values_.empty(); }
  [[nodiscard]] size_t dims() const { return log_axes_.size(); }
  /// Efficiency at `point`, at most 1 (coordinates beyond dims() are ignored; non-positive ones
  /// clamp to the first grid line).
  [[nodiscard]] double at(std::array<double, kMaxAxes> point) const;

 private:
  std::vector<std::vector<double>> log_axes_;
  std::vector<double> log_values_;
  std::array<size_t, kMaxAxes> strides_{};
};

}  // namespace clustertwin::compute
