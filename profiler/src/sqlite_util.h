// SPDX-License-Identifier: Apache-2.0
// Small RAII helpers over the sqlite3 C API shared by the shard writer/reader and the nsys
// importer (private to zbkit::profiler). No exceptions: every failure is a Status.
#ifndef ZBKIT_PROFILER_SRC_SQLITE_UTIL_H_
#define ZBKIT_PROFILER_SRC_SQLITE_UTIL_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "zbkit/schemas/status.h"

namespace zb::profiler::internal {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbHandle = std::unique_ptr<sqlite3, DbCloser>;

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(sqlite3_stmt* stmt) : stmt_(stmt) {}
  Stmt(Stmt&& other) noexcept : stmt_(std::exchange(other.stmt_, nullptr)) {}
  Stmt& operator=(Stmt&& other) noexcept {
    if (this != &other) {
      sqlite3_finalize(stmt_);
      stmt_ = std::exchange(other.stmt_, nullptr);
    }
    return *this;
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(stmt_); }

  sqlite3_stmt* get() const { return stmt_; }
  explicit operator bool() const { return stmt_ != nullptr; }
  int Step() { return sqlite3_step(stmt_); }
  void Reset() { sqlite3_reset(stmt_); }
  // Binding errors only happen for out-of-range indexes (a bug) or out of memory; both surface
  // as the failing step, so the result is not checked per bind on the hot path.
  void BindInt(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  void BindText(int index, std::string_view text) {
    sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  double Double(int column) const { return sqlite3_column_double(stmt_, column); }
  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::string Text(int column) const {
    const unsigned char* text = sqlite3_column_text(stmt_, column);
    if (text == nullptr) return {};
    return {reinterpret_cast<const char*>(text),
            static_cast<size_t>(sqlite3_column_bytes(stmt_, column))};
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

// "<path>: <what>: <sqlite message>".
inline Status SqliteError(sqlite3* db, const std::string& path, std::string_view what, int rc) {
  const char* message = sqlite3_errstr(rc);
  if (db != nullptr && sqlite3_errcode(db) == (rc & 0xff)) message = sqlite3_errmsg(db);
  return StoreError(path + ": " + std::string(what) + ": " + message);
}

inline Expected<Stmt> Prepare(sqlite3* db, const std::string& path, const std::string& sql,
                              std::string_view what) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return SqliteError(db, path, what, rc);
  }
  return Stmt(stmt);
}

inline Status Exec(sqlite3* db, const std::string& path, const char* sql, std::string_view what) {
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db, path, what, rc);
  return Status::Ok();
}

}  // namespace zb::profiler::internal

#endif  // ZBKIT_PROFILER_SRC_SQLITE_UTIL_H_
