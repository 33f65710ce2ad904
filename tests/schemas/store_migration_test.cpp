// SPDX-License-Identifier: Apache-2.0
// Tests of the store's migrations (store.cpp, schemas/migrations/): every older version
// migrates keeping its rows, a failed migration leaves the store as it was, backups are kept.
#include "store_test_support.h"

namespace zb {
namespace {

using namespace store_testing;
using testing_support::RawDb;
using testing_support::ReadBytes;

TEST_F(StoreTest, EmptyFileAndVersionZeroDatabaseAreMigrated) {
  const std::string empty_file = PathOf("empty.db");
  WriteBytes(empty_file, "");
  const std::string version_zero = PathOf("zero.db");
  {
    RawDb raw(version_zero);
    raw.Exec("PRAGMA user_version = 0; VACUUM;");  // a real SQLite file with no tables
  }
  for (const std::string& path : {empty_file, version_zero}) {
    ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
    EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
    ZB_ASSERT_OK_AND_ASSIGN(int64_t cluster, store.EnsureCluster(Cluster("c")));
    EXPECT_GT(cluster, 0);
    RawDb raw(path);
    EXPECT_EQ(raw.Int("PRAGMA user_version"), Store::kSchemaVersion) << path;
  }
}

TEST_F(StoreTest, DowngradedStoreIsMigratedAgain) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  {
    // Take the store back to "version 0": no zbkit tables, user_version 0 (the application id
    // stays, as it would in a store written before the first table existed).
    RawDb raw(path);
    raw.Exec("PRAGMA foreign_keys = OFF");
    for (const char* table : kTables)
      raw.Exec(std::string("DROP TABLE ") + table);
    raw.Exec("PRAGMA user_version = 0");
    EXPECT_EQ(raw.Int("SELECT count(*) FROM sqlite_schema"), 0);
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
  ZB_ASSERT_OK_AND_ASSIGN(int64_t cluster, store.EnsureCluster(Cluster("node-a")));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t new_job, store.EnsureJob(cluster, "gpt"));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.InsertSchedule(new_job, MakeVSchedule()));
  ZB_ASSERT_OK_AND_ASSIGN(Schedule loaded, store.LoadSchedule(id));
  EXPECT_TRUE(loaded == MakeVSchedule());
  RawDb raw(path);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), Store::kSchemaVersion);
}

// A migration that fails half way (here: the tables it creates already exist) is one
// transaction: the file keeps its old version and contents.
TEST_F(StoreTest, FailedMigrationLeavesTheStoreAsItWas) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  {
    RawDb raw(path);
    raw.Exec("DROP TABLE memory_samples; PRAGMA user_version = 0");
  }
  const std::string bytes = ReadBytes(path);
  const std::set<std::string> entries = DirEntries();
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kStore);
  EXPECT_TRUE(IsOneLine(store.status().message()));
  EXPECT_NE(store.status().message().find(path + ": open store: migrate schema version 0 -> 1: "),
            std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find("already exists"), std::string::npos);
  EXPECT_EQ(ReadBytes(path), bytes);
  EXPECT_EQ(DirEntries(), entries);
  RawDb raw(path);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM sqlite_schema WHERE name = 'memory_samples'"), 0);
}

// schemas/store.sql is migration step 1 and, by the migration policy (schemas/README.md), is never
// edited: it is the version-1 DDL, the starting point of the 1 -> 2 tests below.
std::string VersionOneDdl() {
  const std::string path = std::string(ZBKIT_TEST_DATA_DIR) + "/../../schemas/store.sql";
  const std::string ddl = ReadBytes(path);
  EXPECT_NE(ddl.find("schema version 1"), std::string::npos) << path;
  return ddl;
}

// A version-1 store written by hand (as zbkit 0.1 wrote it) with one measured timeline: 3 ops,
// 2 memory samples.
void MakeVersionOneStoreWithTimeline(const std::string& path) {
  RawDb raw(path);
  raw.Exec(VersionOneDdl());
  raw.Exec("PRAGMA user_version = 1; PRAGMA application_id = 2053270388;");
  raw.Exec(
      "INSERT INTO timelines (id, kind, num_ops, schema_version) VALUES (7, 'measured', 3, 1);"
      "INSERT INTO timeline_ops VALUES (7, 0, 0, 0, 'F', 0, 10, 20), (7, 1, 1, 1, 'BW', 0, 25, "
      "90), (7, 2, 0, 0, 'W', 0, 121, 121);"
      "INSERT INTO memory_samples VALUES (7, 0, 0, 20, 1.5), (7, 1, 1, 90, -1e-17);");
}

