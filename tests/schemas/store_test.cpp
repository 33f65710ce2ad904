// SPDX-License-Identifier: Apache-2.0
// Tests of the SQLite store (store.cpp): a new store, its version and WAL, refusal of files that
// are not (or not yet, or no longer) this zbkit's stores, read-only opening, concurrency, and the
// shape of the public JSON Schema files.
#include "store_test_support.h"

namespace zb {
namespace {

using namespace store_testing;
using testing_support::RawDb;
using testing_support::ReadBytes;

TEST_F(StoreTest, NewStoreRecordsSchemaVersionAndUsesWal) {
  const std::string path = PathOf("new.db");
  {
    ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
    EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
    EXPECT_EQ(store.path(), path);
  }
  RawDb raw(path);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.Int("PRAGMA application_id"), 0x7A626B74);
  EXPECT_EQ(raw.Text("PRAGMA journal_mode"), "wal");
  for (const char* table : kTables) {
    EXPECT_EQ(raw.Int(std::string("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND "
                                  "name = '") +
                      table + "'"),
              1)
        << table;
  }
}

// A store holds a job's timings and command lines: the files zbkit creates are the user's alone;
// a file that already exists keeps the mode its owner gave it.
TEST_F(StoreTest, NewStoreFilesAreTheUsersAlone) {
  const std::string path = PathOf("private.db");
  auto mode_of = [](const std::string& file) {
    struct stat info {};
    EXPECT_EQ(::stat(file.c_str(), &info), 0) << file;
    return info.st_mode & 0777;
  };
  {
    ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
    ZB_ASSERT_OK_AND_ASSIGN(int64_t cluster, store.EnsureCluster({"local", "", "", "", ""}));
    ASSERT_TRUE(store.EnsureJob(cluster, "job").ok());
    EXPECT_EQ(mode_of(path), 0600u);
    EXPECT_EQ(mode_of(path + "-wal"), 0600u);  // SQLite's own files follow the database's
  }
  const std::string shared = PathOf("shared.db");
  { std::ofstream touch(shared); }
  ASSERT_EQ(::chmod(shared.c_str(), 0644), 0);
  { ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(shared)); }
  EXPECT_EQ(mode_of(shared), 0644u);
}

TEST_F(StoreTest, ReopeningACurrentStoreChangesNothing) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  ZB_ASSERT_OK_AND_ASSIGN(auto profiles, store.ListCostProfiles());
  EXPECT_TRUE(profiles.empty());
  ZB_ASSERT_OK_AND_ASSIGN(int64_t again, store.EnsureJob(1, "gpt-1b"));
  EXPECT_EQ(again, job);
}

TEST_F(StoreTest, EnsureClusterAndJobAreIdempotentAndUpdateNonEmptyFields) {
  const std::string path = PathOf("store.db");
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t a, store.EnsureCluster(Cluster("node-a", "H100", "", "550.54")));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t b, store.EnsureCluster(Cluster("node-b")));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t a2, store.EnsureCluster(Cluster("node-a", "", "IB", "", "2.21")));
  EXPECT_NE(a, b);
  EXPECT_EQ(a, a2);
  {
    RawDb raw(path);
    EXPECT_EQ(raw.Text("SELECT gpu || '|' || interconnect || '|' || driver_version || '|' || "
                       "nccl_version FROM clusters WHERE name = 'node-a'"),
              "H100|IB|550.54|2.21");
    EXPECT_EQ(raw.Int("SELECT count(*) FROM clusters WHERE schema_version = " +
                      std::to_string(Store::kSchemaVersion)),
              2);
  }

  ZB_ASSERT_OK_AND_ASSIGN(int64_t job1, store.EnsureJob(a, "llama"));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t job2, store.EnsureJob(b, "llama"));  // same name, other cluster
  ZB_ASSERT_OK_AND_ASSIGN(int64_t job1_again, store.EnsureJob(a, "llama"));
  EXPECT_NE(job1, job2);
  EXPECT_EQ(job1, job1_again);

  auto missing = store.EnsureJob(12345, "llama");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no cluster with id 12345"), std::string::npos)
      << missing.status().message();

  auto unnamed = store.EnsureCluster(Cluster("", "H100"));
  ASSERT_FALSE(unnamed.ok());
  EXPECT_EQ(unnamed.status().code(), ErrorCode::kInvalidInput);
}

