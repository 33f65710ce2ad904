// SPDX-License-Identifier: Apache-2.0
// Tests of timelines in the store (store_timelines.cpp): memory samples, comm ops, iterations,
// a million ops, and failed inserts that leave no rows.
#include "store_test_support.h"

namespace zb {
namespace {

using namespace store_testing;
using testing_support::RawDb;
using testing_support::ReadBytes;

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

}  // namespace
}  // namespace zb
