// SPDX-License-Identifier: Apache-2.0
// A plain sqlite3 connection for tests: to look at and tamper with a store behind the Store's
// back (schema checks, migrations, constraints seen from outside).
#ifndef ZBKIT_TESTS_SUPPORT_RAW_DB_H_
#define ZBKIT_TESTS_SUPPORT_RAW_DB_H_

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>

namespace zb::testing_support {

class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK) << path;
    sqlite3_busy_timeout(db_, 5000);
  }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;
  ~RawDb() { sqlite3_close(db_); }

  sqlite3* get() { return db_; }

  void Exec(const std::string& sql) {
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << sql << ": " << (error ? error : "");
    sqlite3_free(error);
  }
  // Whether `sql` fails (the store's CHECKs and foreign keys, seen from outside).
  bool Fails(const std::string& sql) {
    char* error = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
    sqlite3_free(error);
    return rc != SQLITE_OK;
  }
  int64_t Int(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db_);
    int64_t value = -1;
    if (sqlite3_step(stmt) == SQLITE_ROW) value = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return value;
  }
  std::string Text(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db_);
    std::string value;
    if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
      value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
    return value;
  }

 private:
  sqlite3* db_ = nullptr;
};

// A whole file as bytes ("" when it cannot be read).
inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A file of schemas/ (store.sql, migrations/NNN_*.sql): migration tests build older stores from
// the released steps, which are never edited.
inline std::string SchemaFile(const std::string& name) {
  const std::string path = std::string(ZBKIT_TEST_DATA_DIR) + "/../../schemas/" + name;
  const std::string text = ReadBytes(path);
  EXPECT_FALSE(text.empty()) << path;
  return text;
}

}  // namespace zb::testing_support

#endif  // ZBKIT_TESTS_SUPPORT_RAW_DB_H_
