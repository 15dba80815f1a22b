#include "clustertwin/sweep/store.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "clustertwin/base/check.h"
#include "clustertwin/base/number.h"

namespace clustertwin::sweep {
namespace {

base::Error system_error(const std::string& path, const std::string& what) {
  base::Error e{what, path, 0};
  e.kind = base::ErrorKind::kSystem;
  return e;
}

/// Binds a JSON value with its SQLite type: integers, reals, booleans (0/1), text; mappings and
/// lists as compact JSON text; null as NULL.
int bind_json(sqlite3_stmt* st, int index, const nlohmann::json& v) {
  if (v.is_null()) return sqlite3_bind_null(st, index);
  if (v.is_boolean()) return sqlite3_bind_int64(st, index, v.get<bool>() ? 1 : 0);
  if (v.is_number_integer()) return sqlite3_bind_int64(st, index, v.get<int64_t>());
  if (v.is_number()) return sqlite3_bind_double(st, index, v.get<double>());
  const std::string s = v.is_string()
                            ? v.get<std::string>()
                            : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return sqlite3_bind_text(st, index, s.c_str(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}

nlohmann::json column_json(sqlite3_stmt* st, int i) {
  switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
      return sqlite3_column_int64(st, i);
    case SQLITE_FLOAT:
      return sqlite3_column_double(st, i);
    case SQLITE_NULL:
      return nullptr;
    default:
      return std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, i)),
                         static_cast<size_t>(sqlite3_column_bytes(st, i)));
  }
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string sql_text(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

}  // namespace

std::string quote_identifier(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

nlohmann::json value_at(const nlohmann::json& results, const std::string& path) {
  const nlohmann::json* j = &results;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (j->is_array()) {
      // A list's item by its index: `search.best.0.layout`.
      const auto index = base::parse_integer(key, {.min = 0});
      if (!index || *index >= static_cast<int64_t>(j->size())) return nullptr;
      j = &(*j)[static_cast<size_t>(*index)];
    } else if (!j->is_object() || !j->contains(key)) {
      return nullptr;
    } else {
      j = &(*j)[key];
    }
    if (dot == std::string::npos) return *j;
    start = dot + 1;
  }
}

Store::Store(Store&& o) noexcept { *this = std::move(o); }

Store& Store::operator=(Store&& o) noexcept {
  if (this != &o) {
    close();
    path_ = std::move(o.path_);
    design_ = o.design_;
    db_ = std::exchange(o.db_, nullptr);
    insert_ = std::exchange(o.insert_, nullptr);
    done_ = std::move(o.done_);
    complete_ = o.complete_;
  }
  return *this;
}

Store::~Store() { close(); }

void Store::close() {
  if (insert_ != nullptr) sqlite3_finalize(insert_);
  insert_ = nullptr;
  if (db_ != nullptr) sqlite3_close(db_);
  db_ = nullptr;
}

base::Status Store::exec(const std::string& sql) const {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg != nullptr ? msg : sqlite3_errmsg(db_);
    sqlite3_free(msg);
    return base::fail(system_error(path_, "sqlite: " + m));
  }
  return {};
}

int64_t Store::done_count() const {
  int64_t n = 0;
  for (bool d : done_) n += d ? 1 : 0;
  return n;
}

