#pragma once
/// The power settings a request carries as text or plain numbers, turned into the power layer's
/// types: a GPU power cap ("1200", "1200W", "1.2 kW"), an SM clock lock ("1500", "1500MHz",
/// "1.5GHz"), a smoothing profile, cooling. Messages name fields ({power_cap}, {clock_lock},
/// {smoothing}, {no_smoothing}); the door writes its word for them (fields.h).

#include <optional>
#include <string>

#include "clustertwin/base/number.h"
#include "clustertwin/base/result.h"
#include "clustertwin/power/cooling.h"
#include "clustertwin/power/gpu_power.h"
#include "clustertwin/power/smoothing.h"
#include "clustertwin/scenario/fields.h"

namespace clustertwin::scenario {

/// Watts from "1200", "1200W" or "1.2 kW"; the message names the field `key`.
base::Result<double> parse_watts(const std::string& s, const std::string& key);
/// MHz from "1500", "1500MHz" or "1.5GHz".
base::Result<double> parse_mhz(const std::string& s);
/// A power cap and a clock lock ("" = not given) as GPU settings.
base::Result<power::GpuSettings> gpu_settings(const std::string& cap,
                                              const std::string& clock_lock);
/// A smoothing profile spec or "off" (exclusive); neither: the system's profile where it has one
/// (`supported`), else none.
base::Result<std::optional<power::SmoothingRequest>> smoothing_request(const std::string& spec,
                                                                       bool off, bool supported);
/// The range of a PUE field (`--pue`): facility / IT power, at least 1, at most 5 (the power
/// layer's own check, power/cooling.cpp). A field's range is checked on the values given, so
/// its default 0 (the facility model) stays the default, and `--pue 0`, which was taken for it,
/// is refused.
inline constexpr base::RealRange kPueRange{.min = 1, .max = 5};
/// PUE, supply temperature, delta-T and coolant (0, -1000, 0 and "" = the facility defaults).
power::CoolingSettings cooling_settings(double pue, double supply_temp, double delta_t,
                                        const std::string& coolant);

/// The cooling fields of a power view (`pue`, `supply_temp`, `delta_t`, `coolant`: what
/// cooling_settings() takes), one set of rows for the power study and the serving request alike;
/// `help_prefix` opens each help ("with {power}: " where the request has a power switch). R has
/// members of these names.
template <class R>
FieldTable<R> cooling_rows(const std::string& help_prefix) {
  return {Field<R>{.key = "pue",
                   .flag = "pue",
                   .name = "PUE",
                   .member = &R::pue,
                   .help = help_prefix + "use this PUE instead of the facility model",
                   .reals = kPueRange},
          Field<R>{.key = "supply_temp",
                   .flag = "supply-temp",
                   .name = "supply temperature",
                   .member = &R::supply_temp,
                   .help = help_prefix + "coolant supply temperature, C (default: 25)",
                   .reals = {.min = -50, .max = 150}},
          Field<R>{.key = "delta_t",
                   .flag = "delta-t",
                   .name = "coolant temperature rise",
                   .member = &R::delta_t,
                   .help = help_prefix + "coolant temperature rise across a rack, K (default: 10)",
                   .reals = {.min = 0, .max = 100, .min_exclusive = true}},
          Field<R>{.key = "coolant",
                   .flag = "coolant",
                   .name = "coolant",
                   .member = &R::coolant,
                   .help = help_prefix + "pg25 or water (default: pg25)"}};
}

}  // namespace clustertwin::scenario
