// SPDX-License-Identifier: Apache-2.0
// Bubbles (zbkit/schemas/timeline_analysis.h): the measured-origin rule, and idle stretches that
// start where every earlier op has ended, so that the bubble list and a tooltip's "idle before"
// agree on overlapping measured ops.
#include "zbkit/schemas/timeline_analysis.h"

#include <gtest/gtest.h>

namespace zb {
namespace {

TimelineOp MakeOp(int32_t rank, OpKind kind, int32_t microbatch, TimeNs start, TimeNs end) {
  TimelineOp op;
  op.rank = rank;
  op.stage = rank;
  op.kind = kind;
  op.microbatch = microbatch;
  op.start = start;
  op.end = end;
  return op;
}

TEST(TimelineAnalysisTest, PredictedTimelinesCountFromZeroMeasuredFromTheirFirstOp) {
  Timeline timeline;
  timeline.ops = {MakeOp(0, OpKind::kF, 0, 100, 200)};
  EXPECT_EQ(TimelineOrigin(TimelineIndex(timeline)), 0);
  timeline.kind = TimelineKind::kMeasured;
  EXPECT_EQ(TimelineOrigin(TimelineIndex(timeline)), 100);
  // Predicted: the 100 ns before the first op are a bubble; measured: they are not there.
  timeline.kind = TimelineKind::kPredicted;
  const auto predicted = LongestBubbles(TimelineIndex(timeline), 200, 5);
  ASSERT_EQ(predicted.size(), 1u);
  EXPECT_EQ(predicted[0].start, 0);
  EXPECT_EQ(predicted[0].end, 100);
  timeline.kind = TimelineKind::kMeasured;
  EXPECT_TRUE(LongestBubbles(TimelineIndex(timeline), 100, 5).empty());
}

TEST(TimelineAnalysisTest, OverlappingMeasuredOpsLeaveNoPhantomGap) {
  // Rank 0: a long F [0, 1000) overlaps a short one [100, 200) (clock jitter); the next op starts
  // at 1300. The idle stretch is [1000, 1300), not [200, 1300) from the previous op's end.
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  timeline.ops = {MakeOp(0, OpKind::kF, 0, 0, 1000), MakeOp(0, OpKind::kF, 1, 100, 200),
                  MakeOp(0, OpKind::kBW, 0, 1300, 1500), MakeOp(0, OpKind::kBW, 1, 1500, 1600)};
  const TimelineIndex index(timeline);
  const int lane = index.RankLane(0);
  const Bubble before = IdleBefore(index, lane, 2);
  EXPECT_EQ(before.start, 1000);
  EXPECT_EQ(before.end, 1300);
  EXPECT_EQ(before.next, 2);
  EXPECT_EQ(IdleBefore(index, lane, 1).length(), 0);  // starts while op 0 still runs
  const auto bubbles = LongestBubbles(index, 1600, 5);
  ASSERT_EQ(bubbles.size(), 1u);
  EXPECT_EQ(bubbles[0].start, before.start);
  EXPECT_EQ(bubbles[0].end, before.end);
  EXPECT_EQ(bubbles[0].rank, 0);
}

TEST(TimelineAnalysisTest, LongestFirstUpToCountWithTheIdleTail) {
  Timeline timeline;
  timeline.ops = {MakeOp(0, OpKind::kF, 0, 0, 10), MakeOp(0, OpKind::kF, 1, 40, 50),
                  MakeOp(1, OpKind::kF, 0, 20, 30), MakeOp(1, OpKind::kF, 1, 35, 45)};
  const TimelineIndex index(timeline);
  // Rank 0: [10, 40) = 30, tail [50, 100) = 50; rank 1: [0, 20) = 20, [30, 35) = 5, tail 55.
  const auto bubbles = LongestBubbles(index, 100, 3);
  ASSERT_EQ(bubbles.size(), 3u);
  EXPECT_EQ(bubbles[0].length(), 55);
  EXPECT_EQ(bubbles[0].next, -1);
  EXPECT_EQ(bubbles[1].length(), 50);
  EXPECT_EQ(bubbles[2].length(), 30);
  EXPECT_EQ(bubbles[2].next, 1);
  EXPECT_TRUE(LongestBubbles(index, 100, 0).empty());
}

// Three iterations of 100, 140 and 110 ms (the first one slow to start is the usual case): the
// median is the 110 ms one; extracting it keeps its ops, their detail and the memory held.
TEST(TimelineAnalysisTest, MedianIterationAndItsOwnTimeline) {
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  timeline.names = {"unused", "fwd"};
  const TimeNs starts[] = {1000, 2000, 3000};
  const TimeNs lengths[] = {100, 140, 110};
  for (int32_t it = 0; it < 3; ++it) {
    TimelineOp f = MakeOp(0, OpKind::kF, 0, starts[it], starts[it] + 40);
    f.iteration = it;
    f.busy = 10;
    f.kernels = 2;
    f.name = 1;
    TimelineOp b = MakeOp(1, OpKind::kB, 0, starts[it] + 50, starts[it] + lengths[it]);
    b.iteration = it;
    timeline.ops.push_back(f);
    timeline.ops.push_back(b);
    timeline.memory.push_back({0, starts[it] + 40, 5.0 * (it + 1)});
  }
  const TimelineIndex index(timeline);
  EXPECT_EQ(MedianIteration(index), 2);

  const Timeline two = ExtractIteration(index, 2);
  EXPECT_EQ(two.kind, TimelineKind::kMeasured);
  ASSERT_EQ(two.ops.size(), 2u);
  EXPECT_EQ(two.ops[0].start, 0);
  EXPECT_EQ(two.ops[0].end, 40);
  EXPECT_EQ(two.ops[0].busy, 10);
  EXPECT_EQ(two.ops[0].kernels, 2);
  EXPECT_EQ(two.ops[0].iteration, 0);
  ASSERT_EQ(two.names, std::vector<std::string>{"fwd"});
  EXPECT_EQ(two.ops[0].name, 0);
  EXPECT_EQ(two.ops[1].rank, 1);
  EXPECT_EQ(two.ops[1].end, 110);
  // Rank 0 held 10 when iteration 2 began and 15 after its F.
  ASSERT_EQ(two.memory.size(), 2u);
  EXPECT_EQ(two.memory[0].time, 0);
  EXPECT_EQ(two.memory[0].memory, 10.0);
  EXPECT_EQ(two.memory[1].time, 40);
  EXPECT_EQ(two.memory[1].memory, 15.0);
  EXPECT_EQ(TimelineIndex(two).makespan(), 110);

  EXPECT_TRUE(ExtractIteration(index, 3).ops.empty());
  Timeline single;
  single.ops = {MakeOp(0, OpKind::kF, 0, 0, 10)};
  EXPECT_EQ(MedianIteration(TimelineIndex(single)), 0);
}

}  // namespace
}  // namespace zb
