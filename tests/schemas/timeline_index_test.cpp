// SPDX-License-Identifier: Apache-2.0
// Tests of TimelineIndex: lanes and their order, range queries and hit tests at their edges, range
// summaries, figures, wait causes and the compare matching. The binning's tests are
// timeline_binning_test.cpp.
#include "zbkit/schemas/timeline_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "timeline_test_support.h"
#include "zbkit/schemas/types.h"

namespace zb {
namespace {

using timeline_testing::EdgeLane;
using timeline_testing::Op;

std::vector<size_t> Range(std::pair<size_t, size_t> range) {
  std::vector<size_t> indexes;
  for (size_t i = range.first; i < range.second; ++i)
    indexes.push_back(i);
  return indexes;
}

// ---- Lanes -----------------------------------------------------------------------------------

// Rank 0 holds stages 0 and 3 (a V placement), rank 1 holds stage 1 and has communication, rank 2
// only has memory samples. Input is shuffled across ranks and out of time order.
Timeline MixedTimeline() {
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  timeline.ops = {
      Op(1, 1, OpKind::kF, 0, 12, 22),    Op(0, 3, OpKind::kF, 0, 30, 40),
      Op(0, 0, OpKind::kF, 0, 0, 10),     Op(1, 1, OpKind::kComm, 0, 22, 30),
      Op(1, 1, OpKind::kComm, 1, 5, 100), Op(0, 3, OpKind::kBW, 0, 40, 60),
      Op(0, 0, OpKind::kW, 0, 70, 70),    Op(0, 0, OpKind::kB, 0, 70, 80),
      Op(1, 1, OpKind::kBW, 0, 62, 80),
  };
  timeline.memory = {{2, 5, 1.0}};
  return timeline;
}

TEST(TimelineIndexTest, LanesAreOrderedPerRankWithStageAndCommLanes) {
  const TimelineIndex index(MixedTimeline());
  EXPECT_EQ(index.kind(), TimelineKind::kMeasured);
  EXPECT_EQ(index.num_ranks(), 3);
  EXPECT_EQ(index.num_stages(), 4);
  EXPECT_EQ(index.num_ops(), 9);
  EXPECT_EQ(index.begin(), 0);
  EXPECT_EQ(index.end(), 100);
  ASSERT_EQ(index.lanes().size(), 6u);
  const std::vector<std::string> labels = {"rank 0", "rank 0 stage 0", "rank 0 stage 3",
                                           "rank 1", "rank 1 comm",    "rank 2"};
  const LaneKind kinds[] = {LaneKind::kRank, LaneKind::kStage, LaneKind::kStage,
                            LaneKind::kRank, LaneKind::kComm,  LaneKind::kRank};
  const int32_t stages[] = {-1, 0, 3, -1, -1, -1};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(index.lane(i).Label(), labels[i]);
    EXPECT_EQ(index.lane(i).kind, kinds[i]) << i;
    EXPECT_EQ(index.lane(i).stage, stages[i]) << i;
  }
  EXPECT_EQ(index.RankLane(0), 0);
  EXPECT_EQ(index.RankLane(1), 3);
  EXPECT_EQ(index.RankLane(2), 5);
  EXPECT_EQ(index.RankLane(3), -1);
  EXPECT_EQ(index.RankLane(-1), -1);

