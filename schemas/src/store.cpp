// SPDX-License-Identifier: Apache-2.0
// The SQLite store of store.h on the sqlite3 C API.
//
// Shape: RAII handles for the connection and statements; every public write is one
// BEGIN IMMEDIATE ... COMMIT whose guard rolls back on any early return; reads run inside one
// deferred transaction so that a schedule and its ops come from the same snapshot even while a
// writer commits. Statements are prepared once per operation and reset/rebound per row; the
// 1M-row tables (timeline ops, memory samples) take 64 rows per statement (see InsertChildRows).
// Error messages are "<store path>: <what failed>: <sqlite message>".
#include "zbkit/schemas/store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// Generated at build time from schemas/store.sql (cmake/EmbedText.cmake).
extern const char* const kZbkitStoreSql;

namespace zb {
namespace {

// Marks the file as a zbkit store in the SQLite header ('zbkt'), so that a SQLite file of another
// application that happens to set user_version is never mistaken for (or migrated into) a store.
constexpr int32_t kApplicationId = 0x7A626B74;
constexpr int kBusyTimeoutMs = 5000;

// Version 2: timeline_ops.kind also accepts 'COMM' (OpKind::kComm, communication measured by the
// profiler). SQLite cannot alter a CHECK, so the table is rebuilt, as SQLite's "making other kinds
// of table schema changes" procedure does: create the new table, copy, drop the old one, rename.
// It runs inside the migration transaction, so a failure leaves version 1 intact. foreign_keys
// stays on (it cannot change inside a transaction) and that is safe here: no table references
// timeline_ops, so the DROP deletes nothing else, and the new table's own reference to
// timelines (id) is satisfied by every copied row. timeline_ops has no secondary index, trigger or
// view to recreate (its primary key is its index). schedule_ops keeps rejecting 'COMM': a schedule
// orders compute ops only.
const char* const kMigrationV2Sql = R"sql(
CREATE TABLE timeline_ops_v2 (
  timeline_id INTEGER NOT NULL REFERENCES timelines (id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL CHECK (seq >= 0),
  rank        INTEGER NOT NULL CHECK (rank >= 0),
  stage       INTEGER NOT NULL CHECK (stage >= 0),
  kind        TEXT    NOT NULL CHECK (kind IN ('F', 'B', 'W', 'BW', 'COMM')),
  microbatch  INTEGER NOT NULL CHECK (microbatch >= 0),
  start_ns    INTEGER NOT NULL,
  end_ns      INTEGER NOT NULL,
  PRIMARY KEY (timeline_id, seq),
  CHECK (end_ns >= start_ns)
) WITHOUT ROWID;
INSERT INTO timeline_ops_v2 (timeline_id, seq, rank, stage, kind, microbatch, start_ns, end_ns)
  SELECT timeline_id, seq, rank, stage, kind, microbatch, start_ns, end_ns FROM timeline_ops;
DROP TABLE timeline_ops;
ALTER TABLE timeline_ops_v2 RENAME TO timeline_ops;
)sql";

// Version 3: what the profiler records. Only additions: new nullable (or defaulted) columns and
// new tables, so no table is rebuilt and every version-2 row keeps its meaning (a profile
// without a run is one the tuner or a user stored; its details load as empty).
//  - runs.command / runs.exit_code: the profiled command line (or imported file) and its exit
//    status;
//  - cost_profiles.run_id: the run a measured profile came from (SET NULL when the run goes, the
//    profile stays); cost_profiles.memory_source: whether M_B/M_W are measured, estimated from
//    the analytic model, or absent;
//  - cost_profile_spread: per (stage, kind) median and p10/p90 over the measured samples;
//  - cost_profile_hops: per-hop communication time.
// ADD COLUMN with REFERENCES needs a NULL default while foreign keys are on, which it has.
const char* const kMigrationV3Sql = R"sql(
ALTER TABLE runs ADD COLUMN command TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN exit_code INTEGER;
ALTER TABLE cost_profiles ADD COLUMN run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL;
ALTER TABLE cost_profiles ADD COLUMN memory_source TEXT
  CHECK (memory_source IN ('measured', 'estimated', 'none'));
CREATE INDEX cost_profiles_by_run ON cost_profiles (run_id);
CREATE TABLE cost_profile_spread (
  profile_id INTEGER NOT NULL REFERENCES cost_profiles (id) ON DELETE CASCADE,
  stage      INTEGER NOT NULL CHECK (stage >= 0),
  kind       TEXT    NOT NULL CHECK (kind IN ('F', 'B', 'W', 'BW')),
  median_ns  INTEGER NOT NULL CHECK (median_ns >= 0),
  p10_ns     INTEGER NOT NULL CHECK (p10_ns >= 0),
  p90_ns     INTEGER NOT NULL CHECK (p90_ns >= p10_ns),
  samples    INTEGER NOT NULL CHECK (samples >= 0),
  PRIMARY KEY (profile_id, stage, kind)
) WITHOUT ROWID;
CREATE TABLE cost_profile_hops (
  profile_id INTEGER NOT NULL REFERENCES cost_profiles (id) ON DELETE CASCADE,
  from_stage INTEGER NOT NULL CHECK (from_stage >= 0),
  to_stage   INTEGER NOT NULL CHECK (to_stage >= 0),
  median_ns  INTEGER NOT NULL CHECK (median_ns >= 0),
  p10_ns     INTEGER NOT NULL CHECK (p10_ns >= 0),
  p90_ns     INTEGER NOT NULL CHECK (p90_ns >= p10_ns),
  samples    INTEGER NOT NULL CHECK (samples >= 0),
  PRIMARY KEY (profile_id, from_stage, to_stage)
) WITHOUT ROWID;
)sql";

// Forward migrations: step i brings a store from version kMigrations[i-1].version (0 for the
// first) to kMigrations[i].version. A new store runs every step, so there is one path to each
// version and the steps are what is tested. Never edit a released step; append a new one and
// bump Store::kSchemaVersion.
struct Migration {
  int version;             // user_version once this step is applied
  const char* const* sql;  // the step's SQL (through a pointer so the table stays constexpr)
};
constexpr Migration kMigrations[] = {
    {1, &kZbkitStoreSql},   // schemas/store.sql: create every table of version 1
    {2, &kMigrationV2Sql},  // timeline_ops.kind accepts 'COMM'
    {3, &kMigrationV3Sql},  // runs, measured cost profiles: run link, memory source, spread
};
static_assert(kMigrations[std::size(kMigrations) - 1].version == Store::kSchemaVersion,
              "the last migration step must produce Store::kSchemaVersion");

// SQLite messages can quote a multi-line CHECK expression; zbkit errors are one line.
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return text;
}

struct DbCloser {
  // close_v2 so that a handle is released even if a statement were still alive.
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbHandle = std::unique_ptr<sqlite3, DbCloser>;

// Owns one prepared statement. Bind errors are remembered and reported by the next Step(), so
// that a row's binds read as straight-line code.
class Statement {
 public:
  Statement() = default;
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  Statement(Statement&& other) noexcept
      : stmt_(std::exchange(other.stmt_, nullptr)), bind_rc_(other.bind_rc_) {}
  Statement& operator=(Statement&& other) noexcept {
    if (this != &other) {
      sqlite3_finalize(stmt_);
      stmt_ = std::exchange(other.stmt_, nullptr);
      bind_rc_ = other.bind_rc_;
    }
    return *this;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  void BindInt(int index, int64_t value) { Check(sqlite3_bind_int64(stmt_, index, value)); }
  void BindDouble(int index, double value) { Check(sqlite3_bind_double(stmt_, index, value)); }
  void BindNull(int index) { Check(sqlite3_bind_null(stmt_, index)); }
  void BindText(int index, std::string_view text) {
    Check(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()),
                            SQLITE_TRANSIENT));
  }
  // For string literals (op kinds): no copy per row.
  void BindStaticText(int index, const char* text) {
    Check(sqlite3_bind_text(stmt_, index, text, -1, SQLITE_STATIC));
  }
  void BindOptionalDouble(int index, const std::optional<double>& value) {
    if (value) {
      BindDouble(index, *value);
    } else {
      BindNull(index);
    }
  }
  void BindOptionalInt(int index, const std::optional<int64_t>& value) {
    if (value) {
      BindInt(index, *value);
    } else {
      BindNull(index);
    }
  }

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() {
    if (bind_rc_ != SQLITE_OK) return bind_rc_;
    return sqlite3_step(stmt_);
  }
  // Readies the statement for the next row; bindings are kept (SQLite does not clear them), so a
  // bulk insert binds the constant parent id only once.
  void Reset() {
    sqlite3_reset(stmt_);
    bind_rc_ = SQLITE_OK;
  }

  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  double Double(int column) const { return sqlite3_column_double(stmt_, column); }
  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::string_view Text(int column) const {
    const unsigned char* text = sqlite3_column_text(stmt_, column);
    if (text == nullptr) return {};
    return {reinterpret_cast<const char*>(text),
            static_cast<size_t>(sqlite3_column_bytes(stmt_, column))};
  }
  std::optional<double> OptionalDouble(int column) const {
    if (IsNull(column)) return std::nullopt;
    return Double(column);
  }

