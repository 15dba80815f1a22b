#pragma once
/// A `clustertwin calibrate` run as the user asks for it (`CalibrateRequest`) and its wiring
/// around the fits, which are the calibration layer's: the measurement files read (all errors at
/// once), the kernel tables, nccl-tests runs and training step times each sent to its fit (the
/// step times through training jobs resolved as `train` resolves them), and the profile, JSON and
/// HTML report built and the profile read back before anyone writes it. Also the built-in
/// calibration profiles to list.

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/calibration/kernel_fit.h"
#include "clustertwin/calibration/measurements.h"
#include "clustertwin/calibration/serving_fit.h"
#include "clustertwin/scenario/environment.h"
#include "clustertwin/scenario/fields.h"
#include "clustertwin/scenario/serving.h"
#include "clustertwin/scenario/training.h"

namespace clustertwin::scenario {

/// A built-in calibration profile (catalog/collectives/<name>.yaml).
struct ProfileInfo {
  std::string name;
  std::vector<std::string> gpus;
  std::string measured_on;  ///< the device the lines were measured on, when the file says
  /// The serving step constants it carries (calibration::builtin_serving_calibration: the
  /// catalog's, catalog/calibration/serving.yaml), as text: "tp_overlap 0.45, ...".
  std::string serving;
};
/// The catalog's calibration profiles, by name.
base::Result<std::vector<ProfileInfo>> builtin_profiles(const Environment& env);
/// The profiles as a list to read, one a line; {calibration} names the field that picks one
/// (each door writes its own word: scenario/fields.h).
std::string profile_list_text(const std::vector<ProfileInfo>& profiles);

/// The words of calibrate's own settings that its messages name as {key} (the built-in
/// calibration, its files, the measurements' folder): each door writes its own word.
const std::vector<FieldWord>& calibrate_words();

/// The training jobs of measured step times: each run on `cluster` as `train` resolves it (a
/// micro-batch of 1 where the run gives none; no framework overhead: the fit varies the
/// compute-time scale), the model the run names or else `default_model`. Every run's error at
/// once, each at the run's file:line; messages name fields ({key}).
base::Result<std::vector<std::unique_ptr<TrainingJob>>> measured_step_jobs(
    const Environment& env, const std::string& cluster,
    const std::vector<calibration::StepTime>& runs, const std::string& default_model);

/// The serving jobs of measured serving results: each setup file (a scenario file's
/// `workload.inference`, read over the serving request's field table; its `cluster:`, when
/// given, must be `cluster`) prepared as `serve` prepares it, with its explicit layout. Every
/// setup's errors at once, at its file:line; messages name keys.
base::Result<std::vector<std::unique_ptr<ServingJob>>> measured_serving_jobs(
    const Environment& env, const std::string& cluster,
    const std::vector<calibration::ServingSetupFile>& setups);

/// One measured result replayed on its setup's job: the scenario the result ran (offline for
/// LoadGen Offline and for benchmark_serving at rate inf, else server or interactive at its
/// request rate), the step model at kernel-time factor `gpu_factor` and host time `host_s`.
base::Result<calibration::ServingPrediction> predict_serving(const ServingJob& job,
                                                             const calibration::ServingResult& r,
                                                             double gpu_factor, double host_s);

/// A built-in calibration regenerated from its recipe (`what`: "compute", the catalog's
/// compute files from catalog/calibration/compute.yaml, "collectives", its collective lines
/// from catalog/calibration/collectives.yaml, or "at-scale", the figures of
/// catalog/collectives/at-scale.yaml and moe-a2a.yaml from catalog/calibration/at-scale.yaml, or
/// "training", catalog/calibration/training.yaml from the catalog's training validation cases;
/// `only` limits the collectives to these files) on the measurements under `reference`: every file
/// fitted and read back, none written. The summary goes to `out`, progress to `log` when given.
/// With `report`, the HTML page a user's fit writes (`--report`: the inputs with their SHA-256,
/// measured vs predicted, residuals, the fitted parameters) goes there.
base::Result<std::vector<calibration::GeneratedFile>> builtin_calibration(
    const Environment& env, const std::string& what, const std::string& reference,
    const std::vector<std::string>& only, std::ostream& out, std::ostream* log,
    std::string* report = nullptr);

/// Writes a built-in calibration's files under the repository root `root` (folders made as
/// needed, each file atomically, base/file.h), saying "wrote PATH" to `log` when given. The
/// first failed write stops it.
base::Status write_generated(const std::string& root,
                             const std::vector<calibration::GeneratedFile>& files,
                             std::ostream* log);

/// A calibrate run of the user's measurement files.
struct CalibrateRequest {
  std::string cluster;  ///< the cluster the files were measured on
  std::string stack;    ///< software stack label recorded in the profile
  std::vector<std::string> files;
  std::string network = "flow";  ///< the network model the collective fit runs: flow or analytical
  std::string train_model;       ///< catalog model of step-time runs that do not name one
  int folds = 5;                 ///< cross-validation folds (0: none)
  std::string profile_path;      ///< where the profile goes ("": build none); names it in messages
  bool json = false;             ///< build the fit's JSON
  bool report = false;           ///< build the HTML report
};

/// What the run built: the profile (a calibration profile, or for kernel tables a
/// catalog/compute/<gpu>.yaml file, which is built and read back even without a path), the JSON
/// and the report when asked (for kernel tables: their errors and the by-shape page).
struct CalibrateRun {
  std::string profile;
  nlohmann::json json;
  std::string report;
};

/// Reads the files and runs the fits. The fits' summaries go to `out` as they finish (stdout);
/// progress and warnings to `log` when given (stderr unless quiet). Messages name fields
/// ({cluster}); a profile that does not read back is an internal error (ErrorKind::kSystem).
base::Result<CalibrateRun> run_calibrate(const Environment& env, const CalibrateRequest& r,
                                         std::ostream& out, std::ostream* log);

}  // namespace clustertwin::scenario
