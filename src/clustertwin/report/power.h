#pragma once
/// Rendering of the power view (`clustertwin power`, and the `power` section `train` and the
/// flagship include): JSON with units in key names, a text page with waveform sparklines, and
/// Chrome-trace counters (GPU power per pipeline stage over a step; rack, cluster and grid power
/// over the job window, raw and smoothed).

#include <string>

#include "clustertwin/power/serving_power.h"
#include "clustertwin/power/training_power.h"
#include "clustertwin/report/json_out.h"
#include "clustertwin/report/trace.h"

namespace clustertwin::report {

/// The `power` section: scalars (`gpu_avg_W`, `rack_avg_W`, `cluster_peak_W`,
/// `energy_per_token_J`, `energy_per_step_J`, `facility_W`, `pue`, ...), objects (`cooling`,
/// `facility`, `smoothing`, `run`, `rack_peak_breakdown_W`) and `waveforms` (array of
/// `{name, t_s, power_W, limit_W?, <stats>}`, each at most `max_points` samples).
Json power_json(const power::TrainingPowerResult& r, size_t max_points = 2000);

/// The text page of `clustertwin power`.
std::string power_text(const power::TrainingPowerResult& r);

/// Adds power counters to a trace: per-stage GPU power over one step (the stage timelines) and
/// the waveforms of the job window (at most `max_points` samples each).
void add_power_counters(TraceWriter& w, const power::TrainingPowerResult& r,
                        size_t max_points = 5000);

/// The `power` section of a serving run (`serve --power`): scalars with units in their names
/// (`gpu_avg_W`, `gpu_decode_W`, `gpu_prefill_W`, `rack_avg_W`, `cluster_peak_W`, `facility_W`,
/// `pue`, `energy_per_token_J` per output token, `energy_per_request_J`,
/// `energy_per_iteration_J`, ...), `pools`, `cooling`, `facility` and `waveforms` as power_json.
Json serving_power_json(const power::ServingPowerResult& r, size_t max_points = 2000);

/// The power block of `clustertwin serve --power`.
std::string serving_power_text(const power::ServingPowerResult& r);

/// Sparkline of a waveform in `width` characters (block elements, min to max).
std::string sparkline(const std::vector<double>& w, size_t width);

}  // namespace clustertwin::report
