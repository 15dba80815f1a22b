// Failure injection: the random draws of failures, their targets and repairs (failure_injector.h).

#include "clustertwin/scheduler/failure_injector.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace clustertwin::scheduler::detail {

FailureInjector::FailureInjector(const ClusterModel& c, const FailureModel& m, uint64_t seed,
                                 bool lemons)
    : c_(&c), m_(&m), fail_rng_(Rng(seed).stream(1)), repair_rng_(Rng(seed).stream(2)) {
  for (const auto& fc : m.classes) {
    double units = 0;
    switch (fc.scope) {
      case FailureScope::kJob:
      case FailureScope::kNode:
        units = static_cast<double>(c.gpus());
        break;
      case FailureScope::kDomainStop:
      case FailureScope::kDomainDegrade:
        units = static_cast<double>(c.domains().size());
        break;
      case FailureScope::kLeaf:
        units = static_cast<double>(c.leaves().size());
        break;
    }
    if (fc.scope == FailureScope::kNode) units /= m.mean_burst();
    rates_.push_back(fc.rate_per_hour * units);
    total_ += rates_.back();
  }
  if (!lemons) return;
  const int N = c.nodes();
  is_lemon_.assign(static_cast<size_t>(N), 0);
  const int count = static_cast<int>(std::lround(m.lemon_fraction * N));
  Rng lr = Rng(seed).stream(3);
  std::vector<int> all(static_cast<size_t>(N));
  std::iota(all.begin(), all.end(), 0);
  for (int i = 0; i < count && i < N; ++i) {
    const auto k = static_cast<size_t>(i + lr.below(N - i));
    std::swap(all[static_cast<size_t>(i)], all[k]);
    lemons_.push_back(all[static_cast<size_t>(i)]);
    is_lemon_[static_cast<size_t>(all[static_cast<size_t>(i)])] = 1;
  }
  std::sort(lemons_.begin(), lemons_.end());
}

std::optional<double> FailureInjector::next_in_s() {
  if (total_ <= 0) return std::nullopt;
  return fail_rng_.exponential(3600.0 / total_);
}

int FailureInjector::pick_node() {
  // Lemon nodes are picked lemon_multiplier times as often.
  const double wl = static_cast<double>(lemons_.size()) * m_->lemon_multiplier;
  const double wg = static_cast<double>(c_->nodes()) - static_cast<double>(lemons_.size());
  if (!lemons_.empty() && fail_rng_.uniform() * (wl + wg) < wl) {
    return lemons_[static_cast<size_t>(fail_rng_.below(static_cast<int64_t>(lemons_.size())))];
  }
  // A uniform node that is not a lemon (rejection; lemons are a minority).
  while (true) {
    const int n = static_cast<int>(fail_rng_.below(c_->nodes()));
    if (is_lemon_.empty() || !is_lemon_[static_cast<size_t>(n)]) return n;
  }
}

FailureDraw FailureInjector::draw() {
  FailureDraw d;
  d.cls = fail_rng_.choose(rates_);
  switch (m_->classes[d.cls].scope) {
    case FailureScope::kJob:
      d.target = static_cast<int>(fail_rng_.below(c_->nodes()));
      d.gpu = static_cast<int>(fail_rng_.below(c_->gpus_per_node()));
      break;
    case FailureScope::kNode:
      if (m_->burst_weights.empty()) {
        d.target = pick_node();
        break;
      }
      d.nodes.resize(fail_rng_.choose(m_->burst_weights) + 1);
      for (int& n : d.nodes) n = pick_node();
      break;
    case FailureScope::kDomainStop:
    case FailureScope::kDomainDegrade:
      d.target = static_cast<int>(fail_rng_.below(static_cast<int64_t>(c_->domains().size())));
      break;
    case FailureScope::kLeaf:
      d.target = static_cast<int>(fail_rng_.below(static_cast<int64_t>(c_->leaves().size())));
      break;
  }
  return d;
}

double FailureInjector::repair_s(const FailureClass& fc) {
  const double median = fc.repair_median_h, mean = fc.repair_mean_h;
  const double sigma = mean > median && median > 0 ? std::sqrt(2.0 * std::log(mean / median)) : 0.0;
  return repair_rng_.lognormal(median, sigma) * 3600.0;
}

}  // namespace clustertwin::scheduler::detail
