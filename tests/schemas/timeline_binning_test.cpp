// SPDX-License-Identifier: Apache-2.0
// Tests of TimelineIndex's binning (timeline_binning.cpp): column edges, the exactness of the
// level-of-detail coverage against a brute-force reference (including the "no op vanishes at any
// zoom" invariant of docs/zbview.md §2), measured busy time inside spans, and memory envelopes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "timeline_test_support.h"
#include "zbkit/schemas/timeline_index.h"
#include "zbkit/schemas/types.h"

namespace zb {
namespace {

__extension__ typedef __int128 Int128;

using timeline_testing::EdgeLane;
using timeline_testing::Op;

TEST(TimelineIndexTest, ColumnEdgesAreExactFloorsAndTileTheRange) {
  const struct {
    TimeNs t0, t1;
    int columns;
  } cases[] = {{0, 40, 3},
               {0, 1, 1600},
               {-7, 5, 5},
               {1'000'000'007, 1'000'000'008, 3},
               {-4'000'000'000'000'000'000, 4'000'000'000'000'000'000, 1601},
               {0, 1'000'000'000'000, 1600},
               {123, 123 + 1599, 1600}};
  for (const auto& c : cases) {
    Coverage coverage;
    const TimelineIndex index = EdgeLane();
    index.BinCoverage(0, c.t0, c.t1, c.columns, &coverage);
    ASSERT_EQ(coverage.edges.size(), static_cast<size_t>(c.columns) + 1);
    for (int col = 0; col <= c.columns; ++col) {
      const Int128 expected = static_cast<Int128>(c.t0) + static_cast<Int128>(col) *
                                                              (static_cast<Int128>(c.t1) - c.t0) /
                                                              c.columns;
      ASSERT_EQ(static_cast<Int128>(coverage.edges[col]), expected) << col;
      ASSERT_EQ(ColumnEdge(c.t0, c.t1, c.columns, col), coverage.edges[col]) << col;
      if (col > 0) {
        ASSERT_LE(coverage.edges[col - 1], coverage.edges[col]);
      }
    }
    EXPECT_EQ(coverage.edges.front(), c.t0);
    EXPECT_EQ(coverage.edges.back(), c.t1);
  }
}

TEST(TimelineIndexTest, BinCoverageOfAHandBuiltLane) {
  Timeline timeline;
  timeline.ops = {Op(0, 0, OpKind::kF, 0, 0, 10), Op(0, 0, OpKind::kB, 0, 10, 25),
                  Op(0, 0, OpKind::kW, 0, 30, 31), Op(0, 0, OpKind::kF, 1, 40, 40)};
  const TimelineIndex index(timeline);
  Coverage coverage;
  index.BinCoverage(0, 0, 40, 4, &coverage);  // edges 0 10 20 30 40
  EXPECT_EQ(coverage.edges, (std::vector<TimeNs>{0, 10, 20, 30, 40}));
  EXPECT_EQ(coverage.Busy(0, OpKind::kF), 10);
  EXPECT_EQ(coverage.Busy(0, OpKind::kB), 0);  // B starts on the boundary
  EXPECT_EQ(coverage.Busy(1, OpKind::kB), 10);
  EXPECT_EQ(coverage.Busy(2, OpKind::kB), 5);
  EXPECT_EQ(coverage.Busy(3, OpKind::kW), 1);
  EXPECT_EQ(coverage.count, (std::vector<uint32_t>{1, 1, 1, 1}));  // zero-length F at 40 is out
  EXPECT_EQ(coverage.BusyTotal(2), 5);
  EXPECT_EQ(coverage.Width(2), 10);

  index.BinCoverage(0, 0, 40, 3, &coverage);  // 40/3: edges 0 13 26 40
  EXPECT_EQ(coverage.edges, (std::vector<TimeNs>{0, 13, 26, 40}));
  EXPECT_EQ(coverage.Busy(0, OpKind::kF), 10);
  EXPECT_EQ(coverage.Busy(0, OpKind::kB), 3);
  EXPECT_EQ(coverage.Busy(1, OpKind::kB), 12);
  EXPECT_EQ(coverage.Busy(2, OpKind::kW), 1);
  EXPECT_EQ(coverage.count, (std::vector<uint32_t>{2, 1, 1}));

  index.BinCoverage(0, 40, 41, 2, &coverage);                // 1 ns, 2 columns: [40,40) [40,41)
  EXPECT_EQ(coverage.count, (std::vector<uint32_t>{0, 1}));  // zero-length op: its start column
  EXPECT_EQ(coverage.BusyTotal(1), 0);

  index.BinCoverage(0, 12, 13, 4, &coverage);  // inside B: 3 empty columns then [12, 13)
  EXPECT_EQ(coverage.count, (std::vector<uint32_t>{1, 1, 1, 1}));  // B covers every instant
  EXPECT_EQ(coverage.Busy(3, OpKind::kB), 1);
  EXPECT_EQ(coverage.BusyTotal(0), 0);

  index.BinCoverage(0, 10, 0, 4, &coverage);  // reversed: nothing
  EXPECT_EQ(coverage.count, std::vector<uint32_t>(4, 0));
  index.BinCoverage(0, 0, 40, 0, &coverage);
  EXPECT_EQ(coverage.columns, 0);
  EXPECT_TRUE(coverage.busy.empty());
  EXPECT_EQ(coverage.edges.size(), 1u);
  index.BinCoverage(0, 0, 40, -3, &coverage);
  EXPECT_EQ(coverage.columns, 0);
}

TEST(TimelineIndexTest, BinCoverageReusesItsBuffers) {
  const TimelineIndex index = EdgeLane();
  Coverage coverage;
  index.BinCoverage(0, 0, 100, 1600, &coverage);
  const TimeNs* busy = coverage.busy.data();
  const uint32_t* count = coverage.count.data();
  const TimeNs* edges = coverage.edges.data();
  for (int columns : {1600, 800, 1600, 1}) {
    index.BinCoverage(0, 3, 77, columns, &coverage);
    EXPECT_EQ(coverage.busy.data(), busy);
    EXPECT_EQ(coverage.count.data(), count);
    EXPECT_EQ(coverage.edges.data(), edges);
  }
}

// Reference binning: every op against every column it spans, straight from the definitions in
// timeline_index.h (no cursor, no difference arrays).
struct Reference {
  std::vector<TimeNs> busy;
  std::vector<uint32_t> count;
};
Reference BinByDefinition(const TimelineLane& lane, const std::vector<TimeNs>& edges) {
  const int columns = static_cast<int>(edges.size()) - 1;
  const TimeNs t0 = edges.front();
  const TimeNs t1 = edges.back();
  Reference ref{std::vector<TimeNs>(static_cast<size_t>(columns) * Coverage::kKinds, 0),
                std::vector<uint32_t>(static_cast<size_t>(columns), 0)};
  // The non-empty column holding instant x.
  auto column_of = [&](TimeNs x) {
    return static_cast<int>(std::upper_bound(edges.begin(), edges.end(), x) - edges.begin()) - 1;
  };
  std::vector<size_t> touching;  // ops with an instant in [t0, t1)
  for (size_t i = 0; i < lane.size(); ++i) {
    const TimeNs start = lane.start[i];
    const TimeNs end = lane.end[i];
    const int k = static_cast<int>(lane.kind_of[i]);
    if (start == end) {
      if (start >= t0 && start < t1) ++ref.count[column_of(start)];
      continue;
    }
    const TimeNs s = std::max(start, t0);
    const TimeNs e = std::min(end, t1);
    if (s >= e) continue;
    touching.push_back(i);
    for (int c = column_of(s); c <= column_of(e - 1); ++c) {
      if (edges[c] == edges[c + 1]) continue;  // empty columns: below
      ref.busy[c * Coverage::kKinds + k] += std::min(e, edges[c + 1]) - std::max(s, edges[c]);
      ++ref.count[c];
    }
  }
  for (int c = 0; c < columns; ++c) {
    if (edges[c] != edges[c + 1]) continue;
    for (size_t i : touching) {
      if (lane.start[i] <= edges[c] && edges[c] < lane.end[i]) ++ref.count[c];
    }
  }
  return ref;
}

// 100k ops on a rank lane (gaps, zero-length ops, ops of 1 ns and long ones) plus 20k overlapping
// comm ops, binned at many zoom levels: whole range, fractions down to ranges far inside one op,
// spans of 1 ns, column counts that do and do not divide the span.
TEST(TimelineIndexTest, BinCoverageIsExactAndNoOpVanishesAtAnyZoom) {
  std::mt19937_64 rng(20240501);
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  TimeNs clock = 0;
  const OpKind compute[] = {OpKind::kF, OpKind::kB, OpKind::kW, OpKind::kBW};
  for (int i = 0; i < 100'000; ++i) {
    clock += std::uniform_int_distribution<TimeNs>(0, 3)(rng) == 0
                 ? std::uniform_int_distribution<TimeNs>(1, 50'000)(rng)
                 : 0;
    TimeNs duration = 0;
    switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
      case 0:
        duration = 0;
        break;
      case 1:
        duration = 1;
        break;
      case 2:
        duration = std::uniform_int_distribution<TimeNs>(100'000, 5'000'000)(rng);
        break;
      default:
        duration = std::uniform_int_distribution<TimeNs>(2, 20'000)(rng);
    }
    timeline.ops.push_back(Op(0, i % 3, compute[i % 4], i, clock, clock + duration));
    clock += duration;
  }
  for (int i = 0; i < 20'000; ++i) {
    const TimeNs start = std::uniform_int_distribution<TimeNs>(0, clock)(rng);
    const TimeNs duration = std::uniform_int_distribution<TimeNs>(0, clock / 200)(rng);
    timeline.ops.push_back(Op(0, 0, OpKind::kComm, i, start, start + duration));
  }
  const TimelineIndex index(timeline);
  const int rank_lane = index.RankLane(0);
  const int comm_lane = static_cast<int>(index.lanes().size()) - 1;
  ASSERT_EQ(index.lane(comm_lane).kind, LaneKind::kComm);
  const TimeNs total = index.end();

  std::vector<std::pair<TimeNs, TimeNs>> ranges = {{0, total}, {-1000, total + 1000}};
  for (TimeNs width : {total / 10, total / 100, total / 1000, TimeNs{100'000}, TimeNs{1600},
                       TimeNs{1601}, TimeNs{1599}, TimeNs{37}, TimeNs{2}, TimeNs{1}}) {
    for (int k = 0; k < 6; ++k) {
      const TimeNs t0 = std::uniform_int_distribution<TimeNs>(-width / 2, total)(rng);
      ranges.push_back({t0, t0 + std::max<TimeNs>(width, 1)});
    }
  }
  // Ranges starting and ending exactly on op boundaries, and 1 ns at a zero-length op.
  const TimelineLane& lane = index.lane(rank_lane);
  for (size_t i : {size_t{0}, size_t{1}, lane.size() / 2, lane.size() - 1}) {
    ranges.push_back({lane.start[i], lane.end[i] + 1});
    ranges.push_back({lane.start[i], lane.start[i] + 1});
  }
  for (size_t i = 0; i < lane.size(); ++i) {
    if (lane.start[i] == lane.end[i]) {
      ranges.push_back({lane.start[i], lane.start[i] + 1});
      break;
    }
  }

  Coverage coverage;
  int checked = 0;
  for (const auto& [t0, t1] : ranges) {
    for (int columns : {1, 7, 1600, 1601}) {
      for (int lane_index : {rank_lane, comm_lane}) {
        const TimelineLane& ops = index.lane(lane_index);
        index.BinCoverage(lane_index, t0, t1, columns, &coverage);
        ASSERT_EQ(coverage.edges.front(), t0);
        ASSERT_EQ(coverage.edges.back(), t1);
        const Reference ref = BinByDefinition(ops, coverage.edges);
        ASSERT_EQ(coverage.busy, ref.busy)
            << "lane " << lane_index << " [" << t0 << ", " << t1 << ") in " << columns;
        ASSERT_EQ(coverage.count, ref.count)
            << "lane " << lane_index << " [" << t0 << ", " << t1 << ") in " << columns;
        // Busy per kind sums to the exact overlap with [t0, t1); every op touching the range is
        // counted in the column holding its first touched instant.
        TimeNs overlap[Coverage::kKinds] = {};
        const auto [first, last] = index.Visible(lane_index, t0, t1);
        for (size_t i = 0; i < ops.size(); ++i) {
          const bool intersects = ops.start[i] == ops.end[i]
                                      ? (ops.start[i] >= t0 && ops.start[i] < t1)
                                      : (ops.start[i] < t1 && ops.end[i] > t0);
          if (!intersects) continue;
          ASSERT_TRUE(i >= first && i < last) << "Visible lost op " << i;
          overlap[static_cast<int>(ops.kind_of[i])] +=
              std::min(ops.end[i], t1) - std::max(ops.start[i], t0);
          const TimeNs at = std::max(ops.start[i], t0);
          const int column =
              static_cast<int>(std::upper_bound(coverage.edges.begin(), coverage.edges.end(), at) -
                               coverage.edges.begin()) -
              1;
          ASSERT_GE(coverage.count[column], 1u) << "op " << i << " vanished";
        }
        for (int k = 0; k < Coverage::kKinds; ++k) {
          TimeNs sum = 0;
          for (int c = 0; c < columns; ++c)
            sum += coverage.Busy(c, static_cast<OpKind>(k));
          ASSERT_EQ(sum, overlap[k]) << "kind " << k;
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 500);
}

// A measured F busy for 12.9 ms of a 97 ms span, then a fully busy B: the binned busy time is the
// busy share of each column, the rest of the span is `waiting`, and summaries, rank_busy and the
// detail vectors all follow the device busy time, whatever the zoom.
TEST(TimelineIndexTest, MeasuredBusyTimeIsShadedInsideTheSpanAtEveryZoom) {
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  timeline.names = {"forward"};
  TimelineOp f = Op(0, 0, OpKind::kF, 0, 0, 97'000'000);
  f.busy = 12'900'000;
  f.kernels = 41;
  f.name = 0;
  TimelineOp b = Op(0, 0, OpKind::kB, 0, 100'000'000, 120'000'000);
  b.iteration = 1;
  timeline.ops = {b, f};  // out of order: the detail vectors are sorted with the ops
  const TimelineIndex index(timeline);
  ASSERT_TRUE(index.has_op_detail());
  const TimelineLane& lane = index.lane(index.RankLane(0));
  ASSERT_EQ(lane.size(), 2u);
  EXPECT_EQ(lane.BusyOf(0), 12'900'000);
  EXPECT_EQ(lane.kernels[0], 41);
  EXPECT_EQ(index.names()[static_cast<size_t>(lane.name[0])], "forward");
  EXPECT_EQ(lane.BusyOf(1), 20'000'000);
  EXPECT_EQ(lane.name[1], -1);
  EXPECT_EQ(lane.IterationOf(1), 1);
  ASSERT_EQ(index.iterations().size(), 2u);
  EXPECT_EQ(index.iterations()[1].start, 100'000'000);
  EXPECT_EQ(index.iterations()[1].end, 120'000'000);
  EXPECT_EQ(index.rank_busy()[0], 32'900'000);

  for (int columns : {1, 3, 7, 120, 1600}) {
    Coverage coverage;
    index.BinCoverage(index.RankLane(0), 0, 120'000'000, columns, &coverage);
    ASSERT_EQ(coverage.waiting.size(), static_cast<size_t>(columns) * Coverage::kKinds);
    TimeNs f_busy = 0, b_busy = 0, waiting = 0;
    for (int c = 0; c < columns; ++c) {
      f_busy += coverage.Busy(c, OpKind::kF);
      b_busy += coverage.Busy(c, OpKind::kB);
      waiting += coverage.Waiting(c, OpKind::kF);
      EXPECT_EQ(coverage.Waiting(c, OpKind::kB), 0);
      EXPECT_LE(coverage.BusyTotal(c) + coverage.Waiting(c, OpKind::kF), coverage.Width(c))
          << columns << " columns, column " << c;
    }
    // Rounding: at most one ns per column.
    EXPECT_NEAR(static_cast<double>(f_busy), 12'900'000, columns) << columns;
    EXPECT_NEAR(static_cast<double>(waiting), 97'000'000 - 12'900'000, columns) << columns;
    EXPECT_EQ(b_busy, 20'000'000) << columns;
  }
  const RangeSummary first_half = index.Summarize(0, 48'500'000);
  EXPECT_NEAR(static_cast<double>(first_half.busy), 6'450'000, 1);
  EXPECT_NEAR(first_half.busy_fraction, 6.45 / 48.5, 1e-6);

  // A prediction carries no detail and bins exactly as before.
  Timeline predicted;
  predicted.ops = {Op(0, 0, OpKind::kF, 0, 0, 10)};
  const TimelineIndex plain(predicted);
  EXPECT_FALSE(plain.has_op_detail());
  EXPECT_TRUE(plain.lane(0).busy.empty());
  Coverage coverage;
  plain.BinCoverage(0, 0, 10, 2, &coverage);
  EXPECT_TRUE(coverage.waiting.empty());
  EXPECT_EQ(coverage.Busy(0, OpKind::kF) + coverage.Busy(1, OpKind::kF), 10);
}

TEST(TimelineIndexTest, InvalidLaneBinsToZeros) {
  const TimelineIndex index = EdgeLane();
  Coverage coverage;
  index.BinCoverage(7, 0, 100, 10, &coverage);
  EXPECT_EQ(coverage.count, std::vector<uint32_t>(10, 0));
  EXPECT_EQ(coverage.busy, std::vector<TimeNs>(10 * Coverage::kKinds, 0));
}

// ---- Memory ----------------------------------------------------------------------------------

TEST(TimelineIndexTest, BinMemoryIsAMinMaxLastEnvelopeOfTheStepFunction) {
  Timeline timeline;
  timeline.ops = {Op(0, 0, OpKind::kF, 0, 0, 10)};
  // Out of order on purpose; two samples at t = 20 (the later one holds).
  timeline.memory = {{0, 35, 1.0}, {0, 10, 5.0}, {0, 20, 3.0}, {0, 20, 7.0}, {1, 4, -1e-17}};
  const TimelineIndex index(timeline);
  EXPECT_TRUE(index.has_memory());
  EXPECT_EQ(index.num_ranks(), 2);
  EXPECT_EQ(index.PeakMemory(0), 7.0);
  EXPECT_EQ(index.PeakMemory(1), 0.0);  // the value before the first sample is 0
  EXPECT_EQ(index.PeakMemory(2), 0.0);
  EXPECT_EQ(index.PeakMemory(-1), 0.0);

  MemoryEnvelope envelope;
  index.BinMemory(0, 0, 40, 4, &envelope);  // [0,10) [10,20) [20,30) [30,40)
  EXPECT_EQ(envelope.columns, 4);
  EXPECT_EQ(envelope.min, (std::vector<double>{0, 0, 3, 1}));
  EXPECT_EQ(envelope.max, (std::vector<double>{0, 5, 7, 7}));
  EXPECT_EQ(envelope.last, (std::vector<double>{0, 5, 7, 1}));

  index.BinMemory(0, 25, 45, 2, &envelope);  // [25,35) [35,45): carried in, sample on the edge
  EXPECT_EQ(envelope.min, (std::vector<double>{7, 1}));
  EXPECT_EQ(envelope.max, (std::vector<double>{7, 7}));
  EXPECT_EQ(envelope.last, (std::vector<double>{7, 1}));

  index.BinMemory(0, 100, 200, 3, &envelope);  // after the last sample: it holds
  EXPECT_EQ(envelope.max, (std::vector<double>{1, 1, 1}));

  index.BinMemory(0, 20, 21, 3, &envelope);  // 1 ns in 3 columns: [20,20) [20,20) [20,21)
  EXPECT_EQ(envelope.last, (std::vector<double>{5, 5, 7}));
  EXPECT_EQ(envelope.max, (std::vector<double>{5, 5, 7}));
  EXPECT_EQ(envelope.min, (std::vector<double>{5, 5, 3}));

  index.BinMemory(5, 0, 40, 4, &envelope);  // no such rank: zeros
  EXPECT_EQ(envelope.max, std::vector<double>(4, 0.0));

  // Over the whole timeline the envelope's maximum is the peak.
  index.BinMemory(0, 0, 40, 1, &envelope);
  EXPECT_EQ(envelope.max[0], index.PeakMemory(0));
}

}  // namespace
}  // namespace zb
