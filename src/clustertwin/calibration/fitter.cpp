#include "clustertwin/calibration/fitter.h"

#include <ceres/ceres.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <optional>

namespace clustertwin::calibration {
using base::fail;

namespace {

/// Predictions and their Jacobian in log space at one point, computed once per point and shared
/// by every residual block (the model predicts all measurements in one call).
class Evaluator {
 public:
  /// `use`: the observations whose residuals it serves (all when empty); the model always
  /// predicts all of them.
  Evaluator(const ModelFn& model, std::span<const Observation> obs, double step,
            const std::vector<bool>& use = {})
      : model_(model), obs_(obs), step_(step) {
    for (size_t i = 0; i < obs.size(); ++i)
      if (use.empty() || use[i]) idx_.push_back(i);
  }
  [[nodiscard]] size_t size() const { return idx_.size(); }

  /// log(predicted_i / measured_i) at u; with the Jacobian when `jac`.
  bool at(const double* u, int k, bool jac) {
    std::vector<double> x(u, u + k);
    if (x == x_ && (!jac || have_jac_)) return ok_;
    x_ = x;
    have_jac_ = false;
    ok_ = eval(x, r_);
    if (!ok_) return false;
    if (jac) {
      j_.assign(idx_.size() * static_cast<size_t>(k), 0.0);
      // Forward differences: one model call per parameter (the model predicts every
      // measurement at once, and a call is the cost that matters).
      std::vector<double> rp;
      for (int c = 0; c < k; ++c) {
        auto xp = x;
        xp[c] += step_;
        if (!eval(xp, rp)) return ok_ = false;
        for (size_t i = 0; i < idx_.size(); ++i)
          j_[i * static_cast<size_t>(k) + c] = (rp[i] - r_[i]) / step_;
      }
      have_jac_ = true;
    }
    return true;
  }
  [[nodiscard]] double residual(size_t i) const { return r_[i]; }
  [[nodiscard]] double jacobian(size_t i, int c, int k) const {
    return j_[i * static_cast<size_t>(k) + c];
  }
  [[nodiscard]] const base::Error& error() const { return error_; }
  [[nodiscard]] bool failed() const { return !error_.message.empty(); }

 private:
  bool eval(const std::vector<double>& u, std::vector<double>& r) {
    std::vector<double> p(u.size());
    for (size_t j = 0; j < u.size(); ++j) p[j] = std::exp(u[j]);
    auto pred = model_(p);
    if (!pred) {
      if (error_.message.empty()) error_ = pred.error();
      return false;
    }
    if (pred->size() != obs_.size()) {
      error_ = {"the model predicted " + std::to_string(pred->size()) + " values for " +
                    std::to_string(obs_.size()) + " measurements",
                {},
                0};
      return false;
    }
    r.resize(idx_.size());
    for (size_t q = 0; q < idx_.size(); ++q) {
      const size_t i = idx_[q];
      if (!((*pred)[i] > 0) || !std::isfinite((*pred)[i])) return false;
      r[q] = std::log((*pred)[i] / obs_[i].value);
    }
    return true;
  }

  const ModelFn& model_;
  std::span<const Observation> obs_;
  double step_;
  std::vector<size_t> idx_;
  std::vector<double> x_, r_, j_;
  bool ok_ = false, have_jac_ = false;
  base::Error error_;
};

/// One measurement's residual; evaluation goes through the shared Evaluator.
class ObservationCost : public ceres::CostFunction {
 public:
  ObservationCost(Evaluator* ev, size_t i, int k) : ev_(ev), i_(i), k_(k) {
    set_num_residuals(1);
    mutable_parameter_block_sizes()->push_back(k);
  }
  bool Evaluate(double const* const* parameters, double* residuals,
                double** jacobians) const override {
    const bool jac = jacobians != nullptr && jacobians[0] != nullptr;
    if (!ev_->at(parameters[0], k_, jac)) return false;
    residuals[0] = ev_->residual(i_);
    if (jac)
      for (int c = 0; c < k_; ++c) jacobians[0][c] = ev_->jacobian(i_, c, k_);
    return true;
  }

