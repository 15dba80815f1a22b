#pragma once
/// A bounded, robust nonlinear least-squares fit of named model parameters to measurements, on
/// Ceres Solver (docs/decisions/0003-calibration-solver.md says why Ceres). Generic: the caller
/// names the parameters (start value, bounds, where the start came from) and hands a model
/// callback that predicts every measurement from a parameter vector; the collective fitter
/// (collective_fit.h) is one caller, and parameters added to a model later (issue 13's
/// inter-domain terms) plug in as more names.
///
///   minimise  1/2 sum_i w_i rho(r_i^2) + 1/2 lambda sum_j (u_j - u0_j)^2
///   r_i = log(predicted_i / measured_i),  u_j = log(parameter_j),  lo_j <= u_j <= hi_j
///   rho(s) = 2 d^2 (sqrt(1 + s / d^2) - 1)     (soft-L1, Ceres' SoftLOneLoss, scale d)
///
/// Relative (log) residuals weigh a 10 us latency and a 10 ms transfer alike; soft-L1 lets an
/// isolated spike pull less than a systematic misfit; the weak prior keeps a parameter that the
/// data barely sees near its start instead of wandering along a flat valley.
///
/// After the fit it reports per parameter: the value, its 1-sigma uncertainty from the Jacobian
/// (s^2 (J^T W J)^-1 over the constrained parameters, W the robust loss's weights), whether the
/// measurements constrain it at all (a Jacobian column that is zero, or that lies in the span of
/// the columns before it, is not constrained: it is held at its start and reported as such, never
/// silently returned as if fitted), and which measurements constrain it. Then residuals before
/// and after, and k-fold cross-validation: the measurements split into k folds (index mod k),
/// each fold predicted by a fit to the others (warm-started from the full fit).

#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "clustertwin/base/result.h"

