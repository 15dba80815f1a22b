// `clustertwin calibrate --cluster C [--stack NAME] FILE... [--out profile.yaml]
// [--report cal.html]`: fits the model to the user's own measurements and writes a calibration
// profile (docs/models/calibration.md). Parsing and orchestration only; the parsers and the fit
// are the calibration layer's.

#include <cstdio>
#include <fstream>
#include <iostream>

#include "clustertwin/calibration/collective_fit.h"
#include "clustertwin/calibration/parse.h"
#include "clustertwin/calibration/report.h"
#include "clustertwin/collective/sweep.h"
#include "clustertwin/report/json_out.h"
#include "commands.h"

namespace clustertwin::app {
namespace {

struct CalibrateOptions {
  std::string cluster;
  std::string stack;
  std::vector<std::string> files;
  std::string out, report, json;
  std::string model = "flow";
  int folds = 5;
  bool list = false;
};

/// Writes `text` to `path` through a temporary file and a rename, so that a failed or
/// interrupted write never leaves a half profile where a good one was.
base::Status write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return base::fail("cannot write file", tmp, 0);
    out << text;
    out.close();
    if (!out) return base::fail("cannot write file", tmp, 0);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return base::fail("cannot move the profile into place", path, 0);
  }
  return {};
}

int list_profiles(const Context& ctx) {
  auto cat = ctx.load_catalog();
  if (!cat) return bad_input(cat.error());
  std::cout << "Built-in calibration profiles (catalog/collectives/; pick one with --calibration "
               "NAME):\n";
  for (const auto& f : cat->other_files()) {
    if (!collective::is_line_file(f)) continue;
    const std::string name = f.path.substr(12, f.path.size() - 12 - 5);
    if (name == "defaults") continue;
    auto prof = collective::load_profile(*cat, name);
    if (!prof) return bad_input(prof.error());
    std::string gpus;
    for (const auto& g : prof->gpus) gpus += (gpus.empty() ? "" : ", ") + g;
    std::cout << "  " << name << "  GPUs: " << gpus;
    if (!prof->measured_device.empty()) std::cout << "  measured on: " << prof->measured_device;
    std::cout << "\n";
  }
  return kExitOk;
}

