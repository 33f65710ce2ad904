// SPDX-License-Identifier: Apache-2.0
// Tests of runs in the store (store_runs.cpp): measured profiles, runs and their timelines,
// RecordMeasuredRun as one transaction, several writes as one (WriteAtomically), and the stored
// names of run kinds.
#include "store_test_support.h"

namespace zb {
namespace {

using namespace store_testing;
using testing_support::RawDb;
using testing_support::ReadBytes;

TEST_F(StoreTest, MeasuredProfileRunAndTimelineRoundTrip) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t run,
                          store.InsertRun(job, RunKind::kProfile, "torchrun train.py --pp 2", 0));
  CostProfile costs;
  costs.comm = 612'000;
  costs.stages = {{18'500'000, 18'100'000, 9'300'000, 201216, 73728},
                  {18'600'000, 18'000'000, 9'400'000, 201216.5, 73728}};
  CostProfileDetails details;
  details.run_id = run;
  details.memory_source = MemorySource::kMeasured;
  details.spread = {{0, OpKind::kF, 18'500'000, 18'000'000, 19'000'000, 24},
                    {0, OpKind::kB, 18'100'000, 18'000'000, 18'300'000, 24},
                    {1, OpKind::kW, 9'400'000, 9'000'000, 9'900'000, 23}};
  details.hops = {{0, 1, 612'000, 600'000, 700'000, 48}, {1, 0, 500'000, 480'000, 510'000, 48}};
  ZB_ASSERT_OK_AND_ASSIGN(int64_t profile,
                          store.InsertCostProfile(job, "measured", costs, details));
  Timeline timeline = MakeMeasuredTimeline();
  timeline.ops.push_back({0, 0, OpKind::kComm, 0, 20, 26});
  ZB_ASSERT_OK_AND_ASSIGN(int64_t timeline_id, store.InsertRunTimeline(run, timeline));

  ZB_ASSERT_OK_AND_ASSIGN(CostProfile loaded, store.LoadCostProfile(profile));
  EXPECT_TRUE(loaded == costs);
  ZB_ASSERT_OK_AND_ASSIGN(CostProfileDetails loaded_details, store.LoadCostProfileDetails(profile));
  EXPECT_EQ(loaded_details, details);
  ZB_ASSERT_OK_AND_ASSIGN(Timeline loaded_timeline, store.LoadTimeline(timeline_id));
  EXPECT_TRUE(loaded_timeline == timeline);
  ZB_ASSERT_OK_AND_ASSIGN(auto runs, store.ListRuns());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].job_id, job);
  EXPECT_EQ(runs[0].kind, RunKind::kProfile);
  EXPECT_EQ(runs[0].command, "torchrun train.py --pp 2");
  EXPECT_EQ(runs[0].exit_code, std::optional<int>(0));
  ZB_ASSERT_OK_AND_ASSIGN(auto profiles, store.ListCostProfiles());
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].run_id, std::optional<int64_t>(run));
  EXPECT_EQ(profiles[0].memory_source, MemorySource::kMeasured);
  ZB_ASSERT_OK_AND_ASSIGN(auto timelines, store.ListTimelines());
  ASSERT_EQ(timelines.size(), 1u);
  EXPECT_EQ(timelines[0].run_id, std::optional<int64_t>(run));
  EXPECT_FALSE(timelines[0].schedule_id);

  // Deleting the run keeps the profile (unlinked) and deletes its timeline.
  {
    RawDb raw(path);
    raw.Exec("PRAGMA foreign_keys = ON; DELETE FROM runs");
    EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profiles WHERE run_id IS NULL"), 1);
    EXPECT_EQ(raw.Int("SELECT count(*) FROM timelines"), 0);
    raw.Exec("PRAGMA foreign_keys = ON; DELETE FROM cost_profiles");
    EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profile_spread"), 0);
    EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profile_hops"), 0);
  }
}

