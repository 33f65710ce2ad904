// SPDX-License-Identifier: Apache-2.0
// The range-name contract end to end (docs/range-names.md §1): every name the model's writer
// produces is classified by the profiler's built-in rules as exactly the op it names, so the
// runtime that writes names and the profiler that reads them cannot drift apart.
#include <gtest/gtest.h>

#include <string>

#include "zbkit/profiler/attribution.h"
#include "zbkit/schemas/range_name.h"

namespace zb::profiler {
namespace {

TEST(RangeNameContractTest, ProfilerReadsEveryOpTheWriterNames) {
  for (OpKind kind : {OpKind::kF, OpKind::kB, OpKind::kW, OpKind::kBW}) {
    for (int32_t stage : {0, 3, 15}) {
      for (int32_t mb : {0, 7, 255}) {
        const std::string name = FormatRangeName(kind, stage, mb);
        const RangeMatch match = MatchBuiltIn(name, "zbkit");
        EXPECT_EQ(match.role, RangeRole::kOp) << name;
        EXPECT_EQ(match.kind, kind) << name;
        EXPECT_EQ(match.stage, stage) << name;
        EXPECT_EQ(match.chunk, -1) << name;
        EXPECT_EQ(match.microbatch, mb) << name;
        EXPECT_EQ(match.direction, CommDirection::kNone) << name;
        EXPECT_FALSE(match.b_or_bw) << name;
        EXPECT_EQ(match.family, "zbkit") << name;
      }
    }
  }
}

TEST(RangeNameContractTest, ProfilerReadsTransfersAndIterations) {
  for (CommDirection direction : {CommDirection::kSendForward, CommDirection::kRecvForward,
                                  CommDirection::kSendBackward, CommDirection::kRecvBackward}) {
    const std::string name = FormatCommRangeName(direction, 2, 5);
    const RangeMatch match = MatchBuiltIn(name, "");
    EXPECT_EQ(match.role, RangeRole::kOp) << name;
    EXPECT_EQ(match.kind, OpKind::kComm) << name;
    EXPECT_EQ(match.direction, direction) << name;
    EXPECT_EQ(match.stage, 2) << name;
    EXPECT_EQ(match.microbatch, 5) << name;
  }
  const RangeMatch iteration = MatchBuiltIn(FormatIterationRangeName(3), "");
  EXPECT_EQ(iteration.role, RangeRole::kIteration);
  EXPECT_EQ(iteration.family, "zbkit");
}

TEST(RangeNameContractTest, WhatTheWriterRefusesIsNeverAnOp) {
  EXPECT_EQ(MatchBuiltIn(FormatRangeName(OpKind::kComm, 0, 0), "").role, RangeRole::kNone);
  EXPECT_EQ(MatchBuiltIn(FormatRangeName(OpKind::kF, -1, 0), "").role, RangeRole::kNone);
}

}  // namespace
}  // namespace zb::profiler