  // Sorted by start, ties by end (the zero-length W before the B that starts with it).
  const TimelineLane& rank0 = index.lane(0);
  EXPECT_EQ(rank0.start, (std::vector<TimeNs>{0, 30, 40, 70, 70}));
  EXPECT_EQ(rank0.end, (std::vector<TimeNs>{10, 40, 60, 70, 80}));
  EXPECT_EQ(rank0.kind_of,
            (std::vector<OpKind>{OpKind::kF, OpKind::kF, OpKind::kBW, OpKind::kW, OpKind::kB}));
  EXPECT_EQ(rank0.stage_of, (std::vector<int32_t>{0, 3, 3, 0, 0}));
  EXPECT_EQ(index.lane(1).start, (std::vector<TimeNs>{0, 70, 70}));
  EXPECT_EQ(index.lane(2).start, (std::vector<TimeNs>{30, 40}));
  EXPECT_EQ(index.lane(3).size(), 2u);  // COMM ops are not on the rank lane
  const TimelineLane& comm = index.lane(4);
  EXPECT_EQ(comm.start, (std::vector<TimeNs>{5, 22}));
  EXPECT_EQ(comm.running_max_end, (std::vector<TimeNs>{100, 100}));
  EXPECT_EQ(index.lane(5).size(), 0u);
  EXPECT_EQ(rank0.running_max_end, rank0.end);  // no overlap: the running max is the end
}

TEST(TimelineIndexTest, RankWithOneStageHasNoStageLane) {
  Timeline timeline;
  timeline.ops = {Op(0, 0, OpKind::kF, 0, 0, 5), Op(1, 1, OpKind::kF, 0, 5, 9)};
  const TimelineIndex index(timeline, 0, 2);
  ASSERT_EQ(index.lanes().size(), 2u);
  EXPECT_EQ(index.RankLane(1), 1);
  EXPECT_FALSE(index.has_memory());
}

TEST(TimelineIndexTest, EmptyTimelineAnswersEverythingWithNothing) {
  const TimelineIndex index{Timeline{}};
  EXPECT_EQ(index.num_ranks(), 0);
  EXPECT_EQ(index.num_ops(), 0);
  EXPECT_EQ(index.begin(), 0);
  EXPECT_EQ(index.end(), 0);
  EXPECT_TRUE(index.lanes().empty());
  EXPECT_EQ(index.RankLane(0), -1);
  EXPECT_EQ(index.Visible(0, 0, 100), (std::pair<size_t, size_t>{0, 0}));
  EXPECT_EQ(index.HitTest(0, 5), std::nullopt);
  EXPECT_EQ(index.HitTestNear(0, 5, 100), std::nullopt);
  Coverage coverage;
  index.BinCoverage(0, 0, 100, 16, &coverage);
  EXPECT_EQ(coverage.columns, 16);
  EXPECT_EQ(coverage.busy, std::vector<TimeNs>(16 * Coverage::kKinds, 0));
  EXPECT_EQ(coverage.count, std::vector<uint32_t>(16, 0));
  EXPECT_EQ(coverage.edges.front(), 0);
  EXPECT_EQ(coverage.edges.back(), 100);
  MemoryEnvelope memory;
  index.BinMemory(0, 0, 100, 8, &memory);
  EXPECT_EQ(memory.max, std::vector<double>(8, 0.0));
  EXPECT_EQ(index.PeakMemory(0), 0.0);
  const RangeSummary summary = index.Summarize(0, 100);
  EXPECT_EQ(summary.busy, 0);
  EXPECT_EQ(summary.idle, 0);
  EXPECT_EQ(summary.busy_fraction, 0.0);
  EXPECT_TRUE(index.Figures() == Prediction{});
  EXPECT_EQ(index.WaitedFor(0, 0), std::nullopt);
  const TimelineComparison comparison = CompareTimelines(index, index);
  EXPECT_TRUE(comparison.matches.empty());
  EXPECT_TRUE(comparison.only_in_a.empty());
  EXPECT_TRUE(comparison.busy_a.empty());
}

// ---- Visible and hit tests -------------------------------------------------------------------

TEST(TimelineIndexTest, VisibleHandlesBoundariesAndZeroLengthOps) {
  const TimelineIndex index = EdgeLane();
  EXPECT_EQ(Range(index.Visible(0, 20, 30)), (std::vector<size_t>{1}));  // touching ends excluded
  EXPECT_EQ(Range(index.Visible(0, 30, 31)), (std::vector<size_t>{2}));  // zero-length at t0
  EXPECT_EQ(Range(index.Visible(0, 29, 30)), (std::vector<size_t>{1}));  // zero-length at t1: no
  EXPECT_EQ(Range(index.Visible(0, 25, 45)), (std::vector<size_t>{1, 2, 3}));
  EXPECT_EQ(Range(index.Visible(0, 0, 1000)), (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_TRUE(Range(index.Visible(0, 0, 10)).empty());
  EXPECT_TRUE(Range(index.Visible(0, 50, 60)).empty());
  EXPECT_TRUE(Range(index.Visible(0, 31, 40)).empty());
  EXPECT_TRUE(Range(index.Visible(0, 15, 15)).empty());  // empty range
  EXPECT_TRUE(Range(index.Visible(0, 15, 12)).empty());
  EXPECT_TRUE(Range(index.Visible(1, 0, 100)).empty());  // no such lane
  EXPECT_TRUE(Range(index.Visible(-1, 0, 100)).empty());
  EXPECT_EQ(Range(index.Visible(0, 19, 20)), (std::vector<size_t>{0}));
}

TEST(TimelineIndexTest, HitTestIsHalfOpenAndNeverHitsZeroLengthOps) {
  const TimelineIndex index = EdgeLane();
  EXPECT_EQ(index.HitTest(0, 9), std::nullopt);
  EXPECT_EQ(index.HitTest(0, 10), 0u);
  EXPECT_EQ(index.HitTest(0, 19), 0u);
  EXPECT_EQ(index.HitTest(0, 20), 1u);
  EXPECT_EQ(index.HitTest(0, 30), std::nullopt);
  EXPECT_EQ(index.HitTest(0, 35), std::nullopt);
  EXPECT_EQ(index.HitTest(0, 49), 3u);
  EXPECT_EQ(index.HitTest(0, 50), std::nullopt);
  EXPECT_EQ(index.HitTest(3, 15), std::nullopt);

  EXPECT_EQ(index.HitTestNear(0, 15, 0), 0u);  // a hit is the nearest
  EXPECT_EQ(index.HitTestNear(0, 30, 0), 2u);  // zero-length op at distance 0
  EXPECT_EQ(index.HitTestNear(0, 35, 5), 2u);  // tie between 30 and 40: the op before t
  EXPECT_EQ(index.HitTestNear(0, 36, 4), 3u);
  EXPECT_EQ(index.HitTestNear(0, 33, 2), std::nullopt);
  EXPECT_EQ(index.HitTestNear(0, 5, 5), 0u);
  EXPECT_EQ(index.HitTestNear(0, 5, 4), std::nullopt);
  EXPECT_EQ(index.HitTestNear(0, 52, 2), 3u);  // t - end with end exclusive
  EXPECT_EQ(index.HitTestNear(0, 52, -3), std::nullopt);
}

TEST(TimelineIndexTest, CommLaneQueriesSeeOverlappingOps) {
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  timeline.ops = {Op(0, 0, OpKind::kComm, 0, 0, 100), Op(0, 0, OpKind::kComm, 1, 10, 20),
                  Op(0, 0, OpKind::kComm, 2, 30, 40)};
  const TimelineIndex index(timeline);
  ASSERT_EQ(index.lanes().size(), 2u);
  const int comm = 1;
  EXPECT_EQ(index.lane(comm).kind, LaneKind::kComm);
  EXPECT_EQ(index.HitTest(comm, 35), 2u);  // the latest starting
  EXPECT_EQ(index.HitTest(comm, 25), 0u);
  EXPECT_EQ(index.HitTest(comm, 100), std::nullopt);
  // The long op is visible far from its start; the range may hold ops that ended before t0.
  const auto [first, last] = index.Visible(comm, 50, 60);
  EXPECT_EQ(first, 0u);
  EXPECT_EQ(last, 3u);
  EXPECT_EQ(index.HitTestNear(comm, 105, 5), 0u);
  Coverage coverage;
  index.BinCoverage(comm, 50, 60, 2, &coverage);
  EXPECT_EQ(coverage.Busy(0, OpKind::kComm), 5);
  EXPECT_EQ(coverage.Busy(1, OpKind::kComm), 5);
  EXPECT_EQ(coverage.count, (std::vector<uint32_t>{1, 1}));
  const RangeSummary summary = index.Summarize(0, 100);  // rank lanes only: no comm
  EXPECT_EQ(summary.busy, 0);
  EXPECT_EQ(summary.idle, 100);
}

// ---- Summaries and figures -------------------------------------------------------------------

TEST(TimelineIndexTest, SummarizeCountsRankLanesOnly) {
  Timeline timeline;
  timeline.ops = {Op(0, 0, OpKind::kF, 0, 0, 10),    Op(0, 0, OpKind::kB, 0, 10, 25),
                  Op(0, 0, OpKind::kW, 0, 30, 31),   Op(1, 1, OpKind::kF, 0, 20, 40),
                  Op(1, 1, OpKind::kW, 1, 5, 5),     Op(1, 1, OpKind::kComm, 0, 0, 40),
                  Op(1, 1, OpKind::kBW, 2, 100, 200)};
  const TimelineIndex index(timeline);
  const RangeSummary summary = index.Summarize(5, 25);
  EXPECT_EQ(summary.t0, 5);
  EXPECT_EQ(summary.t1, 25);
  EXPECT_EQ(summary.busy, 5 + 15 + 5);
  EXPECT_EQ(summary.idle, 2 * 20 - 25);
  EXPECT_DOUBLE_EQ(summary.busy_fraction, 25.0 / 40.0);
  EXPECT_EQ(summary.ops[static_cast<int>(OpKind::kF)], 2);
  EXPECT_EQ(summary.ops[static_cast<int>(OpKind::kB)], 1);
  EXPECT_EQ(summary.ops[static_cast<int>(OpKind::kW)], 1);  // zero-length at t0
  EXPECT_EQ(summary.ops[static_cast<int>(OpKind::kBW)], 0);
  EXPECT_EQ(summary.ops[static_cast<int>(OpKind::kComm)], 0);

  const RangeSummary empty = index.Summarize(50, 50);
  EXPECT_EQ(empty.busy, 0);
  EXPECT_EQ(empty.idle, 0);
}

TEST(TimelineIndexTest, FiguresFollowTheSimulatorsDefinitions) {
  Timeline timeline;
  timeline.ops = {Op(0, 0, OpKind::kF, 0, 0, 10),  Op(0, 0, OpKind::kB, 0, 30, 40),
                  Op(0, 0, OpKind::kW, 0, 40, 45), Op(1, 1, OpKind::kF, 0, 12, 22),
                  Op(1, 1, OpKind::kB, 0, 22, 32), Op(1, 1, OpKind::kW, 0, 32, 37),
                  Op(2, 2, OpKind::kW, 0, 5, 8),   Op(2, 2, OpKind::kComm, 0, 0, 90)};
  timeline.memory = {{0, 10, 2}, {0, 40, 0.5}, {0, 45, 0}, {1, 22, 3}, {1, 37, 0}};
  const TimelineIndex index(timeline);
  const Prediction figures = index.Figures();
  EXPECT_EQ(figures.makespan, 45);  // comm ops do not count
  EXPECT_EQ(index.makespan(), 45);
  EXPECT_EQ(figures.span, 45);  // rank 0 from its F at 0; rank 1: 37 - 12; rank 2 (no F): 3
  EXPECT_DOUBLE_EQ(figures.bubble_rate, (45.0 - 25.0) / 45.0);
  EXPECT_DOUBLE_EQ(figures.paper_bubble_rate, (45.0 - 25.0) / 45.0);
  EXPECT_EQ(figures.peak_memory, (std::vector<double>{2, 3, 0}));

  // Shift rank 0's F later: span is measured from the first F, makespan from t = 0.
  timeline.ops[0] = Op(0, 0, OpKind::kF, 0, 15, 25);
  const Prediction shifted = TimelineIndex(timeline).Figures();
  EXPECT_EQ(shifted.makespan, 45);
  EXPECT_EQ(shifted.span, 45 - 15);
}

// ---- Wait causes -----------------------------------------------------------------------------

// Two ranks, two stages, hop latency 5, as the simulator would time them:
//   rank 0: F(0,0) [0,10)  F(0,1) [10,20)  B(0,0) [40,50)  B(0,1) [55,65)  W(0,0) [65,70)
//   rank 1: F(1,0) [15,25) B(1,0) [25,35)  F(1,1) [35,45)  B(1,1) [45,50)
Timeline TwoStagePipeline(TimelineKind kind) {
  Timeline timeline;
  timeline.kind = kind;
  timeline.ops = {
      Op(0, 0, OpKind::kF, 0, 0, 10),  Op(0, 0, OpKind::kF, 1, 10, 20),
      Op(0, 0, OpKind::kB, 0, 40, 50), Op(0, 0, OpKind::kB, 1, 55, 65),
      Op(0, 0, OpKind::kW, 0, 65, 70), Op(1, 1, OpKind::kF, 0, 15, 25),
      Op(1, 1, OpKind::kB, 0, 25, 35), Op(1, 1, OpKind::kF, 1, 35, 45),
      Op(1, 1, OpKind::kB, 1, 45, 50),
  };
  return timeline;
}

TEST(TimelineIndexTest, WaitedForNamesTheDependencyThatEndedTheBubble) {
  const TimelineIndex index(TwoStagePipeline(TimelineKind::kPredicted), /*comm=*/5);
  EXPECT_EQ(index.num_stages(), 2);
  const int rank0 = index.RankLane(0);
  const int rank1 = index.RankLane(1);
  EXPECT_EQ(index.WaitedFor(rank0, 0), std::nullopt);  // starts at 0: no bubble
  EXPECT_EQ(index.WaitedFor(rank0, 1), std::nullopt);  // no idle time before it
  // B(0,0) at 40 waited for B(1,0), which ended at 35 on rank 1 (+5).
  auto cause = index.WaitedFor(rank0, 2);
  ASSERT_TRUE(cause.has_value());
  EXPECT_EQ(cause->lane, rank1);
  EXPECT_EQ(cause->index, 1u);
  // B(0,1) at 55 waited for B(1,1), ended at 50.
  cause = index.WaitedFor(rank0, 3);
  ASSERT_TRUE(cause.has_value());
  EXPECT_EQ(cause->lane, rank1);
  EXPECT_EQ(cause->index, 3u);
  // F(1,0) at 15: the first op of rank 1 waited for F(0,0).
  cause = index.WaitedFor(rank1, 0);
  ASSERT_TRUE(cause.has_value());
  EXPECT_EQ(cause->lane, rank0);
  EXPECT_EQ(cause->index, 0u);
  EXPECT_EQ(index.WaitedFor(rank1, 1), std::nullopt);
  EXPECT_EQ(index.WaitedFor(rank1, 99), std::nullopt);
  EXPECT_EQ(index.WaitedFor(-1, 0), std::nullopt);

  // With the wrong hop latency nothing lines up exactly.
  const TimelineIndex wrong_comm(TwoStagePipeline(TimelineKind::kPredicted), /*comm=*/4);
  EXPECT_EQ(wrong_comm.WaitedFor(rank0, 2), std::nullopt);
}

TEST(TimelineIndexTest, WaitedForOnMeasuredTimelinesAllowsJitter) {
  Timeline timeline = TwoStagePipeline(TimelineKind::kMeasured);
  for (TimelineOp& op : timeline.ops) {  // in microseconds now: 1 us tolerance is meaningful
    op.start *= 1000;
    op.end *= 1000;
  }
  timeline.ops[2].start += 700;   // B(0,0): 0.7 us after its input arrived
  timeline.ops[3].start -= 300;   // B(0,1): 0.3 us "before" its dependency ended + hop
  timeline.ops[5].start += 1500;  // F(1,0): 1.5 us late
  const TimelineIndex index(timeline, /*comm=*/5000);
  const int rank0 = index.RankLane(0);
  const int rank1 = index.RankLane(1);
  auto cause = index.WaitedFor(rank0, 2);
  ASSERT_TRUE(cause.has_value());
  EXPECT_EQ(cause->index, 1u);
  cause = index.WaitedFor(rank0, 3);
  ASSERT_TRUE(cause.has_value());
  EXPECT_EQ(cause->index, 3u);
  EXPECT_EQ(index.WaitedFor(rank1, 0), std::nullopt);

  // The window is [dep.end, dep.end + comm] widened by the tolerance: told comm = 0, the real
  // 5 us hop is far outside it.
  const TimelineIndex no_comm(timeline, 0);
  EXPECT_EQ(no_comm.WaitedFor(rank0, 2), std::nullopt);
}

TEST(TimelineIndexTest, WaitedForAcceptsStageLanesAndFusedBackward) {
  // Rank 0 holds stages 0 and 3 (V placement, p = 2); rank 1 holds 1 and 2. comm 1.
  Timeline timeline;
  timeline.ops = {
      Op(0, 0, OpKind::kF, 0, 0, 10),   Op(1, 1, OpKind::kF, 0, 11, 21),
      Op(1, 2, OpKind::kF, 0, 21, 31),  Op(0, 3, OpKind::kF, 0, 32, 42),
      Op(0, 3, OpKind::kBW, 0, 42, 60), Op(1, 2, OpKind::kBW, 0, 61, 80),
      Op(1, 1, OpKind::kB, 0, 80, 90),  Op(0, 0, OpKind::kBW, 0, 91, 100),
      Op(1, 1, OpKind::kW, 0, 90, 95),
  };
  const TimelineIndex index(timeline, 1);
  ASSERT_EQ(index.lanes().size(), 6u);  // rank 0, its stages 0 and 3, rank 1, its stages 1 and 2
  const int rank0 = index.RankLane(0);
  const int rank1 = index.RankLane(1);
  // F(3,0) at 32 waited for F(2,0) on rank 1.
  auto cause = index.WaitedFor(rank0, 1);
  ASSERT_TRUE(cause.has_value());
  EXPECT_EQ(cause->lane, rank1);
  EXPECT_EQ(cause->index, 1u);
  // BW(2,0) at 61 waited for BW(3,0) (B or BW of the next stage).
  cause = index.WaitedFor(rank1, 2);
  ASSERT_TRUE(cause.has_value());
  EXPECT_EQ(cause->lane, rank0);
  EXPECT_EQ(cause->index, 2u);
  // Asked through the stage-3 lane of rank 0 (lane 2): the same answer as through the rank lane.
  ASSERT_EQ(index.lane(2).stage, 3);
  cause = index.WaitedFor(2, 0);
  ASSERT_TRUE(cause.has_value());
  EXPECT_EQ(cause->lane, rank1);
  EXPECT_EQ(cause->index, 1u);
  // BW(0,0) at 91 waited for B(1,0) ending at 90 (+1).
  cause = index.WaitedFor(rank0, 3);
  ASSERT_TRUE(cause.has_value());
  EXPECT_EQ(cause->lane, rank1);
  EXPECT_EQ(cause->index, 3u);
}

TEST(TimelineIndexTest, SparseMicrobatchIdsStillResolve) {
  // A trace numbering microbatches globally (huge ids): the lookup falls back to binary search.
  Timeline timeline = TwoStagePipeline(TimelineKind::kPredicted);
  for (TimelineOp& op : timeline.ops)
    op.microbatch = op.microbatch * 1'000'000'000 + 7;
  const TimelineIndex index(timeline, 5);
  auto cause = index.WaitedFor(index.RankLane(0), 2);
  ASSERT_TRUE(cause.has_value());
  EXPECT_EQ(cause->index, 1u);
  const TimelineComparison same = CompareTimelines(index, index);
  EXPECT_EQ(same.matches.size(), 9u);
  EXPECT_EQ(same.differing, 0);
}

// ---- Compare ---------------------------------------------------------------------------------

TEST(TimelineIndexTest, IdenticalTimelinesMatchCompletely) {
  const TimelineIndex a(TwoStagePipeline(TimelineKind::kPredicted), 5);
  const TimelineIndex b(TwoStagePipeline(TimelineKind::kMeasured), 5);
  const TimelineComparison comparison = CompareTimelines(a, b);
  EXPECT_EQ(comparison.matches.size(), 9u);
  EXPECT_TRUE(comparison.only_in_a.empty());
  EXPECT_TRUE(comparison.only_in_b.empty());
  EXPECT_EQ(comparison.differing, 0);
  EXPECT_EQ(comparison.makespan_a, 70);
  EXPECT_EQ(comparison.makespan_b, 70);
  EXPECT_EQ(comparison.busy_a, (std::vector<TimeNs>{45, 35}));
  EXPECT_EQ(comparison.busy_b, comparison.busy_a);
  EXPECT_EQ(comparison.end_a, (std::vector<TimeNs>{70, 50}));
  for (const OpMatch& match : comparison.matches) {
    EXPECT_EQ(match.start_delta, 0);
    EXPECT_EQ(match.duration_delta, 0);
    EXPECT_EQ(a.lane(match.lane_a).rank, b.lane(match.lane_b).rank);
    EXPECT_FALSE(OpsDiffer(match, a, b, 0.0));
  }
  // In a's lane order.
  EXPECT_EQ(comparison.matches[0].lane_a, a.RankLane(0));
  EXPECT_EQ(comparison.matches[0].index_a, 0u);
  EXPECT_EQ(comparison.matches[8].lane_a, a.RankLane(1));
  EXPECT_EQ(comparison.matches[8].index_a, 3u);
}

TEST(TimelineIndexTest, ShiftedAndStretchedOpsDiffer) {
  Timeline changed = TwoStagePipeline(TimelineKind::kMeasured);
  changed.ops[4] = Op(0, 0, OpKind::kW, 0, 65, 80);  // W(0,0) stretched 5 -> 15
  changed.ops[8] = Op(1, 1, OpKind::kB, 1, 47, 52);  // B(1,1) moved by 2 (> 1% of 80)
  changed.ops[1] = Op(0, 0, OpKind::kF, 1, 10, 20);  // unchanged
  const TimelineIndex a(TwoStagePipeline(TimelineKind::kPredicted), 5);
  const TimelineIndex b(changed, 5);
  const TimelineComparison comparison = CompareTimelines(a, b);
  EXPECT_EQ(comparison.matches.size(), 9u);
  EXPECT_EQ(comparison.differing, 2);
  EXPECT_EQ(comparison.makespan_b, 80);
  const OpMatch& stretched = comparison.matches[4];
  EXPECT_EQ(a.lane(stretched.lane_a).kind_of[stretched.index_a], OpKind::kW);
  EXPECT_EQ(stretched.duration_delta, 10);
  EXPECT_EQ(stretched.start_delta, 0);
  const OpMatch& moved = comparison.matches[8];
  EXPECT_EQ(moved.start_delta, 2);
  EXPECT_TRUE(OpsDiffer(moved, a, b, 0.01));
  EXPECT_FALSE(OpsDiffer(moved, a, b, 0.05));  // 2 <= 5% of 80
  // A large tolerance forgives both.
  EXPECT_EQ(CompareTimelines(a, b, 0.7).differing, 0);
}

TEST(TimelineIndexTest, FusedBackwardDoesNotMatchSplitBackward) {
  Timeline split;
  split.ops = {Op(0, 0, OpKind::kF, 0, 0, 10), Op(0, 0, OpKind::kB, 0, 10, 20),
               Op(0, 0, OpKind::kW, 0, 20, 25)};
  Timeline fused;
  fused.ops = {Op(0, 0, OpKind::kF, 0, 0, 10), Op(0, 0, OpKind::kBW, 0, 10, 25),
               Op(1, 1, OpKind::kF, 0, 11, 20)};
  const TimelineIndex a(fused);
  const TimelineIndex b(split);
  const TimelineComparison comparison = CompareTimelines(a, b);
  ASSERT_EQ(comparison.matches.size(), 1u);
  EXPECT_EQ(comparison.only_in_a,
            (std::vector<std::pair<int, size_t>>{{a.RankLane(0), 1}, {a.RankLane(1), 0}}));
  EXPECT_EQ(comparison.only_in_b,
            (std::vector<std::pair<int, size_t>>{{b.RankLane(0), 1}, {b.RankLane(0), 2}}));
  // Per-rank vectors cover the ranks of both sides.
  EXPECT_EQ(comparison.busy_a, (std::vector<TimeNs>{25, 9}));
  EXPECT_EQ(comparison.busy_b, (std::vector<TimeNs>{25, 0}));
  EXPECT_EQ(comparison.end_b, (std::vector<TimeNs>{25, 0}));
}

TEST(TimelineIndexTest, RepeatedKeysPairUpInTimeOrder) {
  // Two iterations of the same microbatch in one trace: first with first, second with second.
  Timeline a_ops;
  a_ops.kind = TimelineKind::kMeasured;
  a_ops.ops = {Op(0, 0, OpKind::kF, 0, 100, 110), Op(0, 0, OpKind::kF, 0, 0, 10)};
  Timeline b_ops = a_ops;
  b_ops.ops.pop_back();
  const TimelineIndex a(a_ops);
  const TimelineIndex b(b_ops);
  const TimelineComparison comparison = CompareTimelines(a, b);
  ASSERT_EQ(comparison.matches.size(), 1u);
  EXPECT_EQ(comparison.matches[0].index_a, 0u);  // a's first (at 0) matched b's only (at 100)
  EXPECT_EQ(comparison.matches[0].start_delta, 100);
  EXPECT_EQ(comparison.only_in_a, (std::vector<std::pair<int, size_t>>{{0, 1}}));
}

}  // namespace
}  // namespace zb