 private:
  Evaluator* ev_;
  size_t i_;
  int k_;
};

/// The prior: sqrt(lambda_j) (u_j - u0_j) for every parameter (lambda_j = 0 for one without a
/// prior).
class PriorCost : public ceres::CostFunction {
 public:
  PriorCost(std::vector<double> u0, std::vector<double> lambda) : u0_(std::move(u0)) {
    for (double l : lambda) s_.push_back(std::sqrt(l));
    set_num_residuals(static_cast<int>(u0_.size()));
    mutable_parameter_block_sizes()->push_back(static_cast<int>(u0_.size()));
  }
  bool Evaluate(double const* const* parameters, double* residuals,
                double** jacobians) const override {
    const size_t k = u0_.size();
    for (size_t j = 0; j < k; ++j) residuals[j] = s_[j] * (parameters[0][j] - u0_[j]);
    if (jacobians && jacobians[0]) {
      for (size_t a = 0; a < k; ++a)
        for (size_t b = 0; b < k; ++b) jacobians[0][a * k + b] = a == b ? s_[a] : 0.0;
    }
    return true;
  }

 private:
  std::vector<double> u0_, s_;
};

/// Each parameter's prior weight: the fit's lambda, or 0 for a parameter without a prior.
std::vector<double> prior_weights(std::span<const Parameter> params, double lambda) {
  std::vector<double> w;
  for (const auto& p : params) w.push_back(p.prior ? lambda : 0.0);
  return w;
}

/// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): a fixed stream whatever the standard
/// library, for the global stage's Latin hypercube.
struct SplitMix64 {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// In [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

struct Solve {
  std::vector<double> u;
  double cost = 0;
  int iterations = 0;
  std::string termination;
  bool ok = false;
};

/// One Ceres solve from `u_start`, with the parameters in `fixed` held constant, on the
/// observations selected by `use` (all when empty).
Solve solve(std::span<const Parameter> params, std::span<const Observation> obs,
            const std::vector<bool>& use, const ModelFn& model, const FitOptions& o,
            std::vector<double> u_start, const std::vector<int>& fixed, base::Error* error) {
  const int k = static_cast<int>(params.size());
  Evaluator ev(model, obs, o.diff_step, use);
  ceres::Problem::Options po;
  po.cost_function_ownership = ceres::TAKE_OWNERSHIP;
  po.loss_function_ownership = ceres::TAKE_OWNERSHIP;
  ceres::Problem problem(po);
  Solve s;
  s.u = std::move(u_start);
  double* u = s.u.data();
  for (size_t q = 0, i = 0; i < obs.size(); ++i) {
    if (!use.empty() && !use[i]) continue;
    problem.AddResidualBlock(new ObservationCost(&ev, q++, k),
                             new ceres::ScaledLoss(new ceres::SoftLOneLoss(o.loss_scale),
                                                   obs[i].weight, ceres::TAKE_OWNERSHIP),
                             u);
  }
  std::vector<double> u0(static_cast<size_t>(k));
  for (int j = 0; j < k; ++j) u0[j] = std::log(params[j].start);
  problem.AddResidualBlock(new PriorCost(u0, prior_weights(params, o.prior_weight)), nullptr, u);
  for (int j = 0; j < k; ++j) {
    problem.SetParameterLowerBound(u, j, std::log(params[j].lower));
    problem.SetParameterUpperBound(u, j, std::log(params[j].upper));
  }
  if (static_cast<int>(fixed.size()) == k) {
    problem.SetParameterBlockConstant(u);
  } else if (!fixed.empty()) {
    problem.SetManifold(u, new ceres::SubsetManifold(k, fixed));
  }
  ceres::Solver::Options so;
  so.linear_solver_type = ceres::DENSE_QR;
  so.trust_region_strategy_type = ceres::LEVENBERG_MARQUARDT;
  so.max_num_iterations = o.max_iterations;
  so.logging_type = ceres::SILENT;
  so.minimizer_progress_to_stdout = false;
  so.num_threads = 1;  // deterministic: one order of floating-point sums
  ceres::Solver::Summary sum;
  ceres::Solve(so, &problem, &sum);
  if (ev.failed()) {
    *error = ev.error();
    return s;
  }
  s.cost = sum.final_cost;
  s.iterations = static_cast<int>(sum.iterations.size());
  s.termination = ceres::TerminationTypeToString(sum.termination_type);
  s.ok = sum.IsSolutionUsable();
  return s;
}

std::vector<double> predict(const ModelFn& model, std::span<const double> u, base::Error* error) {
  std::vector<double> p(u.size());
  for (size_t j = 0; j < u.size(); ++j) p[j] = std::exp(u[j]);
  auto r = model(p);
  if (!r) {
    *error = r.error();
    return {};
  }
  return *r;
}

}  // namespace

std::pair<std::vector<double>, double> nelder_mead(
    const std::function<double(const std::vector<double>&)>& f, const std::vector<double>& x0,
    int iterations, double edge, double tolerance) {
  const size_t n = x0.size();
  std::vector<std::vector<double>> pts{x0};
  for (size_t i = 0; i < n; ++i) {
    auto p = x0;
    p[i] += edge;
    pts.push_back(p);
  }
  std::vector<double> vals;
  for (const auto& p : pts) vals.push_back(f(p));
  std::vector<size_t> order(n + 1);
  for (int it = 0; it < iterations; ++it) {
    for (size_t i = 0; i <= n; ++i) order[i] = i;
    // Stable: equal values keep their order, so the run is the same on every library.
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return vals[a] < vals[b]; });
    std::vector<std::vector<double>> sp;
    std::vector<double> sv;
    for (size_t i : order) {
      sp.push_back(std::move(pts[i]));
      sv.push_back(vals[i]);
    }
    pts = std::move(sp);
    vals = std::move(sv);
    if (tolerance > 0 && vals[n] - vals[0] <= tolerance) break;
    std::vector<double> c(n, 0.0);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) c[j] += pts[i][j];
    for (auto& v : c) v /= static_cast<double>(n);
    auto along = [&](double t) {
      std::vector<double> x(n);
      for (size_t j = 0; j < n; ++j) x[j] = c[j] + t * (pts[n][j] - c[j]);
      return x;
    };
    auto xr = along(-1);
    const double fr = f(xr);
    if (fr < vals[0]) {
      auto xe = along(-2);
      const double fe = f(xe);
      if (fe < fr) {
        pts[n] = std::move(xe);
        vals[n] = fe;
      } else {
        pts[n] = std::move(xr);
        vals[n] = fr;
      }
    } else if (fr < vals[n - 1]) {
      pts[n] = std::move(xr);
      vals[n] = fr;
    } else {
      auto xc = along(0.5);
      const double fc = f(xc);
      if (fc < vals[n]) {
        pts[n] = std::move(xc);
        vals[n] = fc;
      } else {
        for (size_t i = 1; i <= n; ++i) {
          for (size_t j = 0; j < n; ++j) pts[i][j] = pts[0][j] + 0.5 * (pts[i][j] - pts[0][j]);
          vals[i] = f(pts[i]);
        }
      }
    }
  }
  size_t b = 0;
  for (size_t i = 1; i <= n; ++i)
    if (vals[i] < vals[b]) b = i;
  return {pts[b], vals[b]};
}

