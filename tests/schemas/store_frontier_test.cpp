// SPDX-License-Identifier: Apache-2.0
// Tests of the store's memory-vs-bubble frontiers (schema version 6): round trips, listing, a
// missing id, input that is refused without leaving anything behind (validation, references, a
// failure in the middle of the write), the links to schedules and cost profiles on delete, and the
// migration from a version-5 store.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "raw_db.h"
#include "store_dir.h"
#include "zbkit/schemas/frontier.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/types.h"

namespace zb {
namespace {

using testing_support::RawDb;
using testing_support::SchemaFile;

bool IsOneLine(const std::string& message) {
  return !message.empty() && message.find('\n') == std::string::npos;
}

CostProfile TwoStageCosts() {
  CostProfile costs;
  costs.comm = 500'000;
  costs.stages = {{10'000'000, 10'500'000, 5'000'000, 100.5, 40.25},
                  {14'000'000, 15'000'000, 7'000'000, 100.5, 40.25}};
  return costs;
}

// The smallest schedule the store takes: one rank, one stage, F then a fused backward.
Schedule OneRankSchedule(const std::string& family) {
  Schedule schedule;
  schedule.ranks = 1;
  schedule.microbatches = 1;
  schedule.family = family;
  schedule.costs.stages = {{10, 20, 30, 1.5, 0.5}};
  schedule.programs.resize(1);
  schedule.programs[0].stages = {0};
  schedule.programs[0].ops = {{OpKind::kF, 0, 0, 0, 10}, {OpKind::kBW, 0, 0, 10, 60}};
  return schedule;
}

// Two methods over five caps 1x..3x, in the order a tuner computes them (cap by cap), with a cap
// where the heuristic fits nothing, a point without a stored schedule and figures whose doubles
// need every bit.
Frontier MakeFrontier(int64_t profile_id, int64_t search_schedule, int64_t heuristic_schedule) {
  Frontier frontier;
  frontier.cost_profile_id = profile_id;
  frontier.microbatches = 8;
  frontier.objective = "span";
  frontier.placement = "any";
  const double unit = 201.0;  // the profile's 1x, in its memory unit
  for (int i = 0; i <= 4; ++i) {
    const double factor = 1.0 + 0.5 * i;
    FrontierPoint search;
    search.method = "search";
    search.cap_factor = factor;
    search.cap = factor * unit;
    search.fits = true;
    search.makespan = 200'000'000 - 10'000'000 * i;
    search.span = search.makespan - 1'234'567;
    search.bubble_rate = 0.2 / (1 + i) + 1e-17;
    search.paper_bubble_rate = 0.1 / (3 + i);
    if (i == 2) search.schedule_id = search_schedule;
    frontier.points.push_back(search);

    FrontierPoint heuristic;
    heuristic.method = "heuristic";
    heuristic.cap_factor = factor;
    heuristic.cap = factor * unit;
    if (i == 0) {
      heuristic.fits = false;  // nothing of the heuristic fits 1x
      heuristic.makespan = -1;
      heuristic.span = -1;
      heuristic.bubble_rate = -1;
      heuristic.paper_bubble_rate = -1;
    } else {
      heuristic.fits = true;
      heuristic.makespan = search.makespan + 3'000'001 * i;
      heuristic.span = search.span + 3'000'001 * i;
      heuristic.bubble_rate = search.bubble_rate + 0.01;
      heuristic.paper_bubble_rate = search.paper_bubble_rate + 0.3 / 7;
      if (i == 4) heuristic.schedule_id = heuristic_schedule;
    }
    frontier.points.push_back(heuristic);
  }
  return frontier;
}

class StoreFrontierTest : public testing_support::StoreDirTest {
 protected:
  // A store with one cluster, job and cost profile and two schedules of that job.
  void Populate(Store& store) {
    ZB_ASSERT_OK_AND_ASSIGN(int64_t cluster, store.EnsureCluster({"node-a", "H100", "", "", ""}));
    ZB_ASSERT_OK_AND_ASSIGN(job_, store.EnsureJob(cluster, "gpt-2stage"));
    ZB_ASSERT_OK_AND_ASSIGN(profile_, store.InsertCostProfile(job_, "measured", TwoStageCosts()));
    ZB_ASSERT_OK_AND_ASSIGN(search_schedule_, store.InsertSchedule(job_, OneRankSchedule("s")));
    ZB_ASSERT_OK_AND_ASSIGN(heuristic_schedule_,
                            store.InsertSchedule(job_, OneRankSchedule("zb-auto")));
  }