base::Result<Store> Store::open(const std::string& path, const Design& design) {
  Store s;
  s.path_ = path;
  s.design_ = &design;
  s.done_.assign(design.points.size(), false);
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (exists && std::filesystem::is_directory(path, ec)) {
    return base::fail("is a directory (expected the sweep's database file)", path, 0);
  }
  if (sqlite3_open_v2(path.c_str(), &s.db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    return base::fail(system_error(path, std::string("cannot open the database: ") +
                                             (s.db_ ? sqlite3_errmsg(s.db_) : "out of memory")));
  }
  sqlite3_busy_timeout(s.db_, 5000);
  bool fresh = !exists;
  if (exists) {
    // An existing file must be this design's database.
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(s.db_, "SELECT key, value FROM meta", -1, &st, nullptr) != SQLITE_OK) {
      const std::string m = sqlite3_errmsg(s.db_);
      sqlite3_finalize(st);
      if (std::filesystem::file_size(path, ec) == 0) {
        fresh = true;
      } else {
        return base::fail("not a sweep database (" + m +
                              "): give {db} a new file name or the database of this sweep",
                          path, 0);
      }
    } else {
      std::string spec, state;
      while (sqlite3_step(st) == SQLITE_ROW) {
        const std::string k = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        const std::string v = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
        if (k == "spec") spec = v;
        if (k == "state") state = v;
      }
      sqlite3_finalize(st);
      if (spec != design.spec) {
        return base::fail(
            "holds the results of another design (its scenario, keys, values or outputs differ "
            "from " +
                design.file + "): give {db} another file, or delete this one to start over",
            path, 0);
      }
      sqlite3_stmt* ids = nullptr;
      if (sqlite3_prepare_v2(s.db_, "SELECT id FROM points", -1, &ids, nullptr) != SQLITE_OK) {
        sqlite3_finalize(ids);
        return base::fail("not a sweep database (no points table)", path, 0);
      }
      while (sqlite3_step(ids) == SQLITE_ROW) {
        const int64_t id = sqlite3_column_int64(ids, 0);
        if (id >= 0 && id < static_cast<int64_t>(s.done_.size())) {
          s.done_[static_cast<size_t>(id)] = true;
        }
      }
      sqlite3_finalize(ids);
      // Complete = marked so and already rewritten (a rollback-journal file); a kill between
      // the mark and the rename leaves a WAL file marked complete, which is finalized again.
      sqlite3_stmt* jm = nullptr;
      std::string mode;
      if (sqlite3_prepare_v2(s.db_, "PRAGMA journal_mode", -1, &jm, nullptr) == SQLITE_OK &&
          sqlite3_step(jm) == SQLITE_ROW) {
        mode = reinterpret_cast<const char*>(sqlite3_column_text(jm, 0));
      }
      sqlite3_finalize(jm);
      s.complete_ = state == "complete" && mode != "wal";
    }
  }
  if (!s.complete_) {
    if (auto st = s.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"); !st) {
      return base::fail(st.error());
    }
  }
  if (fresh) {
    std::string cols = "id INTEGER PRIMARY KEY";
    for (const auto& a : design.axes) cols += ", " + quote_identifier(a.path);
    cols += ", status TEXT NOT NULL, error TEXT";
    for (const auto& o : design.outputs) cols += ", " + quote_identifier(o.name);
    cols += ", result_json TEXT";
    const std::string sql =
        "BEGIN; CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL); "
        "CREATE TABLE points(" +
        cols + "); INSERT INTO meta VALUES ('name', " + sql_text(design.name) + "), ('points', '" +
        std::to_string(design.points.size()) + "'), ('spec', " + sql_text(design.spec) +
        "), ('state', 'running'); COMMIT;";
    if (auto st = s.exec(sql); !st) return base::fail(st.error());
  }
  if (!s.complete_) {
    std::string sql = "INSERT INTO points VALUES (?";
    const size_t n = 1 + design.axes.size() + 2 + design.outputs.size() + 1;
    for (size_t i = 1; i < n; ++i) sql += ", ?";
    sql += ")";
    if (sqlite3_prepare_v2(s.db_, sql.c_str(), -1, &s.insert_, nullptr) != SQLITE_OK) {
      return base::fail(system_error(path, std::string("sqlite: ") + sqlite3_errmsg(s.db_)));
    }
  }
  return s;
}

