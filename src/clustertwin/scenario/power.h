#pragma once
/// The power view of a training job as `clustertwin power` asks for it: a training request
/// (training.h: the same fields as `train`) and the power study's own settings (`PowerSettings`,
/// one field table: `power_fields`), run once (`run_power`: power::analyze_training_power over
/// the job window; docs/models/power.md).

#include <nlohmann/json.hpp>
#include <string>

#include "clustertwin/scenario/environment.h"
#include "clustertwin/scenario/fields.h"
#include "clustertwin/scenario/training.h"

namespace clustertwin::scenario {

/// The power study's own settings, as typed values (0, -1000 and "" = the defaults the help
/// names).
struct PowerSettings {
  std::string power_cap, clock_lock, node_policy, smoothing;
  bool no_smoothing = false;
  double pue = 0, supply_temp = -1000, delta_t = 0;
  std::string coolant;
  double price = 0, grid_intensity = 0;
  double duration = 0, resolution = 0.01, start = 5, init = 10, stop = 0, checkpoint_every = 0,
         checkpoint_time = 0;
  bool no_feedback = false;
};

/// The study's fields, in the order `--help` shows them.
const FieldTable<PowerSettings>& power_fields();
/// Words of the training and power tables, for `render`.
const std::vector<FieldWord>& power_words();

/// What a power study gives back: the training section (at the cap's speed) and the power
/// section of the results JSON, and the text page.
struct PowerRun {
  nlohmann::json training, power;
  std::string text;
};

/// Resolves the training request as `train` does and runs the power study over the job window;
/// `trace_path` non-empty also writes the step's Chrome trace with power counters there.
/// Messages name fields ({power_cap}, {duration}).
base::Result<PowerRun> run_power(const Environment& env, const TrainingRequest& r,
                                 const PowerSettings& s, const std::string& trace_path = {});

}  // namespace clustertwin::scenario
