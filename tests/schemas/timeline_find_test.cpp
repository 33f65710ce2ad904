// SPDX-License-Identifier: Apache-2.0
// Tests of finding ops (timeline_find.h): the query words, their errors, and what FindOps returns
// on a measured timeline with range names and iterations.
#include "zbkit/schemas/timeline_find.h"

#include <gtest/gtest.h>

#include "assert_ok.h"

namespace zb {
namespace {

TEST(TimelineFindTest, QueryWordsInAnyOrderAndTheirShortForms) {
  ZB_ASSERT_OK_AND_ASSIGN(OpQuery query, ParseOpQuery("  mb 5 B   stage 3 "));
  EXPECT_EQ(query.kind, OpKind::kB);
  EXPECT_EQ(query.stage, 3);
  EXPECT_EQ(query.microbatch, 5);
  EXPECT_FALSE(query.rank.has_value());
  EXPECT_TRUE(query.name_words.empty());

  ZB_ASSERT_OK_AND_ASSIGN(query, ParseOpQuery("bw s2 mb7 r1 i4 Fwd_Stage"));
  EXPECT_EQ(query.kind, OpKind::kBW);
  EXPECT_EQ(query.stage, 2);
  EXPECT_EQ(query.microbatch, 7);
  EXPECT_EQ(query.rank, 1);
  EXPECT_EQ(query.iteration, 4);
  EXPECT_EQ(query.name_words, std::vector<std::string>{"fwd_stage"});

  ZB_ASSERT_OK_AND_ASSIGN(query, ParseOpQuery(""));
  EXPECT_TRUE(query.empty());
  ZB_ASSERT_OK_AND_ASSIGN(query, ParseOpQuery("comm iteration 2"));
  EXPECT_EQ(query.kind, OpKind::kComm);
  EXPECT_EQ(query.iteration, 2);
}

TEST(TimelineFindTest, AKeywordTakesOnlyANumberFromZero) {
  for (const char* text : {"B mb -1", "stage 3a", "rank +1"}) {
    const auto query = ParseOpQuery(text);
    ASSERT_FALSE(query.ok()) << text;
    EXPECT_EQ(query.status().code(), ErrorCode::kUsage) << text;
    EXPECT_NE(query.status().message().find("needs a number from 0 after it"), std::string::npos)
        << query.status().message();
  }
  // Not followed by a number: a name word.
  ZB_ASSERT_OK_AND_ASSIGN(OpQuery query, ParseOpQuery("stage"));
  EXPECT_EQ(query.name_words, std::vector<std::string>{"stage"});
  EXPECT_FALSE(query.stage.has_value());
  ZB_ASSERT_OK_AND_ASSIGN(query, ParseOpQuery("mb fwd"));
  EXPECT_EQ(query.name_words, (std::vector<std::string>{"mb", "fwd"}));
}

TEST(TimelineFindTest, FindsByFieldsAndNameInTimeOrder) {
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  timeline.names = {"fwd_stage_0", "bwd_input_stage_1", "nccl:send"};
  auto op = [](int32_t rank, int32_t stage, OpKind kind, int32_t mb, TimeNs start, int32_t name,
               int32_t iteration) {
    TimelineOp o{rank, stage, kind, mb, start, start + 10, iteration};
    o.name = name;
    o.busy = 5;
    return o;
  };
  timeline.ops = {op(1, 1, OpKind::kB, 0, 50, 1, 0),    op(0, 0, OpKind::kF, 0, 0, 0, 0),
                  op(0, 0, OpKind::kF, 1, 20, 0, 0),    op(0, 0, OpKind::kF, 0, 100, 0, 1),
                  op(0, 0, OpKind::kComm, 0, 12, 2, 0), op(1, 1, OpKind::kB, 0, 150, -1, 1)};
  const TimelineIndex index(timeline);
  auto find = [&](const char* text) {
    auto query = ParseOpQuery(text);
    EXPECT_TRUE(query.ok()) << text;
    std::vector<TimeNs> starts;
    for (const auto& [lane, i] : FindOps(index, *query))
      starts.push_back(index.lane(lane).start[i]);
    return starts;
  };
  EXPECT_EQ(find("F"), (std::vector<TimeNs>{0, 20, 100}));
  EXPECT_EQ(find("f mb 0"), (std::vector<TimeNs>{0, 100}));
  EXPECT_EQ(find("F mb 0 iter 1"), (std::vector<TimeNs>{100}));
  EXPECT_EQ(find("STAGE"), (std::vector<TimeNs>{0, 20, 50, 100}));  // a name word
  EXPECT_EQ(find("bwd stage_1"), (std::vector<TimeNs>{50}));        // both words
  EXPECT_EQ(find("B rank 1"), (std::vector<TimeNs>{50, 150}));
  EXPECT_EQ(find("nccl"), (std::vector<TimeNs>{12}));  // comm lanes too
  EXPECT_EQ(find("W"), (std::vector<TimeNs>{}));
  EXPECT_EQ(find(""), (std::vector<TimeNs>{}));
}

}  // namespace
}  // namespace zb
