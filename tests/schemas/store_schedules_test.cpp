// SPDX-License-Identifier: Apache-2.0
// Tests of schedules in the store (store_schedules.cpp): exact round trips with their predicted
// timelines, unknown ids, and failed inserts that leave no rows.
#include "store_test_support.h"

namespace zb {
namespace {

using namespace store_testing;
using testing_support::RawDb;
using testing_support::ReadBytes;

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
  EXPECT_EQ(info.cap, std::optional<double>(450000.5));
  EXPECT_EQ(info.predicted, *schedule.predicted);
  EXPECT_EQ(info.num_ops, schedule.num_ops());
  EXPECT_FALSE(info.created_at.empty());
  EXPECT_EQ(info.job_id, job);
  // By id: the same row, the same peaks.
  ZB_ASSERT_OK_AND_ASSIGN(ScheduleInfo by_id, store.LoadScheduleInfo(id));
  EXPECT_EQ(by_id.id, id);
  EXPECT_EQ(by_id.job_id, job);
  EXPECT_EQ(by_id.family, info.family);
  EXPECT_EQ(by_id.cap, info.cap);
  EXPECT_EQ(by_id.predicted, info.predicted);
  EXPECT_EQ(by_id.created_at, info.created_at);

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
  ZB_ASSERT_OK_AND_ASSIGN(TimelineInfo timeline_info, store.LoadTimelineInfo(timelines[0].id));
  EXPECT_EQ(timeline_info.schedule_id, std::optional<int64_t>(id));
  EXPECT_EQ(timeline_info.kind, TimelineKind::kPredicted);
  EXPECT_EQ(timeline_info.num_ops, timelines[0].num_ops);
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
  EXPECT_FALSE(schedules[0].cap.has_value());
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
  auto info = store.LoadScheduleInfo(42);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().message(), path + ": load schedule info: no schedule with id 42");
  auto timeline_info = store.LoadTimelineInfo(42);
  ASSERT_FALSE(timeline_info.ok());
  EXPECT_EQ(timeline_info.status().message(),
            path + ": load timeline info: no timeline with id 42");
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

}  // namespace
}  // namespace zb
