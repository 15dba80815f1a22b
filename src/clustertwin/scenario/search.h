#pragma once
/// The training layout search as the user asks for it: a training request (training.h, its
/// layout left to the search) and the search's own settings (`SearchSettings`, one field table:
/// `search_fields`), run once (`run_search`: the full-space search of search/training_search.h,
/// the leaders confirmed with the event model; docs/models/training.md §layout search).

#include <nlohmann/json.hpp>
#include <string>

#include "clustertwin/scenario/environment.h"
#include "clustertwin/scenario/fields.h"
#include "clustertwin/scenario/training.h"

namespace clustertwin::scenario {

/// The search's own settings, as typed values.
struct SearchSettings {
  std::string precisions;  ///< comma-separated list; "" = the request's precision alone
  std::string zero_stages = "0,1,2,3";
  int confirm = 10;  ///< the K best by the closed form run through the event model (0: none)
  int top = 10;      ///< layouts shown
  int threads = 0;   ///< worker threads (0: all cores)
  /// Micro-batch passes (micro-batches x pp x vpp) the event model may run to confirm the
  /// leaders, in all: 2^22, the bound of one training step (docs/limits.md); the best by the
  /// closed form is always confirmed. A bound on work, not a field of the table.
  int64_t confirm_passes = int64_t{1} << 22;
};

/// The search's fields, in the order `--help` shows them.
const FieldTable<SearchSettings>& search_fields();
/// Words of the table, for `render`.
const std::vector<FieldWord>& search_words();

/// What a search gives back: its JSON section ("search"), the text page, and a line of timing
/// (wall-clock and CPU time vary run to run: the CLI writes it to stderr, never to the results).
struct SearchRun {
  nlohmann::json json;
  std::string text;
  std::string timing;
  /// The winner (the first row of `best`): the layout with its global batch and sequence length.
  workload::TrainingLayout best;
};

/// Resolves the request for a search (resolve_training_search), searches the space the settings
/// name around it, and confirms the leaders. Messages name fields ({zero_stages}).
base::Result<SearchRun> run_search(const Environment& env, const TrainingRequest& r,
                                   const SearchSettings& s);

/// The request `r` with a searched layout in place of its own (tp, pp, dp, cp, ep, etp, vpp,
/// micro-batch, global batch, sequence length, ZeRO stage, precision, recomputation and its
/// modules), so that `run_training` runs the search's winner as `train` would run it. Error: a
/// precision the training fields cannot name.
base::Result<TrainingRequest> with_layout(TrainingRequest r, const workload::TrainingLayout& l);

}  // namespace clustertwin::scenario
