// SPDX-License-Identifier: Apache-2.0
// The simulator on hand-checked cases: timing, comm only on cross-rank edges, memory, both bubble
// conventions, and deadlocks that name the stuck ops.
#include "zbkit/tuner/simulator.h"

#include <gtest/gtest.h>

#include "golden.h"
#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/families.h"

namespace zb::tuner {
namespace {

using zb::testing::UniformCosts;

Schedule TwoRankSchedule() {
  // p = 2, m = 1: rank 0 runs F0 B0 W0, rank 1 runs F0 B0 W0, with F=2, B=3, W=1, comm 5.
  Schedule schedule;
  schedule.ranks = 2;
  schedule.microbatches = 1;
  schedule.costs = UniformCosts(2, 2, 3, 1, 5, 4, 1);
  for (int r = 0; r < 2; ++r) {
    schedule.programs.push_back(
        {{r}, {{OpKind::kF, 0, 0}, {OpKind::kB, 0, 0}, {OpKind::kW, 0, 0}}});
  }
  return schedule;
}

TEST(SimulatorTest, TimesOpsAsEarlyAsTheirRankAndInputsAllow) {
  Schedule schedule = TwoRankSchedule();
  ASSERT_TRUE(ValidateSchedule(schedule).ok());
  ASSERT_TRUE(Simulate(schedule).ok());
  const auto& r0 = schedule.programs[0].ops;
  const auto& r1 = schedule.programs[1].ops;
  EXPECT_EQ(r0[0].start, 0);  // F(0,0)
  EXPECT_EQ(r0[0].end, 2);
  EXPECT_EQ(r1[0].start, 7);  // F(1,0) after F(0,0) + comm 5
  EXPECT_EQ(r1[1].start, 9);  // B(1,0) after its own F, same rank: no comm
  EXPECT_EQ(r1[1].end, 12);
  EXPECT_EQ(r0[1].start, 17);  // B(0,0) after B(1,0) + comm
  EXPECT_EQ(r0[2].end, 21);    // W(0,0)
  const Prediction& predicted = *schedule.predicted;
  EXPECT_EQ(predicted.makespan, 21);
  EXPECT_EQ(predicted.span, 21);  // rank 0 from 0 to 21; rank 1 from 7 to 13
  EXPECT_DOUBLE_EQ(predicted.bubble_rate, (21.0 - 6) / 21);
  EXPECT_DOUBLE_EQ(predicted.paper_bubble_rate, (21.0 - 6) / 21);
  EXPECT_EQ(predicted.peak_memory, (std::vector<double>{4, 4}));
}

TEST(SimulatorTest, PaperSpanStartsAtEachRanksFirstForward) {
  const CostProfile costs = UniformCosts(4, 1, 1, 1, 0, 2, 1);
  auto schedule = OneFOneB(costs, 4);
  ASSERT_TRUE(schedule.ok());
  ASSERT_TRUE(Simulate(*schedule).ok());
  // 1F1B, p=4, m=4, F=B=W=1 (BW=2): makespan (m+p-1)(F+B+W) = 21 for both conventions here,
  // because the last rank's span and rank 0's makespan coincide.
  EXPECT_EQ(schedule->predicted->makespan, 21);
  EXPECT_EQ(schedule->predicted->span, 21);
}

TEST(SimulatorTest, MemoryPeakIsThePrefixSumMaximum) {
  const CostProfile costs = UniformCosts(4, 1, 1, 1, 0, 10, 3);
  auto schedule = ZbH1(costs, 8);
  ASSERT_TRUE(schedule.ok());
  ASSERT_TRUE(Simulate(*schedule).ok());
  // ZB paper Table 2: worker i (1-based) peaks at (p-i+1) M_B + (i-1) M_W.
  for (int i = 1; i <= 4; ++i) {
    EXPECT_DOUBLE_EQ(schedule->predicted->peak_memory[i - 1], (4 - i + 1) * 10.0 + (i - 1) * 3.0)
        << "worker " << i;
  }
  EXPECT_EQ(PeakMemory(*schedule), schedule->predicted->peak_memory);
}

TEST(SimulatorTest, ReportsADeadlockWithTheStuckOps) {
  Schedule schedule = TwoRankSchedule();
  // Rank 1 runs its B before its F: B(1,0) waits for F(1,0), which is behind it on the same rank.
  std::swap(schedule.programs[1].ops[0], schedule.programs[1].ops[1]);
  ASSERT_TRUE(ValidateSchedule(schedule).ok());  // structurally fine, only the order is wrong
  Status status = Simulate(schedule);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kInfeasible);
  EXPECT_NE(status.message().find("deadlock"), std::string::npos);
  EXPECT_NE(status.message().find("rank 1 op 0 B(stage 1, mb 0) waits for F(stage 1, mb 0)"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("rank 0 op 1 B(stage 0, mb 0) waits for B(stage 1, mb 0)"),
            std::string::npos)
      << status.message();
}

TEST(SimulatorTest, DetectsACrossRankCycle) {
  // Rank 0 puts BW(mb 1) before F(mb 1): it waits for rank 1's BW(mb 1), which needs rank 1's
  // F(mb 1), which needs rank 0's F(mb 1): a cycle across the two ranks.
  Schedule schedule;
  schedule.ranks = 2;
  schedule.microbatches = 2;
  schedule.costs = UniformCosts(2, 1, 1, 1, 0, 1, 0);
  schedule.programs = {
      {{0}, {{OpKind::kF, 0, 0}, {OpKind::kBW, 0, 1}, {OpKind::kF, 0, 1}, {OpKind::kBW, 0, 0}}},
      {{1}, {{OpKind::kF, 0, 0}, {OpKind::kF, 0, 1}, {OpKind::kBW, 0, 1}, {OpKind::kBW, 0, 0}}}};
  ASSERT_TRUE(ValidateSchedule(schedule).ok());
  Status status = Simulate(schedule);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("rank 0 op 1 BW(stage 0, mb 1) waits for BW(stage 1, mb 1)"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("rank 1 op 1 F(stage 1, mb 1) waits for F(stage 0, mb 1)"),
            std::string::npos)
      << status.message();
}

TEST(SimulatorTest, CommOnlyOnEdgesBetweenRanks) {
  // V placement, p=2: stages 1 and 2 are both on rank 1, so F(2) follows F(1) without comm.
  Schedule schedule;
  schedule.ranks = 2;
  schedule.microbatches = 1;
  schedule.chunks = 2;
  schedule.placement = Placement::kV;
  schedule.costs = UniformCosts(4, 1, 1, 1, 10, 1, 0);
  schedule.programs = {
      {{0, 3}, {{OpKind::kF, 0, 0}, {OpKind::kF, 1, 0}, {OpKind::kBW, 1, 0}, {OpKind::kBW, 0, 0}}},
      {{1, 2}, {{OpKind::kF, 0, 0}, {OpKind::kF, 1, 0}, {OpKind::kBW, 1, 0}, {OpKind::kBW, 0, 0}}}};
  ASSERT_TRUE(ValidateSchedule(schedule).ok());
  ASSERT_TRUE(Simulate(schedule).ok());
  const auto& r1 = schedule.programs[1].ops;
  EXPECT_EQ(r1[0].start, 11);  // F(1) after F(0) + comm
  EXPECT_EQ(r1[1].start, 12);  // F(2) right after F(1), same rank
  const auto& r0 = schedule.programs[0].ops;
  EXPECT_EQ(r0[1].start, 23);  // F(3) after F(2) + comm
  EXPECT_EQ(r0[2].start, 24);  // BW(3) after F(3), same rank
  EXPECT_EQ(r1[2].start, 36);  // BW(2) after BW(3) + comm
  EXPECT_EQ(r1[3].start, 38);  // BW(1) right after BW(2)
  EXPECT_EQ(r0[3].start, 50);  // BW(0) after BW(1) + comm
}

TEST(SimulatorTest, ReusedSimulatorGivesTheSameAnswer) {
  const CostProfile costs = UniformCosts(4, 3, 4, 2, 1, 2, 1);
  Simulator simulator;
  auto a = ZbH2(costs, 8);
  auto b = OneFOneB(costs, 5);
  auto a_again = ZbH2(costs, 8);
  ASSERT_TRUE(a.ok() && b.ok() && a_again.ok());
  ASSERT_TRUE(simulator.Run(*a).ok());
  ASSERT_TRUE(simulator.Run(*b).ok());
  ASSERT_TRUE(simulator.Run(*a_again).ok());
  EXPECT_EQ(*a, *a_again);
}

}  // namespace
}  // namespace zb::tuner