  Frontier Sample() const { return MakeFrontier(profile_, search_schedule_, heuristic_schedule_); }

  int64_t job_ = 0;
  int64_t profile_ = 0;
  int64_t search_schedule_ = 0;
  int64_t heuristic_schedule_ = 0;
};

TEST_F(StoreFrontierTest, RoundTripKeepsEveryFieldInOrder) {
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  ASSERT_NO_FATAL_FAILURE(Populate(store));
  const Frontier frontier = Sample();
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.RecordFrontier(frontier));
  ZB_ASSERT_OK_AND_ASSIGN(Frontier loaded, store.LoadFrontier(id));
  // Bit for bit, the optional schedule links and the unfit point's placeholders included.
  EXPECT_EQ(loaded, frontier);
  ASSERT_EQ(loaded.points.size(), 10u);
  EXPECT_FALSE(loaded.points[1].fits);
  EXPECT_EQ(loaded.points[1].makespan, -1);
  EXPECT_EQ(loaded.points[4].schedule_id, search_schedule_);
  EXPECT_EQ(loaded.points[0].schedule_id, std::nullopt);

  // A second frontier gets its own id and rows; the first is unchanged.
  Frontier other = frontier;
  other.objective = "makespan";
  other.placement = "v";
  other.points.resize(1);
  ZB_ASSERT_OK_AND_ASSIGN(int64_t second, store.RecordFrontier(other));
  EXPECT_NE(second, id);
  ZB_ASSERT_OK_AND_ASSIGN(Frontier loaded_second, store.LoadFrontier(second));
  EXPECT_EQ(loaded_second, other);
  ZB_ASSERT_OK_AND_ASSIGN(Frontier again, store.LoadFrontier(id));
  EXPECT_EQ(again, frontier);

