#pragma once
/// One long training job under failures as the user asks for it: a training request
/// (training.h: the same fields as `train`) and the study's own settings (`GoodputSettings`, one
/// field table: `goodput_fields`), run once (`run_goodput`: the scheduler's goodput study,
/// docs/models/orchestration.md §4). `goodput` and a scenario's `workload.goodput` take exactly
/// these.

#include <nlohmann/json.hpp>
#include <string>

#include "clustertwin/base/number.h"
#include "clustertwin/scenario/environment.h"
#include "clustertwin/scenario/fields.h"
#include "clustertwin/scenario/training.h"

namespace clustertwin::scenario {

/// The goodput study's own settings, as typed values; bandwidths and times as unit strings.
struct GoodputSettings {
  double days = 30;
  int64_t max_events = base::kMaxEvents;
  std::string checkpoint = "auto";  ///< auto (Young/Daly) or an interval ("900", "900 s")
  bool async_checkpoint = false;
  std::string storage_write = "2 TB/s", storage_read = "7 TB/s", restart = "600 s";
  int spares = 0;
  double domain_failures = 1.0, failure_scale = 1.0, lemon_fraction = 0.15;
  int64_t seed = 1;
  bool no_sweep = false;
};

/// The study's fields, in the order `--help` shows them.
const FieldTable<GoodputSettings>& goodput_fields();
/// Words of the training and goodput tables, for `render`.
const std::vector<FieldWord>& goodput_words();

/// What a goodput study gives back: its JSON section ("goodput", report::goodput_json), the
/// text page and a one-line summary.
struct GoodputRun {
  nlohmann::json json;
  std::string text, summary;
};

/// Resolves the training request as `train` does, prices its steps with the scheduler's speed
/// model and runs the study. Messages name fields ({days}, {checkpoint}).
base::Result<GoodputRun> run_goodput(const Environment& env, const TrainingRequest& r,
                                     const GoodputSettings& s);

}  // namespace clustertwin::scenario
