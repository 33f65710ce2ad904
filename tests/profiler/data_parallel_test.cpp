// SPDX-License-Identifier: Apache-2.0
// The data-parallel collectives of a profile (docs/data-parallel.md §5): FSDP2's reduce-scatter
// and all-gather ranges become each rank's per-step reduce and unshard, timed by their CPU span in
// a CPU-only process and by the (NCCL) kernels launched inside them otherwise, in the iteration of
// the op before them, warm-up iterations left out.
#include <gtest/gtest.h>

#include <algorithm>

#include "zbkit/profiler/attribution.h"
#include "zbkit/profiler/costs.h"
#include "zbkit/profiler/import.h"

namespace zb::profiler {
namespace {

RawTrace DpProcess(int rank) {
  RawTrace trace;
  trace.process.rank = rank;
  trace.process.pid = 2000 + rank;
  return trace;
}

// One rank's step `iteration` from t: an all-gather inside its first F, two microbatches F and
// BW, then the reduction. Durations grow with the rank and the iteration.
void AddDpStep(RawTrace& trace, int rank, int iteration, TimeNs t) {
  const TimeNs scale = 1 + rank + iteration;
  const std::string stage = std::to_string(rank);
  trace.ranges.push_back({"zb:F:s" + stage + ":mb0", "", 1, t, t + 500, 0});
  trace.ranges.push_back({"FSDP::all_gather", "", 1, t + 10, t + 10 + 40 * scale, 1});
  trace.ranges.push_back({"zb:F:s" + stage + ":mb1", "", 1, t + 600, t + 1000, 0});
  trace.ranges.push_back({"zb:BW:s" + stage + ":mb0", "", 1, t + 1100, t + 1500, 0});
  trace.ranges.push_back({"zb:BW:s" + stage + ":mb1", "", 1, t + 1600, t + 2000, 0});
  trace.ranges.push_back(
      {"FSDP::post_backward_reduce", "", 1, t + 2100, t + 2100 + 100 * scale, 0});
}

TEST(DataParallelCollectives, FsdpRangesAreEachRanksReduceAndUnshardPerStep) {
  EXPECT_EQ(DataParallelCollectiveOf("FSDP::post_backward_reduce"), CollectiveKind::kReduce);
  EXPECT_EQ(DataParallelCollectiveOf("FSDP::all_gather"), CollectiveKind::kUnshard);
  EXPECT_FALSE(DataParallelCollectiveOf("FSDP::all_gather_copy_out").has_value());
  EXPECT_FALSE(DataParallelCollectiveOf("FSDP::pre_forward").has_value());

  std::vector<RawTrace> traces = {DpProcess(0), DpProcess(1)};
  for (int rank = 0; rank < 2; ++rank) {
    for (int iteration = 0; iteration < 3; ++iteration)
      AddDpStep(traces[rank], rank, iteration, 10'000 * iteration);
  }
  auto a = Attribute(traces, RuleSet());
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ(a->collectives.size(), 12u);  // 2 ranks x 3 steps x 2
  for (const MeasuredCollective& collective : a->collectives) {
    const TimeNs step = collective.start / 10'000;
    EXPECT_EQ(collective.iteration - a->collectives.front().iteration, step);
    EXPECT_EQ(collective.busy, (collective.kind == CollectiveKind::kReduce ? 100 : 40) *
                                   (1 + collective.rank + step));
  }
  CostOptions skip;
  skip.skip_iters = 1;  // steps 1 and 2: rank 0 reduces 200 and 300, rank 1 300 and 400
  auto report = BuildCostReport(*a, skip);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->per_rank[0].reduce.samples, 2);
  EXPECT_EQ(report->per_rank[0].reduce.median, 250);
  EXPECT_EQ(report->per_rank[1].unshard.median, 140);  // 120 and 160
  const CostProfile costs = report->ToCostProfile();
  EXPECT_EQ(costs.stages[0].reduce, 250);
  EXPECT_EQ(costs.stages[0].unshard, 100);
  EXPECT_EQ(costs.stages[1].reduce, 350);
  EXPECT_TRUE(costs.HasDataParallelWork());
}

// FSDP2 names the ranges of a module that is not the root after it (torchtitan shards each block:
// "FSDP::post_backward_reduce (layers.0)"); a stage's blocks' reductions of one step add up.
TEST(DataParallelCollectives, PerBlockRangesAreTheStagesCollectivesSummed) {
  EXPECT_EQ(DataParallelCollectiveOf("FSDP::all_gather (layers.0)"), CollectiveKind::kUnshard);
  EXPECT_EQ(DataParallelCollectiveOf("FSDP::post_backward_reduce (layers.1.attention)"),
            CollectiveKind::kReduce);
  EXPECT_FALSE(DataParallelCollectiveOf("FSDP::all_gather_copy_out (layers.0)").has_value());
  EXPECT_FALSE(DataParallelCollectiveOf("FSDP::all_gather (layers.0").has_value());
  EXPECT_FALSE(DataParallelCollectiveOf("FSDP::all_gatherx (layers.0)").has_value());

  std::vector<RawTrace> traces = {DpProcess(0), DpProcess(1)};
  for (int rank = 0; rank < 2; ++rank) {
    for (int iteration = 0; iteration < 2; ++iteration) {
      const TimeNs t = 10'000 * iteration;
      AddDpStep(traces[rank], rank, iteration, t);
      traces[rank].ranges.push_back(
          {"FSDP::post_backward_reduce (layers." + std::to_string(rank) + ")", "", 1, t + 2600,
           t + 2630, 0});
    }
  }
  auto a = Attribute(traces, RuleSet());
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ(a->collectives.size(), 12u);  // 2 ranks x 2 steps x 3
  auto report = BuildCostReport(*a, CostOptions());
  ASSERT_TRUE(report.ok()) << report.status().message();
  // Rank 0 reduces 100 + 30 and 200 + 30, rank 1 200 + 30 and 300 + 30: the medians.
  EXPECT_EQ(report->per_rank[0].reduce.median, 180);
  EXPECT_EQ(report->per_rank[1].reduce.median, 280);
}

// DDP over gloo (CPUs): the reducer enqueues its all-reduce (`c10d::allreduce_`) inside the last
// backward, gloo runs it on its own thread (`gloo:all_reduce`): that span is the reduction. An
// all-reduce enqueued outside every backward (a logged loss) is not one.
TEST(DataParallelCollectives, DdpOnGlooIsTheWorkItsBackwardEnqueued) {
  RawTrace trace = DpProcess(0);
  for (int iteration = 0; iteration < 2; ++iteration) {
    const TimeNs t = 10'000 * iteration;
    trace.ranges.push_back({"zb:F:s0:mb0", "", 1, t, t + 500, 0});
    trace.ranges.push_back({"zb:F:s0:mb1", "", 1, t + 600, t + 1000, 0});
    trace.ranges.push_back({"zb:BW:s0:mb0", "", 1, t + 1100, t + 1500, 0});
    trace.ranges.push_back({"zb:BW:s0:mb1", "", 1, t + 1600, t + 2000, 0});
    trace.ranges.push_back({"c10d::allreduce_", "cpu_op", 1, t + 1900, t + 1950, 0});
    trace.ranges.push_back(
        {"gloo:all_reduce", "user_annotation", 7, t + 1960, t + 2260 + 100 * iteration, 0});
    // The loss, logged after the step: an all-reduce, not of gradients.
    trace.ranges.push_back({"c10d::allreduce_", "cpu_op", 1, t + 2500, t + 2510, 0});
    trace.ranges.push_back({"gloo:all_reduce", "user_annotation", 8, t + 2520, t + 2530, 0});
  }
  std::sort(trace.ranges.begin(), trace.ranges.end(),
            [](const TraceRange& a, const TraceRange& b) { return a.start < b.start; });
  auto a = Attribute({trace}, RuleSet());
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ(a->collectives.size(), 2u);
  EXPECT_EQ(a->collectives[0].busy, 300);
  EXPECT_EQ(a->collectives[1].busy, 400);
  EXPECT_EQ(a->collectives[1].kind, CollectiveKind::kReduce);
  auto report = BuildCostReport(*a, CostOptions());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->per_rank[0].reduce.median, 350);
}

TEST(DataParallelCollectives, OnADeviceTheKernelsInsideAreTheTime) {
  RawTrace trace = DpProcess(0);
  AddDpStep(trace, 0, 0, 0);
  // The reduction's NCCL kernel, launched inside its range, runs 2100..2700 on the device.
  trace.launches.push_back({1, 1, 2150});
  trace.activities.push_back(
      {ActivityKind::kKernel, "ncclDevKernel_ReduceScatter_Sum_f32", 0, 9, 2300, 2900, 1, 0});
  auto a = Attribute({trace}, RuleSet());
  ASSERT_TRUE(a.ok()) << a.status().message();
  for (const MeasuredCollective& collective : a->collectives) {
    // The all-gather launched nothing in a process that ran kernels: nothing measured.
    EXPECT_EQ(collective.busy, collective.kind == CollectiveKind::kReduce ? 600 : 0);
  }
  // A job without such ranges has none, and its profile no data-parallel work.
  RawTrace plain = DpProcess(0);
  plain.ranges.push_back({"zb:BW:s0:mb0", "", 1, 0, 100, 0});
  plain.ranges.insert(plain.ranges.begin(), {"zb:F:s0:mb0", "", 1, -200, -100, 0});
  auto none = Attribute({plain}, RuleSet());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->collectives.empty());
}