double rms_log_error(std::span<const double> predicted, std::span<const Observation> obs) {
  if (obs.empty()) return 0;
  double s = 0;
  for (size_t i = 0; i < obs.size(); ++i) {
    const double r = std::log(predicted[i] / obs[i].value);
    s += r * r;
  }
  return std::sqrt(s / static_cast<double>(obs.size()));
}

base::Result<FitResult> fit(std::span<const Parameter> params, std::span<const Observation> obs,
                            const ModelFn& model, const FitOptions& o) {
  const int k = static_cast<int>(params.size());
  const size_t m = obs.size();
  if (k == 0) return fail("nothing to fit: no parameter is named");
  if (m == 0) return fail("nothing to fit: no measurement");
  for (const auto& p : params) {
    if (!(p.lower > 0 && p.lower <= p.start && p.start <= p.upper))
      return fail("parameter " + p.name + ": expected 0 < lower <= start <= upper, got " +
                  std::to_string(p.lower) + " <= " + std::to_string(p.start) +
                  " <= " + std::to_string(p.upper));
  }
  for (const auto& ob : obs) {
    if (!(ob.value > 0) || !(ob.weight > 0))
      return fail(ob.label + ": measured value and weight must be positive");
  }
  FitResult out;
  base::Error err;
  std::vector<double> u0(static_cast<size_t>(k));
  for (int j = 0; j < k; ++j) u0[j] = std::log(params[j].start);
  out.before = predict(model, u0, &err);
  if (out.before.empty()) return fail(err);
  out.rms_before = rms_log_error(out.before, obs);

  // Which parameters the measurements see at all, at the start: a column of zeros means no
  // measurement depends on the parameter (e.g. a protocol's line that never wins at any
  // measured size); such parameters are held at their start.
  auto jacobian_at = [&](const std::vector<double>& u, std::vector<double>& res,
                         Eigen::MatrixXd& J) -> bool {
    Evaluator ev(model, obs, o.diff_step);
    if (!ev.at(u.data(), k, true)) {
      err =
          ev.failed() ? ev.error() : base::Error{"the model predicted a non-positive value", {}, 0};
      return false;
    }
    res.resize(m);
    J.resize(static_cast<Eigen::Index>(m), k);
    for (size_t i = 0; i < m; ++i) {
      res[i] = ev.residual(i);
      for (int c = 0; c < k; ++c) J(static_cast<Eigen::Index>(i), c) = ev.jacobian(i, c, k);
    }
    return true;
  };

  // Grid starts for the `grid` parameters: the robust cost over 16 log-spaced values.
  auto cost_at = [&](const std::vector<double>& u) -> double {
    auto pred = predict(model, u, &err);
    if (pred.empty()) return std::numeric_limits<double>::infinity();
    double c = 0;
    for (size_t i = 0; i < m; ++i) {
      const double r = std::log(pred[i] / obs[i].value);
      c += obs[i].weight * 2 * o.loss_scale * o.loss_scale *
           (std::sqrt(1 + r * r / (o.loss_scale * o.loss_scale)) - 1);
    }
    return c;
  };
  std::vector<double> ug = u0;
  bool gridded = false;
  for (int j = 0; j < k; ++j) {
    if (!params[j].grid) continue;
    gridded = true;
    const double lo = std::log(params[j].lower), hi = std::log(params[j].upper);
    double best_c = cost_at(ug), best_u = ug[j];
    for (int g = 0; g < 16; ++g) {
      auto t = ug;
      t[j] = lo + (hi - lo) * (g + 0.5) / 16;
      const double c = cost_at(t);
      if (c < best_c) {
        best_c = c;
        best_u = t[j];
      }
    }
    ug[j] = best_u;
  }
  if (!err.message.empty()) return fail(err);
  // Multi-start: from the starts (and the grid's), and with the `rescale` parameters scaled
  // (several lines under a min() have local minima where one line covers every size).
  std::vector<std::vector<double>> starts = {u0};
  if (gridded && ug != u0) starts.push_back(ug);
  for (double f : {0.7, 1.3}) {
    auto s = u0;
    bool any = false;
    for (int j = 0; j < k; ++j) {
      if (!params[j].rescale) continue;
      s[j] = std::clamp(u0[j] + std::log(f), std::log(params[j].lower), std::log(params[j].upper));
      any = true;
    }
    if (any) starts.push_back(s);
  }
  // The objective (twice Ceres' cost): the robust data term and the prior.
  auto objective = [&](const std::vector<double>& u) -> double {
    double c = cost_at(u);
    for (int j = 0; j < k; ++j)
      if (params[j].prior) c += o.prior_weight * (u[j] - u0[j]) * (u[j] - u0[j]);
    return c;
  };
  // The span of the global stage around `center` in log space, within the bounds.
  auto span_of = [&](int j, double center) {
    const double w = std::log(std::max(1.0, o.global_span));
    return std::pair{std::max(std::log(params[j].lower), center - w),
                     std::min(std::log(params[j].upper), center + w)};
  };
  if (o.global_samples > 0) {
    // Latin hypercube: each parameter's span cut into `n` strata, one point per stratum, the
    // strata paired across parameters by a random permutation.
    const int n = o.global_samples;
    SplitMix64 rng;
    std::vector<std::vector<double>> pts(static_cast<size_t>(n), std::vector<double>(k));
    for (int j = 0; j < k; ++j) {
      const auto [lo, hi] = span_of(j, u0[j]);
      std::vector<int> perm(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) perm[i] = i;
      for (int i = n - 1; i > 0; --i)
        std::swap(perm[i], perm[rng.next() % static_cast<uint64_t>(i + 1)]);
      for (int i = 0; i < n; ++i) pts[i][j] = lo + (hi - lo) * (perm[i] + rng.uniform()) / n;
    }
    std::vector<std::pair<double, int>> ranked;
    for (int i = 0; i < n; ++i) ranked.emplace_back(objective(pts[i]), i);
    if (!err.message.empty()) return fail(err);
    std::sort(ranked.begin(), ranked.end());
    for (int q = 0; q < std::min(n, o.global_keep); ++q)
      if (std::isfinite(ranked[q].first)) starts.push_back(pts[ranked[q].second]);
  }
  if (o.simplex_iterations > 0) {
    // Nelder-Mead from every start, then polished from the best with smaller and larger
    // simplices; its end is one more start for the solver.
    auto clamp_in = [&](std::vector<double> u) {
      for (int j = 0; j < k; ++j)
        u[j] = std::clamp(u[j], std::log(params[j].lower), std::log(params[j].upper));
      return u;
    };
    auto f = [&](const std::vector<double>& u) { return objective(clamp_in(u)); };
    std::vector<double> best_u;
    double best_f = std::numeric_limits<double>::infinity();
    auto run = [&](const std::vector<double>& x0, double edge) {
      auto [x, v] = nelder_mead(f, x0, o.simplex_iterations, edge, o.simplex_tolerance);
      if (v < best_f - 1e-12) {
        best_f = v;
        best_u = x;
      }
    };
    const auto from = starts;
    for (const auto& s0 : from) run(s0, 0.5);
    for (double edge : {0.2, 0.1, 0.3}) run(best_u, edge);
    if (!err.message.empty()) return fail(err);
    if (!best_u.empty()) starts.push_back(clamp_in(best_u));
  }
  std::optional<Solve> best;
  for (const auto& s0 : starts) {
    auto s = solve(params, obs, {}, model, o, s0, {}, &err);
    if (!err.message.empty()) return fail(err);
    if (s.ok && (!best || s.cost < best->cost - 1e-12)) best = s;
  }
  if (!best) return fail("the solver found no usable solution from any start");
  // Coordinate search from the best solution: each parameter in turn over 16 log-spaced values
  // within `global_span` x of where it is (and its bounds), the others held, keeping the best;
  // then the solver from there. A line the solution leaves losing at every size has a zero
  // Jacobian column, so no gradient step moves it; stepping its parameters one at a time finds
  // the sizes where it could win. Repeated while the solver's optimum falls.
  if (o.coordinate_passes > 0) {
    for (int round = 0; round < o.global_rounds; ++round) {
      std::vector<double> u = best->u;
      double cur = objective(u);
      bool moved = false;
      for (int pass = 0; pass < o.coordinate_passes; ++pass) {
        bool pass_moved = false;
        for (int j = 0; j < k; ++j) {
          const auto [lo, hi] = span_of(j, u[j]);
          double best_v = u[j];
          for (int g = 0; g < 16; ++g) {
            auto t = u;
            t[j] = lo + (hi - lo) * (g + 0.5) / 16;
            const double c = objective(t);
            if (c < cur * (1 - 1e-9)) {
              cur = c;
              best_v = t[j];
            }
          }
          if (best_v != u[j]) {
            u[j] = best_v;
            pass_moved = true;
          }
        }
        if (!err.message.empty()) return fail(err);
        if (!pass_moved) break;
        moved = true;
      }
      if (!moved) break;
      auto s = solve(params, obs, {}, model, o, u, {}, &err);
      if (!err.message.empty()) return fail(err);
      // Ceres' cost is half the objective; demand a real fall, not rounding.
      if (!s.ok || !(s.cost < best->cost * (1 - 1e-6))) break;
      best = s;
    }
  }

  // Identifiability at the solution, on the robustly weighted Jacobian, column by column in
  // the caller's order (Gram-Schmidt): zero columns are seen by no measurement; a column inside
  // the span of earlier ones is only constrained together with them.
  std::vector<double> res;
  Eigen::MatrixXd J;
  if (!jacobian_at(best->u, res, J)) return fail(err);
  Eigen::VectorXd w(static_cast<Eigen::Index>(m));
  for (size_t i = 0; i < m; ++i) {
    // Soft-L1's IRLS weight rho'(r^2) = 1 / sqrt(1 + r^2 / d^2), times the row's weight.
    const double r2 = res[i] * res[i] / (o.loss_scale * o.loss_scale);
    w(static_cast<Eigen::Index>(i)) = obs[i].weight / std::sqrt(1 + r2);
  }
  const Eigen::MatrixXd Jw = w.cwiseSqrt().asDiagonal() * J;
  std::vector<Eigen::VectorXd> basis;
  std::vector<int> fixed, free;
  out.parameters.resize(static_cast<size_t>(k));
  for (int j = 0; j < k; ++j) {
    auto& pr = out.parameters[j];
    pr.name = params[j].name;
    pr.start = params[j].start;
    pr.source = params[j].source;
    const double maxabs = J.col(j).cwiseAbs().maxCoeff();
    for (size_t i = 0; i < m; ++i) {
      const double a = std::abs(J(static_cast<Eigen::Index>(i), j));
      if (a > o.sensitivity && a >= 0.05 * maxabs) pr.constrained_by.push_back(static_cast<int>(i));
    }
    Eigen::VectorXd v = Jw.col(j);
    const double norm = v.norm();
    if (maxabs <= o.sensitivity) {
      pr.why_not = "no measurement depends on it";
      fixed.push_back(j);
      continue;
    }
    for (const auto& b : basis) v -= b.dot(v) * b;
    if (v.norm() < o.collinear * norm) {
      // Name the earlier parameter it leans on most.
      int lean = -1;
      double best_c = 0;
      for (int q : free) {
        const double c = std::abs(Jw.col(q).normalized().dot(Jw.col(j).normalized()));
        if (c > best_c) {
          best_c = c;
          lean = q;
        }
      }
      pr.why_not = lean >= 0 ? "only together with " + params[lean].name
                             : "only together with earlier parameters";
      fixed.push_back(j);
      continue;
    }
    basis.push_back(v.normalized());
    free.push_back(j);
    pr.constrained = true;
  }
  if (free.empty()) {
    std::string names;
    for (const auto& p : params) names += (names.empty() ? "" : ", ") + p.name;
    return fail("the measurements constrain none of the parameters (" + names +
                "): nothing was fitted");
  }
  // Hold the unconstrained parameters at their starts, so that what comes out for them is
  // exactly the start (and says so), not wherever the flat valley left them; but only where
  // the data agree. The test above is linear, at the solution: under a min() over lines, a line
  // that wins nowhere there (a zero column) may win somewhere from its start and spoil the fit,
  // and two columns nearly parallel at the solution may part away from it. So each one in turn
  // is held at its start (with those already held there) and the rest refitted: a profile
  // likelihood test (Raue et al., Bioinformatics 25(15), 2009): the start is kept when it lies
  // within the parameter's 1-sigma profile-likelihood interval, i.e. the objective rises by at
  // most one unit of chi-square (the residual variance per unit weight; the data term, without
  // the prior, with a floor of 0.1% rms per unit weight). Beyond that the
  // measurements do bound the parameter (not to a value with a sigma, only away from its
  // start): it is held where the fit put it, and says so.
  std::vector<double> ufix = best->u;
  // The data term alone (the prior is not evidence), and a floor of 0.1% rms per unit weight
  // on the variance (measurements are not trusted closer than that; an exact fit has none).
  const double best_data = cost_at(best->u);
  const double unit_var = std::max(
      1e-6, best_data / std::max(1.0, static_cast<double>(m) - static_cast<double>(free.size())));
  for (int j : fixed) {
    if (!o.profile_hold) {
      ufix[j] = u0[j];
      continue;
    }
    auto trial = ufix;
    trial[j] = u0[j];
    auto s = solve(params, obs, {}, model, o, trial, fixed, &err);
    if (!err.message.empty()) return fail(err);
    const double rise =
        s.ok ? (cost_at(s.u) - best_data) / unit_var : std::numeric_limits<double>::infinity();
    auto& pr = out.parameters[j];
    if (rise <= 1.0) {
      ufix = s.u;
      continue;
    }
    pr.kept_at_start = false;
    char b[96];
    std::snprintf(b, sizeof b, "%.1f", rise);
    pr.why_not += std::string("; held where the fit put it: at its start the fit is worse by ") +
                  "chi-square " + (std::isfinite(rise) ? std::string(b) : std::string("inf"));
  }
  auto final_solve = solve(params, obs, {}, model, o, ufix, fixed, &err);
  if (!err.message.empty()) return fail(err);
  if (!final_solve.ok) return fail("the solver found no usable solution with the fixed parameters");
  out.iterations = best->iterations + final_solve.iterations;
  out.termination = final_solve.termination;
  const auto& u = final_solve.u;
  out.after = predict(model, u, &err);
  if (out.after.empty()) return fail(err);
  out.rms_after = rms_log_error(out.after, obs);

  // Uncertainty over the constrained parameters: s^2 (J^T W J)^-1, s^2 the weighted residual
  // variance with m - |free| degrees of freedom.
  if (!jacobian_at(u, res, J)) return fail(err);
  Eigen::MatrixXd Jc(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(free.size()));
  double ss = 0, wsum = 0;
  for (size_t i = 0; i < m; ++i) {
    const double r2 = res[i] * res[i] / (o.loss_scale * o.loss_scale);
    const double wi = obs[i].weight / std::sqrt(1 + r2);
    w(static_cast<Eigen::Index>(i)) = wi;
    ss += wi * res[i] * res[i];
    wsum += wi;
    for (size_t c = 0; c < free.size(); ++c)
      Jc(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(c)) =
          J(static_cast<Eigen::Index>(i), free[c]);
  }
  const double dof = std::max(1.0, static_cast<double>(m) - static_cast<double>(free.size()));
  // Weights are relative: normalise so that they average 1 over the rows.
  const double s2 = ss / wsum * static_cast<double>(m) / dof;
  const Eigen::MatrixXd H =
      Jc.transpose() * (w * (static_cast<double>(m) / wsum)).asDiagonal() * Jc;
  Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> cod(H);
  const Eigen::MatrixXd cov = cod.pseudoInverse() * s2;
  for (int j = 0; j < k; ++j) {
    auto& pr = out.parameters[j];
    pr.value = std::exp(u[j]);
    pr.at_bound = pr.constrained && (u[j] <= std::log(params[j].lower) + 1e-9 ||
                                     u[j] >= std::log(params[j].upper) - 1e-9);
  }
  for (size_t c = 0; c < free.size(); ++c) {
    out.parameters[free[c]].sigma_rel =
        std::sqrt(std::max(0.0, cov(static_cast<Eigen::Index>(c), static_cast<Eigen::Index>(c))));
  }

  // k-fold cross-validation: each fold predicted by a fit to the other folds (unconstrained
  // parameters held the same way).
  const int folds = m >= 2 * static_cast<size_t>(std::max(o.folds, 2)) ? o.folds : 0;
  out.folds = folds;
  if (folds >= 2) {
    out.cv_predicted.assign(m, 0.0);
    for (int f = 0; f < folds; ++f) {
      std::vector<bool> use(m);
      for (size_t i = 0; i < m; ++i) use[i] = static_cast<int>(i % static_cast<size_t>(folds)) != f;
      // Warm start from the full fit: the fold's own minimum where it is unique, at a fraction
      // of the cost of the multi-start.
      auto s = solve(params, obs, use, model, o, u, fixed, &err);
      if (!err.message.empty()) return fail(err);
      auto pred = predict(model, s.u, &err);
      if (pred.empty()) return fail(err);
      for (size_t i = 0; i < m; ++i)
        if (!use[i]) out.cv_predicted[i] = pred[i];
    }
    out.cv_rms = rms_log_error(out.cv_predicted, obs);
  }
  return out;
}

}  // namespace clustertwin::calibration