  // Another connection, read-only, sees the same.
  ZB_ASSERT_OK_AND_ASSIGN(Store reader, Store::Open(path_, Store::Mode::kReadOnly));
  ZB_ASSERT_OK_AND_ASSIGN(Frontier read, reader.LoadFrontier(id));
  EXPECT_EQ(read, frontier);
}

TEST_F(StoreFrontierTest, ListingNamesTheJobAndProfileAndTheCapRange) {
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  ASSERT_NO_FATAL_FAILURE(Populate(store));
  ZB_ASSERT_OK_AND_ASSIGN(auto empty, store.ListFrontiers());
  EXPECT_TRUE(empty.empty());
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.RecordFrontier(Sample()));
  ZB_ASSERT_OK_AND_ASSIGN(auto infos, store.ListFrontiers());
  ASSERT_EQ(infos.size(), 1u);
  const FrontierInfo& info = infos[0];
  EXPECT_EQ(info.id, id);
  EXPECT_EQ(info.cost_profile_id, profile_);
  EXPECT_EQ(info.cluster, "node-a");
  EXPECT_EQ(info.job, "gpt-2stage");
  EXPECT_EQ(info.cost_profile, "measured");
  EXPECT_EQ(info.microbatches, 8);
  EXPECT_EQ(info.objective, "span");
  EXPECT_EQ(info.placement, "any");
  EXPECT_EQ(info.num_points, 10);
  EXPECT_EQ(info.min_cap_factor, 1.0);
  EXPECT_EQ(info.max_cap_factor, 3.0);
  EXPECT_TRUE(
      std::regex_match(info.created_at, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << info.created_at;
  RawDb raw(path_);
  EXPECT_EQ(raw.Int("SELECT schema_version FROM frontiers"), Store::kSchemaVersion);
}

TEST_F(StoreFrontierTest, MissingFrontierIsNotFound) {
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  ASSERT_NO_FATAL_FAILURE(Populate(store));
  auto missing = store.LoadFrontier(999);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(IsOneLine(missing.status().message()));
  EXPECT_EQ(missing.status().message(), path_ + ": load frontier: no frontier with id 999");
  // The store stays usable.
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.RecordFrontier(Sample()));
  EXPECT_TRUE(store.LoadFrontier(id).ok());
}

struct BadCase {
  const char* name;
  void (*spoil)(Frontier&);
  ErrorCode code;
  const char* expected;  // part of the message: the field at fault
};

const BadCase kBadCases[] = {
    {"microbatches", [](Frontier& f) { f.microbatches = 0; }, ErrorCode::kInvalidInput,
     "microbatches must be >= 1"},
    {"objective", [](Frontier& f) { f.objective = "latency"; }, ErrorCode::kInvalidInput,
     "objective must be makespan or span, got 'latency'"},
    {"placement", [](Frontier& f) { f.placement = ""; }, ErrorCode::kInvalidInput,
     "placement must be loop, v or any"},
    {"no points", [](Frontier& f) { f.points.clear(); }, ErrorCode::kInvalidInput,
     "points is empty"},
    {"empty method", [](Frontier& f) { f.points[7].method.clear(); }, ErrorCode::kInvalidInput,
     "points[7].method is empty"},
    {"NaN cap", [](Frontier& f) { f.points[3].cap = std::nan(""); }, ErrorCode::kInvalidInput,
     "points[3].cap must be a finite number"},
    {"negative cap", [](Frontier& f) { f.points[3].cap = -1; }, ErrorCode::kInvalidInput,
     "points[3].cap must be a finite number >= 0"},
    {"infinite cap factor",
     [](Frontier& f) { f.points[9].cap_factor = std::numeric_limits<double>::infinity(); },
     ErrorCode::kInvalidInput, "points[9].cap_factor must be a finite number > 0"},
    {"zero cap factor", [](Frontier& f) { f.points[0].cap_factor = 0; }, ErrorCode::kInvalidInput,
     "points[0].cap_factor"},
    {"NaN bubble", [](Frontier& f) { f.points[5].bubble_rate = std::nan(""); },
     ErrorCode::kInvalidInput, "points[5].bubble_rate is not a finite number"},
    {"infinite paper bubble",
     [](Frontier& f) { f.points[2].paper_bubble_rate = -std::numeric_limits<double>::infinity(); },
     ErrorCode::kInvalidInput, "points[2].paper_bubble_rate is not a finite number"},
    {"fitting point without figures", [](Frontier& f) { f.points[2].makespan = -1; },
     ErrorCode::kInvalidInput, "points[2]: a point that fits needs makespan and span >= 0"},
    {"unfit point with a schedule", [](Frontier& f) { f.points[1].schedule_id = 1; },
     ErrorCode::kInvalidInput, "points[1].schedule_id is set but the point does not fit"},
    {"missing cost profile", [](Frontier& f) { f.cost_profile_id = 4242; }, ErrorCode::kNotFound,
     "cost_profile_id: no cost profile with id 4242"},
    {"missing schedule", [](Frontier& f) { f.points[6].schedule_id = 777; }, ErrorCode::kNotFound,
     "points[6].schedule_id: no schedule with id 777"},
};

TEST_F(StoreFrontierTest, BadInputIsRefusedNamingTheFieldAndLosesNothing) {
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  ASSERT_NO_FATAL_FAILURE(Populate(store));
  // A frontier already there must survive every failed write untouched.
  const Frontier kept = Sample();
  ZB_ASSERT_OK_AND_ASSIGN(int64_t kept_id, store.RecordFrontier(kept));
  for (const BadCase& bad : kBadCases) {
    SCOPED_TRACE(bad.name);
    Frontier frontier = Sample();
    bad.spoil(frontier);
    auto result = store.RecordFrontier(frontier);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), bad.code) << result.status().message();
    EXPECT_TRUE(IsOneLine(result.status().message()));
    EXPECT_NE(result.status().message().find(path_ + ": record frontier: "), std::string::npos)
        << result.status().message();
    EXPECT_NE(result.status().message().find(bad.expected), std::string::npos)
        << result.status().message();
  }
  RawDb raw(path_);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM frontiers"), 1);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM frontier_points"), 10);
  ZB_ASSERT_OK_AND_ASSIGN(Frontier loaded, store.LoadFrontier(kept_id));
  EXPECT_EQ(loaded, kept);
  // And the store still takes a good one.
  EXPECT_TRUE(store.RecordFrontier(Sample()).ok());
}