int run(const Context& ctx, const CalibrateOptions& o) {
  if (o.list) return list_profiles(ctx);
  if (o.cluster.empty())
    return bad_input("--cluster: required (the cluster the files were measured on)");
  if (o.files.empty()) return bad_input("calibrate: give at least one measurement FILE");
  // Every file, all errors at once.
  calibration::Measurements m;
  base::Errors errors;
  for (const auto& f : o.files) {
    if (auto st = calibration::parse_path(f, m); !st) errors.add(st.error());
  }
  if (!errors.empty()) {
    std::cerr << errors.to_string() << "\n";
    return kExitBadInput;
  }
  const size_t others = m.kernels.size() + m.steps.size() + m.serving.size();
  if (m.collectives.empty()) {
    return bad_input(
        "calibrate: the files hold " + std::to_string(m.kernels.size()) + " kernel tables, " +
        std::to_string(m.steps.size()) + " step times and " + std::to_string(m.serving.size()) +
        " serving results but no nccl-tests runs; fitting kernel efficiency curves, step times "
        "and serving results is not built yet (issue 16): nothing was fitted or written");
  }
  if (others > 0 && !ctx.quiet) {
    std::cerr << "warning: " << others
              << " kernel tables, step times or serving results were read but only the nccl-tests "
                 "runs are fitted today (issue 16)\n";
  }
  auto cluster = ctx.load_cluster(o.cluster);
  if (!cluster) return bad_input(cluster.error());
  auto cal = collective::Calibration::load(cluster->catalog);
  if (!cal) return bad_input(cal.error());
  calibration::CollectiveFitOptions fo;
  fo.network = o.model == "analytical" ? collective::NetworkModelKind::kAnalytical
                                       : collective::NetworkModelKind::kFlow;
  fo.fit.folds = o.folds;
  if (!ctx.quiet) {
    std::cerr << "calibrate: fitting " << m.collectives.size() << " nccl-tests run"
              << (m.collectives.size() == 1 ? "" : "s") << " on " << o.cluster << "\n";
  }
  auto fit = calibration::fit_collectives(cluster->catalog, cluster->spec, cluster->topo, *cal,
                                          m.collectives, fo);
  if (!fit) return bad_input(fit.error());

  calibration::ProfileMeta meta{.cluster = o.cluster,
                                .stack = o.stack,
                                .name = o.stack.empty() ? fit->gpu + "-profile" : o.stack,
                                .network = fo.network};
  std::cout << calibration::fit_summary(*fit, m.collectives, meta);
  if (!o.json.empty()) {
    if (auto st =
            report::write_json(calibration::fit_json(*fit, m.inputs, m.collectives, meta), o.json);
        !st)
      return bad_input(st.error());
  }
  if (!o.report.empty()) {
    if (auto st =
            write_atomically(o.report, calibration::fit_html(*fit, m.inputs, m.collectives, meta));
        !st)
      return bad_input(st.error());
    if (!ctx.quiet) std::cerr << "wrote " << o.report << "\n";
  }
  if (!o.out.empty()) {
    const auto yaml = calibration::profile_yaml(*fit, m.inputs, m.collectives, fo.fit, meta);
    // The profile must load as the collective layer reads it before it replaces anything.
    if (auto back = collective::Calibration::read_profile({o.out, yaml}); !back) {
      std::cerr << "internal error: the fitted profile does not read back: "
                << back.error().to_string() << "\n";
      return kExitInternal;
    }
    if (auto st = write_atomically(o.out, yaml); !st) return bad_input(st.error());
    if (!ctx.quiet) std::cerr << "wrote " << o.out << "\n";
  } else if (!ctx.quiet) {
    std::cerr << "calibrate: no --out given, the profile was not written\n";
  }
  return kExitOk;
}

}  // namespace

Verb add_calibrate(CLI::App& app, const Context& ctx) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Fit the model to your own measurements and write a calibration profile for "
      "--calibration. Reads nccl-tests output (all_reduce_perf, all_gather_perf, "
      "reduce_scatter_perf, alltoall_perf, sendrecv_perf; one or many nodes) and AIConfigurator "
      "nccl.csv tables, format detected from content; also parses AIConfigurator kernel tables, "
      "Megatron-LM logs, step-time CSVs, MLPerf LoadGen summaries and vLLM/SGLang benchmark JSON "
      "(their fits are not built yet). The profile is written only when the fit succeeds.\n"
      "Example: clustertwin calibrate --cluster hgx-h100*2 all_reduce.log all_gather.log "
      "--out my-h100.yaml && clustertwin collective --cluster hgx-h100*2 --calibration "
      "my-h100.yaml");
  cmd->add_option("files", o->files, "measurement files");
  cmd->add_option("--cluster", o->cluster,
                  "the cluster the files were measured on: catalog name, YAML file or "
                  "SYSTEM*COUNT (e.g. hgx-h100*2)");
  cmd->add_option("--stack", o->stack,
                  "software stack label recorded in the profile (e.g. 'nccl-2.21 cuda-12.4')");
  cmd->add_option("--out", o->out, "write the profile (YAML) to FILE");
  cmd->add_option("--report", o->report,
                  "write an HTML report (measured vs predicted per run, residuals, parameters)");
  cmd->add_option("--json", o->json, "write the fit as JSON to FILE ('-' for stdout)");
  cmd->add_option("--model", o->model, "network model the fit runs: flow or analytical")
      ->check(CLI::IsMember({"analytical", "flow"}))
      ->capture_default_str();
  cmd->add_option("--folds", o->folds, "cross-validation folds (0: none)")
      ->check(CLI::Range(0, 20))
      ->capture_default_str();
  cmd->add_flag("--list", o->list, "list the built-in profiles and exit");
  return {cmd, [&ctx, o] { return run(ctx, *o); }};
}

}  // namespace clustertwin::app