TEST_F(StoreTest, NewerStoreIsRefusedAndLeftUntouched) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  const int newer = Store::kSchemaVersion + 1;
  {
    RawDb raw(path);
    raw.Exec("PRAGMA user_version = " + std::to_string(newer));
  }
  const std::string bytes = ReadBytes(path);
  const std::set<std::string> entries = DirEntries();
  for (Store::Mode mode : {Store::Mode::kReadWrite, Store::Mode::kReadOnly}) {
    auto store = Store::Open(path, mode);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), ErrorCode::kStore);
    EXPECT_EQ(store.status().message(),
              path + ": open store: store schema version " + std::to_string(newer) +
                  " is newer than this zbkit supports (" + std::to_string(Store::kSchemaVersion) +
                  "); refusing to open it");
  }
  EXPECT_EQ(ReadBytes(path), bytes);
  // Reading the header of a WAL-mode file makes SQLite create its -wal/-shm side files, and a
  // connection that only read leaves them; what matters is that no page was written.
  for (const std::string& name : DirEntries()) {
    if (entries.count(name) > 0) continue;
    EXPECT_TRUE(name == "store.db-wal" || name == "store.db-shm") << name;
    if (name == "store.db-wal") {
      EXPECT_EQ(fs::file_size(PathOf(name)), 0u);
    }
  }
}

TEST_F(StoreTest, ForeignSqliteFilesAreRefusedAndLeftUntouched) {
  const std::string other_app = PathOf("nsys.sqlite");
  {
    RawDb raw(other_app);
    raw.Exec("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER)");
  }
  const std::string versioned = PathOf("versioned.sqlite");
  {
    RawDb raw(versioned);
    raw.Exec("CREATE TABLE t (x); PRAGMA user_version = 1");  // another app's version 1
  }
  for (const std::string& path : {other_app, versioned}) {
    const std::string bytes = ReadBytes(path);
    for (Store::Mode mode : {Store::Mode::kReadWrite, Store::Mode::kReadOnly}) {
      auto store = Store::Open(path, mode);
      ASSERT_FALSE(store.ok()) << path;
      EXPECT_EQ(store.status().code(), ErrorCode::kStore);
      EXPECT_TRUE(IsOneLine(store.status().message()));
      EXPECT_NE(store.status().message().find("not a zbkit store"), std::string::npos)
          << store.status().message();
    }
    EXPECT_EQ(ReadBytes(path), bytes) << path;
  }
}

TEST_F(StoreTest, ReadOnlyOpenOfMissingFileFailsAndCreatesNothing) {
  const std::string path = PathOf("missing.db");
  auto store = Store::Open(path, Store::Mode::kReadOnly);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(store.status().message(), path + ": open store: no such file");
  EXPECT_TRUE(DirEntries().empty());
}

TEST_F(StoreTest, ReadOnlyOpenOfNonSqliteFileFails) {
  const std::string path = PathOf("notes.txt");
  const std::string text =
      "these are notes, not a database; long enough to hold a header and then some more.\n";
  WriteBytes(path, text);
  for (Store::Mode mode : {Store::Mode::kReadOnly, Store::Mode::kReadWrite}) {
    auto store = Store::Open(path, mode);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), ErrorCode::kStore);
    EXPECT_EQ(store.status().message(),
              path + ": open store: read schema version: file is not a database");
  }
  EXPECT_EQ(ReadBytes(path), text);
  EXPECT_EQ(DirEntries(), std::set<std::string>{"notes.txt"});
}

TEST_F(StoreTest, ReadOnlyOpenOfEmptyFileFails) {
  const std::string path = PathOf("empty.db");
  WriteBytes(path, "");
  auto store = Store::Open(path, Store::Mode::kReadOnly);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kStore);
  EXPECT_EQ(store.status().message(),
            path + ": open store: not a zbkit store (schema version 0, no tables)");
  EXPECT_EQ(fs::file_size(path), 0u);
  EXPECT_EQ(DirEntries(), std::set<std::string>{"empty.db"});
}

TEST_F(StoreTest, ReadOnlyStoreReadsButDoesNotWrite) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  int64_t id = 0;
  {
    ZB_ASSERT_OK_AND_ASSIGN(Store writer, Store::Open(path));
    ZB_ASSERT_OK_AND_ASSIGN(id, writer.InsertSchedule(job, MakeVSchedule()));
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store reader, Store::Open(path, Store::Mode::kReadOnly));
  ZB_ASSERT_OK_AND_ASSIGN(Schedule loaded, reader.LoadSchedule(id));
  EXPECT_TRUE(loaded == MakeVSchedule());
  auto write = reader.InsertTimeline(std::nullopt, MakeMeasuredTimeline());
  ASSERT_FALSE(write.ok());
  EXPECT_EQ(write.status().code(), ErrorCode::kStore);
  EXPECT_EQ(write.status().message(), path + ": insert timeline: store is open read-only");
}