TEST_F(StoreFrontierTest, FailureInTheMiddleOfTheWriteRollsBackTheWholeFrontier) {
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  ASSERT_NO_FATAL_FAILURE(Populate(store));
  {
    // A trigger stands for any failure after the frontier row and two points are written (a full
    // disk, a constraint the checks above do not know about).
    RawDb raw(path_);
    raw.Exec(
        "CREATE TRIGGER fail_third_point BEFORE INSERT ON frontier_points WHEN NEW.seq = 2"
        " BEGIN SELECT RAISE(ABORT, 'injected failure'); END;");
  }
  auto result = store.RecordFrontier(Sample());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kStore);
  EXPECT_NE(result.status().message().find("record frontier: points[2]: "), std::string::npos)
      << result.status().message();
  EXPECT_NE(result.status().message().find("injected failure"), std::string::npos)
      << result.status().message();
  RawDb raw(path_);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM frontiers"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM frontier_points"), 0);
  raw.Exec("DROP TRIGGER fail_third_point");
  EXPECT_TRUE(store.RecordFrontier(Sample()).ok());
}

TEST_F(StoreFrontierTest, ReadOnlyOrMovedFromStoreRecordsNothing) {
  {
    ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
    ASSERT_NO_FATAL_FAILURE(Populate(store));
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store reader, Store::Open(path_, Store::Mode::kReadOnly));
  auto result = reader.RecordFrontier(Sample());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kStore);
  EXPECT_NE(result.status().message().find("store is open read-only"), std::string::npos);

  Store moved = std::move(reader);
  // NOLINTNEXTLINE(bugprone-use-after-move): checking that on purpose
  EXPECT_EQ(reader.ListFrontiers().status().code(), ErrorCode::kStore);
  EXPECT_EQ(reader.LoadFrontier(1).status().code(), ErrorCode::kStore);
  EXPECT_TRUE(moved.ListFrontiers().ok());
}

TEST_F(StoreFrontierTest, DeletingTheScheduleKeepsThePointDeletingTheProfileDropsTheFrontier) {
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  ASSERT_NO_FATAL_FAILURE(Populate(store));
  const Frontier frontier = Sample();
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.RecordFrontier(frontier));
  {
    RawDb raw(path_);
    raw.Exec("PRAGMA foreign_keys = ON; DELETE FROM schedules WHERE id = " +
             std::to_string(search_schedule_));
  }
  ZB_ASSERT_OK_AND_ASSIGN(Frontier loaded, store.LoadFrontier(id));
  Frontier expected = frontier;
  expected.points[4].schedule_id.reset();  // the link goes, the figures stay
  EXPECT_EQ(loaded, expected);
  {
    RawDb raw(path_);
    raw.Exec("PRAGMA foreign_keys = ON; DELETE FROM cost_profiles WHERE id = " +
             std::to_string(profile_));
    EXPECT_EQ(raw.Int("SELECT count(*) FROM frontiers"), 0);
    EXPECT_EQ(raw.Int("SELECT count(*) FROM frontier_points"), 0);
  }
  EXPECT_EQ(store.LoadFrontier(id).status().code(), ErrorCode::kNotFound);
}

TEST_F(StoreFrontierTest, TablesRefuseWhatIsAlwaysABug) {
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  ASSERT_NO_FATAL_FAILURE(Populate(store));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.RecordFrontier(Sample()));
  RawDb raw(path_);
  const std::string point =
      "INSERT INTO frontier_points (frontier_id, seq, method, cap_factor, cap, fits, makespan_ns,"
      " span_ns, bubble_rate, paper_bubble_rate, schedule_id) VALUES (" +
      std::to_string(id) + ", 50, ";
  EXPECT_TRUE(raw.Fails(point + "'search', 1, 1, 2, 0, 0, 0, 0, NULL)"));   // fits 2
  EXPECT_TRUE(raw.Fails(point + "'', 1, 1, 1, 0, 0, 0, 0, NULL)"));         // empty method
  EXPECT_TRUE(raw.Fails(point + "'search', 1, 1, 1, -1, 0, 0, 0, NULL)"));  // fits, no figures
  EXPECT_TRUE(raw.Fails(point + "'search', 1, 1, 0, -1, -1, 0, 0, 1)"));    // unfit, a schedule
  EXPECT_TRUE(raw.Fails(point + "'search', 0, 1, 1, 0, 0, 0, 0, NULL)"));   // cap factor 0
  EXPECT_TRUE(raw.Fails(
      "INSERT INTO frontiers (cost_profile_id, microbatches, objective, placement, num_points,"
      " schema_version) VALUES (" +
      std::to_string(profile_) + ", 8, 'speed', 'loop', 1, 6)"));
  EXPECT_FALSE(raw.Fails(point + "'search', 1, 1, 0, -1, -1, -1, -1, NULL)"));  // a placeholder
}

