// `clustertwin calibrate --cluster C [--stack NAME] FILE... [--out profile.yaml]
// [--report cal.html]`: fits the model to the user's own measurements and writes a calibration
// profile (docs/models/calibration.md). Parsing and orchestration only; the parsers and the fit
// are the calibration layer's.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "clustertwin/calibration/builtin_collectives.h"
#include "clustertwin/calibration/collective_fit.h"
#include "clustertwin/calibration/kernel_fit.h"
#include "clustertwin/calibration/parse.h"
#include "clustertwin/calibration/report.h"
#include "clustertwin/calibration/step_fit.h"
#include "clustertwin/collective/sweep.h"
#include "clustertwin/compute/compute_model.h"
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
  std::string builtin;            ///< "compute" / "collectives": regenerate a built-in calibration
  std::vector<std::string> only;  ///< --builtin collectives: just these files
  std::string reference;          ///< where the built-in calibration's measurements are
  std::string out_dir = ".";
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

/// `--builtin compute|collectives`: the catalog's compute calibration, fitted from the recipe
/// catalog/calibration/compute.yaml, or its collective lines, fitted from the recipe
/// catalog/calibration/collectives.yaml, on the tables under --reference; every file is fitted
/// and read back before any is written.
int run_builtin(const Context& ctx, const CalibrateOptions& o) {
  if (o.builtin != "compute" && o.builtin != "collectives")
    return bad_input("--builtin: expected 'compute' or 'collectives', got '" + o.builtin + "'");
  const std::string what = "--builtin " + o.builtin;
  if (o.reference.empty())
    return bad_input(what + ": give --reference DIR (the folder holding measured/)");
  if (!o.files.empty() || !o.out.empty())
    return bad_input(what +
                     ": takes no measurement FILEs and no --out (it writes "
                     "under --out-dir)");
  if (!o.only.empty() && o.builtin != "collectives")
    return bad_input("--only: only with --builtin collectives");
  auto cat = ctx.load_catalog();
  if (!cat) return bad_input(cat.error());
  std::vector<calibration::GeneratedFile> files;
  if (o.builtin == "compute") {
    auto built =
        calibration::builtin_compute(*cat, o.reference, "clustertwin calibrate --builtin compute");
    if (!built) return bad_input(built.error());
    for (const auto& l : built->summary) std::cout << l << "\n";
    files = std::move(built->files);
  } else {
    if (!ctx.quiet) std::cerr << "calibrate: fitting the built-in collective lines\n";
    auto built = calibration::builtin_collectives(*cat, o.reference, o.only);
    if (!built) return bad_input(built.error());
    for (const auto& l : built->summary) std::cout << l << "\n";
    files = std::move(built->files);
  }
  for (const auto& f : files) {
    const std::string path = o.out_dir + "/" + f.path;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    if (auto st = write_atomically(path, f.text); !st) return bad_input(st.error());
    if (!ctx.quiet) std::cerr << "wrote " << path << "\n";
  }
  return kExitOk;
}

