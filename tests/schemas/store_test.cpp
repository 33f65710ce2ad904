// SPDX-License-Identifier: Apache-2.0
// Tests of the SQLite store: round trips, schema versioning and migration, refusal of files that
// are not (or not yet, or no longer) this zbkit's stores, transactional writes, WAL concurrency,
// and the shape of the public JSON Schema files.
#include "zbkit/schemas/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "assert_ok.h"
#include "raw_db.h"
#include "store_dir.h"
#include "zbkit/schemas/types.h"
#include "zbkit/schemas/validate.h"

namespace zb {
namespace {

namespace fs = std::filesystem;

const char* const kTables[] = {
    "clusters",          "jobs",           "cost_profiles",   "cost_profile_stages",
    "schedules",         "schedule_ranks", "schedule_ops",    "runs",
    "timelines",         "timeline_ops",   "memory_samples",  "cost_profile_spread",
    "cost_profile_hops", "frontiers",      "frontier_points", "hop_measurements",
    "measured_hops"};

using testing_support::RawDb;
using testing_support::ReadBytes;

// Rows per table, to show that a failed write left nothing behind.
std::map<std::string, int64_t> RowCounts(RawDb& db) {
  std::map<std::string, int64_t> counts;
  for (const char* table : kTables) {
    counts[table] = db.Int(std::string("SELECT count(*) FROM ") + table);
  }
  return counts;
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

ClusterInfo Cluster(const std::string& name, const std::string& gpu = "",
                    const std::string& interconnect = "", const std::string& driver = "",
                    const std::string& nccl = "") {
  return {name, gpu, interconnect, driver, nccl};
}

bool IsOneLine(const std::string& message) {
  return !message.empty() && message.find('\n') == std::string::npos;
}

// A hand-built schedule: p = 2, m = 2, placement v (rank 0 holds stages 0 and 3, rank 1 holds 1
// and 2), with split B/W for some (stage, microbatch) and fused BW for others, distinct
// non-integral memory values and a prediction, so that every column has something to lose.
Schedule MakeVSchedule() {
  Schedule schedule;
  schedule.ranks = 2;
  schedule.microbatches = 2;
  schedule.chunks = 2;
  schedule.placement = Placement::kV;
  schedule.family = "hand-v";
  schedule.costs.comm = 600'001;
  schedule.costs.stages = {{18'500'000, 18'100'000, 9'300'000, 201216.5, 73728.25},
                           {17'000'001, 16'000'003, 8'000'007, 0.1, 0.03},
                           {16'500'000, 15'900'000, 7'700'000, 1e-3, 3e-4},
                           {19'000'000, 21'000'000, 11'000'000, 123456.789, 0}};
  schedule.programs.resize(2);
  schedule.programs[0].stages = {0, 3};
  schedule.programs[1].stages = {1, 2};
  struct Step {
    int rank;
    OpKind kind;
    int chunk;
    int microbatch;
  };
  // Rank 0: stage 0 (chunk 0) mb0 split, mb1 fused; stage 3 (chunk 1) mb0 fused, mb1 split.
  // Rank 1: stage 1 (chunk 0) both split; stage 2 (chunk 1) both fused.
  const Step steps[] = {
      {0, OpKind::kF, 0, 0},  {0, OpKind::kF, 0, 1},  {0, OpKind::kF, 1, 0}, {0, OpKind::kBW, 1, 0},
      {0, OpKind::kF, 1, 1},  {0, OpKind::kB, 1, 1},  {0, OpKind::kB, 0, 0}, {0, OpKind::kW, 1, 1},
      {0, OpKind::kBW, 0, 1}, {0, OpKind::kW, 0, 0},  {1, OpKind::kF, 0, 0}, {1, OpKind::kF, 1, 0},
      {1, OpKind::kF, 0, 1},  {1, OpKind::kBW, 1, 0}, {1, OpKind::kF, 1, 1}, {1, OpKind::kB, 0, 0},
      {1, OpKind::kBW, 1, 1}, {1, OpKind::kB, 0, 1},  {1, OpKind::kW, 0, 0}, {1, OpKind::kW, 0, 1},
  };
  TimeNs clock[2] = {0, 1'234'567};
  for (const Step& step : steps) {
    RankProgram& program = schedule.programs[step.rank];
    const StageCost& cost = schedule.costs.stages[program.stages[step.chunk]];
    Op op;
    op.kind = step.kind;
    op.chunk = step.chunk;
    op.microbatch = step.microbatch;
    op.start = clock[step.rank];
    op.end = op.start + cost.Duration(step.kind);
    clock[step.rank] = op.end + 7;
    program.ops.push_back(op);
  }
  Prediction predicted;
  predicted.makespan = std::max(clock[0], clock[1]);
  predicted.span = predicted.makespan - 1'000;
  predicted.bubble_rate = 0.123456789012345;
  predicted.paper_bubble_rate = 0.0987654321;
  predicted.peak_memory = {402433.25, 0.1 + 0.2};
  schedule.predicted = predicted;
  return schedule;
}

Timeline MakeMeasuredTimeline() {
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  timeline.ops = {{0, 0, OpKind::kF, 0, 10, 20},
                  {1, 1, OpKind::kF, 0, 25, 40},
                  {1, 1, OpKind::kBW, 0, 41, 90},
                  {0, 0, OpKind::kB, 0, 95, 120},
                  {0, 0, OpKind::kW, 0, 121, 121}};  // zero-length ops are legal
  timeline.memory = {{0, 20, 1.5}, {1, 40, 2.75}, {1, 90, 0}, {0, 120, 0.1}, {0, 121, -1e-17}};
  return timeline;
}

class StoreTest : public testing_support::StoreDirTest {
 protected:
  std::string PathOf(const std::string& name) const { return dir_ + "/" + name; }

  std::set<std::string> DirEntries() const {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.insert(entry.path().filename().string());
    }
    return names;
  }

  // A store with one cluster and job; returns the job id through `job_id`.
  void MakeStoreWithJob(const std::string& path, int64_t* job_id) {
    ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
    ZB_ASSERT_OK_AND_ASSIGN(int64_t cluster,
                            store.EnsureCluster(Cluster("node-a", "H100", "NVLink")));
    ZB_ASSERT_OK_AND_ASSIGN(*job_id, store.EnsureJob(cluster, "gpt-1b"));
  }
};

// ---- Creation and schema version -----------------------------------------------------------

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

// ---- Clusters and jobs ---------------------------------------------------------------------

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

// ---- Cost profiles -------------------------------------------------------------------------

TEST_F(StoreTest, CostProfileRoundTripsAndIsListed) {
  const std::string path = PathOf("store.db");
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t cluster, store.EnsureCluster(Cluster("node-a")));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t job, store.EnsureJob(cluster, "gpt"));
  CostProfile costs = MakeVSchedule().costs;
  costs.stages[2].bw =
      123'456;  // a measured fused backward on one stage, "not measured" on the rest
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.InsertCostProfile(job, "measured", costs));
  ZB_ASSERT_OK_AND_ASSIGN(CostProfile loaded, store.LoadCostProfile(id));
  EXPECT_EQ(loaded, costs);
  EXPECT_EQ(loaded.stages[1].m_b, 0.1);  // bit-exact doubles, not "close"
  EXPECT_EQ(loaded.stages[2].bw, 123'456);
  EXPECT_EQ(loaded.stages[1].bw, 0);

  ZB_ASSERT_OK_AND_ASSIGN(auto infos, store.ListCostProfiles());
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].id, id);
  EXPECT_EQ(infos[0].cluster, "node-a");
  EXPECT_EQ(infos[0].job, "gpt");
  EXPECT_EQ(infos[0].name, "measured");
  EXPECT_EQ(infos[0].num_stages, 4);
  EXPECT_TRUE(std::regex_match(infos[0].created_at,
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << infos[0].created_at;

  auto missing = store.LoadCostProfile(id + 100);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);

  auto no_job = store.InsertCostProfile(job + 100, "x", costs);
  ASSERT_FALSE(no_job.ok());
  EXPECT_EQ(no_job.status().code(), ErrorCode::kNotFound);
}