TEST_F(StoreTest, VersionOneStoreRejectsCommOps) {
  const std::string path = PathOf("v1.db");
  MakeVersionOneStoreWithTimeline(path);
  RawDb raw(path);
  char* error = nullptr;
  EXPECT_NE(sqlite3_exec(raw.get(), "INSERT INTO timeline_ops VALUES (7, 3, 0, 0, 'COMM', 0, 1, 2)",
                         nullptr, nullptr, &error),
            SQLITE_OK);
  sqlite3_free(error);
}

TEST_F(StoreTest, VersionOneStoreWithTimelineMigratesToVersionTwo) {
  const std::string path = PathOf("v1.db");
  MakeVersionOneStoreWithTimeline(path);
  Timeline expected;
  expected.kind = TimelineKind::kMeasured;
  expected.ops = {{0, 0, OpKind::kF, 0, 10, 20},
                  {1, 1, OpKind::kBW, 0, 25, 90},
                  {0, 0, OpKind::kW, 0, 121, 121}};
  expected.memory = {{0, 20, 1.5}, {1, 90, -1e-17}};

  // Read-only cannot migrate, and says so.
  {
    auto read_only = Store::Open(path, Store::Mode::kReadOnly);
    ASSERT_FALSE(read_only.ok());
    EXPECT_NE(read_only.status().message().find("store schema version 1 is older than " +
                                                std::to_string(Store::kSchemaVersion)),
              std::string::npos)
        << read_only.status().message();
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
  ZB_ASSERT_OK_AND_ASSIGN(Timeline loaded, store.LoadTimeline(7));
  EXPECT_TRUE(loaded == expected);
  ZB_ASSERT_OK_AND_ASSIGN(auto infos, store.ListTimelines());
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].num_ops, 3);

  {
    RawDb raw(path);
    EXPECT_EQ(raw.Int("PRAGMA user_version"), Store::kSchemaVersion);
    EXPECT_EQ(raw.Int("PRAGMA application_id"), 0x7A626B74);
    EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
    EXPECT_EQ(raw.Int("SELECT count(*) FROM pragma_foreign_key_check"), 0);
    EXPECT_EQ(raw.Int("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'timeline_ops%'"), 1);
    EXPECT_NE(raw.Text("SELECT sql FROM sqlite_schema WHERE name = 'timeline_ops'").find("'COMM'"),
              std::string::npos);
    // The rebuilt table keeps its other constraints and its cascade.
    char* error = nullptr;
    EXPECT_NE(
        sqlite3_exec(raw.get(), "INSERT INTO timeline_ops VALUES (7, 9, 0, 0, 'COMM', 0, 5, 4)",
                     nullptr, nullptr, &error),
        SQLITE_OK);
    sqlite3_free(error);
  }

  // Now the migrated store takes COMM ops, and they cascade with their timeline.
  Timeline with_comm = expected;
  with_comm.ops.push_back({0, 0, OpKind::kComm, 0, 20, 25});
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.InsertTimeline(std::nullopt, with_comm));
  ZB_ASSERT_OK_AND_ASSIGN(Timeline loaded_comm, store.LoadTimeline(id));
  EXPECT_TRUE(loaded_comm == with_comm);
  RawDb raw(path);
  raw.Exec("PRAGMA foreign_keys = ON; DELETE FROM timelines WHERE id = 7");
  EXPECT_EQ(raw.Int("SELECT count(*) FROM timeline_ops"), 4);

  // The store as it was before the migration is kept beside it, still version 1 with its
  // timeline.
  RawDb old(path + ".v1.bak");
  EXPECT_EQ(old.Int("PRAGMA user_version"), 1);
  EXPECT_EQ(old.Int("SELECT count(*) FROM timeline_ops WHERE timeline_id = 7"), 3);
  EXPECT_EQ(old.Text("PRAGMA integrity_check"), "ok");
}

