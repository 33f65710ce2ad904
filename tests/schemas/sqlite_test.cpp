// SPDX-License-Identifier: Apache-2.0
// Tests of zbkit's SQLite layer (zbkit/schemas/sqlite.h) on real files: binding and reading every
// value type, queries as one call, transactions that roll back unless committed (and nest as
// savepoints), the batched inserter (full batches, the tail, the row an error names) and the
// one-line error messages.
#include "zbkit/schemas/sqlite.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "assert_ok.h"
#include "store_dir.h"

namespace zb::sqlite {
namespace {

namespace fs = std::filesystem;

class SqliteTest : public testing_support::StoreDirTest {
 protected:
  void SetUp() override {
    StoreDirTest::SetUp();
    ZB_ASSERT_OK_AND_ASSIGN(conn_, Connection::Open(path_, OpenMode::kReadWriteCreate, "open"));
    ZB_ASSERT_OK(conn_.UseWal("wal"));
    ZB_ASSERT_OK(conn_.EnableForeignKeys("fk"));
    ZB_ASSERT_OK(
        conn_.Exec("CREATE TABLE parent (id INTEGER PRIMARY KEY);"
                   "CREATE TABLE item (parent INTEGER NOT NULL REFERENCES parent (id),"
                   " seq INTEGER NOT NULL, value INTEGER NOT NULL CHECK (value >= 0),"
                   " label TEXT, weight REAL, PRIMARY KEY (parent, seq));"
                   "INSERT INTO parent VALUES (1), (2);",
                   "schema"));
  }
  void TearDown() override {
    conn_ = Connection();  // closed before its directory goes
    StoreDirTest::TearDown();
  }

  int64_t Count(const char* sql) {
    auto n = conn_.QueryInt(sql, "count");
    EXPECT_TRUE(n.ok()) << n.status().message();
    return n.ok() ? *n : -1;
  }

  // Inserts `num_rows` items of parent 1 (value = seq, or -1 at `bad_row`) in one transaction.
  Status InsertItems(size_t num_rows, std::optional<size_t> bad_row = std::nullopt) {
    ZB_ASSIGN_OR_RETURN(Transaction transaction,
                        Transaction::Begin(conn_, Transaction::Kind::kWrite, "insert items"));
    ZB_ASSIGN_OR_RETURN(
        BatchInserter items,
        BatchInserter::Prepare(conn_, "INSERT INTO item (parent, seq, value, label) VALUES ", 1, 3,
                               "insert items"));
    items.BindShared(1, 1);
    ZB_RETURN_IF_ERROR(items.Insert(
        num_rows,
        [&](Statement& stmt, int param, size_t row) {
          stmt.BindInt(param, static_cast<int64_t>(row));
          stmt.BindInt(param + 1, row == bad_row ? -1 : static_cast<int64_t>(row));
          stmt.BindStaticText(param + 2, row % 2 == 0 ? "even" : "odd");
        },
        "insert items", "item"));
    return transaction.Commit("insert items");
  }

  Connection conn_;
};

TEST_F(SqliteTest, BindsAndReadsEveryValueType) {
  ZB_ASSERT_OK_AND_ASSIGN(Statement insert,
                          conn_.Prepare("INSERT INTO item VALUES (?1, ?2, ?3, ?4, ?5)", "insert"));
  insert.BindInt(1, 2);
  insert.BindInt(2, 0);
  insert.BindInt(3, int64_t{1} << 40);
  insert.BindText(4, std::string("multi\nline"));
  insert.BindDouble(5, 0.1 + 0.2);
  ZB_ASSERT_OK(insert.Run("insert"));
  insert.Reset();
  insert.BindInt(2, 1);  // parent and value stay bound across the reset
  insert.BindOptional(4, std::optional<std::string_view>());
  insert.BindOptional(5, std::optional<double>());
  ZB_ASSERT_OK(insert.Run("insert"));

  struct Row {
    int64_t seq;
    int64_t value;
    std::string label;
    std::optional<double> weight;
    bool label_null;
  };
  ZB_ASSERT_OK_AND_ASSIGN(
      std::vector<Row> rows,
      Query<Row>(
          conn_, "SELECT seq, value, label, weight FROM item WHERE parent = ?1 ORDER BY seq",
          "select", [](Statement& stmt) { stmt.BindInt(1, 2); },
          [](const Statement& row) {
            return Row{row.Int(0), row.Int(1), std::string(row.Text(2)), row.OptionalDouble(3),
                       row.IsNull(2)};
          }));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].value, int64_t{1} << 40);
  EXPECT_EQ(rows[0].label, "multi\nline");
  EXPECT_EQ(rows[0].weight, std::optional<double>(0.1 + 0.2));  // bit for bit
  EXPECT_EQ(rows[1].value, int64_t{1} << 40);
  EXPECT_TRUE(rows[1].label_null);
  EXPECT_EQ(rows[1].weight, std::nullopt);
}

