#pragma once
/// The scenario-file door (DESIGN.md §4): a YAML/JSON document naming a cluster and its
/// workloads (`workload.training`, `.inference`, `.goodput`, `.schedule`), each block read over
/// its request's field table (`read_fields`, the same rows that make the CLI's flags), checked
/// strictly (unknown keys, types, units, all errors of the file at once, file:line), and run:
/// the cluster described, each workload run by the library function its verb runs. A message of
/// a workload's run names the key at the line of that key. docs/scenarios.md lists the keys.

#include <nlohmann/json.hpp>
#include <string>

#include "clustertwin/base/result.h"
#include "clustertwin/config/reader.h"
#include "clustertwin/scenario/environment.h"

namespace clustertwin::scenario {

/// `describe` of a cluster argument (name, file or SYSTEM*COUNT): JSON and text.
struct Described {
  nlohmann::json json;
  std::string text;
};
base::Result<Described> describe_cluster(const Environment& env, const std::string& cluster);

/// What a scenario run gives back: the results JSON (as `run --json` writes it) and the
/// one-screen summary.
struct ScenarioOutput {
  nlohmann::json results;
  std::string summary;
};

/// The keys of every workload block of a scenario file, generated from the same field tables as
/// the verbs' flags (a section of docs/cli.md; docs/scenarios.md explains the file around them).
std::string scenario_keys_doc();

/// Reads a scenario document strictly without running it.
base::Status check_scenario(const config::Document& doc);
/// Reads and runs a scenario document; writes nothing (`quiet` silences progress on stderr).
base::Result<ScenarioOutput> run_scenario(const Environment& env, const config::Document& doc,
                                          bool quiet = true);

}  // namespace clustertwin::scenario
