#pragma once
/// The first stage of both power views (training_power.h, serving_power.h): what the cluster's
/// system and GPU are, their power parameters and models, and the user's settings resolved and
/// checked once: the GPU cap and clock lock (a DPS node policy may lower the cap), the smoothing
/// profile (the request over the system's catalog profile) and the cooling plan. The two views
/// then differ only in what they observe (a training step's pipeline, a serving run's iterations).
/// Messages name fields ({node_policy}); the door writes its word for them.

#include <optional>
#include <string>

#include "clustertwin/base/result.h"
#include "clustertwin/hardware/catalog.h"
#include "clustertwin/power/cooling.h"
#include "clustertwin/power/gpu_power.h"
#include "clustertwin/power/params.h"
#include "clustertwin/power/smoothing.h"
#include "clustertwin/power/system_power.h"

namespace clustertwin::power {

/// The settings a power view is asked with.
struct PowerSettings {
  GpuSettings gpu;
  std::string node_policy;  ///< a DPS node policy of the system ("GB300-Med"); "" = none
  std::optional<SmoothingRequest> smoothing;
  CoolingSettings cooling;
};

/// The resolved stage. The models point into the catalogs, which must outlive it.
struct PowerSetup {
  const hardware::SystemSpec* system = nullptr;
  const hardware::GpuSpec* gpu = nullptr;
  const GpuPowerParams* gpu_params = nullptr;
  const SystemPowerParams* system_params = nullptr;
  const FacilityParams* facility = nullptr;
  std::optional<GpuPowerModel> gpu_model;
  std::optional<SystemPowerModel> system_model;
  GpuSettings settings;  ///< the cap after the node policy, the clock lock
  std::string
      cap_reason;  ///< "default (TGP)", "power cap (asked)" or "node policy ... (... per node)"
  std::optional<SmoothingSettings> smoothing;
  CoolingPlan cooling_plan;

  [[nodiscard]] const GpuPowerModel& gm() const { return *gpu_model; }
  [[nodiscard]] const SystemPowerModel& sm() const { return *system_model; }
  /// The effective per-GPU limit: the cap, else the GPU's TGP.
  [[nodiscard]] double cap_W() const;
  /// The per-GPU cap a system's usable PSU capacity allows (the rack limit, shared by both
  /// views): the largest at which its GPUs, drawing margin x cap when power-limited, fit the
  /// capacity left after the rest of the system; never below the GPU's lowest limit nor above
  /// `current_cap_W`.
  [[nodiscard]] double rack_limit_cap_W(double current_cap_W) const;
};

/// Resolves the settings for `cluster`'s system. Errors: a system or GPU without power
/// parameters, a cap or clock lock out of the GPU's range, an unknown node policy, a smoothing
/// profile the system does not support or out of range, a cooling setting out of range.
base::Result<PowerSetup> resolve_power_setup(const hardware::Catalog& catalog,
                                             const PowerCatalog& power,
                                             const hardware::ClusterSpec& cluster,
                                             const PowerSettings& settings);

}  // namespace clustertwin::power
