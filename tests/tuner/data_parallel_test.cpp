// SPDX-License-Identifier: Apache-2.0
// A pipeline inside data parallelism in the simulator (docs/data-parallel.md §5), on hand-checked
// cases: torch's rules for where FSDP unshards and where a stage's gradients are reduced, each
// rank's collectives on a resource of their own, the two ways of waiting for a reduction, and the
// cap of an absolute memory limit less the gathered parameters.
#include "zbkit/tuner/data_parallel.h"

#include <gtest/gtest.h>

#include <random>

#include "golden.h"
#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/lower_bound.h"
#include "zbkit/tuner/memory_limit.h"
#include "zbkit/tuner/reduce_aware.h"
#include "zbkit/tuner/simulator.h"
#include "zbkit/tuner/tune.h"

namespace zb::tuner {
namespace {

using zb::testing::UniformCosts;

// One rank holding two stages (F=2, B=3, W=1, m=1): F(s0) F(s1) B(s1) W(s1) B(s0) W(s0).
Schedule OneRankTwoStages() {
  Schedule schedule;
  schedule.ranks = 1;
  schedule.chunks = 2;
  schedule.microbatches = 1;
  schedule.costs = UniformCosts(2, 2, 3, 1, 0, 4, 1);
  schedule.programs.push_back({{0, 1},
                               {{OpKind::kF, 0, 0},
                                {OpKind::kF, 1, 0},
                                {OpKind::kB, 1, 0},
                                {OpKind::kW, 1, 0},
                                {OpKind::kB, 0, 0},
                                {OpKind::kW, 0, 0}}});
  return schedule;
}

std::vector<TimeNs> Starts(const Schedule& schedule, int rank) {
  std::vector<TimeNs> starts;
  for (const Op& op : schedule.programs[rank].ops)
    starts.push_back(op.start);
  return starts;
}

TEST(DataParallelRulesTest, WindowsAndReductionsFollowTorchsLowering) {
  const Schedule schedule = OneRankTwoStages();
  const std::vector<UnshardWindow> windows = UnshardWindows(schedule.programs[0]);
  ASSERT_EQ(windows.size(), 6u);
  EXPECT_EQ(windows[0], (UnshardWindow{0, 1, -1}));   // both stages come: both gathered first
  EXPECT_EQ(windows[2], (UnshardWindow{1, 0, -1}));   // in order of first use
  EXPECT_EQ(windows[4], (UnshardWindow{0, -1, -1}));  // stage 1 done: resharded
  EXPECT_EQ(ReductionsAfter(schedule.programs[0], 1), (std::vector<int32_t>{-1, -1, -1, 1, -1, 0}));
  // At most three stages at once, the nearest ones (torch's max_active_stages = 3).
  RankProgram four{
      {0, 1, 2, 3},
      {{OpKind::kF, 0, 0}, {OpKind::kF, 1, 0}, {OpKind::kF, 2, 0}, {OpKind::kF, 3, 0}}};
  EXPECT_EQ(UnshardWindows(four)[0], (UnshardWindow{0, 1, 2}));
  EXPECT_EQ(UnshardWindows(four)[1], (UnshardWindow{1, 2, 3}));
  // The reduction follows the m-th weight pass, W or a fused BW.
  RankProgram fused{{0},
                    {{OpKind::kF, 0, 0},
                     {OpKind::kF, 0, 1},
                     {OpKind::kBW, 0, 0},
                     {OpKind::kBW, 0, 1}}};  // fmt: skip
  EXPECT_EQ(ReductionsAfter(fused, 2), (std::vector<int32_t>{-1, -1, -1, 0}));
}

TEST(DataParallelSimulationTest, EachRanksReductionFollowsItsLastWeightPassAndEndsTheStep) {
  // p = 2, m = 1, F=2 B=3 W=1, comm 5 (simulator_test's case): rank 1's W ends at 13, rank 0's at
  // 21; reductions of 6 and 4 end the ranks at 19 and 25.
  Schedule schedule;
  schedule.ranks = 2;
  schedule.microbatches = 1;
  schedule.costs = UniformCosts(2, 2, 3, 1, 5, 4, 1);
  schedule.costs.stages[0].reduce = 4;
  schedule.costs.stages[1].reduce = 6;
  for (int r = 0; r < 2; ++r) {
    schedule.programs.push_back(
        {{r}, {{OpKind::kF, 0, 0}, {OpKind::kB, 0, 0}, {OpKind::kW, 0, 0}}});
  }
  ASSERT_TRUE(ValidateSchedule(schedule).ok());
  Simulator simulator;
  ASSERT_TRUE(simulator.Run(schedule).ok());
  EXPECT_EQ(Starts(schedule, 0), (std::vector<TimeNs>{0, 17, 20}));  // the ops as without DP
  EXPECT_EQ(simulator.ranks()[1].end, 19);
  EXPECT_EQ(simulator.ranks()[0].end, 25);
  EXPECT_EQ(simulator.ranks()[0].collectives, 4);
  EXPECT_EQ(schedule.predicted->makespan, 25);
  EXPECT_EQ(schedule.predicted->span, 25);
  EXPECT_EQ(schedule.predicted->peak_memory, (std::vector<double>{4, 4}));  // activations only
}

TEST(DataParallelSimulationTest, InPlaceReductionHoldsTheRanksNextOpAndStepEndDoesNot) {
  Schedule schedule = OneRankTwoStages();
  schedule.costs.stages[0].reduce = 4;
  schedule.costs.stages[1].reduce = 6;
  ASSERT_TRUE(ValidateSchedule(schedule).ok());
  // In place (torch 2.13): stage 1's reduction 8..14 holds B(s0) until 14; stage 0's 18..22.
  ASSERT_TRUE(Simulate(schedule).ok());
  EXPECT_EQ(Starts(schedule, 0), (std::vector<TimeNs>{0, 2, 4, 7, 14, 17}));
  EXPECT_EQ(schedule.predicted->makespan, 22);
  // At the step's end (pytorch PR #196725): B(s0) runs at 8 under stage 1's reduction; stage 0's
  // waits for the resource until 14, ends at 18.
  schedule.costs.reduce_wait = ReduceWait::kStepEnd;
  ASSERT_TRUE(Simulate(schedule).ok());
  EXPECT_EQ(Starts(schedule, 0), (std::vector<TimeNs>{0, 2, 4, 7, 8, 11}));
  EXPECT_EQ(schedule.predicted->makespan, 18);
}

TEST(DataParallelSimulationTest, AStagesOpsWaitForItsAllGatherOneAtATime) {
  Schedule schedule = OneRankTwoStages();
  schedule.costs.stages[0].unshard = 5;
  schedule.costs.stages[1].unshard = 5;
  Simulator simulator;
  ASSERT_TRUE(simulator.Run(schedule).ok());
  // Both gathered from 0 in order of use: stage 0 until 5, stage 1 until 10.
  EXPECT_EQ(Starts(schedule, 0), (std::vector<TimeNs>{5, 10, 12, 15, 16, 19}));
  EXPECT_EQ(schedule.predicted->makespan, 20);
  EXPECT_EQ(simulator.ranks()[0].collectives, 10);
}

TEST(DataParallelSimulationTest, NoDataParallelWorkLeavesEveryPredictionAsItWas) {
  CostProfile costs = UniformCosts(4, 3, 4, 2, 1, 10, 3);
  auto plain = ZbH1(costs, 8);
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(Simulate(*plain).ok());
  costs.reduce_wait = ReduceWait::kStepEnd;  // says nothing without reductions
  auto waiting = ZbH1(costs, 8);
  ASSERT_TRUE(waiting.ok());
  ASSERT_TRUE(Simulate(*waiting).ok());
  EXPECT_EQ(*waiting->predicted, *plain->predicted);
  // And with reductions the rest of each rank's order keeps its times up to its last W.
  costs.stages[3].reduce = 7;
  auto reducing = ZbH1(costs, 8);
  ASSERT_TRUE(reducing.ok());
  ASSERT_TRUE(Simulate(*reducing).ok());
  EXPECT_EQ(reducing->programs[3].ops.back().end, plain->programs[3].ops.back().end);
  EXPECT_EQ(reducing->predicted->makespan,
            std::max(plain->predicted->makespan, plain->programs[3].ops.back().end + 7));
}

TEST(DataParallelMemoryTest, AnAbsoluteCapLeavesOutTheGatheredParameters) {
  CostProfile costs = UniformCosts(2, 1, 1, 1, 0, 10, 3);
  costs.stages[0].unsharded = 30;
  EXPECT_EQ(MemoryLimit(MemoryLimit::Kind::kAbsolute, 100).RankCaps(costs),
            (std::vector<double>{70, 100}));
  EXPECT_EQ(MemoryLimit(MemoryLimit::Kind::kAbsolute, 20).RankCaps(costs),
            (std::vector<double>{0, 20}));
  // A ratio is of activation memory, which the gathered parameters do not change.
  EXPECT_EQ(MemoryLimit(MemoryLimit::Kind::kRelative, 2).RankCaps(costs),
            (std::vector<double>{40, 40}));
}

// Four uniform stages (F = B = W = 1 ms, comm 0.05 ms, M_W = M_B / 2), each reducing `reduce` ms.
CostProfile ReducingStages(double reduce_ms, ReduceWait wait) {
  CostProfile costs = UniformCosts(4, kNsPerMs, kNsPerMs, kNsPerMs, kNsPerMs / 20, 1, 0.5);
  for (StageCost& stage : costs.stages)
    stage.reduce = MsToNs(reduce_ms);
  costs.reduce_wait = wait;
  return costs;
}

// What tune chose and the DP-oblivious row beside it, with a deterministic search budget.
std::pair<Prediction, Prediction> AwareAndOblivious(const CostProfile& costs, JobLayout layout) {
  TuneOptions options;
  options.family = "search";
  options.memory_limit = MemoryLimit(MemoryLimit::Kind::kRelative, 2);
  options.layout = layout;
  options.search.time_limit_s = 0;
  options.search.max_evaluations = 20000;
  auto tuned = Tune(costs, 8, options);
  EXPECT_TRUE(tuned.ok()) << tuned.status().message();
  EXPECT_GE(tuned->best, 0);
  const Candidate& oblivious = tuned->candidates.back();
  EXPECT_EQ(oblivious.family.rfind("dp-oblivious:", 0), 0u) << oblivious.family;
  EXPECT_TRUE(oblivious.reference);
  EXPECT_TRUE(oblivious.status.ok()) << oblivious.status.message();
  return {*tuned->candidates[tuned->best].schedule.predicted, *oblivious.schedule.predicted};
}

TEST(DataParallelTuneTest, KnowingTheReductionsGainsWhereTheyCanHideAndNeverLoses) {
  // Reductions of 3 B waited for at the step's end, V placement: the chosen order hides what the
  // DP-oblivious one (every W deferred into the tail) leaves to the end: >= 3 % faster.
  const auto [aware, oblivious] =
      AwareAndOblivious(ReducingStages(3, ReduceWait::kStepEnd), JobLayout{Placement::kV, 2});
  EXPECT_LE(static_cast<double>(aware.makespan), 0.97 * static_cast<double>(oblivious.makespan))
      << NsToMs(aware.makespan) << " ms against " << NsToMs(oblivious.makespan);
  // Never slower, whatever the layout and wait: the oblivious order seeds the search.
  for (const ReduceWait wait : {ReduceWait::kInPlace, ReduceWait::kStepEnd}) {
    for (const JobLayout layout : {JobLayout{Placement::kLoop, 1}, JobLayout{Placement::kLoop, 2},
                                   JobLayout{Placement::kV, 2}}) {
      const auto [chosen, ignorant] = AwareAndOblivious(ReducingStages(1, wait), layout);
      EXPECT_LE(chosen.makespan, ignorant.makespan) << JobLayoutName(layout);
    }
  }
  // Without reductions there is nothing to compare: no such row.
  TuneOptions options;
  options.family = "zb-h1";
  auto plain = Tune(ReducingStages(0, ReduceWait::kStepEnd), 8, options);
  ASSERT_TRUE(plain.ok());
  for (const Candidate& candidate : plain->candidates)
    EXPECT_EQ(candidate.family.find("dp-oblivious"), std::string::npos);
}

TEST(DataParallelTuneTest, WeightPassesComeForwardOnlyWhereThatPays) {
  // ZB-H1 whose last stage reduces 3 B in place: its deferred W end that rank's step late;
  // bringing some forward ends the step sooner, and no rank's peak memory grows.
  CostProfile costs = ReducingStages(0, ReduceWait::kInPlace);
  costs.stages[3].reduce = 3 * kNsPerMs;
  auto schedule = ZbH1(costs, 8);
  ASSERT_TRUE(schedule.ok()) << schedule.status().message();
  Simulator simulator;
  ASSERT_TRUE(simulator.Run(*schedule).ok());
  const Prediction before = *schedule->predicted;
  auto moved = BringWeightPassesForward(*schedule, simulator);
  ASSERT_TRUE(moved.ok()) << moved.status().message();
  EXPECT_GT(*moved, 0);
  EXPECT_LT(schedule->predicted->makespan, before.makespan);
  for (size_t r = 0; r < before.peak_memory.size(); ++r)
    EXPECT_LE(schedule->predicted->peak_memory[r], before.peak_memory[r]) << "rank " << r;
  EXPECT_TRUE(ValidateSchedule(*schedule).ok());
  // Without reductions nothing moves.
  auto plain = ZbH1(ReducingStages(0, ReduceWait::kInPlace), 8);
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(simulator.Run(*plain).ok());
  EXPECT_EQ(*BringWeightPassesForward(*plain, simulator), 0);
}

// Random instances with data-parallel work, every family: collectives only ever delay (no op starts
// earlier than without them), every rank ends after its last op plus its last reduction, and no
// schedule beats the lower bounds that count the collectives.
TEST(DataParallelPropertyTest, CollectivesOnlyDelayAndTheBoundsHold) {
  std::mt19937 rng(20261207);
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int checked = 0;
  Simulator simulator;
  for (int instance = 0; instance < 400; ++instance) {
    const int p = uniform(1, 6);
    const int m = uniform(1, 3 * p);
    CostProfile costs;
    costs.comm = uniform(0, 5);
    costs.reduce_wait = uniform(0, 1) == 0 ? ReduceWait::kInPlace : ReduceWait::kStepEnd;
    for (int s = 0; s < p; ++s) {
      StageCost stage{uniform(4, 40), uniform(4, 50), uniform(0, 30), 10, 4};
      stage.reduce = uniform(0, 2) == 0 ? 0 : uniform(1, 120);
      stage.unshard = uniform(0, 2) == 0 ? 0 : uniform(1, 60);
      costs.stages.push_back(stage);
    }
    const FamilyInfo& family = Families()[uniform(0, static_cast<int>(Families().size()) - 1)];
    SCOPED_TRACE("instance " + std::to_string(instance) + ": " + std::string(family.name) +
                 " p=" + std::to_string(p) + " m=" + std::to_string(m));
    auto with = GenerateFamily(family.name, {costs, m, 2, {}});
    if (!with.ok()) continue;  // m this family does not take
    auto without = GenerateFamily(family.name, {costs.WithoutDataParallelWork(), m, 2, {}});
    ASSERT_TRUE(without.ok());
    ASSERT_TRUE(simulator.Run(*without).ok());
    ASSERT_TRUE(simulator.Run(*with).ok());
    for (int r = 0; r < p; ++r) {
      const std::vector<Op>& ops = with->programs[r].ops;
      for (size_t i = 0; i < ops.size(); ++i)
        ASSERT_GE(ops[i].start, without->programs[r].ops[i].start) << "rank " << r << " op " << i;
      const std::vector<int32_t> reductions = ReductionsAfter(with->programs[r], m);
      for (size_t i = 0; i < ops.size(); ++i) {
        if (reductions[i] < 0) continue;
        ASSERT_GE(simulator.ranks()[r].end, ops[i].end + with->costs.stages[reductions[i]].reduce);
      }
    }
    const LowerBounds bounds = ComputeLowerBounds(with->costs, p, m, family.placement, {});
    ASSERT_GE(with->predicted->makespan, bounds.makespan);
    ASSERT_GE(with->predicted->span, bounds.span);
    ++checked;
  }
  EXPECT_GE(checked, 300);
}

}  // namespace
}  // namespace zb::tuner