TEST_F(StoreTest, NegativeCostIsRejectedWithoutLeavingAProfile) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  CostProfile costs = MakeVSchedule().costs;
  costs.stages.back().w = -1;  // the last row fails, after the profile row and three stages
  auto result = store.InsertCostProfile(job, "broken", costs);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kStore);
  EXPECT_TRUE(IsOneLine(result.status().message()));
  EXPECT_EQ(result.status().message().rfind(path + ": insert cost profile: stage 3: ", 0), 0u)
      << result.status().message();
  EXPECT_NE(result.status().message().find("CHECK constraint failed"), std::string::npos);
  RawDb raw(path);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profiles"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profile_stages"), 0);
}

// ---- Schedules -----------------------------------------------------------------------------

TEST_F(StoreTest, VScheduleRoundTripsExactlyWithItsPredictedTimeline) {
  const Schedule schedule = MakeVSchedule();
  ASSERT_TRUE(ValidateSchedule(schedule).ok()) << ValidateSchedule(schedule).message();
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.InsertSchedule(job, schedule, 450000.5));

  ZB_ASSERT_OK_AND_ASSIGN(Schedule loaded, store.LoadSchedule(id));
  EXPECT_TRUE(loaded == schedule);
  EXPECT_EQ(loaded.family, "hand-v");
  EXPECT_EQ(loaded.placement, Placement::kV);
  EXPECT_EQ(loaded.programs[1].stages, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(loaded.programs[0].ops, schedule.programs[0].ops);
  ASSERT_TRUE(loaded.predicted.has_value());
  EXPECT_EQ(*loaded.predicted, *schedule.predicted);

  ZB_ASSERT_OK_AND_ASSIGN(auto schedules, store.ListSchedules());
  ASSERT_EQ(schedules.size(), 1u);
  const ScheduleInfo& info = schedules[0];
  EXPECT_EQ(info.id, id);
  EXPECT_EQ(info.cluster, "node-a");
  EXPECT_EQ(info.job, "gpt-1b");
  EXPECT_EQ(info.family, "hand-v");
  EXPECT_EQ(info.ranks, 2);
  EXPECT_EQ(info.microbatches, 2);
  EXPECT_EQ(info.chunks, 2);
  EXPECT_EQ(info.placement, Placement::kV);
  EXPECT_EQ(info.memory_limit, std::optional<double>(450000.5));
  EXPECT_EQ(info.predicted, *schedule.predicted);
  EXPECT_EQ(info.num_ops, schedule.num_ops());
  EXPECT_FALSE(info.created_at.empty());

  // The schedule's costs are a profile of their own.
  ZB_ASSERT_OK_AND_ASSIGN(auto profiles, store.ListCostProfiles());
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].name, "hand-v scheduled costs");
  EXPECT_EQ(profiles[0].num_stages, 4);

  // ... and its prediction is a predicted timeline linked to it.
  ZB_ASSERT_OK_AND_ASSIGN(auto timelines, store.ListTimelines());
  ASSERT_EQ(timelines.size(), 1u);
  EXPECT_EQ(timelines[0].schedule_id, std::optional<int64_t>(id));
  EXPECT_EQ(timelines[0].kind, TimelineKind::kPredicted);
  EXPECT_EQ(timelines[0].num_ops, schedule.num_ops());
  ZB_ASSERT_OK_AND_ASSIGN(Timeline predicted, store.LoadTimeline(timelines[0].id));
  EXPECT_TRUE(predicted == TimelineFromSchedule(schedule));

  RawDb raw(path);
  for (const char* table : {"schedules", "cost_profiles", "timelines"}) {
    EXPECT_EQ(raw.Int(std::string("SELECT count(*) FROM ") + table + " WHERE schema_version <> " +
                      std::to_string(Store::kSchemaVersion)),
              0)
        << table;
  }
  EXPECT_EQ(raw.Text("SELECT stages FROM schedule_ranks WHERE rank = 0"), "[0,3]");
}

