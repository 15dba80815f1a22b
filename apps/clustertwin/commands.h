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
#include "clustertwin/topology/topology.h"

namespace clustertwin::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;

/// A cluster argument resolved: the catalog, the spec and its topology graph.
struct LoadedCluster {
  hardware::Catalog catalog;
  hardware::ClusterSpec spec;
  topology::Topology topo;
  /// The GPU of the cluster's systems.
  [[nodiscard]] const hardware::GpuSpec& gpu() const {
    return **catalog.gpu((*catalog.system(spec.system))->gpu);
  }
};

/// Options every verb shares.
struct Context {
  std::string catalog_dir;  ///< empty: the catalog compiled into the binary
  bool quiet = false;
  std::string report_path = "clustertwin-report.html";  ///< flagship run's HTML report
  bool no_report = false;
  /// Clusters defined inline in a scenario (`cluster:` as a mapping), by name: they take
  /// precedence over the catalog for that scenario's runs.
  std::map<std::string, hardware::ClusterSpec> inline_clusters;

  /// The catalog (embedded or --catalog DIR).
  [[nodiscard]] base::Result<hardware::Catalog> load_catalog() const;
  /// The catalog, the cluster (name, file or SYSTEM*COUNT) and its topology.
  [[nodiscard]] base::Result<LoadedCluster> load_cluster(const std::string& cluster) const;
  /// A cluster argument resolved against `catalog`: an inline cluster of this context, else
  /// hardware::resolve_cluster (name, file or SYSTEM*COUNT).
  [[nodiscard]] base::Result<hardware::ClusterSpec> resolve_cluster(
      const hardware::Catalog& catalog, const std::string& cluster) const;
};

/// Prints "error: ..." lines to stderr and returns kExitBadInput.
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

/// `describe` of a cluster argument (name, file or SYSTEM*COUNT): JSON and text.
struct Described {
  nlohmann::json json;
  std::string text;
};
base::Result<Described> describe_cluster(const Context& ctx, const std::string& cluster);

/// What a workload run gives back: its JSON section, the full text page and a one-line summary.
struct RunOutput {
  nlohmann::json json;
  std::string text;
  std::string summary;
  nlohmann::json power;       ///< the power section when asked (null otherwise)
  std::string power_summary;  ///< one or two lines for the flagship summary
};

/// `clustertwin train` options (also filled from a scenario's `workload.training`).
struct TrainOptions {
  std::string cluster = "azure-ndv6-gb300";
  int64_t gpus = 0;
  std::string model = "llama3.1-405b";
  int layers = 0;
  int64_t hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 51200;
  int tp = 1, pp = 1, dp = 0, cp = 1, ep = 1, vpp = 1, zero = 1;
  int etp = 1;  ///< expert tensor parallel (MoE parallel folding)
  int64_t micro_batch = 1, global_batch = 0, seq_len = 0;
  std::string precision = "bf16", recompute = "none", comm = "collective";
  /// A calibration profile (file or built-in name) laid over the catalog's collective lines,
  /// and where it was given, for messages ("--calibration" or "run.yaml:9: calibration").
  std::string calibration, calibration_where = "--calibration";
  bool no_sp = false, tp_overlap = false, no_dp_overlap = false, ep_overlap = false;
  std::string moe_dispatch = "auto";
  std::string attention = "flash";
  std::string recompute_modules;     ///< Megatron --recompute-modules list ("" = none)
  std::string schedule = "1f1b";     ///< 1f1b (interleaved with vpp > 1) or dualpipe
  std::string routing = "balanced";  ///< MoE routing: balanced or measured
  double capacity_factor = 0;        ///< 0 = dropless
  bool offload = false;              ///< activation offloading to host memory
  int lora_rank = 0;                 ///< LoRA fine-tuning (frozen base) when > 0
  bool bf16_moments = false;         ///< Adam moments in bf16
  bool fp8_attention = false;        ///< FP8 dot-product attention
  bool fp8_act_store = false;        ///< MLP activation inputs kept in FP8
  double overhead = -1;
  std::string tokens;
  std::string json, trace;
  bool power = false;     ///< add the power view (default settings of the system)
  std::string power_cap;  ///< with power: a GPU power limit ("1000W"); "" = the default TGP
};

/// Everything a training run needs, resolved from TrainOptions: the cluster, the model, the
/// layout and the compute and communication models. `setup` points into this object, so it is
/// handed out behind a unique_ptr and never moved.
struct TrainingJob {
  std::unique_ptr<LoadedCluster> cluster;
  models::ModelSpec model;
  workload::TrainingLayout layout;
  int64_t gpus = 0;
  double token_budget = 0;
  std::optional<compute::ComputeModel> compute;
  std::unique_ptr<execution::CommModel> comm;
  std::optional<execution::ServingFabric> moe_fabric;  ///< MoE dispatch kernels (MoE models)
  execution::TrainingSetup setup;
  std::string calibration_note;  ///< a compute-time scale from --calibration, for the notes
};
base::Result<std::unique_ptr<TrainingJob>> prepare_training(const Context& ctx,
                                                            const TrainOptions& o);

