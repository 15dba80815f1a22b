#pragma once
/// Rendering of `clustertwin describe`: the same ClusterSummary as JSON (stable keys with units
/// in their names, docs/cli.md) and as a one-screen text page.

#include <string>

#include "clustertwin/report/json_out.h"
#include "clustertwin/topology/summary.h"

namespace clustertwin::report {

Json describe_json(const topology::ClusterSummary& s);
std::string describe_text(const topology::ClusterSummary& s);

}  // namespace clustertwin::report
