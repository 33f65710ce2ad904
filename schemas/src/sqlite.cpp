// SPDX-License-Identifier: Apache-2.0
// sqlite.h on the sqlite3 C API.
#include "zbkit/schemas/sqlite.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <utility>

namespace zb::sqlite {

// What a Statement needs of its connection to describe an error. Heap-allocated by Connection so
// that it stays put when the Connection is moved.
struct Statement::Owner {
  sqlite3* db = nullptr;
  std::string path;
  // Transaction objects open on the connection (the outermost and its savepoints).
  int open_transactions = 0;

  Owner() = default;
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;
  // The handle goes with its owner, however the Connection lets go of it: destroyed, or assigned
  // another connection (a defaulted move assignment used to drop the old handle unclosed: found
  // by LeakSanitizer, scripts/sanitize.sh). close_v2 so that the handle is released even if a
  // statement were still alive.
  ~Owner() {
    if (db != nullptr) sqlite3_close_v2(db);
  }

  Status Error(std::string_view what, int rc) const {
    const char* message = sqlite3_errstr(rc);
    if (db != nullptr && sqlite3_errcode(db) == (rc & 0xff)) message = sqlite3_errmsg(db);
    return StoreError(OneLine(path + ": " + std::string(what) + ": " + message));
  }
};

std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return text;
}

// ---- Statement -------------------------------------------------------------------------------

Statement::Statement(Statement&& other) noexcept
    : owner_(other.owner_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      bind_rc_(other.bind_rc_),
      last_rc_(other.last_rc_) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    owner_ = other.owner_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    bind_rc_ = other.bind_rc_;
    last_rc_ = other.last_rc_;
  }
  return *this;
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

void Statement::Check(int rc) {
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void Statement::BindInt(int index, int64_t value) {
  Check(sqlite3_bind_int64(stmt_, index, value));
}
void Statement::BindInts(int first, std::initializer_list<int64_t> values) {
  for (int64_t value : values)
    BindInt(first++, value);
}
void Statement::BindDouble(int index, double value) {
  Check(sqlite3_bind_double(stmt_, index, value));
}
void Statement::BindNull(int index) {
  Check(sqlite3_bind_null(stmt_, index));
}
void Statement::BindText(int index, std::string_view text) {
  Check(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()),
                          SQLITE_TRANSIENT));
}
void Statement::BindStaticText(int index, std::string_view text) {
  Check(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC));
}
void Statement::BindOptional(int index, const std::optional<int64_t>& value) {
  if (value) {
    BindInt(index, *value);
  } else {
    BindNull(index);
  }
}
void Statement::BindOptional(int index, const std::optional<double>& value) {
  if (value) {
    BindDouble(index, *value);
  } else {
    BindNull(index);
  }
}
void Statement::BindOptional(int index, const std::optional<std::string_view>& value) {
  if (value) {
    BindText(index, *value);
  } else {
    BindNull(index);
  }
}

Expected<bool> Statement::Step(std::string_view what) {
  last_rc_ = bind_rc_ != SQLITE_OK ? bind_rc_ : sqlite3_step(stmt_);
  if (last_rc_ == SQLITE_ROW) return true;
  if (last_rc_ == SQLITE_DONE) return false;
  return Error(what);
}

Status Statement::Run(std::string_view what) {
  return TryRun() ? Status::Ok() : Error(what);
}

bool Statement::TryRun() {
  last_rc_ = bind_rc_ != SQLITE_OK ? bind_rc_ : sqlite3_step(stmt_);
  return last_rc_ == SQLITE_DONE;
}

Status Statement::Error(std::string_view what) const {
  if (last_rc_ == SQLITE_ROW) {
    return StoreError(OneLine(owner_->path + ": " + std::string(what) +
                              ": the statement returned rows where none were expected"));
  }
  return owner_->Error(what, last_rc_);
}

bool Statement::constraint_failed() const {
  return (last_rc_ & 0xff) == SQLITE_CONSTRAINT;
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  bind_rc_ = SQLITE_OK;
}

int64_t Statement::Int(int column) const {
  return sqlite3_column_int64(stmt_, column);
}
double Statement::Double(int column) const {
  return sqlite3_column_double(stmt_, column);
}
bool Statement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
std::string_view Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return {};
  return {reinterpret_cast<const char*>(text),
          static_cast<size_t>(sqlite3_column_bytes(stmt_, column))};
}
std::optional<int64_t> Statement::OptionalInt(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Int(column);
}
std::optional<double> Statement::OptionalDouble(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Double(column);
}