/// One training step as `train` runs it (with the power view when `o.power`).
base::Result<RunOutput> run_training(const Context& ctx, const TrainOptions& o);

/// `clustertwin serve` options (also filled from a scenario's `workload.inference`).
struct ServeOptions {
  std::string cluster = "azure-ndv6-gb300";
  int64_t gpus = 0;
  std::string model = "deepseek-r1";
  std::string dataset;
  int64_t isl = 0, osl = 0;
  std::string scenario = "server";
  std::string precision = "fp4", kv = "fp8";
  std::string serving;  // "", "auto" or a file
  std::string ttft_limit, tpot_limit;
  int tp = 0, pp = 0, ep = 0, replicas = 0;
  bool dp_attention = false, no_chunked = false, disaggregated = false;
  int64_t max_batch = 0, max_tokens = 0;
  int prefill_tp = 0, prefill_ep = 0, prefill_replicas = 0;
  bool prefill_dp_attention = false;
  int64_t prefill_max_tokens = 8192, prefill_max_batch = 16;
  int mtp = 0;
  double mtp_acceptance = 0.7;
  std::string kv_policy = "preempt";
  std::string adp_assign = "balanced";
  double tp_overlap = -1;
  double rate = 0;
  int64_t requests = 0;
  uint64_t seed = 1;
  int threads = 0;
  std::string compare;
  std::string json, trace, format = "text";
  bool power = false;      ///< add the power view of the run (serve_power.cpp)
  std::string power_cap;   ///< with power: a GPU power limit ("1000W")
  std::string clock_lock;  ///< with power: an SM clock lock ("1500MHz")
  /// With power: cooling and facility settings as `clustertwin power` takes them (0, -1000 and
  /// "" = the facility defaults).
  double pue = 0, supply_temp = -1000, delta_t = 0;
  std::string coolant;
  /// With power: a smoothing profile ("floor=0.8,ramp-up=..."), or none; default: the system's
  /// profile where it has one.
  std::string smoothing;
  bool no_smoothing = false;
};

/// One serving study as `serve` runs it.
base::Result<RunOutput> run_serving(const Context& ctx, const ServeOptions& o);

/// Power flags shared by `power` and `serve`: "1200", "1200W", "1.2 kW" (the message names
/// `flag`); "1500", "1500MHz", "1.5GHz"; both into GPU settings ("" = not given).
base::Result<double> parse_watts(const std::string& s, const char* flag);
base::Result<double> parse_mhz(const std::string& s);
base::Result<power::GpuSettings> gpu_settings(const std::string& cap,
                                              const std::string& clock_lock);
/// `--smoothing SPEC` / `--no-smoothing` (exclusive); neither: the system's profile where it
/// has one (`supported`), else none.
base::Result<std::optional<power::SmoothingRequest>> smoothing_request(const std::string& spec,
                                                                       bool off, bool supported);
/// `--pue`, `--supply-temp`, `--delta-t`, `--coolant` (0, -1000, 0 and "" = not given).
power::CoolingSettings cooling_settings(double pue, double supply_temp, double delta_t,
                                        const std::string& coolant);

/// The power section of a serving run: JSON (`report::serving_power_json`), the text block and
/// a summary line for the flagship.
struct ServingPowerOutput {
  nlohmann::json json;
  std::string text, summary;
};
base::Result<ServingPowerOutput> serving_power(const ServeOptions& o,
                                               const hardware::Catalog& catalog,
                                               const hardware::ClusterSpec& cluster,
                                               const execution::ServingSetup& setup,
                                               const execution::ServingResult& result);

/// What a scenario run gives back: the results JSON (as `run --json` writes it) and the
/// one-screen summary.
struct ScenarioOutput {
  nlohmann::json results;
  std::string summary;
};
/// Runs a scenario document (`clustertwin run` semantics: the cluster described, each workload
/// simulated); writes nothing. `clustertwin sweep` runs each point through this.
base::Result<ScenarioOutput> run_scenario_document(const Context& ctx, const config::Document& doc);
/// Reads a scenario document strictly (unknown keys, types, units) without running it.
base::Status check_scenario_document(const config::Document& doc);

/// Runs the built-in flagship scenario (plain `clustertwin`).
int run_flagship(const Context& ctx);

}  // namespace clustertwin::app
