#pragma once
/// The CLI's verbs. main.cpp owns argument parsing; each cmd_<verb>.cpp registers one verb
/// (its options, help text and example) and runs it by calling the library layers. Exit codes
/// (DESIGN.md §4): 0 success, 2 bad input (with a message), 1 internal error.

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/config/reader.h"
#include "clustertwin/execution/serving_sim.h"
#include "clustertwin/execution/training.h"
#include "clustertwin/hardware/catalog.h"
#include "clustertwin/power/cooling.h"
#include "clustertwin/power/gpu_power.h"
#include "clustertwin/power/smoothing.h"
#include "clustertwin/scenario/environment.h"
#include "clustertwin/scenario/scenario_file.h"
#include "clustertwin/scenario/serving.h"
#include "clustertwin/scenario/training.h"
#include "clustertwin/topology/topology.h"

namespace clustertwin::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;

using LoadedCluster = scenario::LoadedCluster;

/// Options every verb shares; the environment (catalog, inline clusters) is the library's.
struct Context : scenario::Environment {
  bool quiet = false;
  std::string report_path = "clustertwin-report.html";  ///< flagship run's HTML report
  bool no_report = false;
};

/// A training request as the CLI door names it (the library's request; `train` adds its outputs).
using TrainOptions = scenario::TrainingRequest;
/// A library message in the CLI's words: each {key} as the flag that sets it.
std::string cli_words(const std::string& message);

/// Prints "error: ..." lines to stderr and returns kExitBadInput. A library message's fields
/// ({key}, scenario/fields.h) are written as the flags that set them.
int bad_input(const base::Error& e);
int bad_input(const std::string& message);

/// A registered verb: its CLI11 subcommand and what runs when it was chosen.
struct Verb {
  CLI::App* command = nullptr;
  std::function<int()> run;
};

Verb add_describe(CLI::App& app, const Context& ctx);
Verb add_catalog(CLI::App& app, const Context& ctx);
Verb add_report(CLI::App& app, const Context& ctx);
Verb add_cli_docs(CLI::App& app, const Context& ctx);
Verb add_train(CLI::App& app, const Context& ctx);
Verb add_run(CLI::App& app, const Context& ctx);
Verb add_search(CLI::App& app, const Context& ctx);
Verb add_model(CLI::App& app, const Context& ctx);
Verb add_collective(CLI::App& app, const Context& ctx);
Verb add_serve(CLI::App& app, const Context& ctx);
Verb add_schedule(CLI::App& app, const Context& ctx);
Verb add_goodput(CLI::App& app, const Context& ctx);
Verb add_export(CLI::App& app, const Context& ctx);
Verb add_power(CLI::App& app, const Context& ctx);
Verb add_calibrate(CLI::App& app, const Context& ctx);
Verb add_sweep(CLI::App& app, const Context& ctx);

/// `describe` of a cluster argument (scenario/scenario_file.h).
using scenario::describe_cluster;

/// Runs the built-in flagship scenario (plain `clustertwin`).
int run_flagship(const Context& ctx);

}  // namespace clustertwin::app
