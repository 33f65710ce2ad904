// SPDX-License-Identifier: Apache-2.0
// The one SQLite layer of zbkit: the store (store.h) and the profiler's per-rank shards are both
// written through it.
//
//  - Connection: one sqlite3 handle and its file name; opening, the WAL journal, foreign keys
//    and the busy timeout are separate steps, so that a caller can inspect the header of a file
//    before changing anything in it.
//  - Statement: one prepared statement. Values are bound by index; a failed bind is remembered
//    and reported by the next step, so a row's binds read as straight-line code.
//  - Transaction: RAII; Commit() commits, destruction without it rolls back. Begun while the
//    connection is already inside a transaction it is a savepoint of that one (nested): its
//    Commit releases the savepoint, its rollback undoes only what it wrote, and nothing is
//    durable until the outermost commits. That is how one store call can run inside another's
//    transaction (Store::WriteAtomically).
//  - BatchInserter: many child rows through multi-row INSERTs (kRowsPerBatch rows bound per
//    statement), for the tables that take up to millions of rows.
//  - Query / QueryInto / QueryFirst / ForEachRow: a SELECT as one call, one mapper per row.
//
// SQL text is always a constant of the caller; every value goes through a bound parameter.
// Nothing throws; every error is a one-line Status "<file>: <what>: <SQLite's message>"
// (kStore). A Statement or Transaction must not outlive its Connection; a Connection may be moved
// while they exist (its state stays where it is).
#ifndef ZBKIT_SCHEMAS_SQLITE_H_
#define ZBKIT_SCHEMAS_SQLITE_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "zbkit/schemas/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace zb::sqlite {

// Replaces line breaks and tabs (SQLite quotes multi-line CHECK expressions): errors are one line.
std::string OneLine(std::string text);

class Connection;

class Statement {
 public:
  Statement() = default;
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  explicit operator bool() const { return stmt_ != nullptr; }

  void BindInt(int index, int64_t value);
  // Binds `values` to the parameters first, first + 1, ...: one call for a row of integers.
  void BindInts(int first, std::initializer_list<int64_t> values);
  void BindDouble(int index, double value);
  void BindNull(int index);
  // Copies the text.
  void BindText(int index, std::string_view text);
  // Does not copy: `text` must stay alive and unchanged until the statement is reset (op kind
  // names, or rows of a batch that outlives the step).
  void BindStaticText(int index, std::string_view text);
  void BindOptional(int index, const std::optional<int64_t>& value);
  void BindOptional(int index, const std::optional<double>& value);
  void BindOptional(int index, const std::optional<std::string_view>& value);

  // true: a row is ready; false: the statement is done. The error names `what`.
  Expected<bool> Step(std::string_view what);
  // Runs a statement that returns no rows (an INSERT, UPDATE, DDL).
  Status Run(std::string_view what);
  // The hot-path form of Run: true when done; otherwise Error(what) describes the failure.
  bool TryRun();
  // The error of the last Step/Run/TryRun, "<file>: <what>: <message>".
  Status Error(std::string_view what) const;
  // The last step failed on a constraint (CHECK, NOT NULL, UNIQUE, FOREIGN KEY).
  bool constraint_failed() const;
  // Readies the statement for another run. Bindings are kept (SQLite does not clear them), so a
  // value shared by every row is bound once.
  void Reset();

  int64_t Int(int column) const;
  double Double(int column) const;
  bool IsNull(int column) const;
  // Valid until the next step, reset or column call on this statement.
  std::string_view Text(int column) const;
  std::optional<int64_t> OptionalInt(int column) const;
  std::optional<double> OptionalDouble(int column) const;

 private:
  friend class Connection;
  struct Owner;
  Statement(const Owner* owner, sqlite3_stmt* stmt) : owner_(owner), stmt_(stmt) {}
  void Check(int rc);

  const Owner* owner_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  int bind_rc_ = 0;
  int last_rc_ = 0;
};

enum class OpenMode {
  kReadWriteCreate,  // create the file if missing
  kReadWrite,        // the file must exist
  kReadOnly,
};

class Connection {
 public:
  static constexpr int kDefaultBusyTimeoutMs = 5000;

  // Opens (and with kReadWriteCreate creates) `path` and sets the busy timeout. Nothing in the
  // file is read or changed yet. `no_mutex`: the caller serializes every use of the connection
  // and its statements, so SQLite's own per-connection mutex is skipped.
  static Expected<Connection> Open(const std::string& path, OpenMode mode, std::string_view what,
                                   bool no_mutex = false,
                                   int busy_timeout_ms = kDefaultBusyTimeoutMs);

  Connection();
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  const std::string& path() const;
  bool is_open() const;

