#pragma once
/// A design study (`clustertwin sweep FILE`, docs/sweep.md) run end to end: the sweep file read,
/// every point's scenario checked before anything runs, the SQLite store opened (resumed when it
/// holds the same sweep), the points run as scenarios (run_scenario) on threads here and MPI
/// ranks across machines, the store finalized in point order, and the results JSON of the study
/// (sweep::study_json).

#include <nlohmann/json.hpp>
#include <string>

#include "clustertwin/base/result.h"
#include "clustertwin/scenario/environment.h"
#include "clustertwin/sweep/run.h"

namespace clustertwin::scenario {

struct StudyRequest {
  std::string file;    ///< the sweep file
  std::string db;      ///< the store; "": the file's name with .db, here
  int threads = 0;     ///< points at once on this process; 0: all cores (1 per rank under MPI)
  bool quiet = false;  ///< no progress bar on stderr
  bool csv = false;    ///< also the points table as CSV
};

/// On rank 0, what the study gives back; the other ranks get an empty one.
struct StudyRun {
  nlohmann::json results;  ///< {"sweep": ...}
  std::string csv;
  std::string db;
  std::string name;  ///< the design's
  sweep::RunSummary summary;
  int64_t failed = 0;  ///< points whose run gave an error (this run's and earlier ones)
  int threads = 1;
  double wall_s = 0;  ///< wall-clock time of the run (varies run to run: never stored)
};

/// Runs the study on this process's rank of `cluster`. Every rank reads the same file; errors
/// come back on every rank (only rank 0 should speak).
base::Result<StudyRun> run_study(const Environment& env, const StudyRequest& r,
                                 const sweep::Cluster& cluster);

/// The study's outcome in one line (points run now and found done, failures, the store).
std::string study_summary(const StudyRun& run);
/// The run's wall-clock line ("" when no point ran now). Wall-clock figures vary run to run:
/// they go to stderr, never to the store or stdout.
std::string study_timing(const StudyRun& run);

}  // namespace clustertwin::scenario