TEST_F(StoreTest, ReaderWorksWhileAWriterHoldsATransaction) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store writer, Store::Open(path));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, writer.InsertSchedule(job, MakeVSchedule()));

  RawDb other_writer(path);
  other_writer.Exec("BEGIN IMMEDIATE");
  other_writer.Exec("INSERT INTO cost_profiles (job_id, name, comm_ns, schema_version) VALUES (" +
                    std::to_string(job) + ", 'uncommitted', 0, 1)");

  // Readers neither block nor see the uncommitted row.
  ZB_ASSERT_OK_AND_ASSIGN(Store reader, Store::Open(path, Store::Mode::kReadOnly));
  ZB_ASSERT_OK_AND_ASSIGN(Schedule loaded, reader.LoadSchedule(id));
  EXPECT_TRUE(loaded == MakeVSchedule());
  ZB_ASSERT_OK_AND_ASSIGN(auto profiles, reader.ListCostProfiles());
  EXPECT_EQ(profiles.size(), 1u);
  ZB_ASSERT_OK_AND_ASSIGN(auto own_view, writer.ListCostProfiles());
  EXPECT_EQ(own_view.size(), 1u);

  // A second writer waits for the lock (busy timeout) instead of failing.
  std::thread committer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    other_writer.Exec("COMMIT");
  });
  auto inserted = writer.InsertCostProfile(job, "after wait", MakeVSchedule().costs);
  committer.join();
  ASSERT_TRUE(inserted.ok()) << inserted.status().message();
  ZB_ASSERT_OK_AND_ASSIGN(auto after, reader.ListCostProfiles());
  EXPECT_EQ(after.size(), 3u);
}

TEST_F(StoreTest, MovedFromStoreReportsAnError) {
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(PathOf("store.db")));
  Store moved = std::move(store);
  auto list = store.ListSchedules();  // NOLINT(bugprone-use-after-move): checking that on purpose
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), ErrorCode::kStore);
  EXPECT_TRUE(moved.ListSchedules().ok());
}

nlohmann::json ReadSchema(const std::string& name) {
  const std::string path = std::string(ZBKIT_TEST_DATA_DIR) + "/../../schemas/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

TEST(JsonSchemaFilesTest, CostsSchemaIsValidJsonWithTheFormatConstant) {
  const nlohmann::json schema = ReadSchema("zb-costs.schema.json");
  ASSERT_FALSE(schema.is_discarded()) << "zb-costs.schema.json is not valid JSON";
  EXPECT_EQ(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(schema["$id"], "urn:zbkit:schema:zb-costs:1");
  EXPECT_EQ(schema["properties"]["format"]["const"], "zb-costs/1");
  EXPECT_EQ(schema["additionalProperties"], false);
  const nlohmann::json& stage = schema["$defs"]["stageCost"];
  EXPECT_EQ(stage["properties"]["F"]["exclusiveMinimum"], 0);
  EXPECT_EQ(stage["required"], nlohmann::json({"F", "B", "W", "M_B", "M_W"}));
}

TEST(JsonSchemaFilesTest, ScheduleSchemaIsValidJsonAndEmbedsTheSameCosts) {
  const nlohmann::json schedule = ReadSchema("zb-schedule.schema.json");
  ASSERT_FALSE(schedule.is_discarded()) << "zb-schedule.schema.json is not valid JSON";
  EXPECT_EQ(schedule["$schema"], "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(schedule["$id"], "urn:zbkit:schema:zb-schedule:1");
  EXPECT_EQ(schedule["properties"]["format"]["const"], "zb-schedule/1");
  EXPECT_EQ(schedule["properties"]["placement"]["enum"], nlohmann::json({"loop", "v"}));
  EXPECT_EQ(schedule["$defs"]["op"]["properties"]["type"]["enum"],
            nlohmann::json({"F", "B", "W", "BW"}));
  // Each file stands alone (no cross-file $ref), so the copies must not drift apart.
  const nlohmann::json costs = ReadSchema("zb-costs.schema.json");
  EXPECT_EQ(schedule["$defs"]["stageCost"], costs["$defs"]["stageCost"]);
  nlohmann::json costs_body = costs;
  costs_body["properties"].erase("format");
  costs_body["properties"].erase("layout");  // the profiled job's: a schedule's costs have none
  costs_body["properties"].erase("data_parallel");  // likewise
  EXPECT_EQ(schedule["$defs"]["costs"]["properties"], costs_body["properties"]);
}

}  // namespace
}  // namespace zb