TEST_F(StoreTest, ScheduleWithoutPredictionHasNoTimeline) {
  Schedule schedule = MakeVSchedule();
  schedule.predicted.reset();
  schedule.family.clear();
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.InsertSchedule(job, schedule));
  ZB_ASSERT_OK_AND_ASSIGN(Schedule loaded, store.LoadSchedule(id));
  EXPECT_TRUE(loaded == schedule);
  EXPECT_FALSE(loaded.predicted.has_value());
  ZB_ASSERT_OK_AND_ASSIGN(auto timelines, store.ListTimelines());
  EXPECT_TRUE(timelines.empty());
  ZB_ASSERT_OK_AND_ASSIGN(auto schedules, store.ListSchedules());
  ASSERT_EQ(schedules.size(), 1u);
  EXPECT_FALSE(schedules[0].memory_limit.has_value());
  ZB_ASSERT_OK_AND_ASSIGN(auto profiles, store.ListCostProfiles());
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].name, "scheduled costs");
}

TEST_F(StoreTest, PredictionWithoutPeaksRoundTrips) {
  Schedule schedule = MakeVSchedule();
  schedule.predicted->peak_memory.clear();
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.InsertSchedule(job, schedule));
  ZB_ASSERT_OK_AND_ASSIGN(Schedule loaded, store.LoadSchedule(id));
  EXPECT_TRUE(loaded == schedule);
}