// The bytes FSDP gathers, as the shim writes them into a torch.profiler trace (kUnshardedKey, a
// decimal string): read per process, folded per pipeline rank, the profile's `unsharded`; anything
// that is not a byte count is not known.
TEST(DataParallelCollectives, TheGatheredBytesTheShimRecordsAreTheStagesUnsharded) {
  auto read = [](const std::string& value) {
    const std::string text = R"({"zbkit_unsharded": ")" + value + R"(", "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "zb:F:s0:mb0", "pid": 1, "tid": 1, "ts": 10,
       "dur": 5}]})";
    auto traces = ParseChromeTrace(text, "t.json");
    EXPECT_TRUE(traces.ok()) << traces.status().message();
    return traces.ok() && traces->size() == 1 ? traces->front().unsharded_bytes : int64_t{-2};
  };
  EXPECT_EQ(read("55936"), 55936);
  EXPECT_EQ(read("12x"), -1);
  EXPECT_EQ(read("-5"), -1);
  EXPECT_EQ(read(""), -1);

  std::vector<RawTrace> traces = {DpProcess(0), DpProcess(1)};
  for (int rank = 0; rank < 2; ++rank)
    AddDpStep(traces[rank], rank, 0, 0);
  traces[0].unsharded_bytes = 4096;
  auto a = Attribute(traces, RuleSet());
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->unsharded_bytes, (std::map<int32_t, int64_t>{{0, 4096}}));
  auto report = BuildCostReport(*a, {});
  ASSERT_TRUE(report.ok()) << report.status().message();
  const CostProfile costs = report->ToCostProfile();
  EXPECT_EQ(costs.stages[0].unsharded, 4096);
  EXPECT_EQ(costs.stages[1].unsharded, 0);  // not known: none
}

