// SPDX-License-Identifier: Apache-2.0
// Each rank's own memory cap (schema version 11, schedule_ranks.memory_limit): kept as the tuner
// judged the schedule, read back per rank; a schedule stored with one cap, or before version 11,
// reads that cap for every rank; bad caps are refused with nothing written.
#include <cmath>
#include <limits>

#include "store_test_support.h"

namespace zb {
namespace {

using namespace store_testing;
using testing_support::RawDb;

TEST_F(StoreTest, EachRanksCapRoundTrips) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  const std::vector<double> caps = {450000.5, 300.25};
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.InsertSchedule(job, MakeVSchedule(), caps));
  ZB_ASSERT_OK_AND_ASSIGN(ScheduleInfo info, store.LoadScheduleInfo(id));
  EXPECT_EQ(info.rank_caps, caps);
  EXPECT_EQ(info.cap, std::optional<double>(450000.5));  // the largest, as `zb list` shows it
  ZB_ASSERT_OK_AND_ASSIGN(auto listed, store.ListSchedules());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].rank_caps, caps);
  // The schedule itself is unchanged by its caps.
  ZB_ASSERT_OK_AND_ASSIGN(Schedule loaded, store.LoadSchedule(id));
  EXPECT_TRUE(loaded == MakeVSchedule());
}

TEST_F(StoreTest, OneCapIsEveryRanksAndNoCapIsNone) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t one, store.InsertSchedule(job, MakeVSchedule(), 7.5));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t none, store.InsertSchedule(job, MakeVSchedule()));
  ZB_ASSERT_OK_AND_ASSIGN(ScheduleInfo with_one, store.LoadScheduleInfo(one));
  EXPECT_EQ(with_one.rank_caps, (std::vector<double>{7.5, 7.5}));
  ZB_ASSERT_OK_AND_ASSIGN(ScheduleInfo without, store.LoadScheduleInfo(none));
  EXPECT_FALSE(without.cap.has_value());
  EXPECT_TRUE(without.rank_caps.empty());
}

TEST_F(StoreTest, BadRankCapsAreRefusedWithNothingWritten) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<std::vector<double>, std::string>> cases = {
      {{1.0}, "1 per-rank caps for 2 ranks"},
      {{1.0, 2.0, 3.0}, "3 per-rank caps for 2 ranks"},
      {{1.0, std::nan("")}, "memory limit of rank 1 must be a finite number >= 0"},
      {{-1.0, 2.0}, "memory limit of rank 0 must be a finite number >= 0"},
      {{inf, 2.0}, "memory limit of rank 0 must be a finite number >= 0"},
  };
  RawDb raw(path);
  const auto before = RowCounts(raw);
  for (const auto& [caps, expected] : cases) {
    auto id = store.InsertSchedule(job, MakeVSchedule(), caps);
    ASSERT_FALSE(id.ok()) << expected;
    EXPECT_EQ(id.status().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(id.status().message().find(expected), std::string::npos) << id.status().message();
    EXPECT_TRUE(IsOneLine(id.status().message()));
  }
  EXPECT_EQ(RowCounts(raw), before);
}

TEST_F(StoreTest, VersionTenStoreMigratesReadingItsOneCapForEveryRank) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  int64_t id = 0;
  {
    ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
    ZB_ASSERT_OK_AND_ASSIGN(id, store.InsertSchedule(job, MakeVSchedule(), 12.0));
  }
  {
    // Back to version 10: schedule_ranks as it was before the column existed (and without
    // the columns and tables of versions 12 to 16, which their migrations add again).
    RawDb raw(path);
    raw.Exec(
        "ALTER TABLE schedule_ranks DROP COLUMN memory_limit; "
        "ALTER TABLE cost_profiles DROP COLUMN checkpointing; "
        "ALTER TABLE cost_profiles DROP COLUMN data_parallel; "
        "ALTER TABLE cost_profile_stages DROP COLUMN reduce_ns;"
        "ALTER TABLE cost_profile_stages DROP COLUMN unshard_ns;"
        "ALTER TABLE cost_profile_stages DROP COLUMN unsharded;"
        "ALTER TABLE cost_profile_stages DROP COLUMN reduced;"
        "ALTER TABLE cost_profiles DROP COLUMN reduce_wait; "
        "ALTER TABLE cost_profile_layers DROP COLUMN checkpointing;"
        "DROP TABLE cost_profile_layer_options; PRAGMA user_version = 10");
  }
  // Read-only, a version-10 store is refused with what to do; read-write migrates it.
  auto read_only = Store::Open(path, Store::Mode::kReadOnly);
  ASSERT_FALSE(read_only.ok());
  EXPECT_NE(read_only.status().message().find("open it read-write once to migrate it"),
            std::string::npos);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
  ZB_ASSERT_OK_AND_ASSIGN(ScheduleInfo info, store.LoadScheduleInfo(id));
  EXPECT_EQ(info.rank_caps, (std::vector<double>{12.0, 12.0}));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t own, store.InsertSchedule(job, MakeVSchedule(), {3.0, 4.0}));
  ZB_ASSERT_OK_AND_ASSIGN(ScheduleInfo migrated, store.LoadScheduleInfo(own));
  EXPECT_EQ(migrated.rank_caps, (std::vector<double>{3.0, 4.0}));
  RawDb raw(path);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
  // The column refuses a negative cap itself, whatever writes it.
  EXPECT_TRUE(raw.Fails("UPDATE schedule_ranks SET memory_limit = -1 WHERE schedule_id = " +
                        std::to_string(own)));
}

}  // namespace
}  // namespace zb