 private:
  void Check(int rc) {
    if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  }

  sqlite3_stmt* stmt_ = nullptr;
  int bind_rc_ = SQLITE_OK;
};

// "[0,7]", the JSON text kept in schedule_ranks.stages.
std::string StagesToText(const std::vector<int32_t>& stages) {
  std::string text = "[";
  for (size_t i = 0; i < stages.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(stages[i]);
  }
  text += ']';
  return text;
}

// Parses a JSON array of integers, tolerating whitespace (the column may have been written by
// hand through SQL, where json_valid() is all the schema checks).
std::optional<std::vector<int32_t>> StagesFromText(std::string_view text) {
  std::vector<int32_t> stages;
  size_t pos = 0;
  auto skip_space = [&] {
    while (pos < text.size() &&
           (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\t' || text[pos] == '\r')) {
      ++pos;
    }
  };
  skip_space();
  if (pos >= text.size() || text[pos] != '[') return std::nullopt;
  ++pos;
  skip_space();
  if (pos < text.size() && text[pos] == ']') return stages;
  while (true) {
    skip_space();
    int32_t value = 0;
    auto [end, ec] = std::from_chars(text.data() + pos, text.data() + text.size(), value);
    if (ec != std::errc()) return std::nullopt;
    stages.push_back(value);
    pos = static_cast<size_t>(end - text.data());
    skip_space();
    if (pos >= text.size()) return std::nullopt;
    if (text[pos] == ']') break;
    if (text[pos] != ',') return std::nullopt;
    ++pos;
  }
  ++pos;
  skip_space();
  if (pos != text.size()) return std::nullopt;
  return stages;
}

std::optional<TimelineKind> ParseTimelineKind(std::string_view name) {
  if (name == "predicted") return TimelineKind::kPredicted;
  if (name == "measured") return TimelineKind::kMeasured;
  return std::nullopt;
}

// The connection and the helpers every operation uses. A namespace-level type (Store::Impl is
// private) so that Transaction below can hold one.
struct Connection {
  std::string path;
  DbHandle db;
  int schema_version = 0;
  bool read_only = false;

  // "<path>: <what>: <sqlite message>". `rc` is the failing call's result; the connection's
  // message is used when it describes that failure (it carries the constraint's name).
  Status Error(std::string_view what, int rc) const {
    const char* message = sqlite3_errstr(rc);
    if (db != nullptr && sqlite3_errcode(db.get()) == (rc & 0xff)) {
      message = sqlite3_errmsg(db.get());
    }
    return StoreError(OneLine(path + ": " + std::string(what) + ": " + message));
  }
  Status Invalid(std::string_view what, const std::string& problem) const {
    return InvalidInput(OneLine(path + ": " + std::string(what) + ": " + problem));
  }
  Status Inconsistent(std::string_view what, const std::string& problem) const {
    return StoreError(
        OneLine(path + ": " + std::string(what) + ": store is inconsistent: " + problem));
  }

  Status Exec(const char* sql, std::string_view what) {
    const int rc = sqlite3_exec(db.get(), sql, nullptr, nullptr, nullptr);
    return rc == SQLITE_OK ? Status::Ok() : Error(what, rc);
  }

  Expected<Statement> Prepare(const char* sql, std::string_view what) const {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v2(db.get(), sql, -1, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(stmt);
      return Error(what, rc);
    }
    return Statement(stmt);
  }

  // Runs a statement expected to produce no rows (an INSERT without RETURNING).
  Status StepDone(Statement& stmt, std::string_view what) const {
    const int rc = stmt.Step();
    if (rc != SQLITE_DONE) return Error(what, rc);
    return Status::Ok();
  }

  // Reads a one-integer PRAGMA such as user_version.
  Expected<int64_t> PragmaInt(const char* sql, std::string_view what) const {
    ZB_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql, what));
    const int rc = stmt.Step();
    if (rc != SQLITE_ROW) return Error(what, rc);
    return stmt.Int(0);
  }

  Status CheckWritable(std::string_view what) const {
    if (read_only) return StoreError(path + ": " + std::string(what) + ": store is open read-only");
    return Status::Ok();
  }

  // NotFound unless `sql` (a SELECT by ?1 = id) finds a row; `noun` names the row's kind.
  Status CheckExists(const char* sql, int64_t id, std::string_view what,
                     std::string_view noun) const {
    ZB_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql, what));
    stmt.BindInt(1, id);
    const int rc = stmt.Step();
    if (rc == SQLITE_ROW) return Status::Ok();
    if (rc != SQLITE_DONE) return Error(what, rc);
    return NotFound(path + ": " + std::string(what) + ": no " + std::string(noun) + " with id " +
                    std::to_string(id));
  }
};

