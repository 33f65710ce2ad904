// SPDX-License-Identifier: Apache-2.0
// Cost aggregation: percentiles, --skip-iters, per-rank sums over chunks, BW-only jobs, memory
// measured and estimated, comm hops, the measured timeline.
#include "zbkit/profiler/costs.h"

#include <gtest/gtest.h>

#include "zbkit/schemas/validate.h"

namespace zb::profiler {
namespace {

TEST(Spread, MedianAndPercentilesInterpolateLinearly) {
  Spread empty = SpreadOf({});
  EXPECT_EQ(empty.samples, 0);
  EXPECT_EQ(empty.median, 0);
  Spread one = SpreadOf({42});
  EXPECT_EQ(one.median, 42);
  EXPECT_EQ(one.p10, 42);
  EXPECT_EQ(one.p90, 42);
  // 1..10 (shuffled): numpy gives median 5.5, p10 1.9, p90 9.1.
  Spread ten = SpreadOf({10, 3, 1, 7, 2, 9, 4, 8, 6, 5});
  EXPECT_EQ(ten.samples, 10);
  EXPECT_EQ(ten.median, 6);  // 5.5 rounds half away from zero
  EXPECT_EQ(ten.p10, 2);     // 1.9
  EXPECT_EQ(ten.p90, 9);     // 9.1
  Spread big = SpreadOf({1000, 2000, 3000, 4000, 100000});
  EXPECT_EQ(big.median, 3000);
  EXPECT_EQ(big.p10, 1400);
  EXPECT_EQ(big.p90, 61600);  // 4000 + 0.6 * 96000
}

MeasuredOp Op(int rank, int stage, OpKind kind, int mb, int iteration, TimeNs busy,
              TimeNs start = 0) {
  MeasuredOp op;
  op.rank = rank;
  op.stage = stage;
  op.kind = kind;
  op.microbatch = mb;
  op.iteration = iteration;
  op.busy = busy;
  op.cpu_start = op.gpu_start = start;
  op.cpu_end = op.gpu_end = start + busy;
  op.kernels = 1;
  return op;
}

// Two ranks, one chunk, four iterations of two microbatches; iteration 0 is a slow warm-up.
Attribution SplitJob() {
  Attribution a;
  a.ranks = 2;
  a.chunks = 1;
  a.num_stages = 2;
  a.split = true;
  TimeNs t = 0;
  for (int iteration = 0; iteration < 4; ++iteration) {
    const TimeNs slow = iteration == 0 ? 10 : 1;
    for (int rank = 0; rank < 2; ++rank) {
      for (int mb = 0; mb < 2; ++mb) {
        a.ops.push_back(
            Op(rank, rank, OpKind::kF, mb, iteration + 5, slow * (100 + 10 * rank + mb), t));
        a.ops.push_back(Op(rank, rank, OpKind::kB, mb, iteration + 5, slow * (120 + mb), t + 200));
        a.ops.push_back(Op(rank, rank, OpKind::kW, mb, iteration + 5, slow * (60 + mb), t + 400));
      }
    }
    MeasuredOp send = Op(0, 0, OpKind::kComm, 0, iteration + 5, 7 + iteration, t + 150);
    send.direction = CommDirection::kSendForward;
    send.peer_stage = 1;
    a.ops.push_back(send);
    MeasuredOp recv = Op(1, 1, OpKind::kComm, 0, iteration + 5, 9, t + 150);
    recv.direction = CommDirection::kRecvForward;
    recv.peer_stage = 0;
    a.ops.push_back(recv);
    t += 1000;
  }
  return a;
}

TEST(CostReport, MediansSpreadAndSkipIters) {
  const Attribution a = SplitJob();
  auto all = BuildCostReport(a, {});
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(all->iterations_seen, 4);
  EXPECT_EQ(all->iterations_used, 4);
  // Rank 0 F samples: 1000, 1010 (warm-up) and 3 x {100, 101}.
  EXPECT_EQ(all->stages[0].f.samples, 8);
  EXPECT_EQ(all->stages[0].f.median, 101);
  // Sorted {100,100,100,101,101,101,1000,1010}: p90 at position 0.9 * 7 = 6.3 -> 1003.
  EXPECT_EQ(all->stages[0].f.p90, 1003);
  CostOptions skip;
  skip.skip_iters = 1;
  auto steady = BuildCostReport(a, skip);
  ASSERT_TRUE(steady.ok());
  EXPECT_EQ(steady->iterations_used, 3);
  const StageStats& s0 = steady->stages[0];
  EXPECT_EQ(s0.f.samples, 6);
  EXPECT_EQ(s0.f.median, 101);  // {100,100,100,101,101,101}: 100.5 -> 101
  EXPECT_EQ(s0.f.p10, 100);
  EXPECT_EQ(s0.f.p90, 101);
  EXPECT_EQ(steady->stages[1].f.median, 111);
  EXPECT_EQ(s0.b.median, 121);
  EXPECT_EQ(s0.w.median, 61);
  EXPECT_EQ(s0.bw.samples, 0);
  // Hop 0 -> 1: sends 8, 9, 10 and receives 9, 9, 9.
  ASSERT_EQ(steady->hops.size(), 1u);
  EXPECT_EQ(steady->hops[0].from_stage, 0);
  EXPECT_EQ(steady->hops[0].to_stage, 1);
  EXPECT_EQ(steady->hops[0].time.samples, 6);
  EXPECT_EQ(steady->hops[0].time.median, 9);
  const CostProfile costs = steady->ToCostProfile();
  ASSERT_EQ(costs.num_stages(), 2);
  EXPECT_EQ(costs.stages[0].f, 101);
  EXPECT_EQ(costs.stages[0].b, 121);
  EXPECT_EQ(costs.stages[0].w, 61);
  EXPECT_EQ(costs.comm, 9);
  EXPECT_TRUE(ValidateCostProfile(costs).ok());
  const CostProfileDetails details = steady->ToDetails();
  EXPECT_EQ(details.memory_source, MemorySource::kNone);
  EXPECT_EQ(details.spread.size(), 6u);  // F, B, W for two stages
  ASSERT_EQ(details.hops.size(), 1u);
  EXPECT_EQ(details.hops[0].time.median, 9);

  CostOptions too_many;
  too_many.skip_iters = 4;
  auto none = BuildCostReport(a, too_many);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("--skip-iters 4 drops all 4 recorded iterations"),
            std::string::npos);
}

TEST(CostReport, NoSplitExportsBwAsBAndZeroW) {
  Attribution a;
  a.ranks = 1;
  a.num_stages = 1;
  for (int iteration = 0; iteration < 3; ++iteration) {
    a.ops.push_back(Op(0, 0, OpKind::kF, 0, iteration, 100 + iteration));
    a.ops.push_back(Op(0, 0, OpKind::kBW, 0, iteration, 300 + iteration));
  }
  auto report = BuildCostReport(a, {});
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->split);
  const CostProfile costs = report->ToCostProfile();
  EXPECT_EQ(costs.stages[0].f, 101);
  EXPECT_EQ(costs.stages[0].b, 301);
  EXPECT_EQ(costs.stages[0].w, 0);
  bool noted = false;
  for (const std::string& note : report->notes) {
    noted = noted || note.find("no B/W split") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

// The torch hook's profile window: odd microbatches run their backward fused, even ones split.
TEST(CostReport, SplitAndFusedBackwardsGiveBWAndWAndBW) {
  Attribution a;
  a.ranks = 1;
  a.num_stages = 1;
  a.split = true;
  for (int iteration = 0; iteration < 3; ++iteration) {
    for (int mb = 0; mb < 4; ++mb) {
      a.ops.push_back(Op(0, 0, OpKind::kF, mb, iteration, 100));
      if (mb % 2 == 1) {
        a.ops.push_back(Op(0, 0, OpKind::kBW, mb, iteration, 170 + iteration));
      } else {
        a.ops.push_back(Op(0, 0, OpKind::kB, mb, iteration, 110));
        a.ops.push_back(Op(0, 0, OpKind::kW, mb, iteration, 80));
      }
    }
  }
  auto report = BuildCostReport(a, {});
  ASSERT_TRUE(report.ok()) << report.status().message();
  const CostProfile costs = report->ToCostProfile();
  EXPECT_EQ(costs.stages[0].b, 110);
  EXPECT_EQ(costs.stages[0].w, 80);
  EXPECT_EQ(costs.stages[0].bw, 171);  // median of 170, 170, 171, 171, 172, 172
  EXPECT_EQ(costs.stages[0].Duration(OpKind::kBW), 171);
  EXPECT_TRUE(ValidateCostProfile(costs).ok());
  // A split-only profile keeps BW unmeasured.
  EXPECT_EQ(BuildCostReport(SplitJob(), {})->ToCostProfile().stages[0].bw, 0);
}

TEST(CostReport, ChunksAreSummedPerRank) {
  Attribution a;
  a.ranks = 2;
  a.chunks = 2;
  a.num_stages = 4;
  for (int mb = 0; mb < 3; ++mb) {
    // Rank 0 holds stages 0 and 2 (loop); rank 1 holds 1 and 3.
    a.ops.push_back(Op(0, 0, OpKind::kF, mb, 0, 10));
    a.ops.push_back(Op(0, 2, OpKind::kF, mb, 0, 12 + mb));
    a.ops.push_back(Op(1, 1, OpKind::kF, mb, 0, 20));
    a.ops.push_back(Op(1, 3, OpKind::kF, mb, 0, 30));
  }
  auto report = BuildCostReport(a, {});
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->stages.size(), 4u);
  EXPECT_EQ(report->stages[2].rank, 0);
  EXPECT_EQ(report->stages[3].rank, 1);
  ASSERT_EQ(report->per_rank.size(), 2u);
  EXPECT_EQ(report->per_rank[0].f.median, 23);  // 10 + 13
  EXPECT_EQ(report->per_rank[0].f.samples, 3);
  EXPECT_EQ(report->per_rank[1].f.median, 50);
  const CostProfile costs = report->ToCostProfile();
  EXPECT_EQ(costs.num_stages(), 2);
  // The profile records the layout the ranks ran: what zb tune keeps to by default.
  ASSERT_TRUE(costs.layout.has_value());
  EXPECT_EQ(*costs.layout, (JobLayout{Placement::kLoop, 2}));
  EXPECT_EQ(costs.schedule_class, "");

  a.schedule_class = "ScheduleInterleaved1F1B";
  EXPECT_EQ(BuildCostReport(a, {})->ToCostProfile().schedule_class, "ScheduleInterleaved1F1B");
  a.layout_known = false;  // stages on ranks in neither placement: no layout, no class
  const CostProfile unknown = BuildCostReport(a, {})->ToCostProfile();
  EXPECT_FALSE(unknown.layout.has_value());
  EXPECT_EQ(unknown.schedule_class, "");
}

TEST(CostReport, MemoryMeasuredOrEstimated) {
  Attribution a = SplitJob();
  // Measured: each F allocates 1000, each B frees 600 -> M_B 1000, M_W 400.
  Attribution measured = a;
  measured.has_memory = true;
  for (MeasuredOp& op : measured.ops) {
    if (op.kind == OpKind::kF) {
      op.has_memory = true;
      op.memory_net = 1000;
    } else if (op.kind == OpKind::kB) {
      op.has_memory = true;
      op.memory_net = -600;
    }
  }
  auto m = BuildCostReport(measured, {});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->memory, MemorySource::kMeasured);
  EXPECT_EQ(m->stages[0].m_b, 1000);
  EXPECT_EQ(m->stages[0].m_w, 400);
  EXPECT_FALSE(m->timeline.memory.empty());

