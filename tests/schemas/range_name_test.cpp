// SPDX-License-Identifier: Apache-2.0
// The range-name contract (docs/range-names.md): what the writer emits, the parser reads back,
// and nothing else parses.
#include "zbkit/schemas/range_name.h"

#include <gtest/gtest.h>

#include <string>

namespace zb {
namespace {

TEST(RangeNameTest, FormatsTheDocumentedNames) {
  EXPECT_EQ(FormatRangeName(OpKind::kF, 3, 7), "zb:F:s3:mb7");
  EXPECT_EQ(FormatRangeName(OpKind::kB, 0, 0), "zb:B:s0:mb0");
  EXPECT_EQ(FormatRangeName(OpKind::kW, 12, 130), "zb:W:s12:mb130");
  EXPECT_EQ(FormatRangeName(OpKind::kBW, 0, 1), "zb:BW:s0:mb1");
  EXPECT_EQ(FormatCommRangeName(CommDirection::kSendForward, 2, 5), "zb:SEND_F:s2:mb5");
  EXPECT_EQ(FormatCommRangeName(CommDirection::kRecvBackward, 1, 0), "zb:RECV_B:s1:mb0");
  EXPECT_EQ(FormatIterationRangeName(4), "zb:iter:4");
}

TEST(RangeNameTest, RefusesToFormatWhatHasNoName) {
  EXPECT_EQ(FormatRangeName(OpKind::kComm, 0, 0), "");
  EXPECT_EQ(FormatRangeName(OpKind::kF, -1, 0), "");
  EXPECT_EQ(FormatRangeName(OpKind::kF, 0, -1), "");
  EXPECT_EQ(FormatCommRangeName(CommDirection::kNone, 0, 0), "");
  EXPECT_EQ(FormatIterationRangeName(-1), "");
}

TEST(RangeNameTest, EveryOpNameRoundTrips) {
  for (OpKind kind : {OpKind::kF, OpKind::kB, OpKind::kW, OpKind::kBW}) {
    for (int32_t stage : {0, 1, 9, 63, INT32_MAX}) {
      for (int32_t mb : {0, 7, 10, 511, INT32_MAX}) {
        const std::string name = FormatRangeName(kind, stage, mb);
        auto parsed = ParseRangeName(name);
        ASSERT_TRUE(parsed.has_value()) << name;
        EXPECT_EQ(parsed->role, RangeName::Role::kOp) << name;
        EXPECT_EQ(parsed->kind, kind) << name;
        EXPECT_EQ(parsed->direction, CommDirection::kNone) << name;
        EXPECT_EQ(parsed->stage, stage) << name;
        EXPECT_EQ(parsed->microbatch, mb) << name;
      }
    }
  }
}

TEST(RangeNameTest, CommAndIterationNamesRoundTrip) {
  for (CommDirection direction : {CommDirection::kSendForward, CommDirection::kRecvForward,
                                  CommDirection::kSendBackward, CommDirection::kRecvBackward}) {
    const std::string name = FormatCommRangeName(direction, 4, 11);
    auto parsed = ParseRangeName(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(parsed->role, RangeName::Role::kComm);
    EXPECT_EQ(parsed->kind, OpKind::kComm);
    EXPECT_EQ(parsed->direction, direction);
    EXPECT_EQ(parsed->stage, 4);
    EXPECT_EQ(parsed->microbatch, 11);
  }
  auto iteration = ParseRangeName(FormatIterationRangeName(12));
  ASSERT_TRUE(iteration.has_value());
  EXPECT_EQ(iteration->role, RangeName::Role::kIteration);
  EXPECT_EQ(iteration->iteration, 12);
}

TEST(RangeNameTest, AcceptsLeadingZerosAsTheProfilerAlwaysHas) {
  auto parsed = ParseRangeName("zb:F:s03:mb007");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->stage, 3);
  EXPECT_EQ(parsed->microbatch, 7);
}

TEST(RangeNameTest, RejectsMalformedNames) {
  for (const char* name : {
           "",
           "zb:",
           "zb:F",
           "zb:F:",
           "zb:F:s",
           "zb:F:s3",
           "zb:F:s3:mb",
           "zb:F:s3:mb7:",    // trailing text
           "zb:F:s3:mb7 ",    // trailing space
           " zb:F:s3:mb7",    // leading space
           "ZB:F:s3:mb7",     // the prefix is case-sensitive
           "zb:f:s3:mb7",     // so are the kinds
           "zb:X:s3:mb7",     // unknown kind
           "zb:COMM:s3:mb7",  // comm ranges name their direction
           "zb:F:3:mb7",      // missing 's'
           "zb:F:s3:7",       // missing 'mb'
           "zb:F:s-1:mb7",    // negative
           "zb:F:s3:mb-7",
           "zb:F:sx:mb7",
           "zb:F:s2147483648:mb0",  // over INT32_MAX
           "zb:F:s0:mb99999999999",
           "zb:SEND:s0:mb0",
           "zb:SEND_X:s0:mb0",
           "zb:iter:",
           "zb:iter:x",
           "zb:iter:3:",
           "F0.0.0",          // the zero-bubble fork's convention, not this one
           "PP:0F3",          // torch pipelining's
           "ProfilerStep#3",  // Kineto's
       }) {
    EXPECT_FALSE(ParseRangeName(name).has_value()) << '"' << name << '"';
  }
}

// torch's action labels, which zbkit's runtime writes: the documented letters (I is B, B is BW),
// and the exact inverse.
TEST(RangeNameTest, TorchActionLabelsRoundTrip) {
  EXPECT_EQ(FormatTorchActionName(OpKind::kF, 3, 7), "PP:3F7");
  EXPECT_EQ(FormatTorchActionName(OpKind::kB, 3, 7), "PP:3I7");
  EXPECT_EQ(FormatTorchActionName(OpKind::kW, 0, 12), "PP:0W12");
  EXPECT_EQ(FormatTorchActionName(OpKind::kBW, 11, 0), "PP:11B0");
  EXPECT_EQ(FormatTorchActionName(OpKind::kComm, 1, 1), "");
  EXPECT_EQ(FormatTorchActionName(OpKind::kF, -1, 1), "");
  for (OpKind kind : {OpKind::kF, OpKind::kB, OpKind::kW, OpKind::kBW}) {
    for (int32_t stage : {0, 5, 2147483647}) {
      const auto parsed = ParseTorchActionName(FormatTorchActionName(kind, stage, 9));
      ASSERT_TRUE(parsed.has_value());
      EXPECT_EQ(parsed->kind, kind);
      EXPECT_EQ(parsed->stage, stage);
      EXPECT_EQ(parsed->microbatch, 9);
      EXPECT_EQ(parsed->role, RangeName::Role::kOp);
    }
  }
  for (const char* name :
       {"PP:3F", "PP:F3", "PP:3X7", "PP:3F7 ", "PP:3SEND_F7", "pp:3F7", "zb:F:s3:mb7", "PP:3F7x"}) {
    EXPECT_FALSE(ParseTorchActionName(name).has_value()) << name;
  }
}

}  // namespace
}  // namespace zb