TEST_F(StoreTest, UnknownScheduleIsNotFound) {
  const std::string path = PathOf("store.db");
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  auto schedule = store.LoadSchedule(42);
  ASSERT_FALSE(schedule.ok());
  EXPECT_EQ(schedule.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(schedule.status().message(), path + ": load schedule: no schedule with id 42");
  auto timeline = store.LoadTimeline(42);
  ASSERT_FALSE(timeline.ok());
  EXPECT_EQ(timeline.status().code(), ErrorCode::kNotFound);
  auto linked = store.InsertTimeline(42, MakeMeasuredTimeline());
  ASSERT_FALSE(linked.ok());
  EXPECT_EQ(linked.status().code(), ErrorCode::kNotFound);
  auto no_job = store.InsertSchedule(42, MakeVSchedule());
  ASSERT_FALSE(no_job.ok());
  EXPECT_EQ(no_job.status().code(), ErrorCode::kNotFound);
}

// The failing row comes late (after the profile, schedule, ranks and most ops are written): the
// whole schedule must disappear with it.
TEST_F(StoreTest, FailedScheduleInsertLeavesNoRows) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t kept, store.InsertSchedule(job, MakeVSchedule()));
  std::map<std::string, int64_t> before;
  {
    RawDb raw(path);
    before = RowCounts(raw);
  }
  ASSERT_GT(before["schedule_ops"], 0);

  Schedule end_before_start = MakeVSchedule();
  Op& last = end_before_start.programs[1].ops.back();
  last.end = last.start - 1;
  auto result = store.InsertSchedule(job, end_before_start);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kStore);
  EXPECT_TRUE(IsOneLine(result.status().message()));
  EXPECT_EQ(
      result.status().message(),
      path + ": insert schedule: ranks[1].ops[9]: CHECK constraint failed: end_ns >= start_ns");

  Schedule missing_chunk = MakeVSchedule();
  missing_chunk.programs[1].ops.back().chunk = 2;  // rank 1 holds chunks 0 and 1 only
  result = store.InsertSchedule(job, missing_chunk);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(result.status().message().find("ranks[1].ops[9]: chunk 2 does not exist"),
            std::string::npos)
      << result.status().message();

  Schedule unknown_stage = MakeVSchedule();
  unknown_stage.programs[1].stages[1] = 9;
  result = store.InsertSchedule(job, unknown_stage);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kInvalidInput);

  Schedule nan_peak = MakeVSchedule();
  nan_peak.predicted->peak_memory[1] = std::nan("");
  EXPECT_EQ(store.InsertSchedule(job, nan_peak).status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(store.InsertSchedule(job, MakeVSchedule(), std::nan("")).status().code(),
            ErrorCode::kInvalidInput);

  Schedule wrong_ranks = MakeVSchedule();
  wrong_ranks.programs.pop_back();
  EXPECT_EQ(store.InsertSchedule(job, wrong_ranks).status().code(), ErrorCode::kInvalidInput);

  {
    RawDb raw(path);
    EXPECT_EQ(RowCounts(raw), before);
  }
  ZB_ASSERT_OK_AND_ASSIGN(Schedule still_there, store.LoadSchedule(kept));
  EXPECT_TRUE(still_there == MakeVSchedule());
  // The store is still usable after the rollbacks.
  ZB_ASSERT_OK_AND_ASSIGN(int64_t next, store.InsertSchedule(job, MakeVSchedule()));
  EXPECT_GT(next, kept);
}

// ---- Timelines -----------------------------------------------------------------------------

