// SPDX-License-Identifier: Apache-2.0
// torch's own orders read back from a schedule CSV (zbkit/tuner/torch_orders.h): placement and
// chunks from the stages, torch's letters (I input gradient, B full backward), the profile's costs
// split as the families split them, and one-line errors.
#include "zbkit/tuner/torch_orders.h"

#include <gtest/gtest.h>

#include "golden.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/simulator.h"
#include "zbkit/tuner/torch_export.h"

namespace zb::tuner {
namespace {

using zb::testing::UniformCosts;

TEST(TorchOrdersTest, ReadsBackWhatTheExporterWrites) {
  const CostProfile costs = UniformCosts(2, 1000, 1100, 700, 50, 1, 0);
  for (const char* family : {"1f1b", "zb-h1", "1f1b-i", "zb-v", "v-half"}) {
    auto exported = GenerateFamily(family, FamilyRequest{costs, 4, 2, {}});
    ASSERT_TRUE(exported.ok()) << family;
    const std::string csv = ToTorchCsv(*exported, TorchDialect::kModern);
    auto read = ScheduleFromTorchCsv(csv, "t.csv", costs, 4);
    ASSERT_TRUE(read.ok()) << family << ": " << read.status().message();
    EXPECT_EQ(read->placement, exported->placement) << family;
    EXPECT_EQ(read->chunks, exported->chunks) << family;
    EXPECT_EQ(ToTorchCsv(*read, TorchDialect::kModern), csv) << family;
    ASSERT_TRUE(Simulate(*exported).ok());
    ASSERT_TRUE(Simulate(*read).ok());
    EXPECT_EQ(read->predicted->makespan, exported->predicted->makespan) << family;
  }
}

TEST(TorchOrdersTest, CommunicationCellsArePassedOver) {
  const CostProfile costs = UniformCosts(2, 1, 1, 1, 0, 1, 0);
  auto read = ScheduleFromTorchCsv(
      "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
      "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1REDUCE_GRAD\n",
      "c.csv", costs, 2);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->programs[1].ops.size(), 4u);
  EXPECT_EQ(read->programs[1].ops[1].kind, OpKind::kBW);
}

TEST(TorchOrdersTest, BadFilesAreOneLineNamingTheFileRowAndCell) {
  const CostProfile costs = UniformCosts(2, 1, 1, 1, 0, 1, 0);
  auto bad_cell = ScheduleFromTorchCsv("0F0,0X1\n1F0\n", "a.csv", costs, 1);
  ASSERT_FALSE(bad_cell.ok());
  EXPECT_EQ(bad_cell.status().message(),
            "a.csv: row 0: \"0X1\" is not a compute action <stage><F|I|W|B><microbatch>");
  auto two_ranks = ScheduleFromTorchCsv("0F0,0B0\n0F0,0B0\n", "b.csv", costs, 1);
  ASSERT_FALSE(two_ranks.ok());
  EXPECT_EQ(two_ranks.status().message(), "b.csv: row 1: stage 0 is also on rank 0");
  auto ranks = ScheduleFromTorchCsv("0F0,0B0\n", "c.csv", costs, 1);
  ASSERT_FALSE(ranks.ok());
  EXPECT_EQ(ranks.status().message(), "c.csv: 1 ranks, the profile has 2");
  // Rank 0 holds stages 0 and 2 of 4 on 2 ranks, rank 1 stages 1 and 3: loop; 0 and 1: neither.
  auto neither = ScheduleFromTorchCsv("0F0,1F0,1B0,0B0\n2F0,3F0,3B0,2B0\n", "d.csv", costs, 1);
  ASSERT_FALSE(neither.ok());
  EXPECT_NE(neither.status().message().find("neither loop nor V placement"), std::string::npos);
  auto short_of_ops = ScheduleFromTorchCsv("0F0,0B0\n1F0,1B0\n", "e.csv", costs, 2);
  ASSERT_FALSE(short_of_ops.ok());
  EXPECT_EQ(short_of_ops.status().message().rfind("e.csv", 0), 0u);
  // Stages named with gaps between them (stage 10,000,001 with nothing before it) are refused
  // before anything is sized by them.
  auto sparse = ScheduleFromTorchCsv("0F0,0B0\n10000001F0\n", "f.csv", costs, 1);
  ASSERT_FALSE(sparse.ok());
  EXPECT_EQ(sparse.status().message(),
            "f.csv: stage 1 has no action (the CSV names stages up to 10000001)");
}

}  // namespace
}  // namespace zb::tuner