// A backup of that version already there (another process migrating at the same moment, an
// earlier attempt) is kept as it is, and the migration goes on.
TEST_F(StoreTest, MigrationKeepsAnExistingBackup) {
  const std::string path = PathOf("v1.db");
  MakeVersionOneStoreWithTimeline(path);
  {
    std::ofstream marker(path + ".v1.bak");
    marker << "kept";
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
  EXPECT_EQ(ReadBytes(path + ".v1.bak"), "kept");
}

// Step 2 fails half way (its new table's name is taken): the store stays at version 1, data and
// all, because every pending step runs in one transaction.
TEST_F(StoreTest, FailedVersionTwoMigrationLeavesVersionOne) {
  const std::string path = PathOf("v1.db");
  MakeVersionOneStoreWithTimeline(path);
  {
    RawDb raw(path);
    raw.Exec("CREATE TABLE timeline_ops_v2 (x)");
  }
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kStore);
  EXPECT_NE(store.status().message().find(path + ": open store: migrate schema version 1 -> 2: "),
            std::string::npos)
      << store.status().message();
  RawDb raw(path);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), 1);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM timeline_ops"), 3);
  EXPECT_EQ(raw.Text("SELECT sql FROM sqlite_schema WHERE name = 'timeline_ops'").find("'COMM'"),
            std::string::npos);
}

// A version-2 store as zbkit 0.2 left it: version 1 plus the released 1 -> 2 step (copied here
// verbatim: released steps never change), with a run, a cost profile and a measured timeline.
void MakeVersionTwoStore(const std::string& path) {
  MakeVersionOneStoreWithTimeline(path);
  RawDb raw(path);
  raw.Exec(R"sql(
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
INSERT INTO timeline_ops_v2 SELECT * FROM timeline_ops;
DROP TABLE timeline_ops;
ALTER TABLE timeline_ops_v2 RENAME TO timeline_ops;
PRAGMA user_version = 2;
INSERT INTO clusters (id, name, schema_version) VALUES (1, 'node-a', 2);
INSERT INTO jobs (id, cluster_id, name, schema_version) VALUES (1, 1, 'gpt', 2);
INSERT INTO runs (id, job_id, kind, schema_version) VALUES (3, 1, 'profile', 2);
INSERT INTO cost_profiles (id, job_id, name, comm_ns, schema_version) VALUES (4, 1, 'old', 5, 2);
INSERT INTO cost_profile_stages VALUES (4, 0, 10, 20, 30, 1.5, 0.5);
UPDATE timelines SET run_id = 3 WHERE id = 7;
)sql");
}