TEST_F(StoreTest, RunAndMeasuredProfileErrors) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  EXPECT_EQ(store.InsertRun(job, static_cast<RunKind>(7)).status().code(),
            ErrorCode::kInvalidInput);
  EXPECT_EQ(store.InsertRun(job + 99, RunKind::kProfile).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(store.InsertRun(job, RunKind::kReplay, "", std::nullopt, 12345).status().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(store.InsertRunTimeline(77, MakeMeasuredTimeline()).status().code(),
            ErrorCode::kNotFound);
  CostProfile costs;
  costs.stages = {{1, 1, 1, 0, 0}};
  CostProfileDetails details;
  details.run_id = 55;
  EXPECT_EQ(store.InsertCostProfile(job, "x", costs, details).status().code(),
            ErrorCode::kNotFound);
  // p90 below p10 is a bug the schema rejects; nothing of the profile is left.
  details.run_id.reset();
  details.spread = {{0, OpKind::kF, 5, 6, 4, 3}};
  auto bad = store.InsertCostProfile(job, "x", costs, details);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("CHECK constraint failed"), std::string::npos);
  RawDb raw(path);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profiles"), 0);
  EXPECT_EQ(store.LoadCostProfileDetails(999).status().code(), ErrorCode::kNotFound);
}

TEST_F(StoreTest, RecordMeasuredRunLinksTheRunTheTimelineAndTheSchedule) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t schedule, store.InsertSchedule(job, MakeVSchedule()));
  const Timeline measured = MakeTwoIterationTimeline();
  ZB_ASSERT_OK_AND_ASSIGN(
      int64_t run, store.RecordMeasuredRun(job, schedule, "torchrun replay.py", 0, measured));

  ZB_ASSERT_OK_AND_ASSIGN(auto runs, store.ListRuns());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, run);
  EXPECT_EQ(runs[0].job_id, job);
  EXPECT_EQ(runs[0].kind, RunKind::kReplay);
  EXPECT_EQ(runs[0].schedule_id, std::optional<int64_t>(schedule));
  EXPECT_EQ(runs[0].command, "torchrun replay.py");
  EXPECT_EQ(runs[0].exit_code, std::optional<int>(0));

  ZB_ASSERT_OK_AND_ASSIGN(auto of_run, store.ListRunTimelines(run));
  ASSERT_EQ(of_run.size(), 1u);
  EXPECT_EQ(of_run[0].kind, TimelineKind::kMeasured);
  EXPECT_EQ(of_run[0].run_id, std::optional<int64_t>(run));
  EXPECT_EQ(of_run[0].schedule_id, std::optional<int64_t>(schedule));
  EXPECT_EQ(of_run[0].num_ops, static_cast<int64_t>(measured.ops.size()));
  ZB_ASSERT_OK_AND_ASSIGN(Timeline loaded, store.LoadTimeline(of_run[0].id));
  EXPECT_TRUE(loaded == measured);

  // The schedule's measured timelines are its replays, not its own prediction.
  ZB_ASSERT_OK_AND_ASSIGN(auto all, store.ListTimelines());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].kind, TimelineKind::kPredicted);
  ZB_ASSERT_OK_AND_ASSIGN(auto of_schedule, store.ListMeasuredTimelines(schedule));
  ASSERT_EQ(of_schedule.size(), 1u);
  EXPECT_EQ(of_schedule[0].id, of_run[0].id);

  // A second replay adds a second run and timeline.
  ZB_ASSERT_OK_AND_ASSIGN(int64_t second,
                          store.RecordMeasuredRun(job, schedule, "again", 1, measured));
  EXPECT_NE(second, run);
  ZB_ASSERT_OK_AND_ASSIGN(auto both, store.ListMeasuredTimelines(schedule));
  EXPECT_EQ(both.size(), 2u);
  ZB_ASSERT_OK_AND_ASSIGN(auto first_only, store.ListRunTimelines(run));
  EXPECT_EQ(first_only.size(), 1u);
}