// ---- Connection ------------------------------------------------------------------------------

Connection::Connection() : state_(std::make_unique<Statement::Owner>()) {}
Connection::Connection(Connection&& other) noexcept = default;
Connection& Connection::operator=(Connection&& other) noexcept = default;

Connection::~Connection() = default;

Expected<Connection> Connection::Open(const std::string& path, OpenMode mode, std::string_view what,
                                      bool no_mutex, int busy_timeout_ms) {
  Connection conn;
  conn.state_->path = path;
  int flags = mode == OpenMode::kReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (mode == OpenMode::kReadWriteCreate) {
    flags |= SQLITE_OPEN_CREATE;
    // Stores and shards hold a job's timings and command lines: a file zbkit creates is the
    // user's alone (0600; SQLite gives its -wal and -shm files the same mode). An existing file
    // keeps its mode. An empty file is what SQLite would create itself.
    const bool special = path.empty() || path[0] == ':' || path.rfind("file:", 0) == 0;
    const int fd =
        special ? -1 : ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
  }
  if (no_mutex) flags |= SQLITE_OPEN_NOMUTEX;
  // A handle is returned even on failure; the Connection closes it.
  const int rc = sqlite3_open_v2(path.c_str(), &conn.state_->db, flags, nullptr);
  if (rc != SQLITE_OK) return conn.Error(what, rc);
  sqlite3_busy_timeout(conn.state_->db, busy_timeout_ms);
  return conn;
}

const std::string& Connection::path() const {
  return state_->path;
}

bool Connection::is_open() const {
  return state_ && state_->db != nullptr;
}

sqlite3* Connection::get() const {
  return state_ ? state_->db : nullptr;
}

Status Connection::UseWal(std::string_view what, bool required) {
  ZB_ASSIGN_OR_RETURN(Statement journal, Prepare("PRAGMA journal_mode = WAL", what));
  ZB_ASSIGN_OR_RETURN(bool row, journal.Step(what));
  const std::string_view mode = row ? journal.Text(0) : std::string_view();
  if (required && mode != "wal" && mode != "memory") {
    return StoreError(path() + ": " + std::string(what) +
                      ": cannot use the WAL journal (SQLite kept '" + std::string(mode) +
                      "'; is the file on a network file system?)");
  }
  return Exec("PRAGMA synchronous = NORMAL", what);
}

Status Connection::EnableForeignKeys(std::string_view what) {
  return Exec("PRAGMA foreign_keys = ON", what);
}

Expected<Statement> Connection::Prepare(std::string_view sql, std::string_view what) const {
  sqlite3_stmt* stmt = nullptr;
  const int rc =
      sqlite3_prepare_v2(get(), sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return Error(what, rc);
  }
  return Statement(state_.get(), stmt);
}

Status Connection::Exec(const char* sql, std::string_view what) {
  const int rc = sqlite3_exec(get(), sql, nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? Status::Ok() : Error(what, rc);
}

Expected<int64_t> Connection::QueryInt(std::string_view sql, std::string_view what) const {
  ZB_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql, what));
  ZB_ASSIGN_OR_RETURN(bool row, stmt.Step(what));
  if (!row) {
    return StoreError(path() + ": " + std::string(what) + ": the query returned no row");
  }
  return stmt.Int(0);
}

int64_t Connection::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(get());
}

bool Connection::in_transaction() const {
  return get() != nullptr && !sqlite3_get_autocommit(get());
}

Status Connection::Error(std::string_view what, int rc) const {
  return state_->Error(what, rc);
}

void Connection::Abandon() {
  if (state_) state_->db = nullptr;
}

// ---- Transaction -----------------------------------------------------------------------------

namespace {
// One name serves every depth: ROLLBACK TO and RELEASE act on the most recent savepoint of the
// name, which is always the innermost open Transaction's.
constexpr const char* kBeginSavepoint = "SAVEPOINT zbkit_nested";
constexpr const char* kReleaseSavepoint = "RELEASE zbkit_nested";
constexpr const char* kUndoSavepoint = "ROLLBACK TO zbkit_nested; RELEASE zbkit_nested";
}  // namespace

