// SPDX-License-Identifier: Apache-2.0
// The dependency rule on its own (zbkit/schemas/dependencies.h): every kind, the pipeline's ends,
// and the paper's interleaved quirk. The simulator and TimelineIndex::WaitedFor tests check that
// both consumers use it.
#include "zbkit/schemas/dependencies.h"

#include <gtest/gtest.h>

namespace zb {
namespace {

constexpr DependencyRule kFourStages{4, 0};

TEST(DependenciesTest, ForwardWaitsForThePreviousStagesForward) {
  EXPECT_EQ(WaitsFor(OpKind::kF, 0, 5, kFourStages), std::nullopt);
  EXPECT_EQ(WaitsFor(OpKind::kF, 1, 5, kFourStages), (Dependency{OpKind::kF, 0, 5, false}));
  EXPECT_EQ(WaitsFor(OpKind::kF, 3, 0, kFourStages), (Dependency{OpKind::kF, 2, 0, false}));
}

TEST(DependenciesTest, BackwardWaitsForTheNextStagesInputGradient) {
  for (OpKind kind : {OpKind::kB, OpKind::kBW}) {
    EXPECT_EQ(WaitsFor(kind, 0, 2, kFourStages), (Dependency{OpKind::kB, 1, 2, true}));
    EXPECT_EQ(WaitsFor(kind, 2, 7, kFourStages), (Dependency{OpKind::kB, 3, 7, true}));
    // The last stage has no next stage: its backward starts from its own forward's output.
    EXPECT_EQ(WaitsFor(kind, 3, 7, kFourStages), (Dependency{OpKind::kF, 3, 7, false}));
  }
}

TEST(DependenciesTest, WeightGradientWaitsForItsOwnInputGradient) {
  EXPECT_EQ(WaitsFor(OpKind::kW, 0, 1, kFourStages), (Dependency{OpKind::kB, 0, 1, false}));
  EXPECT_EQ(WaitsFor(OpKind::kW, 3, 1, kFourStages), (Dependency{OpKind::kB, 3, 1, false}));
}

TEST(DependenciesTest, CommunicationWaitsForNothing) {
  EXPECT_EQ(WaitsFor(OpKind::kComm, 2, 0, kFourStages), std::nullopt);
}

TEST(DependenciesTest, SingleStagePipeline) {
  const DependencyRule one{1, 0};
  EXPECT_EQ(WaitsFor(OpKind::kF, 0, 0, one), std::nullopt);
  EXPECT_EQ(WaitsFor(OpKind::kB, 0, 0, one), (Dependency{OpKind::kF, 0, 0, false}));
  EXPECT_EQ(WaitsFor(OpKind::kW, 0, 0, one), (Dependency{OpKind::kB, 0, 0, false}));
}

// 2 ranks x 2 chunks, loop placement: stages 0 1 | 2 3, the wrap-around edge is 1 -> 2.
TEST(DependenciesTest, PaperQuirkDropsTheWrapAroundEdgeExceptForEachGroupsFirstMicrobatch) {
  const DependencyRule quirk{4, 2};
  // Microbatch 1 (1 % 2 != 0): F(2) does not wait for F(1), B(1) does not wait for B(2).
  EXPECT_EQ(WaitsFor(OpKind::kF, 2, 1, quirk), std::nullopt);
  EXPECT_EQ(WaitsFor(OpKind::kB, 1, 1, quirk), std::nullopt);
  EXPECT_EQ(WaitsFor(OpKind::kBW, 1, 1, quirk), std::nullopt);
  // Edges inside a group of stages stay.
  EXPECT_EQ(WaitsFor(OpKind::kF, 1, 1, quirk), (Dependency{OpKind::kF, 0, 1, false}));
  EXPECT_EQ(WaitsFor(OpKind::kF, 3, 1, quirk), (Dependency{OpKind::kF, 2, 1, false}));
  EXPECT_EQ(WaitsFor(OpKind::kB, 2, 1, quirk), (Dependency{OpKind::kB, 3, 1, true}));
  EXPECT_EQ(WaitsFor(OpKind::kB, 3, 1, quirk), (Dependency{OpKind::kF, 3, 1, false}));
  EXPECT_EQ(WaitsFor(OpKind::kW, 1, 1, quirk), (Dependency{OpKind::kB, 1, 1, false}));
  // Microbatches 0, 2, ... keep the wrap-around edge.
  EXPECT_EQ(WaitsFor(OpKind::kF, 2, 2, quirk), (Dependency{OpKind::kF, 1, 2, false}));
  EXPECT_EQ(WaitsFor(OpKind::kB, 1, 0, quirk), (Dependency{OpKind::kB, 2, 0, true}));
  // Stage 0 waits for nothing either way.
  EXPECT_EQ(WaitsFor(OpKind::kF, 0, 1, quirk), std::nullopt);
}

}  // namespace
}  // namespace zb
