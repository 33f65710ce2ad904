// SPDX-License-Identifier: Apache-2.0
// FormatOp and ParseOp (op_text.h) are exact inverses, ParseOp takes nothing else, and zbview's
// Find bar (ParseOpQuery) finds the op FormatOp names.
#include "zbkit/schemas/op_text.h"

#include <gtest/gtest.h>

#include <climits>

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

}  // namespace
}  // namespace zb