TEST_F(SqliteTest, QueryFirstAndMapperErrors) {
  auto by_id = [](int64_t id) { return [id](Statement& stmt) { stmt.BindInt(1, id); }; };
  auto id_of = [](const Statement& row) { return row.Int(0); };
  ZB_ASSERT_OK_AND_ASSIGN(
      auto found,
      QueryFirst<int64_t>(conn_, "SELECT id FROM parent WHERE id = ?1", "find", by_id(2), id_of));
  EXPECT_EQ(found, std::optional<int64_t>(2));
  ZB_ASSERT_OK_AND_ASSIGN(
      auto missing,
      QueryFirst<int64_t>(conn_, "SELECT id FROM parent WHERE id = ?1", "find", by_id(7), id_of));
  EXPECT_EQ(missing, std::nullopt);

  // A mapper's error ends the query with that error.
  int calls = 0;
  auto result = Query<int64_t>(conn_, "SELECT id FROM parent ORDER BY id", "list", kNoParams,
                               [&](const Statement& row) -> Expected<int64_t> {
                                 ++calls;
                                 if (row.Int(0) == 1) return InvalidInput("row 1 is bad");
                                 return row.Int(0);
                               });
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(calls, 1);

  int visited = 0;
  ZB_ASSERT_OK(ForEachRow(conn_, "SELECT id FROM parent", "visit", kNoParams,
                          [&](const Statement&) { ++visited; }));
  EXPECT_EQ(visited, 2);
}

TEST_F(SqliteTest, ErrorsAreOneLineAndNameTheFileAndTheStep) {
  auto prepare = conn_.Prepare("SELECT nope FROM parent", "list parents");
  ASSERT_FALSE(prepare.ok());
  EXPECT_EQ(prepare.status().code(), ErrorCode::kStore);
  EXPECT_EQ(prepare.status().message().rfind(path_ + ": list parents: ", 0), 0u)
      << prepare.status().message();
  EXPECT_NE(prepare.status().message().find("no such column: nope"), std::string::npos);

  // A bind to a parameter that does not exist is reported by the step that follows.
  ZB_ASSERT_OK_AND_ASSIGN(Statement insert, conn_.Prepare("INSERT INTO parent VALUES (?1)", "add"));
  insert.BindInt(1, 3);
  insert.BindInt(5, 3);
  const Status bind_error = insert.Run("add parent");
  ASSERT_FALSE(bind_error.ok());
  EXPECT_NE(bind_error.message().find("add parent: "), std::string::npos) << bind_error.message();
  EXPECT_EQ(Count("SELECT count(*) FROM parent"), 2);

  // SQLite quotes a CHECK expression as written (with its line break); the error is one line.
  ZB_ASSERT_OK(conn_.Exec("CREATE TABLE wide (x INTEGER CHECK (x >= 0\n AND x < 10))", "ddl"));
  ZB_ASSERT_OK_AND_ASSIGN(Statement wide, conn_.Prepare("INSERT INTO wide VALUES (?1)", "wide"));
  wide.BindInt(1, 11);
  const Status check = wide.Run("insert wide");
  ASSERT_FALSE(check.ok());
  EXPECT_TRUE(wide.constraint_failed());
  EXPECT_EQ(check.message().find('\n'), std::string::npos) << check.message();
  EXPECT_NE(check.message().find("CHECK constraint failed"), std::string::npos);
}