  // Estimated: h 1024, a 16, s 512, b 1, 8 layers over 2 stages.
  CostOptions options;
  options.dims = ModelDims{1024, 16, 512, 1, 8};
  auto e = BuildCostReport(a, options);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->memory, MemorySource::kEstimated);
  const double sbh = 512.0 * 1 * 1024;
  EXPECT_DOUBLE_EQ(e->stages[1].m_b, 4 * (34 * sbh + 5.0 * 16 * 512 * 512));
  EXPECT_DOUBLE_EQ(e->stages[1].m_w, 4 * 32 * sbh);
  EXPECT_EQ(e->ToDetails().memory_source, MemorySource::kEstimated);

  auto none = BuildCostReport(a, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->memory, MemorySource::kNone);
  EXPECT_EQ(none->stages[0].m_b, 0);
}

TEST(CostReport, TimelineStartsAtZeroAndKeepsEveryOp) {
  Attribution a = SplitJob();
  for (MeasuredOp& op : a.ops) {
    op.gpu_start += 5000;
    op.gpu_end += 5000;
  }
  auto report = BuildCostReport(a, {});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->timeline.kind, TimelineKind::kMeasured);
  EXPECT_EQ(report->timeline.ops.size(), a.ops.size());
  TimeNs first = report->timeline.ops[0].start;
  for (const TimelineOp& op : report->timeline.ops)
    first = std::min(first, op.start);
  EXPECT_EQ(first, 0);
}

TEST(CostReport, NothingToAggregate) {
  Attribution empty;
  auto report = BuildCostReport(empty, {});
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("no pipeline ops recognized"), std::string::npos);
}

}  // namespace
}  // namespace zb::profiler
