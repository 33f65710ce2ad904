// SPDX-License-Identifier: Apache-2.0
// Fusing split backwards where the measured fused backward is shorter (tuner/fuse.h).
#include "zbkit/tuner/fuse.h"

#include <gtest/gtest.h>

#include "golden.h"
#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/lower_bound.h"
#include "zbkit/tuner/tune.h"

namespace zb::tuner {
namespace {

using zb::testing::UniformCosts;

CostProfile WithFusedBackward(CostProfile costs, TimeNs bw) {
  for (StageCost& stage : costs.stages)
    stage.bw = bw;
  return costs;
}

Schedule Simulated(std::string_view family, const CostProfile& costs, int m) {
  auto schedule = GenerateFamily(family, {costs, m, 2, {}});
  EXPECT_TRUE(schedule.ok()) << schedule.status().message();
  EXPECT_TRUE(Simulate(*schedule).ok());
  return *schedule;
}

int CountKind(const Schedule& schedule, OpKind kind) {
  int count = 0;
  for (const RankProgram& program : schedule.programs)
    for (const Op& op : program.ops)
      count += op.kind == kind ? 1 : 0;
  return count;
}

TEST(FuseTest, NothingChangesWithoutAShorterFusedBackward) {
  const CostProfile split_only = UniformCosts(4, 10, 10, 10, 1, 2, 1);
  EXPECT_FALSE(FusingCanPay(split_only));
  EXPECT_FALSE(FusingCanPay(WithFusedBackward(split_only, 20)));  // measured, but not shorter
  EXPECT_TRUE(FusingCanPay(WithFusedBackward(split_only, 19)));
  Schedule schedule = Simulated("zb-h1", split_only, 8);
  const Schedule before = schedule;
  Simulator simulator;
  auto fused = FuseBackwards(schedule, simulator);
  ASSERT_TRUE(fused.ok());
  EXPECT_EQ(*fused, 0);
  EXPECT_EQ(schedule, before);
}

TEST(FuseTest, FusingNeverLengthensNorRaisesMemoryAndKeepsTheScheduleValid) {
  for (int p : {2, 4}) {
    for (TimeNs bw : {19, 15, 11}) {
      const CostProfile costs = WithFusedBackward(UniformCosts(p, 10, 10, 10, 1, 2, 1), bw);
      for (const char* family : {"zb-h1", "zb-h2", "zb-v"}) {
        Schedule schedule = Simulated(family, costs, 2 * p);
        const Prediction before = *schedule.predicted;
        Simulator simulator;
        auto fused = FuseBackwards(schedule, simulator);
        ASSERT_TRUE(fused.ok()) << fused.status().message();
        EXPECT_TRUE(ValidateSchedule(schedule).ok()) << family;
        ASSERT_TRUE(schedule.predicted.has_value());
        EXPECT_LE(schedule.predicted->makespan, before.makespan) << family << " bw " << bw;
        for (int rank = 0; rank < p; ++rank)
          EXPECT_LE(schedule.predicted->peak_memory[rank], before.peak_memory[rank]) << family;
        EXPECT_EQ(CountKind(schedule, OpKind::kBW), *fused);
        EXPECT_EQ(CountKind(schedule, OpKind::kB) + *fused, p * 2 * p * schedule.chunks);
        // The bound accounts for fused backwards, so it still holds.
        const LowerBounds bounds =
            ComputeLowerBounds(schedule.costs, p, 2 * p, schedule.placement, {});
        EXPECT_GE(schedule.predicted->makespan, bounds.makespan) << family << " bw " << bw;
      }
    }
  }
}

TEST(FuseTest, ACheapFusedBackwardTurnsZbH1IntoTheFasterFusedOrder) {
  // Fusing saves 9 of 20 per microbatch: far more than the bubble W could fill.
  const CostProfile costs = WithFusedBackward(UniformCosts(2, 10, 10, 10, 0, 2, 1), 11);
  Schedule schedule = Simulated("zb-h1", costs, 4);
  const TimeNs split_makespan = schedule.predicted->makespan;
  Simulator simulator;
  auto fused = FuseBackwards(schedule, simulator);
  ASSERT_TRUE(fused.ok());
  EXPECT_GT(*fused, 0);
  EXPECT_LT(schedule.predicted->makespan, split_makespan);
  // No W op was left behind that its own B could have taken along for free.
  Schedule one_f_one_b = Simulated("1f1b", costs, 4);
  EXPECT_LE(schedule.predicted->makespan, one_f_one_b.predicted->makespan);
}

// Stage 0's input is token ids, so its backward is all W (B ~ 0), as on the bundled GPT; the
// fused backward is shorter than B + W. Judged by makespan, fusing ends the last rank earlier and
// the first rank later, which costs the span; judged by span the fusions keep the span.
TEST(FuseTest, BySpanFusionsNeverLengthenTheSpan) {
  CostProfile costs = UniformCosts(2, 60, 77, 56, 0, 2, 1);
  costs.stages[0].b = 0;
  costs.stages[0].w = 114;
  for (StageCost& stage : costs.stages)
    stage.bw = stage.b + stage.w - 6;
  int span_kept = 0;  // families where judging by makespan would have lengthened the span
  for (const char* family : {"zb-h1", "zb-h2", "zb-auto"}) {
    const Schedule split = Simulated(family, costs, 4);
    Schedule by_span = split;
    Schedule by_makespan = split;
    Simulator simulator;
    auto fused_by_span = FuseBackwards(by_span, simulator, Objective::kSpan);
    auto fused_by_makespan = FuseBackwards(by_makespan, simulator, Objective::kMakespan);
    ASSERT_TRUE(fused_by_span.ok() && fused_by_makespan.ok()) << family;
    EXPECT_TRUE(ValidateSchedule(by_span).ok()) << family;
    EXPECT_LE(by_span.predicted->span, split.predicted->span) << family;
    EXPECT_LE(by_makespan.predicted->makespan, split.predicted->makespan) << family;
    EXPECT_LE(by_span.predicted->span, by_makespan.predicted->span) << family;
    EXPECT_EQ(CountKind(by_span, OpKind::kBW), *fused_by_span) << family;
    span_kept += by_span.predicted->span < by_makespan.predicted->span ? 1 : 0;
  }
  EXPECT_GT(span_kept, 0);
}

TEST(FuseTest, TuneFusesAndReportsHowMany) {
  const CostProfile costs = WithFusedBackward(UniformCosts(2, 10, 10, 10, 0, 2, 1), 11);
  TuneOptions options;
  options.family = "zb-h1";
  auto result = Tune(costs, 4, options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->candidates.size(), 1u);
  EXPECT_GT(result->candidates[0].fused_backwards, 0);
  EXPECT_EQ(CountKind(result->candidates[0].schedule, OpKind::kBW),
            result->candidates[0].fused_backwards);
}

}  // namespace
}  // namespace zb::tuner
