// `clustertwin calibrate --cluster C [--stack NAME] FILE... [--out profile.yaml]
// [--report cal.html]`: fits the model to the user's own measurements and writes a calibration
// profile (docs/models/calibration.md). Parsing and orchestration only; the parsers and the fit
// are the calibration layer's.

#include <iostream>

#include "clustertwin/base/file.h"
#include "clustertwin/report/json_out.h"
#include "clustertwin/scenario/calibrate.h"
#include "commands.h"

namespace clustertwin::app {
namespace {

/// The request plus what only this door has: the outputs and the built-in calibrations.
struct CalibrateOptions {
  scenario::CalibrateRequest r;
  std::string report, json;
  bool list = false;
  std::string builtin;  ///< "compute" / "collectives" / "at-scale" / "training" / "serving"
  std::vector<std::string> only;  ///< --builtin collectives: just these files
  std::string reference;          ///< where the built-in calibration's measurements are
  std::string out_dir = ".";
};

/// `--builtin compute|collectives|at-scale|training|serving`: every file is fitted and read back
/// before any is written.
int run_builtin(const Context& ctx, const CalibrateOptions& o) {
  if (!o.r.files.empty() || !o.r.profile_path.empty()) {
    return bad_input("--builtin " + o.builtin +
                     ": takes no measurement FILEs and no --out (it writes under --out-dir)");
  }
  std::string report;
  auto files = scenario::builtin_calibration(ctx, o.builtin, o.reference, o.only, std::cout,
                                             ctx.quiet ? nullptr : &std::cerr,
                                             o.report.empty() ? nullptr : &report);
  if (!files) return bad_input(files.error());
  auto st = scenario::write_generated(o.out_dir, *files, ctx.quiet ? nullptr : &std::cerr);
  if (!st) return bad_input(st.error());
  if (!o.report.empty()) {
    if (auto w = base::write_file_atomic(o.report, report); !w) return bad_input(w.error());
    if (!ctx.quiet) std::cerr << "wrote " << o.report << "\n";
  }
  return kExitOk;
}

int run(const Context& ctx, CalibrateOptions o) {
  if (o.list) {
    auto profiles = scenario::builtin_profiles(ctx);
    if (!profiles) return bad_input(profiles.error());
    std::cout << cli_words(scenario::profile_list_text(*profiles));
    return kExitOk;
  }
  if (!o.builtin.empty()) return run_builtin(ctx, o);
  o.r.json = !o.json.empty();
  o.r.report = !o.report.empty();
  auto run = scenario::run_calibrate(ctx, o.r, std::cout, ctx.quiet ? nullptr : &std::cerr);
  if (!run) return bad_input(run.error());
  if (!o.json.empty() && !run->json.is_null()) {
    if (auto st = report::write_json(run->json, o.json); !st) return bad_input(st.error());
  }
  if (!o.report.empty() && !run->report.empty()) {
    if (auto st = base::write_file_atomic(o.report, run->report); !st) return bad_input(st.error());
    if (!ctx.quiet) std::cerr << "wrote " << o.report << "\n";
  }
  if (o.r.profile_path.empty()) {
    if (!ctx.quiet) std::cerr << "calibrate: no --out given, the profile was not written\n";
    return kExitOk;
  }
  if (auto st = base::write_file_atomic(o.r.profile_path, run->profile); !st)
    return bad_input(st.error());
  if (!ctx.quiet) std::cerr << "wrote " << o.r.profile_path << "\n";
  return kExitOk;
}

}  // namespace

Verb add_calibrate(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Fit the model to your own measurements and write a calibration profile for "
      "--calibration. Reads nccl-tests output (all_reduce_perf, all_gather_perf, "
      "reduce_scatter_perf, alltoall_perf, sendrecv_perf; one or many nodes), AIConfigurator "
      "nccl.csv tables, Megatron-LM logs and step-time CSVs (the training model's compute-time "
      "scale), AIConfigurator kernel tables (GEMM, attention, MLA, MoE: the compute model's "
      "efficiency grids: a profile whose compute: mapping --calibration lays over the "
      "catalog's tables), format detected from "
      "content; MLPerf LoadGen summaries and vLLM/SGLang benchmark JSON after their setup (a "
      "scenario file's workload.inference: the serving step model's kernel-time factor and "
      "host time per iteration). The "
      "profile is written only when the fit succeeds.\n"
      "Example: clustertwin calibrate --cluster hgx-h100*2 all_reduce.log all_gather.log "
      "--out my-h100.yaml && clustertwin collective --cluster hgx-h100*2 --calibration "
      "my-h100.yaml");
  cmd->add_option("files", o->r.files, "measurement files");
  cmd->add_option("--cluster", o->r.cluster,
                  "the cluster the files were measured on: catalog name, YAML file or "
                  "SYSTEM*COUNT (e.g. hgx-h100*2)");
  cmd->add_option("--stack", o->r.stack,
                  "software stack label recorded in the profile (e.g. 'nccl-2.21 cuda-12.4')");
  cmd->add_option("--out", o->r.profile_path, "write the profile (YAML) to FILE");
  cmd->add_option(
      "--report", o->report,
      "write an HTML report (measured vs predicted per run, residuals, parameters; also "
      "with --builtin)");
  cmd->add_option("--json", o->json, "write the fit as JSON to FILE ('-' for stdout)");
  cmd->add_option("--model", o->r.network, "network model the fit runs: flow or analytical")
      ->check(CLI::IsMember({"analytical", "flow"}))
      ->capture_default_str();
  cmd->add_option("--train-model", o->r.train_model,
                  "catalog model of the training step times whose file does not name one "
                  "(Megatron-LM logs)");
  cmd->add_option("--folds", o->r.folds, "cross-validation folds (0: none)")
      ->check(CLI::Range(0, 20))
      ->capture_default_str();
  cmd->add_flag("--list", o->list, "list the built-in profiles and exit");
  cmd->add_option("--builtin", o->builtin,
                  "regenerate a built-in calibration: 'compute' fits catalog/compute/<gpu>.yaml "
                  "and the held-out tables from the recipe catalog/calibration/compute.yaml; "
                  "'collectives' fits catalog/collectives/<gpu>.yaml and the measured rows "
                  "tests/validation/data/collective/<gpu>_nccl.csv from the recipe "
                  "catalog/calibration/collectives.yaml; 'at-scale' fits the figures of "
                  "catalog/collectives/at-scale.yaml and moe-a2a.yaml from the recipe "
                  "catalog/calibration/at-scale.yaml; 'training' fits the step model's "
                  "constants of catalog/calibration/training.yaml on the training validation "
                  "cases catalog/calibration/training-cases.yaml (no --reference); 'serving' fits "
                  "the serving step model's constants of catalog/calibration/serving.yaml on "
                  "the cases catalog/calibration/serving-cases.yaml (no --reference)");
  cmd->add_option("--only", o->only,
                  "--builtin collectives: fit only these files of the recipe (e.g. h100)");
  cmd->add_option("--reference", o->reference,
                  "--builtin: the folder holding the measurements (shared/reference; at-scale: "
                  "tests/validation/data/collective)");
  cmd->add_option("--out-dir", o->out_dir,
                  "--builtin: the repository root the files are written under")
      ->capture_default_str();
  return {cmd, [&ctx, o] { return run(ctx, *o); }};
}

}  // namespace clustertwin::app
