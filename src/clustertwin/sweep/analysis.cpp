#include "clustertwin/sweep/analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace clustertwin::sweep {

Goal goal_of(const ReportChoice& c, const std::string& output) {
  return std::find(c.maximize.begin(), c.maximize.end(), output) != c.maximize.end()
             ? Goal::kMaximize
             : Goal::kMinimize;
}

std::vector<int64_t> pareto_front(const std::vector<int64_t>& ids, const std::vector<double>& x,
                                  const std::vector<double>& y, Goal gx, Goal gy) {
  // Both goals as minimization: negate the maximized ones.
  const double sx = gx == Goal::kMinimize ? 1.0 : -1.0;
  const double sy = gy == Goal::kMinimize ? 1.0 : -1.0;
  std::vector<size_t> order;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (std::isfinite(x[i]) && std::isfinite(y[i])) order.push_back(i);
  }
  // Sort by x, then y, then id: equal points keep a deterministic order.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (sx * x[a] != sx * x[b]) return sx * x[a] < sx * x[b];
    if (sy * y[a] != sy * y[b]) return sy * y[a] < sy * y[b];
    return ids[a] < ids[b];
  });
  // Keep a point when its y beats every point before it (all of which have a smaller or equal
  // x); a point equal to the last kept one on both outputs is dominated by nothing and kept.
  std::vector<int64_t> front;
  double best = std::numeric_limits<double>::infinity();
  double last_x = std::numeric_limits<double>::quiet_NaN();
  for (size_t i : order) {
    const bool twin = !front.empty() && sx * x[i] == last_x && sy * y[i] == best;
    if (sy * y[i] < best || twin) {
      front.push_back(ids[i]);
      best = sy * y[i];
      last_x = sx * x[i];
    }
  }
  // In increasing x (the sort was on sx * x).
  if (sx < 0) std::reverse(front.begin(), front.end());
  return front;
}

namespace {

int column_of(const nlohmann::json& table, const std::string& name) {
  const auto& cols = table["columns"];
  for (size_t i = 0; i < cols.size(); ++i) {
    if (cols[i] == name) return static_cast<int>(i);
  }
  return -1;
}

double number_or_nan(const nlohmann::json& v) {
  return v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

nlohmann::json analyze(const Design& design, const ReportChoice& choice,
                       const nlohmann::json& table) {
  nlohmann::json out = nlohmann::json::object();
  std::string px = choice.pareto_x, py = choice.pareto_y, tor = choice.tornado;
  if (px.empty() && design.outputs.size() >= 2) px = design.outputs[0].name;
  if (py.empty() && design.outputs.size() >= 2) py = design.outputs[1].name;
  if (tor.empty() && !design.outputs.empty()) tor = design.outputs[0].name;
  const auto& rows = table["rows"];
  const int xc = px.empty() ? -1 : column_of(table, px);
  const int yc = py.empty() ? -1 : column_of(table, py);
  if (xc >= 0 && yc >= 0) {
    std::vector<int64_t> ids;
    std::vector<double> x, y;
    for (const auto& r : rows) {
      ids.push_back(r[0].get<int64_t>());
      x.push_back(number_or_nan(r[static_cast<size_t>(xc)]));
      y.push_back(number_or_nan(r[static_cast<size_t>(yc)]));
    }
    const Goal gx = goal_of(choice, px), gy = goal_of(choice, py);
    auto front = pareto_front(ids, x, y, gx, gy);
    if (!front.empty()) {
      out["pareto"] = {{"x", px},
                       {"y", py},
                       {"x_goal", gx == Goal::kMinimize ? "min" : "max"},
                       {"y_goal", gy == Goal::kMinimize ? "min" : "max"},
                       {"ids", front}};
    }
  }
  const int oc = tor.empty() ? -1 : column_of(table, tor);
  if (oc >= 0) {
    nlohmann::json bars = nlohmann::json::array();
    for (size_t a = 0; a < design.axes.size(); ++a) {
      // Levels in order of first appearance (the design's order).
      std::vector<std::string> order;
      std::map<std::string, std::pair<double, int>> sums;
      for (const auto& r : rows) {
        const double v = number_or_nan(r[static_cast<size_t>(oc)]);
        if (!std::isfinite(v)) continue;
        const auto& key = r[1 + a];
        const std::string level =
            key.is_string() ? key.get<std::string>()
                            : key.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        auto [it, fresh] = sums.try_emplace(level, 0.0, 0);
        if (fresh) order.push_back(level);
        it->second.first += v;
        it->second.second += 1;
      }
      if (order.size() < 2) continue;  // a key with one level has no effect to show
      nlohmann::json levels = nlohmann::json::array();
      double lo = std::numeric_limits<double>::infinity(), hi = -lo;
      for (const auto& l : order) {
        const double mean = sums[l].first / sums[l].second;
        lo = std::min(lo, mean);
        hi = std::max(hi, mean);
        levels.push_back({{"value", l}, {"mean", mean}, {"points", sums[l].second}});
      }
      bars.push_back({{"key", design.axes[a].path}, {"low", lo}, {"high", hi}, {"levels", levels}});
    }
    std::stable_sort(bars.begin(), bars.end(),
                     [](const nlohmann::json& a, const nlohmann::json& b) {
                       return a["high"].get<double>() - a["low"].get<double>() >
                              b["high"].get<double>() - b["low"].get<double>();
                     });
    if (!bars.empty()) out["tornado"] = {{"output", tor}, {"bars", bars}};
  }
  return out;
}

nlohmann::json study_json(const Design& design, const nlohmann::json& table) {
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : design.axes) axes.push_back(a.path);
  nlohmann::json outputs = nlohmann::json::object();
  for (const auto& out : design.outputs) outputs[out.name] = out.path;
  int64_t failed = 0;
  for (const auto& row : table["rows"]) {
    // columns: id, axes..., status, ...
    if (row[1 + design.axes.size()] != "ok") ++failed;
  }
  return {{"sweep",
           {{"name", design.name},
            {"points", design.points.size()},
            {"failed_points", failed},
            {"axes", axes},
            {"outputs", outputs},
            {"table", table},
            {"analysis", analyze(design, design.report, table)}}}};
}

}  // namespace clustertwin::sweep