base::Status Store::put(const PointResult& r) {
  CT_CHECK(insert_ != nullptr && r.id >= 0 && r.id < static_cast<int64_t>(done_.size()),
           "put() of an unknown point or on a finalized store");
  const auto& pt = design_->points[static_cast<size_t>(r.id)];
  sqlite3_reset(insert_);
  sqlite3_clear_bindings(insert_);
  int i = 1;
  sqlite3_bind_int64(insert_, i++, r.id);
  for (const auto& v : pt.values) bind_json(insert_, i++, to_json(v));
  const std::string status = r.ok ? "ok" : "error";
  sqlite3_bind_text(insert_, i++, status.c_str(), -1, SQLITE_TRANSIENT);
  if (r.ok) {
    sqlite3_bind_null(insert_, i++);
  } else {
    sqlite3_bind_text(insert_, i++, r.error.c_str(), -1, SQLITE_TRANSIENT);
  }
  for (const auto& o : design_->outputs) {
    bind_json(insert_, i++, r.ok ? value_at(r.results, o.path) : nlohmann::json());
  }
  if (r.ok) {
    const std::string text =
        r.results.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    sqlite3_bind_text(insert_, i++, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  } else {
    sqlite3_bind_null(insert_, i++);
  }
  if (sqlite3_step(insert_) != SQLITE_DONE) {
    return base::fail(system_error(path_, std::string("sqlite: ") + sqlite3_errmsg(db_)));
  }
  done_[static_cast<size_t>(r.id)] = true;
  return {};
}

base::Status Store::finalize() {
  if (complete_) return {};
  CT_CHECK(done_count() == static_cast<int64_t>(done_.size()),
           "finalize() before every point is in");
  if (auto st = exec("UPDATE meta SET value = 'complete' WHERE key = 'state'"); !st) return st;
  const std::string tmp = path_ + ".final";
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  if (auto st = exec("VACUUM INTO " + sql_text(tmp)); !st) return st;
  close();
  std::filesystem::rename(tmp, path_, ec);
  if (ec) return base::fail(system_error(path_, "cannot rename " + tmp + ": " + ec.message()));
  // Reopen read-only for the exports.
  if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    return base::fail(system_error(path_, std::string("cannot reopen: ") + sqlite3_errmsg(db_)));
  }
  complete_ = true;
  return {};
}

base::Result<nlohmann::json> Store::table() const {
  std::string cols = "id";
  for (const auto& a : design_->axes) cols += ", " + quote_identifier(a.path);
  cols += ", status, error";
  for (const auto& o : design_->outputs) cols += ", " + quote_identifier(o.name);
  sqlite3_stmt* st = nullptr;
  const std::string sql = "SELECT " + cols + " FROM points ORDER BY id";
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    sqlite3_finalize(st);
    return base::fail(system_error(path_, std::string("sqlite: ") + sqlite3_errmsg(db_)));
  }
  nlohmann::json out = {{"columns", nlohmann::json::array()}, {"rows", nlohmann::json::array()}};
  const int n = sqlite3_column_count(st);
  for (int c = 0; c < n; ++c) out["columns"].push_back(sqlite3_column_name(st, c));
  while (sqlite3_step(st) == SQLITE_ROW) {
    nlohmann::json row = nlohmann::json::array();
    for (int c = 0; c < n; ++c) row.push_back(column_json(st, c));
    out["rows"].push_back(std::move(row));
  }
  sqlite3_finalize(st);
  return out;
}

base::Result<std::string> Store::csv() const {
  auto t = table();
  if (!t) return base::fail(t.error());
  std::string out;
  bool first = true;
  for (const auto& c : (*t)["columns"]) {
    out += (first ? "" : ",") + csv_field(c.get<std::string>());
    first = false;
  }
  out += "\n";
  for (const auto& row : (*t)["rows"]) {
    first = true;
    for (const auto& v : row) {
      std::string s;
      if (v.is_string()) {
        s = v.get<std::string>();
      } else if (v.is_number_float()) {
        s = fmt::format("{}", v.get<double>());
      } else if (!v.is_null()) {
        s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
      out += (first ? "" : ",") + csv_field(s);
      first = false;
    }
    out += "\n";
  }
  return out;
}

}  // namespace clustertwin::sweep