TEST_F(StoreTest, RecordMeasuredRunIsOneTransaction) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t schedule, store.InsertSchedule(job, MakeVSchedule()));
  std::map<std::string, int64_t> before;
  {
    RawDb raw(path);
    before = RowCounts(raw);
  }
  const Timeline measured = MakeTwoIterationTimeline();

  EXPECT_EQ(store.RecordMeasuredRun(job, schedule + 99, "", 0, measured).status().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(store.RecordMeasuredRun(job + 99, schedule, "", 0, measured).status().code(),
            ErrorCode::kNotFound);
  Timeline predicted = measured;
  predicted.kind = TimelineKind::kPredicted;
  EXPECT_EQ(store.RecordMeasuredRun(job, schedule, "", 0, predicted).status().code(),
            ErrorCode::kInvalidInput);
  // The run row is written before the timeline fails on its last op: both go.
  Timeline bad = measured;
  bad.ops.back().end = bad.ops.back().start - 1;
  auto failed = store.RecordMeasuredRun(job, schedule, "", 0, bad);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), ErrorCode::kStore);
  EXPECT_TRUE(IsOneLine(failed.status().message()));
  EXPECT_NE(failed.status().message().find("op 9: CHECK constraint failed"), std::string::npos)
      << failed.status().message();
  {
    RawDb raw(path);
    EXPECT_EQ(RowCounts(raw), before);
  }

  EXPECT_EQ(store.ListRunTimelines(12345).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(store.ListMeasuredTimelines(12345).status().code(), ErrorCode::kNotFound);
  ZB_ASSERT_OK_AND_ASSIGN(auto none, store.ListMeasuredTimelines(schedule));
  EXPECT_TRUE(none.empty());

  ZB_ASSERT_OK_AND_ASSIGN(Store reader, Store::Open(path, Store::Mode::kReadOnly));
  auto refused = reader.RecordMeasuredRun(job, schedule, "", 0, measured);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("read-only"), std::string::npos);
}

// What `zb import --store` writes: cluster, job, run, measured profile and timeline, as one.
Status WriteProfiledRun(Store& writing, const std::string& job_name, const Timeline& timeline) {
  ZB_ASSIGN_OR_RETURN(int64_t cluster, writing.EnsureCluster(Cluster("lab")));
  ZB_ASSIGN_OR_RETURN(int64_t job, writing.EnsureJob(cluster, job_name));
  ZB_ASSIGN_OR_RETURN(int64_t run, writing.InsertRun(job, RunKind::kImport, "trace.json", 0));
  CostProfile costs;
  costs.comm = 1000;
  costs.stages = {{10, 10, 5, 1, 1}, {10, 10, 5, 1, 1}};
  CostProfileDetails details;
  details.run_id = run;
  ZB_RETURN_IF_ERROR(writing.InsertCostProfile(job, job_name, costs, details).status());
  return writing.InsertRunTimeline(run, timeline).status();
}