// Holds a transaction open for one logical operation and rolls it back unless committed, so
// every early `return error` leaves the store exactly as it was.
class Transaction {
 public:
  explicit Transaction(Connection& conn) : conn_(conn) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction() {
    // Some errors (SQLITE_FULL, IOERR, ...) already rolled back; a second ROLLBACK would fail.
    if (active_ && !sqlite3_get_autocommit(conn_.db.get())) {
      sqlite3_exec(conn_.db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
  }

  // IMMEDIATE takes the write lock up front: a deferred transaction that reads first and then
  // upgrades can fail with SQLITE_BUSY_SNAPSHOT in WAL mode, which the busy timeout does not
  // retry. Waiting for the lock at BEGIN is what busy_timeout handles.
  Status BeginWrite(std::string_view what) { return Begin("BEGIN IMMEDIATE", what); }
  // One snapshot for a multi-statement read; ended by the destructor (nothing to commit).
  Status BeginRead(std::string_view what) { return Begin("BEGIN", what); }

  Status Commit(std::string_view what) {
    const int rc = sqlite3_exec(conn_.db.get(), "COMMIT", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return conn_.Error(std::string(what) + ": commit", rc);
    active_ = false;
    return Status::Ok();
  }

 private:
  Status Begin(const char* sql, std::string_view what) {
    const int rc = sqlite3_exec(conn_.db.get(), sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return conn_.Error(std::string(what) + ": begin transaction", rc);
    active_ = true;
    return Status::Ok();
  }

  Connection& conn_;
  bool active_ = false;
};

// ---- Bulk rows -------------------------------------------------------------------------------

// The 1M-op path (timeline ops, memory samples) inserts kRowsPerInsert rows per statement: with
// one row per statement most of the time goes into opening and closing the table cursor, and
// 64 rows per statement measured 2.3x faster on 1M ops. Each statement is prepared once, the
// parent id is bound once (bindings survive sqlite3_reset), and per batch only the row values
// are bound.
constexpr int kRowsPerInsert = 64;

// `head` is "INSERT INTO t (parent_id, seq, ...) VALUES "; each row is (?1, <row_params values>).
std::string MultiRowInsertSql(const char* head, int row_params, size_t rows) {
  std::string sql = head;
  int param = 2;
  for (size_t row = 0; row < rows; ++row) {
    sql += row == 0 ? "(?1" : ", (?1";
    for (int column = 0; column < row_params; ++column) {
      sql += ", ?" + std::to_string(param++);
    }
    sql += ')';
  }
  return sql;
}

// Inserts rows 0..num_rows-1 of a child table; bind(stmt, first_param, index) binds row `index`
// (its seq first) at parameters first_param..first_param+row_params-1. Must run inside the
// caller's transaction.
template <typename BindRow>
Status InsertChildRows(const Connection& conn, const char* head, int row_params, int64_t parent_id,
                       size_t num_rows, const BindRow& bind, const std::string& what,
                       const char* noun) {
  // Runs `count` rows from `first` through `stmt`. A batch that fails is undone on its own and,
  // after a constraint error, the transaction stays open: the rows are then replayed one at a
  // time so that the error names the row at fault, not just its batch.
  auto run = [&](Statement& stmt, size_t first, size_t count) -> Status {
    stmt.Reset();
    for (size_t row = 0; row < count; ++row) {
      bind(stmt, 2 + static_cast<int>(row) * row_params, first + row);
    }
    const int rc = stmt.Step();
    if (rc == SQLITE_DONE) return Status::Ok();
    const Status batch_error = conn.Error(what + ": " + noun + "s " + std::to_string(first) + ".." +
                                              std::to_string(first + count - 1),
                                          rc);
    if ((rc & 0xff) != SQLITE_CONSTRAINT || sqlite3_get_autocommit(conn.db.get())) {
      return batch_error;
    }
    ZB_ASSIGN_OR_RETURN(Statement single,
                        conn.Prepare(MultiRowInsertSql(head, row_params, 1).c_str(), what));
    single.BindInt(1, parent_id);
    for (size_t row = first; row < first + count; ++row) {
      single.Reset();
      bind(single, 2, row);
      const int row_rc = single.Step();
      if (row_rc != SQLITE_DONE) {
        return conn.Error(what + ": " + noun + " " + std::to_string(row), row_rc);
      }
    }
    return batch_error;
  };

  const size_t num_full = num_rows / kRowsPerInsert;
  const size_t num_tail = num_rows % kRowsPerInsert;
  if (num_full > 0) {
    ZB_ASSIGN_OR_RETURN(
        Statement full,
        conn.Prepare(MultiRowInsertSql(head, row_params, kRowsPerInsert).c_str(), what));
    full.BindInt(1, parent_id);
    for (size_t batch = 0; batch < num_full; ++batch) {
      ZB_RETURN_IF_ERROR(run(full, batch * kRowsPerInsert, kRowsPerInsert));
    }
  }
  if (num_tail > 0) {
    ZB_ASSIGN_OR_RETURN(Statement tail,
                        conn.Prepare(MultiRowInsertSql(head, row_params, num_tail).c_str(), what));
    tail.BindInt(1, parent_id);
    ZB_RETURN_IF_ERROR(run(tail, num_full * kRowsPerInsert, num_tail));
  }
  return Status::Ok();
}

}  // namespace

// The operations that span several tables; members so that they can call one another inside the
// caller's transaction.
struct Store::Impl : Connection {
  Status Migrate(std::string_view what);
  Expected<int64_t> WriteCostProfile(int64_t job_id, const std::string& name,
                                     const CostProfile& costs,
                                     const CostProfileDetails* details = nullptr);
  Expected<CostProfile> ReadCostProfile(int64_t id, std::string_view what) const;
  Expected<int64_t> WriteTimeline(std::optional<int64_t> schedule_id, const Timeline& timeline,
                                  std::optional<int64_t> run_id = std::nullopt);
};

Status Store::Impl::Migrate(std::string_view what) {
  Transaction transaction(*this);
  ZB_RETURN_IF_ERROR(transaction.BeginWrite(what));
  // Read again under the write lock: another process may have migrated since Open looked.
  ZB_ASSIGN_OR_RETURN(int64_t version, PragmaInt("PRAGMA user_version", what));
  if (version > Store::kSchemaVersion) {
    return StoreError(path + ": " + std::string(what) + ": store schema version " +
                      std::to_string(version) + " is newer than this zbkit supports (" +
                      std::to_string(Store::kSchemaVersion) + ")");
  }
  for (const Migration& step : kMigrations) {
    if (step.version <= version) continue;
    const std::string step_what = std::string(what) + ": migrate schema version " +
                                  std::to_string(version) + " -> " + std::to_string(step.version);
    ZB_RETURN_IF_ERROR(Exec(*step.sql, step_what));
    // Both header fields are part of the transaction: a failed migration leaves the old ones.
    const std::string header = "PRAGMA user_version = " + std::to_string(step.version) +
                               "; PRAGMA application_id = " + std::to_string(kApplicationId) + ";";
    ZB_RETURN_IF_ERROR(Exec(header.c_str(), step_what));
    version = step.version;
  }
  return transaction.Commit(what);
}

Expected<Store> Store::Open(const std::string& path, Mode mode) {
  if (path.empty()) return UsageError("store path is empty");
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->read_only = mode == Mode::kReadOnly;
  const std::string what = "open store";

  if (impl->read_only) {
    // SQLITE_OPEN_READONLY would not create the file either, but its message ("unable to open
    // database file") does not say why.
    struct stat info;
    if (::stat(path.c_str(), &info) != 0) {
      const int error = errno;
      if (error == ENOENT) return NotFound(path + ": " + what + ": no such file");
      return StoreError(path + ": " + what + ": " + std::strerror(error));
    }
  }

  const int flags =
      impl->read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  sqlite3* raw = nullptr;
  const int open_rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  impl->db.reset(raw);  // a handle is returned even on failure and must be closed
  if (open_rc != SQLITE_OK) return impl->Error(what, open_rc);
  sqlite3_busy_timeout(impl->db.get(), kBusyTimeoutMs);

  // Look at the header before changing anything: a newer or foreign file must stay untouched
  // (even switching to WAL rewrites header bytes). Reading it is also where a file that is not
  // SQLite fails ("file is not a database").
  ZB_ASSIGN_OR_RETURN(int64_t version,
                      impl->PragmaInt("PRAGMA user_version", what + ": read schema version"));
  ZB_ASSIGN_OR_RETURN(int64_t application_id,
                      impl->PragmaInt("PRAGMA application_id", what + ": read application id"));
  ZB_ASSIGN_OR_RETURN(int64_t num_objects, impl->PragmaInt("SELECT count(*) FROM sqlite_schema",
                                                           what + ": read schema"));
  const std::string version_text = std::to_string(version);
  const std::string ours_text = std::to_string(kSchemaVersion);
  if (version != 0 && application_id != kApplicationId) {
    char id_text[16];
    std::snprintf(id_text, sizeof(id_text), "0x%08llx",
                  static_cast<unsigned long long>(application_id) & 0xffffffffULL);
    return StoreError(path + ": " + what + ": not a zbkit store (application_id " + id_text +
                      ", user_version " + version_text + ")");
  }
  if (version > kSchemaVersion) {
    return StoreError(path + ": " + what + ": store schema version " + version_text +
                      " is newer than this zbkit supports (" + ours_text +
                      "); refusing to open it");
  }
  if (version == 0 && impl->read_only) {
    return StoreError(path + ": " + what + ": not a zbkit store (schema version 0, " +
                      (num_objects == 0
                           ? std::string("no tables")
                           : std::to_string(num_objects) + " unrelated tables/indexes") +
                      ")");
  }
  if (version == 0 && num_objects > 0 && application_id != kApplicationId) {
    // Most likely the wrong file (an nsys export, another tool's database): adding zbkit tables
    // to it would be a surprise that is hard to undo.
    return StoreError(path + ": " + what + ": not a zbkit store (schema version 0 with " +
                      std::to_string(num_objects) +
                      " tables/indexes of another application); refusing to add zbkit tables");
  }
  if (version < kSchemaVersion && impl->read_only) {
    return StoreError(path + ": " + what + ": store schema version " + version_text +
                      " is older than " + ours_text + "; open it read-write once to migrate it");
  }

  if (!impl->read_only) {
    // WAL lets readers (the GUI) load while a writer (the tuner, a replay) commits.
    ZB_ASSIGN_OR_RETURN(Statement journal,
                        impl->Prepare("PRAGMA journal_mode = WAL", what + ": set WAL journal"));
    const int rc = journal.Step();
    if (rc != SQLITE_ROW) return impl->Error(what + ": set WAL journal", rc);
    const std::string_view mode_name = journal.Text(0);
    if (mode_name != "wal" && mode_name != "memory") {
      return StoreError(path + ": " + what + ": cannot use the WAL journal (SQLite kept '" +
                        std::string(mode_name) + "'; is the file on a network file system?)");
    }
    // In WAL mode NORMAL cannot corrupt the store; it only drops the last commits on power loss,
    // and saves an fsync per transaction.
    ZB_RETURN_IF_ERROR(impl->Exec("PRAGMA synchronous = NORMAL", what + ": set synchronous"));
  }
  ZB_RETURN_IF_ERROR(impl->Exec("PRAGMA foreign_keys = ON", what + ": enable foreign keys"));

  if (version < kSchemaVersion) ZB_RETURN_IF_ERROR(impl->Migrate(what));
  impl->schema_version = kSchemaVersion;
  return Store(std::move(impl));
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&& other) noexcept = default;
Store& Store::operator=(Store&& other) noexcept = default;
Store::~Store() = default;

namespace {
Status Closed() {
  return StoreError("store is closed (used after move)");
}
}  // namespace

const std::string& Store::path() const {
  static const std::string kNone;
  return impl_ ? impl_->path : kNone;
}

int Store::schema_version() const {
  return impl_ ? impl_->schema_version : 0;
}

Expected<int64_t> Store::EnsureCluster(const ClusterInfo& cluster) {
  if (!impl_) return Closed();
  const char* what = "ensure cluster";
  ZB_RETURN_IF_ERROR(impl_->CheckWritable(what));
  if (cluster.name.empty()) return impl_->Invalid(what, "cluster name is empty");
  // One statement, so it is atomic on its own; empty fields keep what is stored.
  ZB_ASSIGN_OR_RETURN(
      Statement stmt,
      impl_->Prepare("INSERT INTO clusters (name, gpu, interconnect, driver_version, nccl_version,"
                     " schema_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
                     " ON CONFLICT (name) DO UPDATE SET"
                     " gpu = iif(excluded.gpu <> '', excluded.gpu, gpu),"
                     " interconnect = iif(excluded.interconnect <> '', excluded.interconnect,"
                     " interconnect),"
                     " driver_version = iif(excluded.driver_version <> '',"
                     " excluded.driver_version, driver_version),"
                     " nccl_version = iif(excluded.nccl_version <> '', excluded.nccl_version,"
                     " nccl_version)"
                     " RETURNING id",
                     what));
  stmt.BindText(1, cluster.name);
  stmt.BindText(2, cluster.gpu);
  stmt.BindText(3, cluster.interconnect);
  stmt.BindText(4, cluster.driver_version);
  stmt.BindText(5, cluster.nccl_version);
  stmt.BindInt(6, kSchemaVersion);
  int rc = stmt.Step();
  if (rc != SQLITE_ROW) return impl_->Error(what, rc);
  const int64_t id = stmt.Int(0);
  rc = stmt.Step();  // the change is committed when the statement runs to completion
  if (rc != SQLITE_DONE) return impl_->Error(what, rc);
  return id;
}

Expected<int64_t> Store::EnsureJob(int64_t cluster_id, const std::string& job_name) {
  if (!impl_) return Closed();
  const char* what = "ensure job";
  ZB_RETURN_IF_ERROR(impl_->CheckWritable(what));
  if (job_name.empty()) return impl_->Invalid(what, "job name is empty");
  Transaction transaction(*impl_);
  ZB_RETURN_IF_ERROR(transaction.BeginWrite(what));
  ZB_RETURN_IF_ERROR(
      impl_->CheckExists("SELECT 1 FROM clusters WHERE id = ?1", cluster_id, what, "cluster"));
  int64_t id = 0;
  {
    ZB_ASSIGN_OR_RETURN(
        Statement find,
        impl_->Prepare("SELECT id FROM jobs WHERE cluster_id = ?1 AND name = ?2", what));
    find.BindInt(1, cluster_id);
    find.BindText(2, job_name);
    const int rc = find.Step();
    if (rc == SQLITE_ROW) return find.Int(0);  // nothing written; the guard ends the transaction
    if (rc != SQLITE_DONE) return impl_->Error(what, rc);
  }
  {
    ZB_ASSIGN_OR_RETURN(Statement insert,
                        impl_->Prepare("INSERT INTO jobs (cluster_id, name, schema_version)"
                                       " VALUES (?1, ?2, ?3)",
                                       what));
    insert.BindInt(1, cluster_id);
    insert.BindText(2, job_name);
    insert.BindInt(3, kSchemaVersion);
    ZB_RETURN_IF_ERROR(impl_->StepDone(insert, what));
    id = sqlite3_last_insert_rowid(impl_->db.get());
  }
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

// ---- Cost profiles ---------------------------------------------------------------------------

Expected<int64_t> Store::Impl::WriteCostProfile(int64_t job_id, const std::string& name,
                                                const CostProfile& costs,
                                                const CostProfileDetails* details) {
  const char* what = "insert cost profile";
  ZB_ASSIGN_OR_RETURN(Statement profile,
                      Prepare("INSERT INTO cost_profiles (job_id, name, comm_ns, schema_version,"
                              " run_id, memory_source) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                              what));
  profile.BindInt(1, job_id);
  profile.BindText(2, name);
  profile.BindInt(3, costs.comm);
  profile.BindInt(4, Store::kSchemaVersion);
  profile.BindOptionalInt(5, details ? details->run_id : std::nullopt);
  if (details && !details->memory_source.empty()) {
    profile.BindText(6, details->memory_source);
  } else {
    profile.BindNull(6);
  }
  ZB_RETURN_IF_ERROR(StepDone(profile, what));
  const int64_t id = sqlite3_last_insert_rowid(db.get());

  ZB_ASSIGN_OR_RETURN(Statement stage, Prepare("INSERT INTO cost_profile_stages"
                                               " (profile_id, stage, f_ns, b_ns, w_ns, m_b, m_w)"
                                               " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                                               what));
  stage.BindInt(1, id);
  for (size_t s = 0; s < costs.stages.size(); ++s) {
    const StageCost& cost = costs.stages[s];
    stage.Reset();
    stage.BindInt(2, static_cast<int64_t>(s));
    stage.BindInt(3, cost.f);
    stage.BindInt(4, cost.b);
    stage.BindInt(5, cost.w);
    stage.BindDouble(6, cost.m_b);
    stage.BindDouble(7, cost.m_w);
    ZB_RETURN_IF_ERROR(StepDone(stage, std::string(what) + ": stage " + std::to_string(s)));
  }
  if (details == nullptr) return id;
  ZB_ASSIGN_OR_RETURN(Statement spread,
                      Prepare("INSERT INTO cost_profile_spread (profile_id, stage, kind,"
                              " median_ns, p10_ns, p90_ns, samples)"
                              " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                              what));
  spread.BindInt(1, id);
  for (const CostSpread& row : details->spread) {
    spread.Reset();
    spread.BindInt(2, row.stage);
    spread.BindStaticText(3, OpKindName(row.kind));
    spread.BindInt(4, row.median);
    spread.BindInt(5, row.p10);
    spread.BindInt(6, row.p90);
    spread.BindInt(7, row.samples);
    ZB_RETURN_IF_ERROR(StepDone(spread, std::string(what) + ": spread of " + OpKindName(row.kind) +
                                            " of stage " + std::to_string(row.stage)));
  }
  ZB_ASSIGN_OR_RETURN(Statement hop,
                      Prepare("INSERT INTO cost_profile_hops (profile_id, from_stage, to_stage,"
                              " median_ns, p10_ns, p90_ns, samples)"
                              " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                              what));
  hop.BindInt(1, id);
  for (const HopCost& row : details->hops) {
    hop.Reset();
    hop.BindInt(2, row.from_stage);
    hop.BindInt(3, row.to_stage);
    hop.BindInt(4, row.median);
    hop.BindInt(5, row.p10);
    hop.BindInt(6, row.p90);
    hop.BindInt(7, row.samples);
    ZB_RETURN_IF_ERROR(StepDone(hop, std::string(what) + ": hop " + std::to_string(row.from_stage) +
                                         " -> " + std::to_string(row.to_stage)));
  }
  return id;
}

Expected<CostProfile> Store::Impl::ReadCostProfile(int64_t id, std::string_view what) const {
  CostProfile costs;
  {
    ZB_ASSIGN_OR_RETURN(Statement profile,
                        Prepare("SELECT comm_ns FROM cost_profiles WHERE id = ?1", what));
    profile.BindInt(1, id);
    const int rc = profile.Step();
    if (rc == SQLITE_DONE) {
      return NotFound(path + ": " + std::string(what) + ": no cost profile with id " +
                      std::to_string(id));
    }
    if (rc != SQLITE_ROW) return Error(what, rc);
    costs.comm = profile.Int(0);
  }
  ZB_ASSIGN_OR_RETURN(Statement stages,
                      Prepare("SELECT stage, f_ns, b_ns, w_ns, m_b, m_w FROM cost_profile_stages"
                              " WHERE profile_id = ?1 ORDER BY stage",
                              what));
  stages.BindInt(1, id);
  int rc;
  while ((rc = stages.Step()) == SQLITE_ROW) {
    if (stages.Int(0) != costs.num_stages()) {
      return Inconsistent(what, "cost profile " + std::to_string(id) + " has no stage " +
                                    std::to_string(costs.num_stages()));
    }
    costs.stages.push_back(
        {stages.Int(1), stages.Int(2), stages.Int(3), stages.Double(4), stages.Double(5)});
  }
  if (rc != SQLITE_DONE) return Error(what, rc);
  return costs;
}

Expected<int64_t> Store::InsertCostProfile(int64_t job_id, const std::string& name,
                                           const CostProfile& costs) {
  if (!impl_) return Closed();
  const char* what = "insert cost profile";
  ZB_RETURN_IF_ERROR(impl_->CheckWritable(what));
  Transaction transaction(*impl_);
  ZB_RETURN_IF_ERROR(transaction.BeginWrite(what));
  ZB_RETURN_IF_ERROR(impl_->CheckExists("SELECT 1 FROM jobs WHERE id = ?1", job_id, what, "job"));
  ZB_ASSIGN_OR_RETURN(int64_t id, impl_->WriteCostProfile(job_id, name, costs));
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

Expected<int64_t> Store::InsertCostProfile(int64_t job_id, const std::string& name,
                                           const CostProfile& costs,
                                           const CostProfileDetails& details) {
  if (!impl_) return Closed();
  const char* what = "insert cost profile";
  ZB_RETURN_IF_ERROR(impl_->CheckWritable(what));
  Transaction transaction(*impl_);
  ZB_RETURN_IF_ERROR(transaction.BeginWrite(what));
  ZB_RETURN_IF_ERROR(impl_->CheckExists("SELECT 1 FROM jobs WHERE id = ?1", job_id, what, "job"));
  if (details.run_id) {
    ZB_RETURN_IF_ERROR(
        impl_->CheckExists("SELECT 1 FROM runs WHERE id = ?1", *details.run_id, what, "run"));
  }
  ZB_ASSIGN_OR_RETURN(int64_t id, impl_->WriteCostProfile(job_id, name, costs, &details));
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

Expected<CostProfileDetails> Store::LoadCostProfileDetails(int64_t id) const {
  if (!impl_) return Closed();
  const Impl& impl = *impl_;
  const std::string what = "load cost profile details " + std::to_string(id);
  Transaction transaction(*impl_);
  ZB_RETURN_IF_ERROR(transaction.BeginRead(what));
  CostProfileDetails details;
  {
    ZB_ASSIGN_OR_RETURN(
        Statement row,
        impl.Prepare("SELECT run_id, memory_source FROM cost_profiles WHERE id = ?1", what));
    row.BindInt(1, id);
    const int rc = row.Step();
    if (rc == SQLITE_DONE) {
      return NotFound(impl.path + ": " + what + ": no cost profile with id " + std::to_string(id));
    }
    if (rc != SQLITE_ROW) return impl.Error(what, rc);
    if (!row.IsNull(0)) details.run_id = row.Int(0);
    details.memory_source = row.Text(1);
  }
  {
    ZB_ASSIGN_OR_RETURN(Statement rows,
                        impl.Prepare("SELECT stage, kind, median_ns, p10_ns, p90_ns, samples"
                                     " FROM cost_profile_spread WHERE profile_id = ?1"
                                     " ORDER BY stage, CASE kind WHEN 'F' THEN 0 WHEN 'B' THEN 1"
                                     " WHEN 'W' THEN 2 ELSE 3 END",
                                     what));
    rows.BindInt(1, id);
    int rc;
    while ((rc = rows.Step()) == SQLITE_ROW) {
      const auto kind = ParseOpKind(rows.Text(1));
      if (!kind) {
        return impl.Inconsistent(what, "unknown op kind '" + std::string(rows.Text(1)) + "'");
      }
      details.spread.push_back({static_cast<int32_t>(rows.Int(0)), *kind, rows.Int(2), rows.Int(3),
                                rows.Int(4), rows.Int(5)});
    }
    if (rc != SQLITE_DONE) return impl.Error(what, rc);
  }
  {
    ZB_ASSIGN_OR_RETURN(Statement rows,
                        impl.Prepare("SELECT from_stage, to_stage, median_ns, p10_ns, p90_ns,"
                                     " samples FROM cost_profile_hops WHERE profile_id = ?1"
                                     " ORDER BY from_stage, to_stage",
                                     what));
    rows.BindInt(1, id);
    int rc;
    while ((rc = rows.Step()) == SQLITE_ROW) {
      details.hops.push_back({static_cast<int32_t>(rows.Int(0)), static_cast<int32_t>(rows.Int(1)),
                              rows.Int(2), rows.Int(3), rows.Int(4), rows.Int(5)});
    }
    if (rc != SQLITE_DONE) return impl.Error(what, rc);
  }
  return details;
}

Expected<CostProfile> Store::LoadCostProfile(int64_t id) const {
  if (!impl_) return Closed();
  const char* what = "load cost profile";
  Transaction transaction(*impl_);
  ZB_RETURN_IF_ERROR(transaction.BeginRead(what));
  return impl_->ReadCostProfile(id, what);
}

Expected<std::vector<CostProfileInfo>> Store::ListCostProfiles() const {
  if (!impl_) return Closed();
  const char* what = "list cost profiles";
  ZB_ASSIGN_OR_RETURN(
      Statement stmt,
      impl_->Prepare("SELECT p.id, c.name, j.name, p.name,"
                     " (SELECT count(*) FROM cost_profile_stages s WHERE s.profile_id = p.id),"
                     " p.created_at, p.run_id, p.memory_source"
                     " FROM cost_profiles p JOIN jobs j ON j.id = p.job_id"
                     " JOIN clusters c ON c.id = j.cluster_id ORDER BY p.id",
                     what));
  std::vector<CostProfileInfo> infos;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    CostProfileInfo info;
    info.id = stmt.Int(0);
    info.cluster = stmt.Text(1);
    info.job = stmt.Text(2);
    info.name = stmt.Text(3);
    info.num_stages = static_cast<int>(stmt.Int(4));
    info.created_at = stmt.Text(5);
    if (!stmt.IsNull(6)) info.run_id = stmt.Int(6);
    info.memory_source = stmt.Text(7);
    infos.push_back(std::move(info));
  }
  if (rc != SQLITE_DONE) return impl_->Error(what, rc);
  return infos;
}

// ---- Schedules -------------------------------------------------------------------------------

Expected<int64_t> Store::InsertSchedule(int64_t job_id, const Schedule& schedule,
                                        std::optional<double> memory_limit) {
  if (!impl_) return Closed();
  Impl& impl = *impl_;
  const char* what = "insert schedule";
  ZB_RETURN_IF_ERROR(impl.CheckWritable(what));

  // What the rows below need to be meaningful, and what TimelineFromSchedule indexes with
  // (chunks are checked per op in the insert loop). Full semantic checks are ValidateSchedule's.
  const int num_ranks = static_cast<int>(schedule.programs.size());
  if (num_ranks != schedule.ranks) {
    return impl.Invalid(what, "schedule has " + std::to_string(schedule.ranks) + " ranks but " +
                                  std::to_string(num_ranks) + " rank programs");
  }
  for (int rank = 0; rank < num_ranks; ++rank) {
    for (int32_t stage : schedule.programs[rank].stages) {
      if (stage < 0 || stage >= schedule.costs.num_stages()) {
        return impl.Invalid(what, "ranks[" + std::to_string(rank) + "].stages: stage " +
                                      std::to_string(stage) + " has no entry in the costs (" +
                                      std::to_string(schedule.costs.num_stages()) + " stages)");
      }
    }
  }
  if (memory_limit && !(std::isfinite(*memory_limit) && *memory_limit >= 0)) {
    // NaN would be stored as NULL, i.e. silently "no limit".
    return impl.Invalid(what, "memory limit must be a finite number >= 0");
  }
  if (schedule.predicted) {
    const std::vector<double>& peaks = schedule.predicted->peak_memory;
    if (!peaks.empty() && static_cast<int>(peaks.size()) != num_ranks) {
      return impl.Invalid(what, "predicted.peak_memory has " + std::to_string(peaks.size()) +
                                    " entries for " + std::to_string(num_ranks) + " ranks");
    }
    for (double peak : peaks) {
      if (!std::isfinite(peak)) {
        return impl.Invalid(what, "predicted.peak_memory holds a value that is not finite");
      }
    }
  }

  Transaction transaction(impl);
  ZB_RETURN_IF_ERROR(transaction.BeginWrite(what));
  ZB_RETURN_IF_ERROR(impl.CheckExists("SELECT 1 FROM jobs WHERE id = ?1", job_id, what, "job"));
  const std::string profile_name =
      schedule.family.empty() ? "scheduled costs" : schedule.family + " scheduled costs";
  ZB_ASSIGN_OR_RETURN(int64_t profile_id,
                      impl.WriteCostProfile(job_id, profile_name, schedule.costs));

  int64_t schedule_id = 0;
  {
    ZB_ASSIGN_OR_RETURN(
        Statement row,
        impl.Prepare("INSERT INTO schedules (job_id, cost_profile_id, family, ranks, microbatches,"
                     " chunks, placement, memory_limit, makespan_ns, span_ns, bubble_rate,"
                     " paper_bubble_rate, num_ops, schema_version)"
                     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                     what));
    row.BindInt(1, job_id);
    row.BindInt(2, profile_id);
    row.BindText(3, schedule.family);
    row.BindInt(4, schedule.ranks);
    row.BindInt(5, schedule.microbatches);
    row.BindInt(6, schedule.chunks);
    row.BindStaticText(7, PlacementName(schedule.placement));
    row.BindOptionalDouble(8, memory_limit);
    if (schedule.predicted) {
      row.BindInt(9, schedule.predicted->makespan);
      row.BindInt(10, schedule.predicted->span);
      row.BindDouble(11, schedule.predicted->bubble_rate);
      row.BindDouble(12, schedule.predicted->paper_bubble_rate);
    } else {
      for (int column = 9; column <= 12; ++column)
        row.BindNull(column);
    }
    row.BindInt(13, schedule.num_ops());
    row.BindInt(14, kSchemaVersion);
    ZB_RETURN_IF_ERROR(impl.StepDone(row, what));
    schedule_id = sqlite3_last_insert_rowid(impl.db.get());
  }

  {
    ZB_ASSIGN_OR_RETURN(Statement rank_row, impl.Prepare("INSERT INTO schedule_ranks"
                                                         " (schedule_id, rank, stages, peak_memory)"
                                                         " VALUES (?1, ?2, ?3, ?4)",
                                                         what));
    rank_row.BindInt(1, schedule_id);
    for (int rank = 0; rank < num_ranks; ++rank) {
      rank_row.Reset();
      rank_row.BindInt(2, rank);
      rank_row.BindText(3, StagesToText(schedule.programs[rank].stages));
      if (schedule.predicted && !schedule.predicted->peak_memory.empty()) {
        rank_row.BindDouble(4, schedule.predicted->peak_memory[rank]);
      } else {
        rank_row.BindNull(4);
      }
      ZB_RETURN_IF_ERROR(
          impl.StepDone(rank_row, std::string(what) + ": rank " + std::to_string(rank)));
    }
  }

  {
    ZB_ASSIGN_OR_RETURN(Statement op_row,
                        impl.Prepare("INSERT INTO schedule_ops (schedule_id, rank, seq, kind,"
                                     " chunk, microbatch, start_ns, end_ns)"
                                     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                                     what));
    op_row.BindInt(1, schedule_id);
    for (int rank = 0; rank < num_ranks; ++rank) {
      const RankProgram& program = schedule.programs[rank];
      op_row.Reset();
      op_row.BindInt(2, rank);
      for (size_t seq = 0; seq < program.ops.size(); ++seq) {
        const Op& op = program.ops[seq];
        const std::string where =
            "ranks[" + std::to_string(rank) + "].ops[" + std::to_string(seq) + "]";
        if (op.chunk < 0 || op.chunk >= static_cast<int32_t>(program.stages.size())) {
          return impl.Invalid(what, where + ": chunk " + std::to_string(op.chunk) +
                                        " does not exist (the rank holds " +
                                        std::to_string(program.stages.size()) + " chunks)");
        }
        op_row.Reset();
        op_row.BindInt(3, static_cast<int64_t>(seq));
        op_row.BindStaticText(4, OpKindName(op.kind));
        op_row.BindInt(5, op.chunk);
        op_row.BindInt(6, op.microbatch);
        op_row.BindInt(7, op.start);
        op_row.BindInt(8, op.end);
        ZB_RETURN_IF_ERROR(impl.StepDone(op_row, std::string(what) + ": " + where));
      }
    }
  }

  if (schedule.predicted) {
    ZB_RETURN_IF_ERROR(impl.WriteTimeline(schedule_id, TimelineFromSchedule(schedule)).status());
  }
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return schedule_id;
}

Expected<Schedule> Store::LoadSchedule(int64_t id) const {
  if (!impl_) return Closed();
  const Impl& impl = *impl_;
  const std::string what = "load schedule " + std::to_string(id);
  Transaction transaction(*impl_);
  ZB_RETURN_IF_ERROR(transaction.BeginRead(what));

  Schedule schedule;
  int64_t profile_id = 0;
  int64_t num_ops = 0;
  {
    ZB_ASSIGN_OR_RETURN(
        Statement row,
        impl.Prepare("SELECT cost_profile_id, family, ranks, microbatches, chunks, placement,"
                     " makespan_ns, span_ns, bubble_rate, paper_bubble_rate, num_ops"
                     " FROM schedules WHERE id = ?1",
                     what));
    row.BindInt(1, id);
    const int rc = row.Step();
    if (rc == SQLITE_DONE) {
      return NotFound(impl.path + ": load schedule: no schedule with id " + std::to_string(id));
    }
    if (rc != SQLITE_ROW) return impl.Error(what, rc);
    profile_id = row.Int(0);
    schedule.family = row.Text(1);
    schedule.ranks = static_cast<int>(row.Int(2));
    schedule.microbatches = static_cast<int>(row.Int(3));
    schedule.chunks = static_cast<int>(row.Int(4));
    const auto placement = ParsePlacement(row.Text(5));
    if (!placement) {
      return impl.Inconsistent(what, "unknown placement '" + std::string(row.Text(5)) + "'");
    }
    schedule.placement = *placement;
    if (!row.IsNull(6)) {
      Prediction predicted;
      predicted.makespan = row.Int(6);
      predicted.span = row.Int(7);
      predicted.bubble_rate = row.Double(8);
      predicted.paper_bubble_rate = row.Double(9);
      schedule.predicted = std::move(predicted);
    }
    num_ops = row.Int(10);
  }
  ZB_ASSIGN_OR_RETURN(schedule.costs, impl.ReadCostProfile(profile_id, what));

  {
    ZB_ASSIGN_OR_RETURN(Statement ranks,
                        impl.Prepare("SELECT rank, stages, peak_memory FROM schedule_ranks"
                                     " WHERE schedule_id = ?1 ORDER BY rank",
                                     what));
    ranks.BindInt(1, id);
    std::vector<double> peaks;
    int num_null_peaks = 0;
    int rc;
    while ((rc = ranks.Step()) == SQLITE_ROW) {
      const int rank = static_cast<int>(schedule.programs.size());
      if (ranks.Int(0) != rank) {
        return impl.Inconsistent(what, "rank " + std::to_string(rank) + " is missing");
      }
      auto stages = StagesFromText(ranks.Text(1));
      if (!stages) {
        return impl.Inconsistent(what, "rank " + std::to_string(rank) + " has stages '" +
                                           std::string(ranks.Text(1)) +
                                           "', not a JSON array of integers");
      }
      schedule.programs.push_back({std::move(*stages), {}});
      if (ranks.IsNull(2)) {
        ++num_null_peaks;
      } else {
        peaks.push_back(ranks.Double(2));
      }
    }
    if (rc != SQLITE_DONE) return impl.Error(what, rc);
    if (static_cast<int>(schedule.programs.size()) != schedule.ranks) {
      return impl.Inconsistent(what, "expected " + std::to_string(schedule.ranks) +
                                         " ranks, found " +
                                         std::to_string(schedule.programs.size()));
    }
    if (schedule.predicted) {
      // All NULL: the prediction had no per-rank peaks; all set: one per rank.
      if (num_null_peaks != 0 && !peaks.empty()) {
        return impl.Inconsistent(what, "peak memory is set for some ranks only");
      }
      schedule.predicted->peak_memory = std::move(peaks);
    }
  }

  {
    ZB_ASSIGN_OR_RETURN(Statement ops,
                        impl.Prepare("SELECT rank, kind, chunk, microbatch, start_ns, end_ns"
                                     " FROM schedule_ops WHERE schedule_id = ?1"
                                     " ORDER BY rank, seq",
                                     what));
    ops.BindInt(1, id);
    int64_t count = 0;
    int rc;
    while ((rc = ops.Step()) == SQLITE_ROW) {
      const int64_t rank = ops.Int(0);
      if (rank < 0 || rank >= schedule.ranks) {
        return impl.Inconsistent(what, "op of unknown rank " + std::to_string(rank));
      }
      const auto kind = ParseOpKind(ops.Text(1));
      if (!kind) {
        return impl.Inconsistent(what, "unknown op kind '" + std::string(ops.Text(1)) + "'");
      }
      schedule.programs[rank].ops.push_back({*kind, static_cast<int32_t>(ops.Int(2)),
                                             static_cast<int32_t>(ops.Int(3)), ops.Int(4),
                                             ops.Int(5)});
      ++count;
    }
    if (rc != SQLITE_DONE) return impl.Error(what, rc);
    if (count != num_ops) {
      return impl.Inconsistent(
          what, "expected " + std::to_string(num_ops) + " ops, found " + std::to_string(count));
    }
  }
  return schedule;
}

Expected<std::vector<ScheduleInfo>> Store::ListSchedules() const {
  if (!impl_) return Closed();
  const Impl& impl = *impl_;
  const char* what = "list schedules";
  Transaction transaction(*impl_);
  ZB_RETURN_IF_ERROR(transaction.BeginRead(what));
  ZB_ASSIGN_OR_RETURN(
      Statement rows,
      impl.Prepare("SELECT s.id, c.name, j.name, s.family, s.ranks, s.microbatches, s.chunks,"
                   " s.placement, s.memory_limit, s.makespan_ns, s.span_ns, s.bubble_rate,"
                   " s.paper_bubble_rate, s.num_ops, s.created_at"
                   " FROM schedules s JOIN jobs j ON j.id = s.job_id"
                   " JOIN clusters c ON c.id = j.cluster_id ORDER BY s.id",
                   what));
  ZB_ASSIGN_OR_RETURN(Statement peaks,
                      impl.Prepare("SELECT peak_memory FROM schedule_ranks"
                                   " WHERE schedule_id = ?1 AND peak_memory IS NOT NULL"
                                   " ORDER BY rank",
                                   what));
  std::vector<ScheduleInfo> infos;
  int rc;
  while ((rc = rows.Step()) == SQLITE_ROW) {
    ScheduleInfo info;
    info.id = rows.Int(0);
    info.cluster = rows.Text(1);
    info.job = rows.Text(2);
    info.family = rows.Text(3);
    info.ranks = static_cast<int>(rows.Int(4));
    info.microbatches = static_cast<int>(rows.Int(5));
    info.chunks = static_cast<int>(rows.Int(6));
    const auto placement = ParsePlacement(rows.Text(7));
    if (!placement) {
      return impl.Inconsistent(what, "schedule " + std::to_string(info.id) +
                                         " has unknown placement '" + std::string(rows.Text(7)) +
                                         "'");
    }
    info.placement = *placement;
    info.memory_limit = rows.OptionalDouble(8);
    if (!rows.IsNull(9)) {
      info.predicted.makespan = rows.Int(9);
      info.predicted.span = rows.Int(10);
      info.predicted.bubble_rate = rows.Double(11);
      info.predicted.paper_bubble_rate = rows.Double(12);
      peaks.Reset();
      peaks.BindInt(1, info.id);
      int peak_rc;
      while ((peak_rc = peaks.Step()) == SQLITE_ROW) {
        info.predicted.peak_memory.push_back(peaks.Double(0));
      }
      if (peak_rc != SQLITE_DONE) return impl.Error(what, peak_rc);
    }
    info.num_ops = rows.Int(13);
    info.created_at = rows.Text(14);
    infos.push_back(std::move(info));
  }
  if (rc != SQLITE_DONE) return impl.Error(what, rc);
  return infos;
}

// ---- Timelines -------------------------------------------------------------------------------

Expected<int64_t> Store::Impl::WriteTimeline(std::optional<int64_t> schedule_id,
                                             const Timeline& timeline,
                                             std::optional<int64_t> run_id) {
  const std::string what = "insert timeline";
  int64_t timeline_id = 0;
  {
    ZB_ASSIGN_OR_RETURN(Statement row,
                        Prepare("INSERT INTO timelines (schedule_id, kind, num_ops, schema_version,"
                                " run_id) VALUES (?1, ?2, ?3, ?4, ?5)",
                                what));
    row.BindOptionalInt(1, schedule_id);
    row.BindStaticText(2, TimelineKindName(timeline.kind));
    row.BindInt(3, static_cast<int64_t>(timeline.ops.size()));
    row.BindInt(4, Store::kSchemaVersion);
    row.BindOptionalInt(5, run_id);
    ZB_RETURN_IF_ERROR(StepDone(row, what));
    timeline_id = sqlite3_last_insert_rowid(db.get());
  }
  ZB_RETURN_IF_ERROR(InsertChildRows(
      *this,
      "INSERT INTO timeline_ops (timeline_id, seq, rank, stage, kind, microbatch, start_ns,"
      " end_ns) VALUES ",
      7, timeline_id, timeline.ops.size(),
      [&](Statement& stmt, int param, size_t index) {
        const TimelineOp& op = timeline.ops[index];
        stmt.BindInt(param, static_cast<int64_t>(index));
        stmt.BindInt(param + 1, op.rank);
        stmt.BindInt(param + 2, op.stage);
        stmt.BindStaticText(param + 3, OpKindName(op.kind));
        stmt.BindInt(param + 4, op.microbatch);
        stmt.BindInt(param + 5, op.start);
        stmt.BindInt(param + 6, op.end);
      },
      what, "op"));
  ZB_RETURN_IF_ERROR(InsertChildRows(
      *this, "INSERT INTO memory_samples (timeline_id, seq, rank, t_ns, memory) VALUES ", 4,
      timeline_id, timeline.memory.size(),
      [&](Statement& stmt, int param, size_t index) {
        const MemorySample& sample = timeline.memory[index];
        stmt.BindInt(param, static_cast<int64_t>(index));
        stmt.BindInt(param + 1, sample.rank);
        stmt.BindInt(param + 2, sample.time);
        stmt.BindDouble(param + 3, sample.memory);
      },
      what, "memory sample"));
  return timeline_id;
}

Expected<int64_t> Store::InsertTimeline(std::optional<int64_t> schedule_id,
                                        const Timeline& timeline) {
  if (!impl_) return Closed();
  const char* what = "insert timeline";
  ZB_RETURN_IF_ERROR(impl_->CheckWritable(what));
  Transaction transaction(*impl_);
  ZB_RETURN_IF_ERROR(transaction.BeginWrite(what));
  if (schedule_id) {
    ZB_RETURN_IF_ERROR(impl_->CheckExists("SELECT 1 FROM schedules WHERE id = ?1", *schedule_id,
                                          what, "schedule"));
  }
  ZB_ASSIGN_OR_RETURN(int64_t id, impl_->WriteTimeline(schedule_id, timeline));
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

Expected<int64_t> Store::InsertRunTimeline(int64_t run_id, const Timeline& timeline) {
  if (!impl_) return Closed();
  const char* what = "insert timeline";
  ZB_RETURN_IF_ERROR(impl_->CheckWritable(what));
  Transaction transaction(*impl_);
  ZB_RETURN_IF_ERROR(transaction.BeginWrite(what));
  ZB_RETURN_IF_ERROR(impl_->CheckExists("SELECT 1 FROM runs WHERE id = ?1", run_id, what, "run"));
  ZB_ASSIGN_OR_RETURN(int64_t id, impl_->WriteTimeline(std::nullopt, timeline, run_id));
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

Expected<Timeline> Store::LoadTimeline(int64_t id) const {
  if (!impl_) return Closed();
  const Impl& impl = *impl_;
  const std::string what = "load timeline " + std::to_string(id);
  Transaction transaction(*impl_);
  ZB_RETURN_IF_ERROR(transaction.BeginRead(what));

  Timeline timeline;
  int64_t num_ops = 0;
  {
    ZB_ASSIGN_OR_RETURN(Statement row,
                        impl.Prepare("SELECT kind, num_ops FROM timelines WHERE id = ?1", what));
    row.BindInt(1, id);
    const int rc = row.Step();
    if (rc == SQLITE_DONE) {
      return NotFound(impl.path + ": load timeline: no timeline with id " + std::to_string(id));
    }
    if (rc != SQLITE_ROW) return impl.Error(what, rc);
    const auto kind = ParseTimelineKind(row.Text(0));
    if (!kind) {
      return impl.Inconsistent(what, "unknown timeline kind '" + std::string(row.Text(0)) + "'");
    }
    timeline.kind = *kind;
    num_ops = row.Int(1);
  }
  {
    // One ordered range scan of the primary key; the stored count sizes the vector up front.
    ZB_ASSIGN_OR_RETURN(Statement ops,
                        impl.Prepare("SELECT rank, stage, kind, microbatch, start_ns, end_ns"
                                     " FROM timeline_ops WHERE timeline_id = ?1 ORDER BY seq",
                                     what));
    ops.BindInt(1, id);
    if (num_ops > 0) timeline.ops.reserve(static_cast<size_t>(num_ops));
    int rc;
    while ((rc = ops.Step()) == SQLITE_ROW) {
      const auto kind = ParseOpKind(ops.Text(2));
      if (!kind) {
        return impl.Inconsistent(what, "unknown op kind '" + std::string(ops.Text(2)) + "'");
      }
      timeline.ops.push_back({static_cast<int32_t>(ops.Int(0)), static_cast<int32_t>(ops.Int(1)),
                              *kind, static_cast<int32_t>(ops.Int(3)), ops.Int(4), ops.Int(5)});
    }
    if (rc != SQLITE_DONE) return impl.Error(what, rc);
    if (static_cast<int64_t>(timeline.ops.size()) != num_ops) {
      return impl.Inconsistent(what, "expected " + std::to_string(num_ops) + " ops, found " +
                                         std::to_string(timeline.ops.size()));
    }
  }
  {
    ZB_ASSIGN_OR_RETURN(Statement samples,
                        impl.Prepare("SELECT rank, t_ns, memory FROM memory_samples"
                                     " WHERE timeline_id = ?1 ORDER BY seq",
                                     what));
    samples.BindInt(1, id);
    int rc;
    while ((rc = samples.Step()) == SQLITE_ROW) {
      timeline.memory.push_back(
          {static_cast<int32_t>(samples.Int(0)), samples.Int(1), samples.Double(2)});
    }
    if (rc != SQLITE_DONE) return impl.Error(what, rc);
  }
  return timeline;
}

Expected<std::vector<TimelineInfo>> Store::ListTimelines() const {
  if (!impl_) return Closed();
  const char* what = "list timelines";
  ZB_ASSIGN_OR_RETURN(Statement rows,
                      impl_->Prepare("SELECT id, schedule_id, kind, num_ops, created_at, run_id"
                                     " FROM timelines ORDER BY id",
                                     what));
  std::vector<TimelineInfo> infos;
  int rc;
  while ((rc = rows.Step()) == SQLITE_ROW) {
    TimelineInfo info;
    info.id = rows.Int(0);
    if (!rows.IsNull(1)) info.schedule_id = rows.Int(1);
    const auto kind = ParseTimelineKind(rows.Text(2));
    if (!kind) {
      return impl_->Inconsistent(what, "timeline " + std::to_string(info.id) +
                                           " has unknown kind '" + std::string(rows.Text(2)) + "'");
    }
    info.kind = *kind;
    info.num_ops = rows.Int(3);
    info.created_at = rows.Text(4);
    if (!rows.IsNull(5)) info.run_id = rows.Int(5);
    infos.push_back(std::move(info));
  }
  if (rc != SQLITE_DONE) return impl_->Error(what, rc);
  return infos;
}

// ---- Runs ------------------------------------------------------------------------------------

Expected<int64_t> Store::InsertRun(int64_t job_id, const std::string& kind,
                                   const std::string& command, std::optional<int> exit_code,
                                   std::optional<int64_t> schedule_id) {
  if (!impl_) return Closed();
  const char* what = "insert run";
  ZB_RETURN_IF_ERROR(impl_->CheckWritable(what));
  if (kind != "profile" && kind != "import" && kind != "replay") {
    return impl_->Invalid(what, "run kind must be profile, import or replay, got '" + kind + "'");
  }
  Transaction transaction(*impl_);
  ZB_RETURN_IF_ERROR(transaction.BeginWrite(what));
  ZB_RETURN_IF_ERROR(impl_->CheckExists("SELECT 1 FROM jobs WHERE id = ?1", job_id, what, "job"));
  if (schedule_id) {
    ZB_RETURN_IF_ERROR(impl_->CheckExists("SELECT 1 FROM schedules WHERE id = ?1", *schedule_id,
                                          what, "schedule"));
  }
  ZB_ASSIGN_OR_RETURN(Statement row,
                      impl_->Prepare("INSERT INTO runs (job_id, kind, schedule_id, command,"
                                     " exit_code, schema_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                                     what));
  row.BindInt(1, job_id);
  row.BindText(2, kind);
  row.BindOptionalInt(3, schedule_id);
  row.BindText(4, command);
  row.BindOptionalInt(5, exit_code ? std::optional<int64_t>(*exit_code) : std::nullopt);
  row.BindInt(6, kSchemaVersion);
  ZB_RETURN_IF_ERROR(impl_->StepDone(row, what));
  const int64_t id = sqlite3_last_insert_rowid(impl_->db.get());
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

Expected<std::vector<RunInfo>> Store::ListRuns() const {
  if (!impl_) return Closed();
  const char* what = "list runs";
  ZB_ASSIGN_OR_RETURN(Statement rows,
                      impl_->Prepare("SELECT id, job_id, kind, schedule_id, command, exit_code,"
                                     " started_at FROM runs ORDER BY id",
                                     what));
  std::vector<RunInfo> infos;
  int rc;
  while ((rc = rows.Step()) == SQLITE_ROW) {
    RunInfo info;
    info.id = rows.Int(0);
    info.job_id = rows.Int(1);
    info.kind = rows.Text(2);
    if (!rows.IsNull(3)) info.schedule_id = rows.Int(3);
    info.command = rows.Text(4);
    if (!rows.IsNull(5)) info.exit_code = static_cast<int>(rows.Int(5));
    info.started_at = rows.Text(6);
    infos.push_back(std::move(info));
  }
  if (rc != SQLITE_DONE) return impl_->Error(what, rc);
  return infos;
}

}  // namespace zb
