#pragma once
/// Running a sweep's points: threads on one machine and, when built with MPI and started by
/// mpirun with more than one rank, processes across machines (docs/sweep.md §parallel).
///
/// Dynamic distribution (a master-worker "self-scheduling" loop, as in MPI job farms): rank 0
/// owns the database and the list of points still to run; its own threads and every other rank
/// ask it for the next point when idle, so a slow point never holds a fixed share of the work
/// back. Results travel to rank 0, which stores each in its own transaction; the finished
/// database is rewritten in point order (Store::finalize), so its bytes are the same for any
/// number of threads and ranks.

#include <cstdint>
#include <functional>
#include <memory>

#include "clustertwin/base/result.h"
#include "clustertwin/sweep/design.h"
#include "clustertwin/sweep/store.h"

namespace clustertwin::sweep {

/// Runs one point (its scenario built by Design::scenario); called from several threads at once,
/// so it shares nothing mutable.
using PointFn = std::function<PointResult(const Point&, const YAML::Node& scenario)>;

struct RunOptions {
  int threads = 1;  ///< point runners on rank 0 (the other ranks run one point at a time)
  /// Called on rank 0's coordinating thread after each stored point: (stored in this run,
  /// points this run has to do).
  std::function<void(int64_t, int64_t)> progress;
};

struct RunSummary {
  int64_t points = 0;        ///< points of the design
  int64_t already_done = 0;  ///< found in the database at the start
  int64_t ran = 0;           ///< run and stored now
  int64_t failed = 0;        ///< of those, points whose run gave an error
  int ranks = 1;
};

/// The processes of this run: one, or the ranks of an MPI job.
class Cluster {
 public:
  /// Joins the MPI job when this binary has MPI and was started by mpirun (OMPI_COMM_WORLD_SIZE
  /// or PMI_SIZE set); otherwise a single process. The destructor leaves the job.
  Cluster();
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] bool mpi() const { return mpi_; }
  /// Every rank learns rank 0's verdict (0 go on, else stop with that exit code).
  [[nodiscard]] int broadcast(int value) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  bool mpi_ = false;
};

/// Whether this binary was built with MPI.
bool built_with_mpi();

/// Runs every point of `design` not yet in `store` (rank 0 passes its store; other ranks pass
/// nullptr and serve points until rank 0 says stop). Rank 0 gets the summary; other ranks an
/// empty one. A store error (a full disk) stops the run with that error; points that fail are
/// rows with status 'error', not failures of the sweep.
base::Result<RunSummary> run_sweep(const Design& design, Store* store, const PointFn& run_point,
                                   const RunOptions& options, const Cluster& cluster);

}  // namespace clustertwin::sweep