TEST_F(StoreTest, WriteAtomicallyKeepsEveryWriteOrNone) {
  const std::string path = PathOf("store.db");
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  std::map<std::string, int64_t> empty;
  {
    RawDb raw(path);
    empty = RowCounts(raw);
  }
  // The timeline fails on its last op after the cluster, job, run and profile were written.
  Timeline bad = MakeMeasuredTimeline();
  bad.ops.back().end = bad.ops.back().start - 1;
  const Status failed = store.WriteAtomically(
      "store analysis", [&](Store& writing) { return WriteProfiledRun(writing, "job", bad); });
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(IsOneLine(failed.message()));
  EXPECT_NE(failed.message().find("CHECK constraint failed"), std::string::npos)
      << failed.message();
  {
    RawDb raw(path);
    EXPECT_EQ(RowCounts(raw), empty);
  }
  // An error of the steps' own after successful calls undoes them too.
  const Status refused = store.WriteAtomically("store analysis", [&](Store& writing) -> Status {
    ZB_RETURN_IF_ERROR(WriteProfiledRun(writing, "job", MakeMeasuredTimeline()));
    return InvalidInput("changed my mind");
  });
  EXPECT_EQ(refused.code(), ErrorCode::kInvalidInput);
  {
    RawDb raw(path);
    EXPECT_EQ(RowCounts(raw), empty);
  }
  // Whole: all of it, seen by another connection only after the commit.
  ZB_ASSERT_OK(store.WriteAtomically("store analysis", [&](Store& writing) -> Status {
    ZB_RETURN_IF_ERROR(WriteProfiledRun(writing, "job", MakeMeasuredTimeline()));
    ZB_ASSIGN_OR_RETURN(Store other, Store::Open(path, Store::Mode::kReadOnly));
    ZB_ASSIGN_OR_RETURN(std::vector<RunInfo> seen, other.ListRuns());
    EXPECT_TRUE(seen.empty()) << "another connection saw an uncommitted run";
    return Status::Ok();
  }));
  ZB_ASSERT_OK_AND_ASSIGN(auto runs, store.ListRuns());
  ASSERT_EQ(runs.size(), 1u);
  ZB_ASSERT_OK_AND_ASSIGN(auto profiles, store.ListCostProfiles());
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].run_id, std::optional<int64_t>(runs[0].id));
  ZB_ASSERT_OK_AND_ASSIGN(auto timelines, store.ListRunTimelines(runs[0].id));
  EXPECT_EQ(timelines.size(), 1u);
  // A failed call inside whose error the steps handle undoes only that call.
  ZB_ASSERT_OK(store.WriteAtomically("store analysis", [&](Store& writing) -> Status {
    EXPECT_FALSE(WriteProfiledRun(writing, "second", bad).ok());
    ZB_ASSIGN_OR_RETURN(int64_t cluster, writing.EnsureCluster(Cluster("lab")));
    return writing.EnsureJob(cluster, "third").status();
  }));
  {
    RawDb raw(path);
    EXPECT_EQ(raw.Int("SELECT count(*) FROM jobs"), 3);  // "job", "second" and "third"
    EXPECT_EQ(raw.Int("SELECT count(*) FROM runs"), 2);  // the second's run, its timeline gone
    EXPECT_EQ(raw.Int("SELECT count(*) FROM timelines"), 1);
  }

  ZB_ASSERT_OK_AND_ASSIGN(Store reader, Store::Open(path, Store::Mode::kReadOnly));
  bool ran = false;
  const Status read_only = reader.WriteAtomically("store analysis", [&](Store&) {
    ran = true;
    return Status::Ok();
  });
  EXPECT_NE(read_only.message().find("read-only"), std::string::npos) << read_only.message();
  EXPECT_FALSE(ran);
}

TEST(StoreNamesTest, RunKindsAndMemorySourcesKeepTheirStoredNames) {
  EXPECT_STREQ(RunKindName(RunKind::kProfile), "profile");
  EXPECT_STREQ(RunKindName(RunKind::kImport), "import");
  EXPECT_STREQ(RunKindName(RunKind::kReplay), "replay");
  EXPECT_EQ(RunKindName(static_cast<RunKind>(9)), nullptr);
  for (RunKind kind : {RunKind::kProfile, RunKind::kImport, RunKind::kReplay}) {
    EXPECT_EQ(ParseRunKind(RunKindName(kind)), kind);
  }
  EXPECT_EQ(ParseRunKind("benchmark"), std::nullopt);
  EXPECT_EQ(ParseRunKind(""), std::nullopt);

  EXPECT_STREQ(MemorySourceName(MemorySource::kNone), "none");
  EXPECT_STREQ(MemorySourceName(MemorySource::kEstimated), "estimated");
  EXPECT_STREQ(MemorySourceName(MemorySource::kMeasured), "measured");
  for (MemorySource source :
       {MemorySource::kNone, MemorySource::kEstimated, MemorySource::kMeasured}) {
    EXPECT_EQ(ParseMemorySource(MemorySourceName(source)), source);
  }
  EXPECT_EQ(ParseMemorySource("Measured"), std::nullopt);
}