TEST_F(StoreTest, TimelinesWithMemorySamplesRoundTrip) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  Schedule schedule = MakeVSchedule();
  schedule.predicted.reset();
  ZB_ASSERT_OK_AND_ASSIGN(int64_t schedule_id, store.InsertSchedule(job, schedule));

  const Timeline measured = MakeMeasuredTimeline();
  ZB_ASSERT_OK_AND_ASSIGN(int64_t linked, store.InsertTimeline(schedule_id, measured));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t loose, store.InsertTimeline(std::nullopt, measured));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t empty, store.InsertTimeline(std::nullopt, Timeline{}));

  ZB_ASSERT_OK_AND_ASSIGN(Timeline loaded, store.LoadTimeline(linked));
  EXPECT_TRUE(loaded == measured);
  EXPECT_EQ(loaded.memory.back().memory, -1e-17);
  ZB_ASSERT_OK_AND_ASSIGN(Timeline loaded_loose, store.LoadTimeline(loose));
  EXPECT_TRUE(loaded_loose == measured);
  ZB_ASSERT_OK_AND_ASSIGN(Timeline loaded_empty, store.LoadTimeline(empty));
  EXPECT_TRUE(loaded_empty == Timeline{});

  ZB_ASSERT_OK_AND_ASSIGN(auto infos, store.ListTimelines());
  ASSERT_EQ(infos.size(), 3u);
  EXPECT_EQ(infos[0].id, linked);
  EXPECT_EQ(infos[0].schedule_id, std::optional<int64_t>(schedule_id));
  EXPECT_EQ(infos[0].kind, TimelineKind::kMeasured);
  EXPECT_EQ(infos[0].num_ops, 5);
  EXPECT_EQ(infos[1].schedule_id, std::nullopt);
  EXPECT_EQ(infos[2].id, empty);
  EXPECT_EQ(infos[2].kind, TimelineKind::kPredicted);
  EXPECT_EQ(infos[2].num_ops, 0);
}

TEST_F(StoreTest, FailedTimelineInsertLeavesNoRows) {
  const std::string path = PathOf("store.db");
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  Timeline timeline = MakeMeasuredTimeline();
  timeline.memory.back().memory = std::nan("");  // the very last row fails (NULL)
  auto result = store.InsertTimeline(std::nullopt, timeline);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kStore);
  EXPECT_NE(result.status().message().find("memory sample 4: NOT NULL constraint failed"),
            std::string::npos)
      << result.status().message();

  // Bulk rows go in batches; the error still names the row at fault.
  Timeline large;
  large.kind = TimelineKind::kMeasured;
  for (int i = 0; i < 300; ++i)
    large.ops.push_back({i % 4, i % 4, OpKind::kF, i / 4, i, i + 1});
  large.ops[150].end = large.ops[150].start - 1;
  result = store.InsertTimeline(std::nullopt, large);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            path + ": insert timeline: op 150: CHECK constraint failed: end_ns >= start_ns");

  RawDb raw(path);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM timelines"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM timeline_ops"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM memory_samples"), 0);
}

// Not a benchmark (no assertion on time): a 1M-op round trip that prints how long it took, so a
// regression in the GUI's load path shows up in the test log.
TEST_F(StoreTest, MillionOpTimelineRoundTrip) {
  constexpr int kRanks = 16;
  constexpr int kOps = 1'000'000;
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  timeline.ops.reserve(kOps);
  timeline.memory.reserve(kOps);
  for (int i = 0; i < kOps; ++i) {
    const int rank = i % kRanks;
    const TimeNs start = static_cast<TimeNs>(i / kRanks) * 1'000'003;
    const OpKind kind = static_cast<OpKind>(i % kNumOpKinds);
    timeline.ops.push_back({rank, rank + kRanks * (i % 2), kind, i / 64, start, start + 999'999});
    timeline.memory.push_back({rank, start + 999'999, 1.5 * (i % 1000)});
  }
  const std::string path = PathOf("big.db");
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  const auto t0 = std::chrono::steady_clock::now();
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.InsertTimeline(std::nullopt, timeline));
  const auto t1 = std::chrono::steady_clock::now();
  ZB_ASSERT_OK_AND_ASSIGN(Timeline loaded, store.LoadTimeline(id));
  const auto t2 = std::chrono::steady_clock::now();
  EXPECT_TRUE(loaded == timeline);
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::cout << "[ timing   ] 1M-op timeline (+1M memory samples): insert " << ms(t1 - t0)
            << " ms, load " << ms(t2 - t1) << " ms, file " << fs::file_size(path) / (1 << 20)
            << " MiB (+WAL)\n";
  RecordProperty("insert_ms", static_cast<int>(ms(t1 - t0)));
  RecordProperty("load_ms", static_cast<int>(ms(t2 - t1)));
}

// ---- Migration and versions ----------------------------------------------------------------

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

TEST_F(StoreTest, MeasuredTimelineWithCommOpsRoundTrips) {
  const std::string path = PathOf("store.db");
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  Timeline timeline = MakeMeasuredTimeline();
  // Overlapping communication beside the compute ops, one of zero length.
  timeline.ops.push_back({0, 0, OpKind::kComm, 0, 20, 26});
  timeline.ops.push_back({1, 1, OpKind::kComm, 0, 22, 25});
  timeline.ops.push_back({1, 1, OpKind::kComm, 0, 24, 24});
  timeline.ops.push_back({1, 1, OpKind::kComm, 0, 90, 94});
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.InsertTimeline(std::nullopt, timeline));
  ZB_ASSERT_OK_AND_ASSIGN(Timeline loaded, store.LoadTimeline(id));
  EXPECT_TRUE(loaded == timeline);
  RawDb raw(path);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM timeline_ops WHERE kind = 'COMM'"), 4);
}

TEST_F(StoreTest, ScheduleOpsStillRejectComm) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  Schedule schedule = MakeVSchedule();
  schedule.programs[0].ops[1].kind = OpKind::kComm;
  auto result = store.InsertSchedule(job, schedule);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("CHECK constraint failed"), std::string::npos)
      << result.status().message();
  RawDb raw(path);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM schedules"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM schedule_ops"), 0);
}