TEST_F(SqliteTest, TransactionRollsBackUnlessCommitted) {
  {
    ZB_ASSERT_OK_AND_ASSIGN(Transaction transaction,
                            Transaction::Begin(conn_, Transaction::Kind::kWrite, "add"));
    ZB_ASSERT_OK(conn_.Exec("INSERT INTO parent VALUES (3)", "add"));
    EXPECT_TRUE(conn_.in_transaction());
  }
  EXPECT_FALSE(conn_.in_transaction());
  EXPECT_EQ(Count("SELECT count(*) FROM parent"), 2);
  {
    ZB_ASSERT_OK_AND_ASSIGN(Transaction transaction,
                            Transaction::Begin(conn_, Transaction::Kind::kWrite, "add"));
    ZB_ASSERT_OK(conn_.Exec("INSERT INTO parent VALUES (3)", "add"));
    ZB_ASSERT_OK(transaction.Commit("add"));
  }
  EXPECT_EQ(Count("SELECT count(*) FROM parent"), 3);
  // A moved Connection keeps its state: statements prepared before still work and still name it.
  ZB_ASSERT_OK_AND_ASSIGN(Statement count, conn_.Prepare("SELECT count(*) FROM parent", "count"));
  Connection moved = std::move(conn_);
  ZB_ASSERT_OK_AND_ASSIGN(bool row, count.Step("count"));
  ASSERT_TRUE(row);
  EXPECT_EQ(count.Int(0), 3);
  EXPECT_EQ(moved.path(), path_);
  conn_ = std::move(moved);
}

TEST_F(SqliteTest, TransactionBegunInsideAnotherIsASavepointOfIt) {
  // The inner one rolled back: only its row goes; the outer commits the rest.
  {
    ZB_ASSERT_OK_AND_ASSIGN(Transaction outer,
                            Transaction::Begin(conn_, Transaction::Kind::kWrite, "outer"));
    ZB_ASSERT_OK(conn_.Exec("INSERT INTO parent VALUES (3)", "add"));
    {
      ZB_ASSERT_OK_AND_ASSIGN(Transaction inner,
                              Transaction::Begin(conn_, Transaction::Kind::kWrite, "inner"));
      ZB_ASSERT_OK(conn_.Exec("INSERT INTO parent VALUES (4)", "add"));
    }
    EXPECT_TRUE(conn_.in_transaction());
    EXPECT_EQ(Count("SELECT count(*) FROM parent"), 3);
    ZB_ASSERT_OK(outer.Commit("outer"));
  }
  EXPECT_FALSE(conn_.in_transaction());
  EXPECT_EQ(Count("SELECT count(*) FROM parent"), 3);
  // Inner commits (twice nested), the outer does not: nothing of either is kept.
  {
    ZB_ASSERT_OK_AND_ASSIGN(Transaction outer,
                            Transaction::Begin(conn_, Transaction::Kind::kWrite, "outer"));
    ZB_ASSERT_OK_AND_ASSIGN(Transaction inner,
                            Transaction::Begin(conn_, Transaction::Kind::kWrite, "inner"));
    ZB_ASSERT_OK(conn_.Exec("INSERT INTO parent VALUES (4)", "add"));
    {
      ZB_ASSERT_OK_AND_ASSIGN(Transaction innermost,
                              Transaction::Begin(conn_, Transaction::Kind::kRead, "innermost"));
      ZB_ASSERT_OK(conn_.Exec("INSERT INTO parent VALUES (5)", "add"));
      ZB_ASSERT_OK(innermost.Commit("innermost"));
    }
    ZB_ASSERT_OK(inner.Commit("inner"));
    EXPECT_EQ(Count("SELECT count(*) FROM parent"), 5);
  }
  EXPECT_FALSE(conn_.in_transaction());
  EXPECT_EQ(Count("SELECT count(*) FROM parent"), 3);
  // The batched inserter's row error inside a savepoint leaves the outer transaction usable.
  {
    ZB_ASSERT_OK_AND_ASSIGN(Transaction outer,
                            Transaction::Begin(conn_, Transaction::Kind::kWrite, "outer"));
    EXPECT_FALSE(InsertItems(10, 4).ok());
    ZB_ASSERT_OK(InsertItems(10));
    ZB_ASSERT_OK(outer.Commit("outer"));
  }
  EXPECT_EQ(Count("SELECT count(*) FROM item"), 10);
}

