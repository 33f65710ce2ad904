// SPDX-License-Identifier: Apache-2.0
#include "zbkit/schemas/types.h"

#include <gtest/gtest.h>

namespace zb {
namespace {

TEST(TypesTest, MillisecondsRoundTripThroughNanoseconds) {
  EXPECT_EQ(MsToNs(18.522), 18'522'000);
  EXPECT_EQ(MsToNs(0.601), 601'000);
  EXPECT_DOUBLE_EQ(NsToMs(18'522'000), 18.522);
}

TEST(TypesTest, OpKindNamesParseBack) {
  for (OpKind kind : {OpKind::kF, OpKind::kB, OpKind::kW, OpKind::kBW}) {
    EXPECT_EQ(ParseOpKind(OpKindName(kind)), kind);
  }
  EXPECT_FALSE(ParseOpKind("X").has_value());
  EXPECT_FALSE(ParseOpKind("").has_value());
}

TEST(TypesTest, MemoryDeltasOfOneMicrobatchSumToZero) {
  StageCost cost{1, 2, 3, 201216, 73728};
  EXPECT_EQ(
      cost.MemoryDelta(OpKind::kF) + cost.MemoryDelta(OpKind::kB) + cost.MemoryDelta(OpKind::kW),
      0);
  EXPECT_EQ(cost.MemoryDelta(OpKind::kF) + cost.MemoryDelta(OpKind::kBW), 0);
  EXPECT_EQ(cost.Duration(OpKind::kBW), 5);
}

TEST(TypesTest, SplitStagesKeepsTotalsExact) {
  CostProfile costs;
  costs.comm = 7;
  costs.stages = {{10, 11, 5, 4, 2}, {7, 9, 3, 6, 3}};
  CostProfile split = costs.SplitStages(3);
  ASSERT_EQ(split.num_stages(), 6);
  EXPECT_EQ(split.comm, 7);
  TimeNs f0 = 0;
  double m0 = 0;
  for (int i = 0; i < 3; ++i) {
    f0 += split.stages[i].f;
    m0 += split.stages[i].m_b;
  }
  EXPECT_EQ(f0, 10);
  EXPECT_DOUBLE_EQ(m0, 4);
  EXPECT_EQ(split.stages[3].f + split.stages[4].f + split.stages[5].f, 7);
}

TEST(TypesTest, PlacementsMapStagesAndRanksBothWays) {
  const int p = 4;
  for (Placement placement : {Placement::kLoop, Placement::kV}) {
    for (int rank = 0; rank < p; ++rank) {
      for (int chunk = 0; chunk < 2; ++chunk) {
        const int stage = StageOfChunk(placement, p, rank, chunk);
        EXPECT_EQ(RankOfStage(placement, p, stage), rank);
      }
    }
  }
  EXPECT_EQ(StageOfChunk(Placement::kV, 4, 0, 1), 7);
  EXPECT_EQ(StageOfChunk(Placement::kV, 4, 3, 1), 4);
  EXPECT_EQ(StageOfChunk(Placement::kLoop, 4, 1, 2), 9);
}

}  // namespace
}  // namespace zb
