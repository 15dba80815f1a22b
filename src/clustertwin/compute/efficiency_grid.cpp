#include "clustertwin/compute/efficiency_grid.h"

#include <algorithm>
#include <cmath>

#include "clustertwin/base/check.h"

namespace clustertwin::compute {

EfficiencyGrid::EfficiencyGrid(std::vector<std::vector<double>> axes,
                               const std::vector<double>& values) {
  CT_CHECK(!axes.empty() && axes.size() <= kMaxAxes, "1 to 3 axes");
  size_t n = 1;
  for (auto& a : axes) {
    CT_CHECK(!a.empty(), "an axis needs at least one point");
    for (double& x : a) {
      CT_CHECK(x > 0, "axis coordinates are positive");
      x = std::log(x);
    }
    n *= a.size();
  }
  CT_CHECK(values.size() == n, "one value per grid point");
  log_axes_ = std::move(axes);
  size_t stride = 1;
  for (size_t i = log_axes_.size(); i-- > 0;) {
    strides_[i] = stride;
    stride *= log_axes_[i].size();
  }
  log_values_.reserve(values.size());
  for (double v : values) {
    CT_CHECK(v > 0, "efficiencies are positive");
    log_values_.push_back(std::log(v));
  }
}

double EfficiencyGrid::at(std::array<double, kMaxAxes> point) const {
  CT_CHECK(!empty(), "lookup in an empty efficiency grid");
  // Per axis: the bracketing grid lines and the weight of the upper one.
  std::array<size_t, kMaxAxes> lo{};
  std::array<double, kMaxAxes> w{};
  const size_t d = dims();
  for (size_t i = 0; i < d; ++i) {
    const auto& a = log_axes_[i];
    const double x = std::log(std::max(point[i], 1e-300));
    if (a.size() == 1 || x <= a.front()) {
      lo[i] = 0;
      w[i] = 0.0;
    } else if (x >= a.back()) {
      lo[i] = a.size() - 1;
      w[i] = 0.0;
    } else {
      const size_t j = static_cast<size_t>(std::upper_bound(a.begin(), a.end(), x) - a.begin()) - 1;
      lo[i] = j;
      w[i] = (x - a[j]) / (a[j + 1] - a[j]);
    }
  }
  double acc = 0.0;
  for (size_t corner = 0; corner < (size_t{1} << d); ++corner) {
    double weight = 1.0;
    size_t index = 0;
    for (size_t i = 0; i < d; ++i) {
      const bool upper = (corner >> i) & 1U;
      const double wi = upper ? w[i] : 1.0 - w[i];
      if (wi == 0.0) {
        weight = 0.0;
        break;
      }
      weight *= wi;
      index += (lo[i] + (upper ? 1 : 0)) * strides_[i];
    }
    if (weight > 0.0) acc += weight * log_values_[index];
  }
  // Capped at 1: a kernel never beats its roofline (the few points that measured faster had
  // L2-resident operands); so t >= t0 + roofline holds for every op.
  return std::min(1.0, std::exp(acc));
}

}  // namespace clustertwin::compute
