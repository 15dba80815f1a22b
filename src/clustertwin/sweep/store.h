#pragma once
/// Sweep results in SQLite (docs/sweep.md §database). One table `points`: the point id, one
/// column per design key, `status` ('ok' or 'error'), `error`, one column per key output and
/// `result_json` (the point's full results); a table `meta` holds the design's canonical spec
/// and the state ('running' or 'complete'), nothing that depends on time, threads or ranks.
///
/// Durability: each finished point is its own transaction (WAL journal), so a process killed at
/// any moment (kill -9) loses only the points still running; on restart, the rows present are
/// the points done and only the others run. Determinism: when the last point is in, the database
/// is rewritten with `VACUUM INTO` (rows in id order, pages packed, a fresh header) and renamed
/// over the working file, so the bytes depend only on the results, not on the order points
/// finished in, on interruptions, threads or ranks.

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "clustertwin/base/result.h"
#include "clustertwin/sweep/design.h"

namespace clustertwin::sweep {

/// What one point gave: its results, or the error that stopped it (an impossible layout is a
/// result of the study, not a failure of the sweep).
struct PointResult {
  int64_t id = 0;
  bool ok = false;
  std::string error;
  nlohmann::json results;  ///< the results JSON of the scenario run (null when !ok)
};

class Store {
 public:
  /// Opens (or creates) the database of `design` at `path`. A database of another design is an
  /// error naming both (a new --db, or delete the file); an unreadable file is a system error.
  static base::Result<Store> open(const std::string& path, const Design& design);
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  /// Whether every point is in and the database was finalized.
  [[nodiscard]] bool complete() const { return complete_; }
  /// done()[id]: the point has a row.
  [[nodiscard]] const std::vector<bool>& done() const { return done_; }
  [[nodiscard]] int64_t done_count() const;

  /// Adds one point's row in its own transaction.
  base::Status put(const PointResult& r);
  /// Marks the sweep complete and rewrites the file deterministically (see above). Requires
  /// every point done.
  base::Status finalize();

  /// The points table as CSV (RFC 4180; without result_json), rows in id order.
  [[nodiscard]] base::Result<std::string> csv() const;
  /// The points table as JSON rows (without result_json) for the report: {columns, rows}.
  [[nodiscard]] base::Result<nlohmann::json> table() const;

 private:
  Store() = default;
  base::Status exec(const std::string& sql) const;
  void close();

  std::string path_;
  const Design* design_ = nullptr;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  std::vector<bool> done_;
  bool complete_ = false;
};

/// A column name quoted for SQL ("workload.training.tp" -> "\"workload.training.tp\"").
std::string quote_identifier(const std::string& name);
/// The value at a dotted path of a results JSON (null when absent); in a list, a part of the
/// path is the item's index (`search.best.0.layout`).
nlohmann::json value_at(const nlohmann::json& results, const std::string& path);

}  // namespace clustertwin::sweep