// ---- Migration from version 5 ----------------------------------------------------------------

// A version-5 store as zbkit wrote it before frontiers: the released steps (never edited) applied
// by hand, with a cluster, job and cost profile.
void MakeVersionFiveStore(const std::string& path) {
  RawDb raw(path);
  raw.Exec(SchemaFile("store.sql"));
  for (const char* step : {"002_timeline_ops_comm.sql", "003_runs_and_measured_costs.sql",
                           "004_timeline_op_iteration.sql", "005_fused_backward_cost.sql"}) {
    raw.Exec(SchemaFile(std::string("migrations/") + step));
  }
  raw.Exec("PRAGMA user_version = 5; PRAGMA application_id = 2053270388;");
  raw.Exec(
      "INSERT INTO clusters (id, name, schema_version) VALUES (1, 'node-a', 5);"
      "INSERT INTO jobs (id, cluster_id, name, schema_version) VALUES (1, 1, 'gpt', 5);"
      "INSERT INTO cost_profiles (id, job_id, name, comm_ns, schema_version)"
      " VALUES (4, 1, 'old', 5, 5);"
      "INSERT INTO cost_profile_stages (profile_id, stage, f_ns, b_ns, w_ns, m_b, m_w, bw_ns)"
      " VALUES (4, 0, 10, 20, 30, 1.5, 0.5, 45);");
}

TEST_F(StoreFrontierTest, VersionFiveStoreMigratesAndTakesFrontiers) {
  MakeVersionFiveStore(path_);
  {
    // Read-only opening never migrates: it says what to do instead.
    auto read_only = Store::Open(path_, Store::Mode::kReadOnly);
    ASSERT_FALSE(read_only.ok());
    EXPECT_NE(read_only.status().message().find("open it read-write once to migrate it"),
              std::string::npos)
        << read_only.status().message();
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);  // every later step too
  ZB_ASSERT_OK_AND_ASSIGN(CostProfile old, store.LoadCostProfile(4));
  ASSERT_EQ(old.stages.size(), 1u);
  EXPECT_EQ(old.stages[0].bw, 45);
  ZB_ASSERT_OK_AND_ASSIGN(auto none, store.ListFrontiers());
  EXPECT_TRUE(none.empty());

  const Frontier frontier = MakeFrontier(4, 0, 0);
  Frontier unlinked = frontier;
  for (FrontierPoint& point : unlinked.points)
    point.schedule_id.reset();
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.RecordFrontier(unlinked));
  ZB_ASSERT_OK_AND_ASSIGN(Frontier loaded, store.LoadFrontier(id));
  EXPECT_EQ(loaded, unlinked);
  ZB_ASSERT_OK_AND_ASSIGN(auto infos, store.ListFrontiers());
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].cost_profile, "old");
  EXPECT_EQ(infos[0].job, "gpt");

  RawDb raw(path_);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.Int("PRAGMA application_id"), 2053270388);
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.Int("SELECT count(*) FROM sqlite_schema WHERE name IN ('frontiers',"
                    " 'frontier_points', 'frontiers_by_cost_profile',"
                    " 'frontier_points_by_schedule')"),
            4);
}

TEST_F(StoreFrontierTest, FailedVersionSixMigrationLeavesVersionFive) {
  MakeVersionFiveStore(path_);
  {
    // Step 6 cannot create a table that is already there.
    RawDb raw(path_);
    raw.Exec("CREATE TABLE frontiers (x)");
  }
  auto store = Store::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kStore);
  EXPECT_TRUE(IsOneLine(store.status().message()));
  EXPECT_NE(store.status().message().find(path_ + ": open store: migrate schema version 5 -> 6: "),
            std::string::npos)
      << store.status().message();
  RawDb raw(path_);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), 5);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM sqlite_schema WHERE name = 'frontier_points'"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profile_stages"), 1);
}

}  // namespace
}  // namespace zb
