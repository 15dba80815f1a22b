#pragma once
/// Rendering of `clustertwin serve`: JSON (keys with units; the `inference` section the HTML
/// report reads: scalars, `points` with the Pareto frontier, `chosen`), a text page, a CSV of
/// the searched points, and the Chrome trace of iterations per simulated instance.

#include <optional>
#include <string>
#include <vector>

#include "clustertwin/execution/serving_sim.h"
#include "clustertwin/report/json_out.h"
#include "clustertwin/report/trace.h"
#include "clustertwin/search/serving_search.h"

namespace clustertwin::report {

struct ServingReport {
  std::string cluster, model, gpu, dataset;
  int64_t gpus = 0;
  workload::ServingScenario scenario = workload::ServingScenario::kOffline;
  std::optional<workload::LatencyLimits> limits;
  workload::ServingLayout layout;   ///< the chosen (or given) layout
  execution::ServingResult result;  ///< its event run (at the compliant rate when searched)
  std::optional<execution::RateSearch> rate;            ///< server / interactive: the rate search
  const search::ServingSearchResult* search = nullptr;  ///< --serving auto
  std::vector<search::GenerationStep> generation;       ///< --compare
  std::string generation_title;
  std::string generation_baseline;  ///< --compare: the baseline cluster, as the user named it
  std::vector<std::string> notes;
};

Json serving_json(const ServingReport& r);
std::string serving_text(const ServingReport& r);
/// The searched points as CSV (empty without a search).
std::string serving_csv(const ServingReport& r);
TraceWriter serving_trace(const ServingReport& r);

}  // namespace clustertwin::report
