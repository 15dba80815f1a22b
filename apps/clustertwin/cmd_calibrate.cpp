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
#include "clustertwin/calibration/step_fit.h"
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
  std::string train_model;  ///< catalog model of step-time runs that do not name one
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
  const size_t others = m.kernels.size() + m.serving.size();
  if (m.collectives.empty() && m.steps.empty()) {
    return bad_input(
        "calibrate: the files hold " + std::to_string(m.kernels.size()) + " kernel tables and " +
        std::to_string(m.serving.size()) +
        " serving results but no nccl-tests runs or training step times; fitting kernel "
        "efficiency curves and serving results is not built yet (issue 16): nothing was fitted "
        "or written");
  }
  if (others > 0 && !ctx.quiet) {
    std::cerr << "warning: " << others
              << " kernel tables or serving results were read but only nccl-tests runs and "
                 "training step times are fitted today (issue 16)\n";
  }
  auto cluster = ctx.load_cluster(o.cluster);
  if (!cluster) return bad_input(cluster.error());
  const std::string gpu = (*cluster->catalog.system(cluster->spec.system))->gpu;

  std::optional<calibration::CollectiveFit> fit;
  calibration::CollectiveFitOptions fo;
  fo.network = o.model == "analytical" ? collective::NetworkModelKind::kAnalytical
                                       : collective::NetworkModelKind::kFlow;
  fo.fit.folds = o.folds;
  calibration::ProfileMeta meta{.cluster = o.cluster,
                                .stack = o.stack,
                                .name = o.stack.empty() ? gpu + "-profile" : o.stack,
                                .network = fo.network};
  if (!m.collectives.empty()) {
    auto cal = collective::Calibration::load(cluster->catalog);
    if (!cal) return bad_input(cal.error());
    if (!ctx.quiet) {
      std::cerr << "calibrate: fitting " << m.collectives.size() << " nccl-tests run"
                << (m.collectives.size() == 1 ? "" : "s") << " on " << o.cluster << "\n";
    }
    auto f = calibration::fit_collectives(cluster->catalog, cluster->spec, cluster->topo, *cal,
                                          m.collectives, fo);
    if (!f) return bad_input(f.error());
    fit = std::move(*f);
    meta.name = o.stack.empty() ? fit->gpu + "-profile" : o.stack;
    std::cout << calibration::fit_summary(*fit, m.collectives, meta);
  }

  std::optional<calibration::StepFit> steps;
  if (!m.steps.empty()) {
    // Each run prepared as `train` prepares it (catalog communication model, the cluster's
    // compute model); the fit varies only the compute-time scale.
    std::vector<std::unique_ptr<TrainingJob>> jobs;
    base::Errors run_errors;
    for (const auto& s : m.steps) {
      TrainOptions t;
      t.cluster = o.cluster;
      t.model = s.model.empty() ? o.train_model : s.model;
      if (t.model.empty()) {
        run_errors.add({"the run names no model; give the catalog model with --train-model NAME",
                        s.file, s.line});
        continue;
      }
      t.gpus = s.gpus;
      t.tp = s.tp;
      t.pp = s.pp;
      t.dp = s.dp;
      t.cp = s.cp;
      t.ep = s.ep;
      t.vpp = s.vpp;
      t.micro_batch = s.micro_batch > 0 ? s.micro_batch : 1;
      t.global_batch = s.global_batch;
      t.seq_len = s.seq_len;
      if (!s.precision.empty()) t.precision = s.precision;
      t.overhead = 0;
      auto job = prepare_training(ctx, t);
      if (!job) {
        run_errors.add({job.error().message, s.file, s.line});
        continue;
      }
      jobs.push_back(std::move(*job));
    }
    if (!run_errors.empty()) {
      std::cerr << run_errors.to_string() << "\n";
      return kExitBadInput;
    }
    if (!ctx.quiet) {
      std::cerr << "calibrate: fitting " << m.steps.size() << " training step time"
                << (m.steps.size() == 1 ? "" : "s") << " on " << o.cluster << "\n";
    }
    calibration::FitOptions sfo;
    sfo.folds = o.folds;
    auto predict = [&jobs](size_t i, double scale) -> base::Result<double> {
      auto& job = *jobs[i];
      job.setup.framework_overhead = scale - 1.0;
      auto r = execution::simulate_training_step(job.setup);
      if (!r) return base::fail(r.error());
      return r->step_time_s;
    };
    auto f = calibration::fit_step_times(gpu, m.steps, predict, sfo);
    if (!f) return bad_input(f.error());
    steps = std::move(*f);
    if (fit) std::cout << "\n";
    std::cout << calibration::step_fit_summary(*steps, m.steps);
  }

  if (!o.json.empty()) {
    nlohmann::json j =
        fit ? calibration::fit_json(*fit, m.inputs, m.collectives, meta)
            : nlohmann::json{{"cluster", o.cluster}, {"gpu", gpu}, {"stack", o.stack}};
    if (steps) j["training"] = calibration::step_fit_json(*steps, m.steps);
    if (auto st = report::write_json(j, o.json); !st) return bad_input(st.error());
  }
  if (!o.report.empty()) {
    std::string page = fit ? calibration::fit_html(*fit, m.inputs, m.collectives, meta)
                           : calibration::step_fit_html(*steps, m.inputs, m.steps, meta);
    if (fit && steps) {
      page.insert(page.rfind("</body>"), calibration::step_fit_html_section(*steps, m.steps));
    }
    if (auto st = write_atomically(o.report, page); !st) return bad_input(st.error());
    if (!ctx.quiet) std::cerr << "wrote " << o.report << "\n";
  }
  if (!o.out.empty()) {
    std::string yaml = fit ? calibration::profile_yaml(*fit, m.inputs, m.collectives, fo.fit, meta)
                           : calibration::step_profile_yaml(*steps, m.inputs, m.steps, meta);
    if (fit && steps) yaml += calibration::training_profile_yaml(*steps, m.steps);
    // The profile must load as the collective and training readers read it before it
    // replaces anything.
    if (auto back = collective::Calibration::read_profile({o.out, yaml}); !back) {
      std::cerr << "internal error: the fitted profile does not read back: "
                << back.error().to_string() << "\n";
      return kExitInternal;
    }
    if (auto back = calibration::read_training_calibration({o.out, yaml});
        !back || (steps && !*back)) {
      std::cerr << "internal error: the fitted profile's training section does not read back\n";
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
      "reduce_scatter_perf, alltoall_perf, sendrecv_perf; one or many nodes), AIConfigurator "
      "nccl.csv tables, Megatron-LM logs and step-time CSVs (the training model's compute-time "
      "scale), format detected from content; also parses AIConfigurator kernel tables, MLPerf "
      "LoadGen summaries and vLLM/SGLang benchmark JSON (their fits are not built yet). The "
      "profile is written only when the fit succeeds.\n"
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
  cmd->add_option("--train-model", o->train_model,
                  "catalog model of the training step times whose file does not name one "
                  "(Megatron-LM logs)");
  cmd->add_option("--folds", o->folds, "cross-validation folds (0: none)")
      ->check(CLI::Range(0, 20))
      ->capture_default_str();
  cmd->add_flag("--list", o->list, "list the built-in profiles and exit");
  return {cmd, [&ctx, o] { return run(ctx, *o); }};
}

}  // namespace clustertwin::app