// What SQLite does itself after SQLITE_FULL, IOERR or NOMEM (stood in for by a ROLLBACK behind
// the Transactions' back): the rest of the enclosing write must not begin a transaction of its
// own that would commit alone.
TEST_F(SqliteTest, NothingBeginsOnItsOwnInsideATransactionSqliteRolledBack) {
  {
    ZB_ASSERT_OK_AND_ASSIGN(Transaction outer,
                            Transaction::Begin(conn_, Transaction::Kind::kWrite, "outer"));
    ZB_ASSERT_OK(conn_.Exec("INSERT INTO parent VALUES (3)", "add"));
    ZB_ASSERT_OK(conn_.Exec("ROLLBACK", "sqlite's own rollback"));
    auto inner = Transaction::Begin(conn_, Transaction::Kind::kWrite, "inner");
    ASSERT_FALSE(inner.ok());
    EXPECT_EQ(inner.status().code(), ErrorCode::kStore);
    EXPECT_NE(inner.status().message().find("inner: the enclosing transaction was rolled back"),
              std::string::npos)
        << inner.status().message();
    EXPECT_FALSE(outer.Commit("outer").ok());  // no transaction is active
  }
  EXPECT_EQ(Count("SELECT count(*) FROM parent"), 2);
  // Once the enclosing Transaction is gone, transactions begin again.
  ZB_ASSERT_OK_AND_ASSIGN(Transaction again,
                          Transaction::Begin(conn_, Transaction::Kind::kWrite, "again"));
  ZB_ASSERT_OK(conn_.Exec("INSERT INTO parent VALUES (3)", "add"));
  ZB_ASSERT_OK(again.Commit("again"));
  EXPECT_EQ(Count("SELECT count(*) FROM parent"), 3);
}

TEST_F(SqliteTest, BatchInserterWritesFullBatchesAndTheTail) {
  const size_t num_rows = 3 * BatchInserter::kRowsPerBatch + 5;
  ZB_ASSERT_OK(InsertItems(num_rows));
  EXPECT_EQ(Count("SELECT count(*) FROM item WHERE parent = 1"), static_cast<int64_t>(num_rows));
  EXPECT_EQ(Count("SELECT count(*) FROM item WHERE value = seq"), static_cast<int64_t>(num_rows));
  EXPECT_EQ(Count("SELECT count(*) FROM item WHERE label = 'odd'"),
            static_cast<int64_t>(num_rows / 2));
  EXPECT_EQ(Count("SELECT max(seq) FROM item"), static_cast<int64_t>(num_rows - 1));
}

TEST_F(SqliteTest, BatchInserterNamesTheRowAtFaultAndLeavesNothing) {
  // In a full batch (row 130 of the third batch) and in the tail (row 193).
  for (size_t bad : {size_t{130}, size_t{193}}) {
    const Status status = InsertItems(3 * BatchInserter::kRowsPerBatch + 5, bad);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.code(), ErrorCode::kStore);
    EXPECT_EQ(
        status.message().rfind(
            path_ + ": insert items: item " + std::to_string(bad) + ": CHECK constraint failed", 0),
        0u)
        << status.message();
    EXPECT_EQ(Count("SELECT count(*) FROM item"), 0);
  }
}

TEST_F(SqliteTest, OpeningANonDatabaseFailsAtTheFirstRead) {
  const std::string text = dir_ + "/not.db";
  {
    std::FILE* file = std::fopen(text.c_str(), "wb");
    ASSERT_NE(file, nullptr);
    std::fputs("this is not an SQLite file, just long enough to have a header of its own....",
               file);
    std::fclose(file);
  }
  ZB_ASSERT_OK_AND_ASSIGN(Connection other, Connection::Open(text, OpenMode::kReadOnly, "open"));
  auto version = other.QueryInt("PRAGMA user_version", "read header");
  ASSERT_FALSE(version.ok());
  EXPECT_NE(version.status().message().find(text + ": read header: "), std::string::npos);
  EXPECT_NE(version.status().message().find("not a database"), std::string::npos)
      << version.status().message();

  auto missing = Connection::Open(dir_ + "/missing.db", OpenMode::kReadWrite, "open missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("open missing: "), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ + "/missing.db"));
}

}  // namespace
}  // namespace zb::sqlite
