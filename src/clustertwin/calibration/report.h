#pragma once
/// What `clustertwin calibrate` shows of a fit: a text summary (stdout), JSON (`--json`, stable
/// keys with units) and a self-contained HTML page (`--report`: measured vs predicted per run,
/// residual histogram, parameter table; inline SVG, no scripts, no network). All deterministic.

#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "clustertwin/calibration/collective_fit.h"

namespace clustertwin::calibration {

std::string fit_summary(const CollectiveFit& fit, std::span<const CollectiveRun> runs,
                        const ProfileMeta& meta);
nlohmann::json fit_json(const CollectiveFit& fit, std::span<const InputFile> inputs,
                        std::span<const CollectiveRun> runs, const ProfileMeta& meta);
std::string fit_html(const CollectiveFit& fit, std::span<const InputFile> inputs,
                     std::span<const CollectiveRun> runs, const ProfileMeta& meta);

}  // namespace clustertwin::calibration
