// SPDX-License-Identifier: Apache-2.0
// FormatOp and ParseOp (op_text.h) are exact inverses, ParseOp takes nothing else, and zbview's
// Find bar (ParseOpQuery) finds the op FormatOp names.
#include "zbkit/schemas/op_text.h"

#include <gtest/gtest.h>

#include <climits>

#include "zbkit/schemas/range_name.h"
#include "zbkit/schemas/timeline_find.h"

namespace zb {
namespace {

TEST(OpTextTest, FormatAndParseAreExactInverses) {
  EXPECT_EQ(FormatOp(OpKind::kB, 3, 5), "B stage 3 mb 5");
  for (OpKind kind : {OpKind::kF, OpKind::kB, OpKind::kW, OpKind::kBW}) {
    for (int32_t stage : {0, 1, 7, 1000, INT32_MAX}) {
      for (int32_t microbatch : {0, 9, 10, 123456, INT32_MAX}) {
        const std::string text = FormatOp(kind, stage, microbatch);
        const std::optional<OpText> parsed = ParseOp(text);
        ASSERT_TRUE(parsed.has_value()) << text;
        EXPECT_EQ(*parsed, (OpText{kind, stage, microbatch})) << text;
        EXPECT_EQ(FormatOp(parsed->kind, parsed->stage, parsed->microbatch), text);
      }
    }
  }
}

TEST(OpTextTest, ParseTakesOnlyWhatFormatWrites) {
  for (const char* text :
       {"", "B", "B stage 3", "B stage 3 mb", "B  stage 3 mb 5", "B stage 3  mb 5",
        " B stage 3 mb 5", "B stage 3 mb 5 ", "b stage 3 mb 5", "X stage 3 mb 5",
        "COMM stage 3 mb 5", "B stage 03 mb 5", "B stage 3 mb 05", "B stage -1 mb 5",
        "B stage 3 mb 2147483648", "B stage 3 microbatch 5", "B s3 mb5", "zb:B:s3:mb5", "3I5"}) {
    EXPECT_FALSE(ParseOp(text).has_value()) << '"' << text << '"';
  }
  EXPECT_EQ(ParseOp("B stage 0 mb 0"), (OpText{OpKind::kB, 0, 0}));
  EXPECT_EQ(ParseOp("BW stage 12 mb 3"), (OpText{OpKind::kBW, 12, 3}));
}

TEST(OpTextTest, TheFindBarFindsTheOpFormatOpNames) {
  auto query = ParseOpQuery(FormatOp(OpKind::kW, 4, 17));
  ASSERT_TRUE(query.ok()) << query.status().message();
  EXPECT_EQ(query->kind, OpKind::kW);
  EXPECT_EQ(query->stage, 4);
  EXPECT_EQ(query->microbatch, 17);
  EXPECT_TRUE(query->name_words.empty());
}

// The one vocabulary: every action's name read back, torch's tokens read back as the longest
// match, the compute actions and the transfers mapped both ways, and the texts built on it.
TEST(ActionVocabularyTest, NamesTokensAndKindsAreOneTable) {
  for (int code = 0; code < kNumActionKinds; ++code) {
    const auto kind = static_cast<ActionKind>(code);
    EXPECT_EQ(ParseActionKindName(ActionKindName(kind)), kind) << code;
    const std::string token = TorchToken(kind);
    if (kind == ActionKind::kOther) {
      EXPECT_EQ(token, "");
      continue;
    }
    size_t pos = 0;
    EXPECT_EQ(ConsumeTorchToken(token + "7", pos), kind) << token;
    EXPECT_EQ(pos, token.size()) << token;
  }
  EXPECT_EQ(ActionKindName(static_cast<ActionKind>(kNumActionKinds)), std::string("?"));
  for (OpKind op : {OpKind::kF, OpKind::kB, OpKind::kW, OpKind::kBW})
    EXPECT_EQ(ComputeKindOf(ActionOf(op)), op);
  EXPECT_EQ(ActionOf(OpKind::kComm), ActionKind::kOther);
  for (CommDirection direction : {CommDirection::kSendForward, CommDirection::kRecvForward,
                                  CommDirection::kSendBackward, CommDirection::kRecvBackward})
    EXPECT_EQ(DirectionOf(ActionOf(direction)), direction);
  EXPECT_EQ(DirectionOf(ActionKind::kReduceGrad), CommDirection::kNone);
  EXPECT_FALSE(ComputeKindOf(ActionKind::kUnshard).has_value());
  // torch's letters: I is zbkit's B, B its BW.
  EXPECT_EQ(std::string(TorchToken(ActionKind::kB)), "I");
  EXPECT_EQ(std::string(TorchToken(ActionKind::kBW)), "B");

  EXPECT_EQ(FormatAction(ActionKind::kSendB, 2, 0), "SEND_B stage 2 mb 0");
  EXPECT_EQ(FormatAction(ActionKind::kUnshard, 1, -1), "UNSHARD stage 1");
  EXPECT_EQ(FormatAction(ActionKind::kBW, 3, 5), FormatOp(OpKind::kBW, 3, 5));
  EXPECT_EQ(FormatTorchAction(ActionKind::kB, 3, 7), "3I7");
  EXPECT_EQ(FormatTorchAction(ActionKind::kReduceGrad, 1, -1), "1REDUCE_GRAD");
  EXPECT_EQ(FormatSliceLabel(OpKind::kB, 3, 5, false), "B5");
  EXPECT_EQ(FormatSliceLabel(OpKind::kB, 3, 5, true), "B5 s3");
  EXPECT_EQ(FormatSliceLabel(OpKind::kComm, 3, 5, true), "COMM s3 mb5");
}

// The range names read torch's labels through the vocabulary: compute actions are ops, the rest
// (transfers, UNSHARD, REDUCE_GRAD) are not ParseTorchActionName's.
TEST(ActionVocabularyTest, TorchLabelsRoundTripThroughTheRangeNames) {
  for (OpKind op : {OpKind::kF, OpKind::kB, OpKind::kW, OpKind::kBW}) {
    const std::string label = FormatTorchActionName(op, 4, 11);
    EXPECT_EQ(label, "PP:" + FormatTorchAction(ActionOf(op), 4, 11));
    const auto parsed = ParseTorchActionName(label);
    ASSERT_TRUE(parsed.has_value()) << label;
    EXPECT_EQ(parsed->kind, op);
    EXPECT_EQ(parsed->stage, 4);
    EXPECT_EQ(parsed->microbatch, 11);
  }
  for (const char* other : {"PP:1SEND_F3", "PP:1UNSHARD", "PP:1REDUCE_GRAD", "PP:1X3", "PP:F3"})
    EXPECT_FALSE(ParseTorchActionName(other).has_value()) << other;
  const auto comm = ParseRangeName(FormatCommRangeName(CommDirection::kRecvBackward, 2, 3));
  ASSERT_TRUE(comm.has_value());
  EXPECT_EQ(comm->direction, CommDirection::kRecvBackward);
  EXPECT_FALSE(ParseRangeName("zb:OTHER:s1:mb0").has_value());
  EXPECT_FALSE(ParseRangeName("zb:UNSHARD:s1:mb0").has_value());
}

}  // namespace
}  // namespace zb