  // WAL journal (readers never block the writer) with synchronous = NORMAL (in WAL mode a crash
  // cannot corrupt the file; a power cut can only drop the last commits). With `required`, a file
  // system that keeps another journal mode is an error that says so.
  Status UseWal(std::string_view what, bool required = true);
  Status EnableForeignKeys(std::string_view what);

  Expected<Statement> Prepare(std::string_view sql, std::string_view what) const;
  // Runs constant SQL text, possibly several statements (DDL, migrations, PRAGMAs). Values never
  // go through here: they are bound through Prepare.
  Status Exec(const char* sql, std::string_view what);
  // The first column of the first row of `sql` as an integer (a PRAGMA, a count).
  Expected<int64_t> QueryInt(std::string_view sql, std::string_view what) const;

  int64_t last_insert_rowid() const;
  // A transaction is open (SQLite may have rolled it back itself after some errors).
  bool in_transaction() const;

  // "<file>: <what>: <message>" for result code `rc`, using the connection's message when it
  // describes that failure (it carries the constraint's name).
  Status Error(std::string_view what, int rc) const;

  // Gives up the handle without closing it: a forked child must not checkpoint or delete the WAL
  // of the parent's connection.
  void Abandon();

  // The raw handle, for the few calls this layer does not wrap.
  sqlite3* get() const;

 private:
  friend class Transaction;  // counts the transactions open on the connection in its state
  std::unique_ptr<Statement::Owner> state_;
};

class Transaction {
 public:
  enum class Kind {
    // BEGIN: one snapshot for a multi-statement read.
    kRead,
    // BEGIN IMMEDIATE: takes the write lock up front. A deferred transaction that reads first and
    // then upgrades can fail with SQLITE_BUSY_SNAPSHOT in WAL mode, which the busy timeout does not
    // retry; waiting for the lock at BEGIN is what busy_timeout handles.
    kWrite,
  };

  // A transaction of its own, or a savepoint when `conn` is already in one (then `kind` is the
  // outer transaction's: a write inside a read transaction may fail with SQLITE_BUSY_SNAPSHOT).
  // kStore when a Transaction of `conn` is still open but SQLite already rolled its transaction
  // back (SQLITE_FULL, IOERR, ...): what is begun now must not commit on its own, outside it.
  static Expected<Transaction> Begin(Connection& conn, Kind kind, std::string_view what);

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&& other) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  // Rolls back unless committed, so every early `return error` leaves the file as it was.
  ~Transaction();

  Status Commit(std::string_view what);

 private:
  Transaction(Connection* conn, bool nested) : conn_(conn), nested_(nested) {}
  Connection* conn_ = nullptr;
  bool nested_ = false;  // a savepoint inside the connection's open transaction
};

// Inserts rows of one table kRowsPerBatch at a time: with one row per statement most of the time
// goes into opening and closing the table cursor (64 rows per statement measured 2.3x faster on
// 1M timeline ops). The statement is
//   <head> (?1, .., ?S, <R row parameters>), (?1, .., ?S, <R more>), ...
// where the S shared parameters (a parent id) are bound once with BindShared and every row binds
// its R values. Prepare once, Insert as often as needed (inside the caller's transaction).
class BatchInserter {
 public:
  static constexpr size_t kRowsPerBatch = 64;

  // `head` is "INSERT INTO t (col, ...) VALUES ".
  static Expected<BatchInserter> Prepare(const Connection& conn, std::string_view head,
                                         int shared_params, int row_params, std::string_view what);

  BatchInserter() = default;

  void BindShared(int index, int64_t value) {
    batch_.BindInt(index, value);
    single_.BindInt(index, value);
  }

  // Inserts rows 0..num_rows-1; bind(stmt, first_param, row) binds row `row` at parameters
  // first_param..first_param+row_params-1. A failing batch is undone on its own; after a
  // constraint error its rows are replayed one at a time, so that the error names the row at
  // fault ("<what>: <noun> 17: CHECK constraint failed: ..."), not just its batch.
  template <typename BindRow>
  Status Insert(size_t num_rows, const BindRow& bind, std::string_view what, std::string_view noun);

 private:
  template <typename BindRow>
  Status ReplaySingly(size_t first, size_t count, const BindRow& bind, std::string_view what,
                      std::string_view noun, Status batch_error);
  Status RowError(std::string_view what, std::string_view noun, size_t row) const;
  Status BatchError(std::string_view what, std::string_view noun, size_t first, size_t count) const;
  bool CanReplay() const;

  const Connection* conn_ = nullptr;
  Statement batch_;
  Statement single_;
  int shared_params_ = 0;
  int row_params_ = 0;
};