namespace clustertwin::calibration {

struct Parameter {
  std::string name;  ///< "all_reduce/ring/simple.efficiency"
  double start = 1;  ///< start and prior value (> 0)
  double lower = 0;  ///< bounds, lower < start < upper, lower > 0
  double upper = 0;
  std::string source;    ///< where the start came from ("catalog/collectives/h100.yaml")
  bool rescale = false;  ///< also start from start * 0.7 and * 1.3 (against local minima)
  /// Before the solver, try 16 log-spaced values between the bounds (one pass, in order,
  /// others held) and start from the best: for factors the data may put far from the start
  /// (a cluster whose network latency is 10x the catalog's), where a min() over model lines
  /// would otherwise trap the local solver.
  bool grid = false;
  /// Pulled toward its start by the prior. False for a start that is only a place to begin
  /// (a per-iteration host time starting at a negligible 1 ms), where a pull in log space would
  /// hold it there against the data.
  bool prior = true;
};

struct Observation {
  double value = 0;   ///< measured (> 0)
  double weight = 1;  ///< relative weight of its residual
  std::string label;  ///< "file:line" for reports
};

/// Predicts every observation (same order, > 0) from parameter values (same order as the
/// parameters). An error stops the fit.
using ModelFn = std::function<base::Result<std::vector<double>>(std::span<const double>)>;

struct FitOptions {
  double loss_scale = 0.15;    ///< d of soft-L1, in log units (0.15 = 15%)
  double prior_weight = 0.02;  ///< lambda
  int folds = 5;               ///< cross-validation folds (0: none)
  int max_iterations = 100;    ///< per solve
  double diff_step = 1e-5;     ///< forward-difference step in log(parameter)
  double sensitivity = 1e-3;   ///< |d r / d u| below this: the measurement does not see it
  double collinear = 0.02;     ///< a column whose part outside the earlier ones is below this
                               ///< fraction of its norm is not separately constrained
  /// The global stage, against the local minima of a model that is a min() over lines (a line
  /// that wins at no measured size from the start is seen by no measurement, so a local solver
  /// never moves it). `global_samples` > 0: a Latin hypercube of that many points in log space,
  /// every parameter within `global_span` x of its start (and its bounds), ranked by the
  /// objective; the solver also starts from the best `global_keep` of them. `coordinate_passes`
  /// > 0: from the best solution, a coordinate search (each parameter in turn over 16
  /// log-spaced values within `global_span` x of where it is, the others held) of up to that
  /// many passes, then the solver again, repeated while the objective falls (at most
  /// `global_rounds` times). Deterministic: the hypercube's strata and offsets come from a
  /// fixed-seed SplitMix64 stream, never from std:: distributions.
  int global_samples = 0;
  int global_keep = 3;
  double global_span = 5;
  int coordinate_passes = 0;
  int global_rounds = 4;
  /// The simplex stage (> 0: iterations per run): Nelder-Mead (Nelder and Mead, Computer
  /// Journal 7, 1965) on the same objective, in log space, from every start (simplex edge 0.5),
  /// then from the best of those with edges 0.2, 0.1 and 0.3; the solver then starts from its
  /// end as well. Derivative-free: it crosses the kinks of a min() over lines, where a line
  /// that wins nowhere has a zero Jacobian column that no gradient step moves. Points outside
  /// the bounds are evaluated at the nearest point inside them. Deterministic (no randomness).
  int simplex_iterations = 0;
  /// A simplex run also stops once its vertices' objective values lie within this of each other
  /// (0: it runs every iteration): for models whose every call is costly.
  double simplex_tolerance = 0;
  /// Hold an unconstrained parameter at its start only when that costs the data at most one
  /// unit of chi-square (a profile-likelihood test, fitter.cpp); otherwise hold it where the
  /// fit put it and say so. Off: every unconstrained parameter is held at its start.
  bool profile_hold = false;
};

struct ParameterResult {
  std::string name;
  double start = 0, value = 0;
  double sigma_rel = 0;  ///< 1-sigma uncertainty as a fraction of the value (log scale)
  bool constrained = false;
  std::string
      why_not;  ///< for unconstrained: "no measurement depends on it" / "only together with X"
  /// For an unconstrained parameter: held at its start (true), or, where holding it there
  /// costs the fit significantly (the profile test, fitter.cpp), where the fit put it.
  bool kept_at_start = true;
  bool at_bound = false;
  std::vector<int> constrained_by;  ///< observation indices with a significant sensitivity
  std::string source;
};

struct FitResult {
  std::vector<ParameterResult> parameters;
  std::vector<double> before, after;     ///< predictions at the start and at the fit
  double rms_before = 0, rms_after = 0;  ///< rms of log(predicted / measured)
  std::vector<double> cv_predicted;      ///< each observation predicted by a fit without its fold
  double cv_rms = 0;
  int folds = 0;
  int iterations = 0;
  std::string termination;  ///< Ceres' termination type
};

/// Fits; an error when nothing constrains any parameter, when the model fails, or when the
/// inputs are inconsistent (bounds, non-positive values).
base::Result<FitResult> fit(std::span<const Parameter> params, std::span<const Observation> obs,
                            const ModelFn& model, const FitOptions& options = {});

/// Nelder-Mead downhill simplex (Nelder and Mead, Computer Journal 7, 1965; reflection 1,
/// expansion 2, contraction 1/2, shrink 1/2) from `x0` with an axis-aligned simplex of edge
/// `edge`, `iterations` steps, fewer when the vertices' values come within `tolerance` of each
/// other (> 0): the simplex stage of fit(). Returns the best vertex and its value.
/// Deterministic (ties keep their order).
std::pair<std::vector<double>, double> nelder_mead(
    const std::function<double(const std::vector<double>&)>& f, const std::vector<double>& x0,
    int iterations, double edge, double tolerance = 0);

/// rms of log(a_i / b_i).
double rms_log_error(std::span<const double> predicted, std::span<const Observation> obs);

}  // namespace clustertwin::calibration
