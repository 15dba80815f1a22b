#pragma once
/// What a finished sweep shows in the report (docs/sweep.md §report): the Pareto frontier of two
/// outputs and each input's main effect on one output (a tornado chart).
///
/// Pareto frontier: the points no other point dominates, where a dominates b when it is at least
/// as good on both outputs and better on one (goals: minimize or maximize each); found by
/// sorting on the first output and keeping each point that improves the best second output so
/// far (Kung, Luccio and Preparata, J. ACM 22(4), 1975: O(n log n) for two objectives).
///
/// Main effects (Montgomery, Design and Analysis of Experiments, ch. 5-6): for each design key,
/// the mean of the output over the points at each of its values; the bar spans the lowest and
/// highest of those means, and keys are sorted by that span, the widest first. Over a full
/// factorial (a product) these are the classical main effects; over a Latin hypercube each value
/// is its own level, so a continuous key is better read from its points.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clustertwin/sweep/design.h"

namespace clustertwin::sweep {

enum class Goal { kMinimize, kMaximize };

/// The goal of an output: kMaximize when listed in `maximize`.
Goal goal_of(const ReportChoice& c, const std::string& output);

/// ids of the points on the Pareto frontier of (x, y), in increasing x. Rows whose x or y is not
/// a number (error rows) take no part.
std::vector<int64_t> pareto_front(const std::vector<int64_t>& ids, const std::vector<double>& x,
                                  const std::vector<double>& y, Goal gx, Goal gy);

/// The sweep section's analysis from the points table ({columns, rows} as Store::table gives):
/// {"pareto": {x, y, x_goal, y_goal, ids}, "tornado": {output, bars: [{key, low, high, levels:
/// [{value, mean, points}]}]}}; a part is left out when its outputs are missing or not numbers.
nlohmann::json analyze(const Design& design, const ReportChoice& choice,
                       const nlohmann::json& table);

/// A finished study's results JSON (what `sweep --json` writes and the HTML report reads): the
/// `sweep` section with the design's name, axes and outputs, the points table (Store::table),
/// how many points failed and the analysis of the design's report choice.
nlohmann::json study_json(const Design& design, const nlohmann::json& table);

}  // namespace clustertwin::sweep