/// Kernel tables: the compute model's efficiency grids for the cluster's GPU, against the peaks
/// of an AIConfigurator system spec given with them, else the catalog GPU's own.
int run_kernels(const Context& ctx, const CalibrateOptions& o, const calibration::Measurements& m) {
  auto cluster = ctx.load_cluster(o.cluster);
  if (!cluster) return bad_input(cluster.error());
  const hardware::SystemSpec* system = *cluster->catalog.system(cluster->spec.system);
  auto gpu = cluster->catalog.gpu(system->gpu);
  if (!gpu) return bad_input(gpu.error());
  if (m.kernel_specs.size() > 1)
    return bad_input("calibrate: give at most one AIConfigurator system spec, got " +
                     std::to_string(m.kernel_specs.size()));
  calibration::KernelRoofline roof = calibration::roofline_of(**gpu);
  std::string spec_source = "catalog/gpus/" + (*gpu)->name + ".yaml (dense peaks, HBM bandwidth)";
  if (!m.kernel_specs.empty()) {
    const auto& s = m.kernel_specs.front();
    roof = {.bf16_flops = s.bf16_flops,
            .fp8_flops = s.fp8_flops,
            .fp4_flops = s.fp4_flops,
            .hbm_Bps = s.hbm_Bps};
    spec_source = "AIConfigurator system spec " + s.file;
  }
  auto catalog_model = compute::ComputeModel::reference(cluster->catalog, (*gpu)->name);
  if (!catalog_model) return bad_input(catalog_model.error());
  if (!ctx.quiet) {
    std::cerr << "calibrate: fitting " << m.kernels.size() << " kernel table"
              << (m.kernels.size() == 1 ? "" : "s") << " for " << (*gpu)->name << "\n";
  }
  auto fit = calibration::fit_kernels(m.kernels, roof);
  if (!fit) return bad_input(fit.error());
  std::cout << "kernel tables of " << (*gpu)->name << " (held out: shapes off the fitted grid "
            << "lines; errors |predicted / measured - 1|):\n";
  for (const auto& l : fit->summary) std::cout << l << "\n";
  calibration::ComputeProfileMeta meta{
      .gpu = (*gpu)->name,
      .device = (*gpu)->display_name,
      .tables_dir = "the tables cited under sources",
      .tables_origin = "measured on " + o.cluster + (o.stack.empty() ? "" : ", stack " + o.stack),
      .spec_source = spec_source,
      .hbm_efficiency = catalog_model->hbm_efficiency(),
      .hbm_source = "catalog/compute/" + (*gpu)->name +
                    ".yaml hbm_efficiency (kernel tables do not measure streaming bandwidth)",
      .generated_by = "clustertwin calibrate"};
  for (const auto& in : m.inputs) meta.table_cite[in.path] = in.path + " sha256:" + in.sha256;
  const std::string yaml = calibration::compute_profile_yaml(*fit, roof, meta);
  if (auto back = compute::ComputeModel::parse(yaml, "compute/" + (*gpu)->name + ".yaml", nullptr);
      !back) {
    std::cerr << "internal error: the fitted compute file does not read back: "
              << back.error().to_string() << "\n";
    return kExitInternal;
  }
  if (o.out.empty()) {
    if (!ctx.quiet) std::cerr << "calibrate: no --out given, the profile was not written\n";
    return kExitOk;
  }
  if (auto st = write_atomically(o.out, yaml); !st) return bad_input(st.error());
  if (!ctx.quiet) std::cerr << "wrote " << o.out << "\n";
  return kExitOk;
}

int run(const Context& ctx, const CalibrateOptions& o) {
  if (o.list) return list_profiles(ctx);
  if (!o.builtin.empty()) return run_builtin(ctx, o);
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
  if (!m.kernels.empty()) {
    if (!m.collectives.empty() || !m.steps.empty() || !m.serving.empty()) {
      return bad_input(
          "calibrate: kernel tables make a compute calibration file of their own "
          "(catalog/compute/<gpu>.yaml format); fit them in a calibrate run without nccl-tests, "
          "step-time or serving files");
    }
    return run_kernels(ctx, o, m);
  }
  if (!m.kernel_specs.empty()) {
    return bad_input(
        "calibrate: an AIConfigurator system spec gives the peaks of kernel tables; "
        "give the tables with it");
  }
  if (m.collectives.empty() && m.steps.empty()) {
    return bad_input("calibrate: the files hold " + std::to_string(m.serving.size()) +
                     " serving results but no nccl-tests runs, training step times or kernel "
                     "tables; fitting serving results is not built yet (issue 16): nothing was "
                     "fitted or written");
  }
  if (!m.serving.empty() && !ctx.quiet) {
    std::cerr << "warning: " << m.serving.size()
              << " serving results were read but not fitted (issue 16)\n";
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
    auto predict = [&jobs](size_t i, double scale, double host_s) -> base::Result<double> {
      auto& job = *jobs[i];
      job.setup.framework_overhead = scale - 1.0;
      job.setup.host_time_s = host_s;
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
      "scale), AIConfigurator kernel tables (GEMM, attention, MLA, MoE: the compute model's "
      "efficiency grids, written as a catalog/compute/<gpu>.yaml file), format detected from "
      "content; also parses MLPerf LoadGen summaries and vLLM/SGLang benchmark JSON (their fit "
      "is not built yet). The "
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
  cmd->add_option("--builtin", o->builtin,
                  "regenerate a built-in calibration: 'compute' fits catalog/compute/<gpu>.yaml "
                  "and the held-out tables from the recipe catalog/calibration/compute.yaml; "
                  "'collectives' fits catalog/collectives/<gpu>.yaml and the measured rows "
                  "tests/validation/data/collective/<gpu>_nccl.csv from the recipe "
                  "catalog/calibration/collectives.yaml");
  cmd->add_option("--only", o->only,
                  "--builtin collectives: fit only these files of the recipe (e.g. h100)");
  cmd->add_option("--reference", o->reference,
                  "--builtin: the folder holding the measurements (shared/reference)");
  cmd->add_option("--out-dir", o->out_dir,
                  "--builtin: the repository root the files are written under")
      ->capture_default_str();
  return {cmd, [&ctx, o] { return run(ctx, *o); }};
}

}  // namespace clustertwin::app
