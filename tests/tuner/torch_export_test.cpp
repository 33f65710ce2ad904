// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/torch_export.h"

#include <gtest/gtest.h>

#include "golden.h"
#include "zbkit/tuner/families.h"

namespace zb::tuner {
namespace {

using zb::testing::UniformCosts;

TEST(TorchExportTest, ModernDialectUsesIForInputGradAndBForFullBackward) {
  auto split = ZbH1(UniformCosts(2, 1, 1, 1, 0, 1, 0), 2);
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(ToTorchCsv(*split, TorchDialect::kModern),
            "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1F1,1I1,1W0,1W1\n");
  auto fused = OneFOneB(UniformCosts(2, 1, 1, 1, 0, 1, 0), 2);
  ASSERT_TRUE(fused.ok());
  EXPECT_EQ(ToTorchCsv(*fused, TorchDialect::kModern), "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
}

TEST(TorchExportTest, LegacyDialectUsesBForInputGradAndBWForFullBackward) {
  auto split = ZbH1(UniformCosts(2, 1, 1, 1, 0, 1, 0), 2);
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(ToTorchCsv(*split, TorchDialect::kLegacy),
            "0F0,0F1,0B0,0W0,0B1,0W1\n1F0,1B0,1F1,1B1,1W0,1W1\n");
  auto fused = OneFOneB(UniformCosts(2, 1, 1, 1, 0, 1, 0), 2);
  ASSERT_TRUE(fused.ok());
  EXPECT_EQ(ToTorchCsv(*fused, TorchDialect::kLegacy), "0F0,0F1,0BW0,0BW1\n1F0,1BW0,1F1,1BW1\n");
}

TEST(TorchExportTest, InterleavedScheduleUsesGlobalStageIds) {
  auto schedule = Interleaved1F1B(UniformCosts(2, 1, 1, 1, 0, 1, 0).SplitStages(2), 2, 2);
  ASSERT_TRUE(schedule.ok());
  // Rank 1 holds stages 1 and 3 (loop placement).
  const std::string csv = ToTorchCsv(*schedule, TorchDialect::kModern);
  const std::string rank1 = csv.substr(csv.find('\n') + 1);
  EXPECT_EQ(rank1, "1F0,1F1,3F0,3B0,3F1,3B1,1B0,1B1\n");
}

}  // namespace
}  // namespace zb::tuner