// ---- Version 3: runs, measured cost profiles ----------------------------------------------

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

// ---- Read-only mode ------------------------------------------------------------------------

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

// ---- Concurrency (WAL) ---------------------------------------------------------------------

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

// ---- Version 4 and what the runtime records --------------------------------------------------

// Applies the released migration step `file` (schemas/migrations/; released steps never change,
// `marker` checks it is the one meant) and sets the version it produces.
void ApplyReleasedStep(const std::string& path, const std::string& file, const char* marker,
                       int version) {
  const std::string step =
      ReadBytes(std::string(ZBKIT_TEST_DATA_DIR) + "/../../schemas/migrations/" + file);
  ASSERT_NE(step.find(marker), std::string::npos) << file;
  RawDb raw(path);
  raw.Exec(step);
  raw.Exec("PRAGMA user_version = " + std::to_string(version));
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

// ---- Version 5: the fused backward's cost ---------------------------------------------------

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

// A measured timeline of two iterations on two ranks.
Timeline MakeTwoIterationTimeline() {
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  for (int32_t iteration = 0; iteration < 2; ++iteration) {
    const TimeNs base = 1000 * iteration;
    timeline.ops.push_back({0, 0, OpKind::kF, 0, base + 10, base + 20, iteration});
    timeline.ops.push_back({1, 1, OpKind::kF, 0, base + 25, base + 40, iteration});
    timeline.ops.push_back({1, 1, OpKind::kBW, 0, base + 41, base + 90, iteration});
    timeline.ops.push_back({0, 0, OpKind::kComm, 0, base + 20, base + 25, iteration});
    timeline.ops.push_back({0, 0, OpKind::kBW, 0, base + 95, base + 150, iteration});
  }
  timeline.memory = {{0, 20, 1.5}, {0, 150, 0}, {0, 1020, 1.5}, {0, 1150, 0}};
  return timeline;
}

TEST_F(StoreTest, TimelineIterationsRoundTrip) {
  const std::string path = PathOf("store.db");
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  const Timeline timeline = MakeTwoIterationTimeline();
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.InsertTimeline(std::nullopt, timeline));
  ZB_ASSERT_OK_AND_ASSIGN(Timeline loaded, store.LoadTimeline(id));
  EXPECT_TRUE(loaded == timeline);
  EXPECT_EQ(loaded.ops.back().iteration, 1);
  {
    RawDb raw(path);
    EXPECT_EQ(raw.Int("SELECT count(*) FROM timeline_ops WHERE iteration = 1"), 5);
  }
  // Equality sees the iteration, so a lost one would fail the round trip above.
  Timeline other = timeline;
  other.ops[0].iteration = 3;
  EXPECT_FALSE(other == timeline);
  // A negative iteration is a bug the schema rejects, naming the op; nothing is left.
  Timeline bad = timeline;
  bad.ops[7].iteration = -1;
  auto result = store.InsertTimeline(std::nullopt, bad);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("insert timeline: op 7: CHECK constraint failed"),
            std::string::npos)
      << result.status().message();
  ZB_ASSERT_OK_AND_ASSIGN(auto infos, store.ListTimelines());
  EXPECT_EQ(infos.size(), 1u);
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

// ---- Public JSON Schemas -------------------------------------------------------------------

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
  EXPECT_EQ(schedule["$defs"]["costs"]["properties"], costs_body["properties"]);
}

}  // namespace
}  // namespace zb