// A value written by hand that no enum names is reported, not guessed.
TEST_F(StoreTest, UnknownStoredRunKindIsReportedAsInconsistent) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  {
    RawDb raw(path);
    // Sidestep the CHECK the way an older or foreign writer could: a rebuilt table without it.
    raw.Exec(
        "PRAGMA ignore_check_constraints = ON;"
        "INSERT INTO runs (job_id, kind, schema_version) VALUES (" +
        std::to_string(job) + ", 'benchmark', 4)");
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  auto runs = store.ListRuns();
  ASSERT_FALSE(runs.ok());
  EXPECT_NE(runs.status().message().find("unknown kind 'benchmark'"), std::string::npos)
      << runs.status().message();
}

// Per-block costs ride with their profile (migration 10): back in model order with the
// profile's comm, gone with the profile; a profile without them loads none; a block the schema
// refuses (a negative M_W) leaves nothing of the profile behind; M_W above M_B (a checkpointed
// block, migration 12) is kept.
TEST_F(StoreTest, ProfileLayersRoundTripAndRollBack) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  CostProfile costs;
  costs.comm = 256'378;
  costs.stages = {{9'000'000, 8'000'000, 6'000'000, 3e6, 1e6}, {9'500'000, 8, 7, 3e6, 1e6}};
  CostProfileDetails details;
  details.layers =
      LayerProfile{{{"tok_embeddings", 40'000, 0, 974'000, 512, 512, 8.4e6, 65536},
                    {"layers.0", 1'990'000, 1'880'000, 1'300'000, 1.4e6, 5e5, 1.36e7, 65536},
                    {"output", 639'000, 646'000, 453'000, 65536, 65536, 8.4e6, 0}},
                   costs.comm,
                   LayerSource::kMeasured};
  // The memory plan's figures: the block under two other modes, in their order (store v16).
  details.layers->layers[1].options = {{"op", 1'990'000, 2'400'000, 1'300'000, 6e5, 5e5, false},
                                       {"full", 1'990'000, 3'870'000, 1'300'000, 65536, 5e5, true}};
  ZB_ASSERT_OK_AND_ASSIGN(int64_t with, store.InsertCostProfile(job, "blocks", costs, details));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t without, store.InsertCostProfile(job, "stages", costs, {}));
  ZB_ASSERT_OK_AND_ASSIGN(CostProfileDetails loaded, store.LoadCostProfileDetails(with));
  ASSERT_TRUE(loaded.layers.has_value());
  EXPECT_TRUE(*loaded.layers == *details.layers);
  ZB_ASSERT_OK_AND_ASSIGN(CostProfileDetails none, store.LoadCostProfileDetails(without));
  EXPECT_FALSE(none.layers.has_value());

  details.layers->layers[1].m_w = 2e6;  // above its M_B: checkpointed
  ZB_ASSERT_OK_AND_ASSIGN(int64_t checkpointed,
                          store.InsertCostProfile(job, "checkpointed", costs, details));
  ZB_ASSERT_OK_AND_ASSIGN(CostProfileDetails back, store.LoadCostProfileDetails(checkpointed));
  EXPECT_EQ(back.layers->layers[1].m_w, 2e6);
  RawDb(path).Exec("PRAGMA foreign_keys = ON; DELETE FROM cost_profiles WHERE id = " +
                   std::to_string(checkpointed));
  details.layers->layers[1].m_w = -1;
  auto bad = store.InsertCostProfile(job, "bad", costs, details);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("layers.0"), std::string::npos) << bad.status().message();
  details.layers->layers[1].m_w = 5e5;
  details.layers->comm = 1;  // another hop than the profile's
  EXPECT_EQ(store.InsertCostProfile(job, "bad", costs, details).status().code(),
            ErrorCode::kInvalidInput);
  RawDb raw(path);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profiles"), 2);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profile_layers"), 3);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profile_layer_options"), 2);
  raw.Exec("PRAGMA foreign_keys = ON; DELETE FROM cost_profiles WHERE id = " +
           std::to_string(with));
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profile_layers"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profile_layer_options"), 0);
}

