#pragma once
/// A design study over scenario keys (docs/sweep.md): a sweep file names a base scenario and a
/// design, a list of blocks whose points are combined as a cartesian product (the first block
/// varies slowest):
///   - `product`: every combination of the listed values of each key,
///   - `zip`: the i-th values of every key together (equal lengths),
///   - `latin_hypercube`: `samples` points of numeric ranges or value lists, one point in each of
///     `samples` equal strata of every axis (McKay, Beckman, Conover 1979), strata paired by
///     seeded random permutations (our own generator over std::mt19937_64's raw output, so the
///     design is the same on every platform).
/// Each point is the base scenario with its keys set (dotted paths: `workload.training.tp`,
/// `cluster.scale_out.oversubscription`); the point order is fixed by the file, so results can be
/// stored and merged in that order whatever runs them.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/sweep/limits.h"

namespace clustertwin::sweep {

/// One varied key of the design.
struct Axis {
  std::string path;  ///< dotted scenario key: "workload.training.tp"
  int line = 0;      ///< where the design names it
};

/// A key output of every point: a column `name` filled from the results JSON at `path`
/// ("training.step_time_s").
struct Output {
  std::string name;
  std::string path;
};

/// The report's choices, from the sweep file's optional `report:` mapping (not part of the
/// spec: changing them never invalidates a database).
struct ReportChoice {
  std::string pareto_x, pareto_y;     ///< output names; default: the first two outputs
  std::string tornado;                ///< output name; default: the first output
  std::vector<std::string> maximize;  ///< outputs where more is better
};

/// One point: the value of every axis (in Design::axes order).
struct Point {
  int64_t id = 0;
  std::vector<YAML::Node> values;
};

struct Design {
  std::string file;
  std::string name;
  YAML::Node base;  ///< the base scenario
  std::vector<Axis> axes;
  std::vector<Output> outputs;
  ReportChoice report;
  std::vector<Point> points;
  /// Canonical JSON of the base scenario, the design blocks and the outputs (and the version
  /// of the expansion): two designs with the same spec run the same points (a resumed sweep
  /// checks it).
  std::string spec;

  /// The scenario of one point: a fresh copy of the base with the point's keys set (built on
  /// demand, so a million points do not hold a million scenarios). Not thread-safe: yaml-cpp
  /// nodes are shared with the design.
  [[nodiscard]] YAML::Node scenario(const Point& p) const;
};

struct ParseOptions {
  int64_t max_points = kMaxSweepPoints;  ///< the fuzz target lowers it
};

/// Reads a sweep document (YAML or JSON text, `file` for messages) and expands its points.
/// `scenario: FILE` is relative to the sweep file. Every error of the file is reported at once
/// with file:line; so is a key set under a value that is not a mapping, at any point.
base::Result<Design> parse_design(std::string_view text, const std::string& file,
                                  ParseOptions options = {});
/// Loads and parses a sweep file from disk.
base::Result<Design> load_design(const std::string& path);

/// A YAML value as JSON: integers, reals and booleans as such (YAML 1.2 core schema), mappings
/// and sequences recursively, anything else as a string.
nlohmann::json to_json(const YAML::Node& n);
/// A point's value as a short text: the scalar itself, or compact JSON for a mapping/sequence.
std::string value_text(const YAML::Node& n);

/// Checks every point's scenario with `check` (the scenario reader, passed in: this layer does
/// not read scenarios) before anything runs: a misspelt key is the design's error, not a column of
/// failed points. One error per distinct problem, at its first point, naming the point's values
/// ("point 3 (workload.training.tp=12): ..."), with the design's line of an axis the design added;
/// at most 10. What only a run can tell (a layout that does not divide the GPUs) is left to it.
base::Status check_points(const Design& design,
                          const std::function<base::Status(const YAML::Node&)>& check);

/// The outputs used when the file lists none: the headline figures of the workloads present in
/// the base scenario (training step, throughput, MFU, memory; serving throughput; power).
std::vector<Output> default_outputs(const YAML::Node& scenario);

}  // namespace clustertwin::sweep
