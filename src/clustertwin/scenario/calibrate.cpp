// The calibrate verb's wiring around the fits (moved from apps/clustertwin/cmd_calibrate.cpp;
// the fits are the calibration layer's).

#include "clustertwin/scenario/calibrate.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <tuple>

#include "clustertwin/base/file.h"
#include "clustertwin/calibration/builtin_at_scale.h"
#include "clustertwin/calibration/builtin_collectives.h"
#include "clustertwin/calibration/builtin_serving.h"
#include "clustertwin/calibration/builtin_training.h"
#include "clustertwin/calibration/collective_fit.h"
#include "clustertwin/calibration/kernel_fit.h"
#include "clustertwin/calibration/parse.h"
#include "clustertwin/calibration/report.h"
#include "clustertwin/calibration/serving_fit.h"
#include "clustertwin/calibration/step_fit.h"
#include "clustertwin/collective/sweep.h"
#include "clustertwin/compute/compute_model.h"
#include "clustertwin/scenario/serving.h"

namespace clustertwin::scenario {

base::Result<std::vector<ProfileInfo>> builtin_profiles(const Environment& env) {
  auto cat = env.load_catalog();
  if (!cat) return base::fail(cat.error());
  std::vector<ProfileInfo> out;
  for (const auto& f : cat->other_files()) {
    if (!collective::is_line_file(f)) continue;
    // "collectives/<name>.yaml"
    const std::string name = f.path.substr(12, f.path.size() - 12 - 5);
    if (name == "defaults") continue;
    auto prof = collective::load_profile(*cat, name);
    if (!prof) return base::fail(prof.error());
    auto sc = calibration::builtin_serving_calibration(*cat, name);
    if (!sc) return base::fail(sc.error());
    std::string serving;
    if (*sc) {
      serving = fmt::format(
          "tp_overlap {:.4g}, stream_host_per_response {:.4g} us, eager_host_per_layer {:.4g} ms, "
          "engine_host_per_iteration {:.4g} ms",
          (*sc)->tp_overlap.value_or(0), 1e6 * (*sc)->stream_host_per_response_s.value_or(0),
          1e3 * (*sc)->eager_host_per_layer_s.value_or(0),
          1e3 * (*sc)->engine_host_per_iteration_s.value_or(0));
    }
    out.push_back({.name = name,
                   .gpus = prof->gpus,
                   .measured_on = prof->measured_device,
                   .serving = serving});
  }
  return out;
}

base::Result<std::vector<std::unique_ptr<TrainingJob>>> measured_step_jobs(
    const Environment& env, const std::string& cluster,
    const std::vector<calibration::StepTime>& runs, const std::string& default_model) {
  std::vector<std::unique_ptr<TrainingJob>> jobs;
  base::Errors errors;
  for (const auto& s : runs) {
    TrainingRequest t;
    t.cluster = cluster;
    t.model = s.model.empty() ? default_model : s.model;
    if (t.model.empty()) {
      errors.add({"the run names no model; give the catalog model with {train_model} NAME", s.file,
                  s.line});
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
    auto job = resolve_training(env, t);
    if (!job) {
      errors.add({job.error().message, s.file, s.line});
      continue;
    }
    jobs.push_back(std::move(*job));
  }
  if (!errors.empty()) return base::fail(errors.combined());
  return jobs;
}

namespace {

/// One serving setup file read over the serving request's field table (its keys are `serve`'s;
/// the `cluster:` it may name must be the calibrate run's).
base::Result<ServingRequest> read_serving_setup(const calibration::ServingSetupFile& f,
                                                const std::string& cluster) {
  auto doc = config::parse_document(f.text, f.file);
  if (!doc) return base::fail(doc.error());
  config::ReadContext ctx{.file = doc->file};
  config::Reader top(doc->root, ctx);
  ServingRequest o;
  o.cluster = cluster;
  top.allow("name");
  top.allow("description");
  if (auto c = top.string("cluster", config::Reader::Need::kOptional); c && *c != cluster) {
    top.error("the serving setup names cluster '" + *c + "' but the results are calibrated on '" +
                  cluster + "' ({cluster})",
              "cluster");
  }
  std::vector<std::pair<std::string, int>> keys;
  int line = 0;
  if (auto w = top.child("workload")) {
    if (auto i = w->child("inference")) {
      line = i->line();
      (void)i->string("model");  // required: the setup says what was served
      keys = read_fields(*i, serving_fields(), o);
      i->finish();
    }
    w->finish();
  }
  top.finish();
  if (!ctx.errors.empty()) return base::fail(ctx.errors.combined());
  auto at = [&](const std::string& key) {
    for (const auto& [k, l] : keys) {
      if (k == key) return l;
    }
    return line;
  };
  if (!o.calibration.empty()) {
    return base::fail(
        "the serving setup of measured results takes no calibration profile: the fit starts "
        "from the catalog's step model",
        f.file, at("calibration"));
  }
  if (o.serving == "auto" || (o.serving.empty() && !serving_layout_given(o))) {
    return base::fail(
        "the serving setup gives no layout: the measured results ran on one, give it (tp, ep, "
        "dp_attention, max_batch, ... or serving: FILE); the layout search (serving: auto) "
        "cannot be calibrated",
        f.file, at("serving"));
  }
  // Every result is replayed at its own rate; offline here only resolves the setup (a server
  // run's latency limits are not needed to replay a given rate).
  o.scenario = "offline";
  o.rate = 0;
  return o;
}

}  // namespace

base::Result<std::vector<std::unique_ptr<ServingJob>>> measured_serving_jobs(
    const Environment& env, const std::string& cluster,
    const std::vector<calibration::ServingSetupFile>& setups) {
  std::vector<std::unique_ptr<ServingJob>> jobs;
  base::Errors errors;
  for (const auto& f : setups) {
    auto o = read_serving_setup(f, cluster);
    if (!o) {
      errors.add(o.error());
      continue;
    }
    auto fail_here = [&](const base::Error& e) {
      base::Error x = e;
      x.message = render(x.message, serving_words(), Door::kFile);
      if (x.file.empty()) {
        x.file = f.file;
        x.line = 1;
      }
      errors.add(x);
    };
    auto job = prepare_serving(env, *o);
    if (!job) {
      fail_here(job.error());
      continue;
    }
    auto layout = serving_layout(*o, **job);
    if (!layout) {
      fail_here(layout.error());
      continue;
    }
    (*job)->setup.layout = *layout;
    jobs.push_back(std::move(*job));
  }
  if (!errors.empty()) return base::fail(errors.combined());
  return jobs;
}

base::Result<calibration::ServingPrediction> predict_serving(const ServingJob& job,
                                                             const calibration::ServingResult& r,
                                                             double gpu_factor, double host_s) {
  execution::ServingSetup s = job.setup;
  const bool offline = r.scenario == "Offline" || (r.scenario == "online" && r.request_rate <= 0);
  s.scenario = offline                       ? workload::ServingScenario::kOffline
               : r.scenario == "Interactive" ? workload::ServingScenario::kInteractive
                                             : workload::ServingScenario::kServer;
  s.rate_qps = offline ? 0 : r.request_rate;
  s.calibration.gpu_factor = gpu_factor;
  s.calibration.host_s = host_s;
  auto res = execution::simulate_serving(s);
  if (!res) return base::fail(res.error());
  return calibration::ServingPrediction{.output_tokens_per_s = res->tokens_per_s,
                                        .requests_per_s = res->requests_per_s,
                                        .ttft_p50_ms = 1e3 * res->ttft_s.p50,
                                        .ttft_mean_ms = 1e3 * res->ttft_s.mean,
                                        .tpot_p50_ms = 1e3 * res->tpot_s.p50,
                                        .tpot_mean_ms = 1e3 * res->tpot_s.mean,
                                        .e2e_p50_ms = 1e3 * res->e2e_s.p50,
                                        .e2e_mean_ms = 1e3 * res->e2e_s.mean};
}

namespace {

base::Error internal(std::string message) {
  return base::Error{"internal error: " + std::move(message), {}, 0, base::ErrorKind::kSystem};
}

/// Kernel tables: the compute model's efficiency grids for the cluster's GPU, against the peaks
/// of an AIConfigurator system spec given with them, else the catalog GPU's own.
base::Result<CalibrateRun> fit_kernel_tables(const Environment& env, const CalibrateRequest& r,
                                             const calibration::Measurements& m, std::ostream& out,
                                             std::ostream* log) {
  auto cluster = env.load_cluster(r.cluster);
  if (!cluster) return base::fail(cluster.error());
  const hardware::GpuSpec& gpu = cluster->gpu();
  if (m.kernel_specs.size() > 1) {
    return base::fail("calibrate: give at most one AIConfigurator system spec, got " +
                      std::to_string(m.kernel_specs.size()));
  }
  calibration::KernelRoofline roof = calibration::roofline_of(gpu);
  std::string spec_source = "catalog/gpus/" + gpu.name + ".yaml (dense peaks, HBM bandwidth)";
  if (!m.kernel_specs.empty()) {
    const auto& s = m.kernel_specs.front();
    roof = {.bf16_flops = s.bf16_flops,
            .fp8_flops = s.fp8_flops,
            .fp4_flops = s.fp4_flops,
            .hbm_Bps = s.hbm_Bps};
    spec_source = "AIConfigurator system spec " + s.file;
    // `--calibration` applies the grids to the catalog GPU's peaks (as the catalog's own file):
    // a spec that differs moves the times by the ratio.
    const auto cat = calibration::roofline_of(gpu);
    for (const auto& [what, spec_v, cat_v] :
         {std::tuple<const char*, double, double>{"bf16 peak", roof.bf16_flops, cat.bf16_flops},
          {"fp8 peak", roof.fp8_flops, cat.fp8_flops},
          {"fp4 peak", roof.fp4_flops, cat.fp4_flops},
          {"HBM bandwidth", roof.hbm_Bps, cat.hbm_Bps}}) {
      if (log && spec_v > 0 && cat_v > 0 && std::abs(spec_v / cat_v - 1) > 0.01) {
        *log << "calibrate: warning: " << s.file << " gives the " << what << " as "
             << calibration::format_g(spec_v, 4) << ", the catalog's " << gpu.name << " "
             << calibration::format_g(cat_v, 4)
             << "; --calibration applies the grids to the catalog's figure, so times move by "
                "the ratio\n";
      }
    }
  }
  auto catalog_model = compute::ComputeModel::reference(cluster->catalog, gpu.name);
  if (!catalog_model) return base::fail(catalog_model.error());
  if (log) {
    *log << "calibrate: fitting " << m.kernels.size() << " kernel table"
         << (m.kernels.size() == 1 ? "" : "s") << " for " << gpu.name << "\n";
  }
  auto fit = calibration::fit_kernels(m.kernels, roof);
  if (!fit) return base::fail(fit.error());
  out << "kernel tables of " << gpu.name << " (held out: shapes off the fitted grid "
      << "lines; errors |predicted / measured - 1|):\n";
  for (const auto& l : fit->summary) out << l << "\n";
  calibration::ComputeProfileMeta meta{
      .gpu = gpu.name,
      .device = gpu.display_name,
      .tables_dir = "the tables cited under sources",
      .tables_origin = "measured on " + r.cluster + (r.stack.empty() ? "" : ", stack " + r.stack),
      .spec_source = spec_source,
      .hbm_efficiency = catalog_model->hbm_efficiency(),
      .hbm_source = "catalog/compute/" + gpu.name +
                    ".yaml hbm_efficiency (kernel tables do not measure streaming bandwidth)",
      .generated_by = "clustertwin calibrate"};
  for (const auto& in : m.inputs) meta.table_cite[in.path] = in.path + " sha256:" + in.sha256;
  CalibrateRun run;
  calibration::ProfileMeta profile_meta{.cluster = r.cluster,
                                        .stack = r.stack,
                                        .name = r.stack.empty() ? gpu.name + "-kernels" : r.stack};
  run.profile = calibration::kernel_profile_yaml(*fit, roof, meta, m.inputs, profile_meta);
  if (r.json) {
    run.json = {{"cluster", r.cluster}, {"kernels", calibration::kernel_fit_json(*fit, gpu.name)}};
  }
  if (r.report) {
    calibration::ProfileMeta page{.cluster = r.cluster, .stack = r.stack, .name = gpu.name};
    run.report = calibration::report_page(
        "Calibration of the " + gpu.name + " kernels on " + r.cluster, m.inputs, page,
        calibration::kernel_fit_html_section(*fit, gpu.name));
  }
  // The profile must load as `--calibration` reads it (its compute: mapping laid over the
  // catalog's model, its collectives: mapping naming the GPU) before it replaces anything.
  const std::string where = r.profile_path.empty() ? "kernel-profile.yaml" : r.profile_path;
  auto back = compute::ComputeModel::parse_profile(run.profile, where, gpu);
  if (!back || !*back) {
    return base::fail(internal("the fitted compute profile does not read back" +
                               (back ? std::string() : ": " + back.error().to_string())));
  }
  if (auto lines = collective::Calibration::read_profile({where, run.profile}); !lines) {
    return base::fail(
        internal("the fitted profile does not read back: " + lines.error().to_string()));
  }
  return run;
}

}  // namespace

std::string profile_list_text(const std::vector<ProfileInfo>& profiles) {
  std::string o =
      "Built-in calibration profiles (catalog/collectives/; pick one with {calibration} NAME):\n";
  for (const auto& p : profiles) {
    std::string gpus;
    for (const auto& g : p.gpus) gpus += (gpus.empty() ? "" : ", ") + g;
    o += "  " + p.name + "  GPUs: " + gpus;
    if (!p.measured_on.empty()) o += "  measured on: " + p.measured_on;
    o += "\n";
    if (!p.serving.empty()) o += "      serving: " + p.serving + "\n";
  }
  return o;
}

const std::vector<FieldWord>& calibrate_words() {
  static const std::vector<FieldWord> kWords = {{"builtin", "builtin", "built-in calibration"},
                                                {"only", "only", "files of the recipe"},
                                                {"reference", "reference", "measurements folder"},
                                                {"out_dir", "out-dir", "repository root"}};
  return kWords;
}

base::Status write_generated(const std::string& root,
                             const std::vector<calibration::GeneratedFile>& files,
                             std::ostream* log) {
  for (const auto& f : files) {
    const std::string path = root + "/" + f.path;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    if (auto st = base::write_file_atomic(path, f.text); !st) return st;
    if (log != nullptr) *log << "wrote " << path << "\n";
  }
  return {};
}

base::Result<std::vector<calibration::GeneratedFile>> builtin_calibration(
    const Environment& env, const std::string& what, const std::string& reference,
    const std::vector<std::string>& only, std::ostream& out, std::ostream* log,
    std::string* report) {
  if (what != "compute" && what != "collectives" && what != "at-scale" && what != "training" &&
      what != "serving") {
    return base::fail(
        "{builtin}: expected 'compute', 'collectives', 'at-scale', 'training' or 'serving', got '" +
        what + "'");
  }
  if ((what == "training" || what == "serving") && !reference.empty()) {
    return base::fail("{builtin} " + what +
                      ": takes no {reference} (its cases are the catalog's calibration/" + what +
                      "-cases.yaml)");
  }
  if (reference.empty() && what != "training" && what != "serving") {
    return base::fail("{builtin} " + what + ": give {reference} DIR (" +
                      (what == "at-scale" ? "the folder holding at_scale.csv and moe_a2a.csv"
                                          : "the folder holding measured/") +
                      ")");
  }
  if (!only.empty() && what != "collectives") {
    return base::fail("{only}: only with {builtin} collectives");
  }
  auto cat = env.load_catalog();
  if (!cat) return base::fail(cat.error());
  if (what == "compute") {
    auto built =
        calibration::builtin_compute(*cat, reference, "clustertwin calibrate --builtin compute");
    if (!built) return base::fail(built.error());
    for (const auto& l : built->summary) out << l << "\n";
    if (report) {
      std::string sections;
      for (const auto& [gpu, fit] : built->fits)
        sections += calibration::kernel_fit_html_section(fit, gpu);
      *report = calibration::report_page(
          "Built-in compute calibration (catalog/compute/, recipe "
          "catalog/calibration/compute.yaml)",
          built->inputs, {.cluster = "built-in compute", .stack = "recipe"}, sections);
    }
    return std::move(built->files);
  }
  if (what == "serving") {
    if (log) *log << "calibrate: fitting the serving step model's catalog constants\n";
    auto built = calibration::builtin_serving(*cat);
    if (!built) return base::fail(built.error());
    for (const auto& l : built->summary) out << l << "\n";
    if (report) {
      *report = calibration::report_page(
          "Built-in serving constants (catalog/calibration/serving.yaml, cases "
          "catalog/calibration/serving-cases.yaml)",
          built->inputs, {.cluster = "built-in serving", .stack = "recipe"},
          calibration::builtin_serving_html_section(*built));
    }
    return std::move(built->files);
  }
  if (what == "training") {
    if (log) *log << "calibrate: fitting the training step model's constants\n";
    auto built = calibration::builtin_training(*cat);
    if (!built) return base::fail(built.error());
    for (const auto& l : built->summary) out << l << "\n";
    if (report) {
      *report = calibration::report_page(
          "Built-in training constants (catalog/calibration/training.yaml, cases "
          "catalog/calibration/training-cases.yaml)",
          built->inputs, {.cluster = "built-in training", .stack = "recipe"},
          calibration::training_html_section(*built));
    }
    return std::move(built->files);
  }
  if (what == "at-scale") {
    if (log) *log << "calibrate: fitting the built-in at-scale figures\n";
    auto built = calibration::builtin_at_scale(*cat, reference);
    if (!built) return base::fail(built.error());
    for (const auto& l : built->summary) out << l << "\n";
    out << "\n";
    for (const auto& l : calibration::at_scale_table(*built)) out << l << "\n";
    if (report) {
      *report = calibration::report_page(
          "Built-in at-scale figures (recipe catalog/calibration/at-scale.yaml)", built->inputs,
          {.cluster = "built-in at-scale", .stack = "recipe"},
          calibration::at_scale_html_section(*built));
    }
    return std::move(built->files);
  }
  if (log) *log << "calibrate: fitting the built-in collective lines\n";
  auto built = calibration::builtin_collectives(*cat, reference, only);
  if (!built) return base::fail(built.error());
  for (const auto& l : built->summary) out << l << "\n";
  if (report) {
    std::string sections;
    for (const auto& f : built->fits)
      sections += calibration::collective_fit_html_section(f.fit, f.runs);
    *report = calibration::report_page(
        "Built-in collective lines (catalog/collectives/, recipe "
        "catalog/calibration/collectives.yaml)",
        built->inputs, {.cluster = "built-in collectives", .stack = "recipe"}, sections);
  }
  return std::move(built->files);
}

base::Result<CalibrateRun> run_calibrate(const Environment& env, const CalibrateRequest& r,
                                         std::ostream& out, std::ostream* log) {
  if (r.cluster.empty()) {
    return base::fail("{cluster}: required (the cluster the files were measured on)");
  }
  if (r.files.empty()) return base::fail("calibrate: give at least one measurement FILE");
  // Every file, all errors at once.
  calibration::Measurements m;
  base::Errors errors;
  for (const auto& f : r.files) {
    if (auto st = calibration::parse_path(f, m); !st) errors.add(st.error());
  }
  if (!errors.empty()) return base::fail(errors.combined());
  if (!m.kernels.empty()) {
    if (!m.collectives.empty() || !m.steps.empty() || !m.serving.empty()) {
      return base::fail(
          "calibrate: kernel tables make a compute calibration file of their own "
          "(catalog/compute/<gpu>.yaml format); fit them in a calibrate run without nccl-tests, "
          "step-time or serving files");
    }
    return fit_kernel_tables(env, r, m, out, log);
  }
  if (!m.kernel_specs.empty()) {
    return base::fail(
        "calibrate: an AIConfigurator system spec gives the peaks of kernel tables; "
        "give the tables with it");
  }
  if (m.collectives.empty() && m.steps.empty() && m.serving.empty()) {
    return base::fail("calibrate: the files hold " + std::to_string(m.serving_setups.size()) +
                      " serving setups but no measurements (nccl-tests runs, training step "
                      "times, kernel tables or serving results): nothing was fitted or written");
  }
  if (!m.serving.empty() && m.serving_setups.empty()) {
    return base::fail(
        "calibrate: serving results need the setup they ran under: give a scenario file with "
        "workload.inference (model, gpus, the layout: tp, ep, dp_attention, max_batch, ...; "
        "isl/osl or dataset; precision) before the result files");
  }
  if (m.serving.empty() && !m.serving_setups.empty()) {
    return base::fail("calibrate: a serving setup (" + m.serving_setups.front().file +
                      ") without serving results (LoadGen summaries or benchmark_serving JSON)");
  }
  auto cluster = env.load_cluster(r.cluster);
  if (!cluster) return base::fail(cluster.error());
  const std::string gpu = cluster->system().gpu;

  std::optional<calibration::CollectiveFit> fit;
  calibration::CollectiveFitOptions fo;
  fo.network = r.network == "analytical" ? collective::NetworkModelKind::kAnalytical
                                         : collective::NetworkModelKind::kFlow;
  fo.fit.folds = r.folds;
  calibration::ProfileMeta meta{.cluster = r.cluster,
                                .stack = r.stack,
                                .name = r.stack.empty() ? gpu + "-profile" : r.stack,
                                .network = fo.network};
  if (!m.collectives.empty()) {
    auto cal = collective::Calibration::load(cluster->catalog);
    if (!cal) return base::fail(cal.error());
    if (log) {
      *log << "calibrate: fitting " << m.collectives.size() << " nccl-tests run"
           << (m.collectives.size() == 1 ? "" : "s") << " on " << r.cluster << "\n";
    }
    auto f = calibration::fit_collectives(cluster->catalog, cluster->spec, cluster->topo, *cal,
                                          m.collectives, fo);
    if (!f) return base::fail(f.error());
    fit = std::move(*f);
    meta.name = r.stack.empty() ? fit->gpu + "-profile" : r.stack;
    out << calibration::fit_summary(*fit, m.collectives, meta);
  }

  std::optional<calibration::StepFit> steps;
  if (!m.steps.empty()) {
    // Each run prepared as `train` prepares it (catalog communication model, the cluster's
    // compute model); the fit varies only the compute-time scale.
    auto jobs = measured_step_jobs(env, r.cluster, m.steps, r.train_model);
    if (!jobs) return base::fail(jobs.error());
    if (log) {
      *log << "calibrate: fitting " << m.steps.size() << " training step time"
           << (m.steps.size() == 1 ? "" : "s") << " on " << r.cluster << "\n";
    }
    calibration::FitOptions sfo;
    sfo.folds = r.folds;
    // The step model's constants as the catalog has them (every job read the same
    // training.yaml); offered to the fit when a run can see them: FP8 GEMMs for fp8_overhead,
    // a MoE model for host_per_expert_gemm.
    const auto& tc = (*jobs).front()->training_calibration;
    calibration::StepConstants constants{.fp8_overhead = tc.fp8_overhead,
                                         .host_per_expert_gemm_s = tc.host_per_expert_gemm.base(),
                                         .path = tc.path};
    for (const auto& job : *jobs) {
      constants.offer_fp8 |= job->layout.dtype == compute::DType::kFp8;
      constants.offer_host_per_expert |= job->model.moe.has_value();
    }
    auto predict = [&jobs](size_t i, const calibration::StepValues& v) -> base::Result<double> {
      auto& job = *(*jobs)[i];
      job.setup.framework_overhead = v.scale - 1.0;
      job.setup.host_time = base::seconds(v.host_s);
      job.setup.fp8_overhead = v.fp8_overhead;
      job.setup.host_per_expert_gemm = base::seconds(v.host_per_expert_gemm_s);
      auto t = execution::simulate_training_step(job.setup);
      if (!t) return base::fail(t.error());
      return t->step_time_s;
    };
    auto f = calibration::fit_step_times(gpu, m.steps, predict, sfo, constants);
    if (!f) return base::fail(f.error());
    steps = std::move(*f);
    if (fit) out << "\n";
    out << calibration::step_fit_summary(*steps, m.steps);
  }

  std::optional<calibration::ServingFit> serving;
  if (!m.serving.empty()) {
    // Each setup prepared as `serve` prepares it; each result replayed at its own rate.
    auto jobs = measured_serving_jobs(env, r.cluster, m.serving_setups);
    if (!jobs) return base::fail(jobs.error());
    if (log) {
      *log << "calibrate: fitting " << m.serving.size() << " serving result"
           << (m.serving.size() == 1 ? "" : "s") << " on " << r.cluster << "\n";
    }
    calibration::FitOptions vfo;
    vfo.folds = r.folds;
    auto predict = [&](size_t i, double f,
                       double h) -> base::Result<calibration::ServingPrediction> {
      const auto& res = m.serving[i];
      const auto& job = *(*jobs)[static_cast<size_t>(std::max(res.setup, 0))];
      return predict_serving(job, res, f, h);
    };
    auto f = calibration::fit_serving(gpu, m.serving, predict, vfo);
    if (!f) return base::fail(f.error());
    serving = std::move(*f);
    for (const auto& s : m.serving_setups) serving->setups.push_back(s.file);
    if (fit || steps) out << "\n";
    out << calibration::serving_fit_summary(*serving, m.serving);
  }

  CalibrateRun run;
  if (r.json) {
    run.json = fit ? calibration::fit_json(*fit, m.inputs, m.collectives, meta)
                   : nlohmann::json{{"cluster", r.cluster}, {"gpu", gpu}, {"stack", r.stack}};
    if (steps) run.json["training"] = calibration::step_fit_json(*steps, m.steps);
    if (serving) run.json["serving"] = calibration::serving_fit_json(*serving, m.serving);
  }
  if (r.report) {
    std::string sections;
    if (fit) sections += calibration::collective_fit_html_section(*fit, m.collectives);
    if (steps) sections += calibration::step_fit_html_section(*steps, m.steps);
    if (serving) sections += calibration::serving_fit_html_section(*serving, m.serving);
    run.report = calibration::report_page("Calibration of the " + gpu + " models on " + r.cluster,
                                          m.inputs, meta, sections);
  }
  if (!r.profile_path.empty()) {
    run.profile = fit ? calibration::profile_yaml(*fit, m.inputs, m.collectives, fo.fit, meta)
                  : steps
                      ? calibration::step_profile_yaml(*steps, m.inputs, m.steps, meta)
                      : calibration::serving_only_profile_yaml(*serving, m.inputs, m.serving, meta);
    if (fit && steps) run.profile += calibration::training_profile_yaml(*steps, m.steps);
    if ((fit || steps) && serving) {
      run.profile += calibration::serving_profile_yaml(*serving, m.serving);
    }
    // The profile must load as the collective, training and serving readers read it before it
    // replaces anything.
    if (auto back = collective::Calibration::read_profile({r.profile_path, run.profile}); !back) {
      return base::fail(
          internal("the fitted profile does not read back: " + back.error().to_string()));
    }
    if (auto back = calibration::read_training_calibration({r.profile_path, run.profile});
        !back || (steps && !*back)) {
      return base::fail(internal("the fitted profile's training section does not read back"));
    }
    if (auto back = calibration::read_serving_calibration({r.profile_path, run.profile});
        !back || (serving && !*back)) {
      return base::fail(internal("the fitted profile's serving section does not read back"));
    }
  }
  return run;
}

}  // namespace clustertwin::scenario