// Migration 12 rebuilds cost_profile_layers without `m_w <= m_b` (a checkpointed block holds
// more from B to W than F left): a version-11 store keeps its blocks, row for row, and then takes
// a block with M_W above M_B.
TEST_F(StoreTest, VersionElevenStoreKeepsItsBlocksAndTakesCheckpointedOnes) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  CostProfile costs;
  costs.comm = 1000;
  costs.stages = {{9'000'000, 8'000'000, 6'000'000, 3e6, 1e6}};
  CostProfileDetails details;
  details.layers = LayerProfile{{{"layers.0", 1'990'000, 1'880'000, 1'300'000, 1.4e6, 5e5, 1e7, 64},
                                 {"output", 639'000, 646'000, 453'000, 65536, 65536, 8e6, 0}},
                                costs.comm,
                                LayerSource::kMeasured};
  int64_t old_profile = 0;
  {
    ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
    ZB_ASSERT_OK_AND_ASSIGN(old_profile, store.InsertCostProfile(job, "old", costs, details));
  }
  {
    // Back to version 11: the layers table with its old CHECK, the profile without its column.
    RawDb raw(path);
    raw.Exec(
        "CREATE TABLE old_layers AS SELECT * FROM cost_profile_layers;"
        "DROP TABLE cost_profile_layers;"
        "CREATE TABLE cost_profile_layers (profile_id INTEGER NOT NULL REFERENCES cost_profiles"
        " (id) ON DELETE CASCADE, ordinal INTEGER NOT NULL CHECK (ordinal >= 0), name TEXT NOT"
        " NULL CHECK (name <> ''), f_ns INTEGER NOT NULL CHECK (f_ns >= 0), b_ns INTEGER NOT NULL"
        " CHECK (b_ns >= 0), w_ns INTEGER NOT NULL CHECK (w_ns >= 0), m_b REAL NOT NULL CHECK"
        " (m_b >= 0), m_w REAL NOT NULL CHECK (m_w >= 0 AND m_w <= m_b), state REAL NOT NULL"
        " CHECK (state >= 0), send REAL NOT NULL CHECK (send >= 0), PRIMARY KEY (profile_id,"
        " ordinal), UNIQUE (profile_id, name)) WITHOUT ROWID;"
        "INSERT INTO cost_profile_layers SELECT profile_id, ordinal, name, f_ns, b_ns, w_ns, m_b,"
        " m_w, state, send FROM old_layers;"
        "DROP TABLE old_layers;"
        "ALTER TABLE cost_profiles DROP COLUMN checkpointing;"
        "ALTER TABLE cost_profiles DROP COLUMN data_parallel; "
        "ALTER TABLE cost_profile_stages DROP COLUMN reduce_ns;"
        "ALTER TABLE cost_profile_stages DROP COLUMN unshard_ns;"
        "ALTER TABLE cost_profile_stages DROP COLUMN unsharded;"
        "ALTER TABLE cost_profile_stages DROP COLUMN reduced;"
        "ALTER TABLE cost_profiles DROP COLUMN reduce_wait; "
        "DROP TABLE cost_profile_layer_options; "
        "PRAGMA user_version = 11");
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
  ZB_ASSERT_OK_AND_ASSIGN(CostProfileDetails kept, store.LoadCostProfileDetails(old_profile));
  ASSERT_TRUE(kept.layers.has_value());
  EXPECT_TRUE(*kept.layers == *details.layers);
  details.layers->layers[0].m_w = 3e6;  // above its M_B: a checkpointed block
  details.layers->layers[0].checkpointing = "full";
  ZB_ASSERT_OK_AND_ASSIGN(int64_t checkpointed,
                          store.InsertCostProfile(job, "checkpointed", costs, details));
  ZB_ASSERT_OK_AND_ASSIGN(CostProfileDetails back, store.LoadCostProfileDetails(checkpointed));
  EXPECT_EQ(back.layers->layers[0].m_w, 3e6);
  EXPECT_TRUE(*back.layers == *details.layers);  // its mode too; "" (not known) for the other
}

}  // namespace
}  // namespace zb