Expected<Transaction> Transaction::Begin(Connection& conn, Kind kind, std::string_view what) {
  if (!conn.state_) return StoreError(std::string(what) + ": the connection is closed");
  int& open = conn.state_->open_transactions;
  if (conn.in_transaction()) {
    ZB_RETURN_IF_ERROR(conn.Exec(kBeginSavepoint, std::string(what) + ": begin savepoint"));
    ++open;
    return Transaction(&conn, true);
  }
  if (open > 0) {
    return StoreError(conn.path() + ": " + std::string(what) +
                      ": the enclosing transaction was rolled back by SQLite after an error; "
                      "nothing more is written");
  }
  ZB_RETURN_IF_ERROR(conn.Exec(kind == Kind::kWrite ? "BEGIN IMMEDIATE" : "BEGIN",
                               std::string(what) + ": begin transaction"));
  ++open;
  return Transaction(&conn, false);
}

Transaction::Transaction(Transaction&& other) noexcept
    : conn_(std::exchange(other.conn_, nullptr)), nested_(other.nested_) {}

Transaction::~Transaction() {
  if (conn_ == nullptr) return;
  if (conn_->state_) --conn_->state_->open_transactions;
  // Some errors (SQLITE_FULL, IOERR, ...) already rolled back the whole transaction, savepoints
  // included; a second ROLLBACK would fail.
  if (!conn_->in_transaction()) return;
  if (nested_) {
    sqlite3_exec(conn_->get(), kUndoSavepoint, nullptr, nullptr, nullptr);
  } else {
    sqlite3_exec(conn_->get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

Status Transaction::Commit(std::string_view what) {
  if (conn_ == nullptr) return InternalError("commit of a transaction that is not open");
  if (nested_) {
    ZB_RETURN_IF_ERROR(conn_->Exec(kReleaseSavepoint, std::string(what) + ": release savepoint"));
  } else {
    ZB_RETURN_IF_ERROR(conn_->Exec("COMMIT", std::string(what) + ": commit"));
  }
  if (conn_->state_) --conn_->state_->open_transactions;
  conn_ = nullptr;
  return Status::Ok();
}

// ---- BatchInserter ---------------------------------------------------------------------------

namespace {
// <head> (?1, .., ?S, ?S+1, ..), (?1, .., ?S, ..), ... with `rows` groups.
std::string BatchSql(std::string_view head, int shared_params, int row_params, size_t rows) {
  std::string sql(head);
  int param = shared_params + 1;
  for (size_t row = 0; row < rows; ++row) {
    sql += row == 0 ? "(" : ", (";
    for (int column = 0; column < shared_params + row_params; ++column) {
      if (column > 0) sql += ", ";
      sql += '?';
      sql += std::to_string(column < shared_params ? column + 1 : param++);
    }
    sql += ')';
  }
  return sql;
}
}  // namespace

Expected<BatchInserter> BatchInserter::Prepare(const Connection& conn, std::string_view head,
                                               int shared_params, int row_params,
                                               std::string_view what) {
  BatchInserter inserter;
  inserter.conn_ = &conn;
  inserter.shared_params_ = shared_params;
  inserter.row_params_ = row_params;
  ZB_ASSIGN_OR_RETURN(inserter.batch_,
                      conn.Prepare(BatchSql(head, shared_params, row_params, kRowsPerBatch), what));
  ZB_ASSIGN_OR_RETURN(inserter.single_,
                      conn.Prepare(BatchSql(head, shared_params, row_params, 1), what));
  return inserter;
}

bool BatchInserter::CanReplay() const {
  // After a constraint error only the failing statement is undone and the transaction stays
  // open; other errors may have ended it.
  return batch_.constraint_failed() && conn_->in_transaction();
}

Status BatchInserter::RowError(std::string_view what, std::string_view noun, size_t row) const {
  return single_.Error(std::string(what) + ": " + std::string(noun) + " " + std::to_string(row));
}

Status BatchInserter::BatchError(std::string_view what, std::string_view noun, size_t first,
                                 size_t count) const {
  return batch_.Error(std::string(what) + ": " + std::string(noun) + "s " + std::to_string(first) +
                      ".." + std::to_string(first + count - 1));
}

}  // namespace zb::sqlite