TEST_F(StoreTest, VersionTwoStoreMigratesToVersionThreeKeepingItsRows) {
  const std::string path = PathOf("v2.db");
  MakeVersionTwoStore(path);
  {
    auto read_only = Store::Open(path, Store::Mode::kReadOnly);
    ASSERT_FALSE(read_only.ok());
    EXPECT_NE(read_only.status().message().find("store schema version 2 is older than " +
                                                std::to_string(Store::kSchemaVersion)),
              std::string::npos)
        << read_only.status().message();
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
  ZB_ASSERT_OK_AND_ASSIGN(CostProfile old, store.LoadCostProfile(4));
  EXPECT_EQ(old.comm, 5);
  EXPECT_EQ(old.stages[0].b, 20);
  // A profile from before version 3 has empty details.
  ZB_ASSERT_OK_AND_ASSIGN(CostProfileDetails details, store.LoadCostProfileDetails(4));
  EXPECT_EQ(details, CostProfileDetails{});
  ZB_ASSERT_OK_AND_ASSIGN(auto runs, store.ListRuns());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, 3);
  EXPECT_EQ(runs[0].command, "");
  EXPECT_FALSE(runs[0].exit_code);
  ZB_ASSERT_OK_AND_ASSIGN(auto timelines, store.ListTimelines());
  ASSERT_EQ(timelines.size(), 1u);
  EXPECT_EQ(timelines[0].run_id, std::optional<int64_t>(3));
  ZB_ASSERT_OK_AND_ASSIGN(auto profiles, store.ListCostProfiles());
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_FALSE(profiles[0].run_id);
  EXPECT_EQ(profiles[0].memory_source, std::nullopt);
  RawDb raw(path);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.Int("SELECT count(*) FROM pragma_foreign_key_check"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM timeline_ops"), 3);
}

TEST_F(StoreTest, FailedVersionThreeMigrationLeavesVersionTwo) {
  const std::string path = PathOf("v2.db");
  MakeVersionTwoStore(path);
  {
    RawDb raw(path);
    raw.Exec("CREATE TABLE cost_profile_hops (x)");
  }
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("migrate schema version 2 -> 3: "), std::string::npos)
      << store.status().message();
  RawDb raw(path);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), 2);
  // The ALTERs of the failed step were rolled back with it.
  EXPECT_EQ(raw.Int("SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'command'"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profiles"), 1);
}

// A version-3 store as zbkit 0.3 left it: the version-2 store above plus the released 2 -> 3 step.
void MakeVersionThreeStore(const std::string& path) {
  MakeVersionTwoStore(path);
  ApplyReleasedStep(path, "003_runs_and_measured_costs.sql", "ALTER TABLE runs ADD COLUMN command",
                    3);
}

TEST_F(StoreTest, VersionThreeStoreMigratesToVersionFourWithIterationZero) {
  const std::string path = PathOf("v3.db");
  MakeVersionThreeStore(path);
  {
    RawDb raw(path);
    ASSERT_EQ(raw.Int("PRAGMA user_version"), 3);
    EXPECT_EQ(raw.Int("SELECT count(*) FROM pragma_table_info('timeline_ops')"
                      " WHERE name = 'iteration'"),
              0);
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
  ZB_ASSERT_OK_AND_ASSIGN(Timeline loaded, store.LoadTimeline(7));
  ASSERT_EQ(loaded.ops.size(), 3u);
  for (const TimelineOp& op : loaded.ops)
    EXPECT_EQ(op.iteration, 0);
  EXPECT_EQ(loaded.ops[1].kind, OpKind::kBW);
  ZB_ASSERT_OK_AND_ASSIGN(auto runs, store.ListRuns());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].kind, RunKind::kProfile);
  RawDb raw(path);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.Int("SELECT count(*) FROM timeline_ops WHERE iteration = 0"), 3);
  // The new column keeps the table's rule that nothing is negative.
  char* error = nullptr;
  EXPECT_NE(
      sqlite3_exec(raw.get(),
                   "INSERT INTO timeline_ops (timeline_id, seq, rank, stage, kind, microbatch,"
                   " start_ns, end_ns, iteration) VALUES (7, 9, 0, 0, 'F', 0, 1, 2, -1)",
                   nullptr, nullptr, &error),
      SQLITE_OK);
  sqlite3_free(error);
}

TEST_F(StoreTest, FailedVersionFourMigrationLeavesVersionThree) {
  const std::string path = PathOf("v3.db");
  MakeVersionThreeStore(path);
  {
    // Step 4 cannot add a column that is already there.
    RawDb raw(path);
    raw.Exec("ALTER TABLE timeline_ops ADD COLUMN iteration TEXT");
  }
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kStore);
  EXPECT_TRUE(IsOneLine(store.status().message()));
  EXPECT_NE(store.status().message().find(path + ": open store: migrate schema version 3 -> 4: "),
            std::string::npos)
      << store.status().message();
  RawDb raw(path);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), 3);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM timeline_ops"), 3);
}

void MakeVersionFourStore(const std::string& path) {
  MakeVersionThreeStore(path);
  ApplyReleasedStep(path, "004_timeline_op_iteration.sql", "ADD COLUMN iteration", 4);
}

TEST_F(StoreTest, VersionFourStoreMigratesToVersionFiveWithUnmeasuredFusedBackward) {
  const std::string path = PathOf("v4.db");
  MakeVersionFourStore(path);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
  ZB_ASSERT_OK_AND_ASSIGN(CostProfile loaded, store.LoadCostProfile(4));
  ASSERT_EQ(loaded.stages.size(), 1u);
  EXPECT_EQ(loaded.stages[0].f, 10);
  EXPECT_EQ(loaded.stages[0].w, 30);
  EXPECT_EQ(loaded.stages[0].bw, 0);                           // not measured ...
  EXPECT_EQ(loaded.stages[0].Duration(OpKind::kBW), 20 + 30);  // ... so BW lasts B + W
  RawDb raw(path);
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
  char* error = nullptr;
  EXPECT_NE(sqlite3_exec(raw.get(), "UPDATE cost_profile_stages SET bw_ns = -1", nullptr, nullptr,
                         &error),
            SQLITE_OK);
  sqlite3_free(error);
}

}  // namespace
}  // namespace zb