// The gradient bytes each reduction takes in (kReducedKey) go the same way into `reduced`; a
// replica that says more stands for the rank (the largest).
TEST(DataParallelCollectives, TheReducedBytesTheShimRecordsAreTheStagesReduced) {
  auto traces = ParseChromeTrace(R"({"zbkit_reduced": "8192", "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "zb:F:s0:mb0", "pid": 1, "tid": 1, "ts": 10,
       "dur": 5}]})",
                                 "t.json");
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  EXPECT_EQ(traces->front().reduced_bytes, 8192);
  EXPECT_EQ(traces->front().unsharded_bytes, -1);

  std::vector<RawTrace> replicas = {DpProcess(0), DpProcess(1)};
  for (int rank = 0; rank < 2; ++rank)
    AddDpStep(replicas[rank], rank, 0, 0);
  replicas[1].reduced_bytes = 8192;
  auto a = Attribute(replicas, RuleSet());
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto report = BuildCostReport(*a, {});
  ASSERT_TRUE(report.ok()) << report.status().message();
  const CostProfile costs = report->ToCostProfile();
  EXPECT_EQ(costs.stages[0].reduced, 0);
  EXPECT_EQ(costs.stages[1].reduced, 8192);
  EXPECT_EQ(costs.stages[1].unsharded, 0);
}

// Bad input: --pp that does not divide the job's processes places no rank; one line, nothing built.
TEST(DataParallelCollectives, APipelineDegreeThatDoesNotDivideTheWorldIsRefused) {
  std::vector<RawTrace> traces;
  for (int rank = 0; rank < 4; ++rank) {
    traces.push_back(DpProcess(rank));
    traces.back().process.world_size = 4;
    AddDpStep(traces.back(), 0, 0, 0);
  }
  AttributionOptions options;
  options.pp = 3;
  auto refused = Attribute(traces, RuleSet(), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "--pp 3 does not divide the job's 4 processes (WORLD_SIZE): a pipeline inside data "
            "parallelism runs pipeline ranks x replicas of them");
  options.pp = 2;  // 2 x 2: ranks 0, 1 replicas of pipeline rank 0
  auto placed = Attribute(traces, RuleSet(), options);
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  EXPECT_EQ(placed->data_parallel, 2);
  // Replicas that did not run the same ops are not one job's: refused, naming the first such op.
  traces[1].ranges.push_back({"zb:F:s0:mb2", "", 1, 2500, 2600, 0});
  auto disagreeing = Attribute(traces, RuleSet(), options);
  ASSERT_FALSE(disagreeing.ok());
  EXPECT_EQ(disagreeing.status().message(),
            "the data-parallel replicas of pipeline rank 0 disagree: replica 1 ran F stage 0 mb 2, "
            "replica 0 did not (replicas run the same order; give one job's traces)");
}

}  // namespace
}  // namespace zb::profiler