template <typename BindRow>
Status BatchInserter::Insert(size_t num_rows, const BindRow& bind, std::string_view what,
                             std::string_view noun) {
  size_t first = 0;
  for (; num_rows - first >= kRowsPerBatch; first += kRowsPerBatch) {
    batch_.Reset();
    for (size_t row = 0; row < kRowsPerBatch; ++row) {
      bind(batch_, shared_params_ + 1 + static_cast<int>(row) * row_params_, first + row);
    }
    if (!batch_.TryRun()) {
      Status error = BatchError(what, noun, first, kRowsPerBatch);
      if (!CanReplay()) return error;
      return ReplaySingly(first, kRowsPerBatch, bind, what, noun, std::move(error));
    }
  }
  for (; first < num_rows; ++first) {
    single_.Reset();
    bind(single_, shared_params_ + 1, first);
    if (!single_.TryRun()) return RowError(what, noun, first);
  }
  return Status::Ok();
}

template <typename BindRow>
Status BatchInserter::ReplaySingly(size_t first, size_t count, const BindRow& bind,
                                   std::string_view what, std::string_view noun,
                                   Status batch_error) {
  for (size_t row = first; row < first + count; ++row) {
    single_.Reset();
    bind(single_, shared_params_ + 1, row);
    if (!single_.TryRun()) return RowError(what, noun, row);
  }
  return batch_error;  // only the batch failed (e.g. a row conflicting with another of it)
}

// ---- Queries ---------------------------------------------------------------------------------

// A binder for queries without parameters.
inline constexpr auto kNoParams = [](Statement&) {};

namespace detail {
template <typename T>
struct IsExpected : std::false_type {};
template <typename T>
struct IsExpected<Expected<T>> : std::true_type {};
}  // namespace detail

// Runs `sql` with bind(Statement&) and calls visit(const Statement&) on every row; a visitor
// that returns a Status ends the query with its error.
template <typename Binder, typename Visitor>
Status ForEachRow(const Connection& conn, std::string_view sql, std::string_view what,
                  const Binder& bind, const Visitor& visit) {
  ZB_ASSIGN_OR_RETURN(Statement stmt, conn.Prepare(sql, what));
  bind(stmt);
  const Statement& row = stmt;
  while (true) {
    ZB_ASSIGN_OR_RETURN(bool more, stmt.Step(what));
    if (!more) return Status::Ok();
    if constexpr (std::is_same_v<decltype(visit(row)), Status>) {
      ZB_RETURN_IF_ERROR(visit(row));
    } else {
      visit(row);
    }
  }
}

// Runs `sql` with bind(Statement&) and appends map(const Statement&) of every row to `out`. The
// mapper returns a T, or an Expected<T> whose error ends the query.
template <typename T, typename Binder, typename Mapper>
Status QueryInto(const Connection& conn, std::string_view sql, std::string_view what,
                 const Binder& bind, const Mapper& map, std::vector<T>& out) {
  return ForEachRow(conn, sql, what, bind, [&](const Statement& row) -> Status {
    if constexpr (detail::IsExpected<decltype(map(row))>::value) {
      auto value = map(row);
      if (!value.ok()) return value.status();
      out.push_back(std::move(value).value());
    } else {
      out.push_back(map(row));
    }
    return Status::Ok();
  });
}

// Every row of `sql`, mapped.
template <typename T, typename Binder, typename Mapper>
Expected<std::vector<T>> Query(const Connection& conn, std::string_view sql, std::string_view what,
                               const Binder& bind, const Mapper& map) {
  std::vector<T> rows;
  ZB_RETURN_IF_ERROR(QueryInto(conn, sql, what, bind, map, rows));
  return rows;
}

// The first row of `sql`, mapped; nullopt when there is none.
template <typename T, typename Binder, typename Mapper>
Expected<std::optional<T>> QueryFirst(const Connection& conn, std::string_view sql,
                                      std::string_view what, const Binder& bind,
                                      const Mapper& map) {
  ZB_ASSIGN_OR_RETURN(Statement stmt, conn.Prepare(sql, what));
  bind(stmt);
  ZB_ASSIGN_OR_RETURN(bool row, stmt.Step(what));
  if (!row) return std::optional<T>();
  if constexpr (detail::IsExpected<decltype(map(stmt))>::value) {
    auto value = map(static_cast<const Statement&>(stmt));
    if (!value.ok()) return value.status();
    return std::optional<T>(std::move(value).value());
  } else {
    return std::optional<T>(map(static_cast<const Statement&>(stmt)));
  }
}

}  // namespace zb::sqlite

#endif  // ZBKIT_SCHEMAS_SQLITE_H_
