// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/torch_export.h"

#include <gtest/gtest.h>

#include "golden.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/simulator.h"

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

// Orders are rewritten through this helper: ops given as (kind, chunk, microbatch) per rank.
Schedule WithOrder(Schedule schedule, const std::vector<std::vector<Op>>& order) {
  for (size_t rank = 0; rank < order.size(); ++rank)
    schedule.programs[rank].ops = order[rank];
  return schedule;
}

Op MakeOp(OpKind kind, int chunk, int microbatch) {
  Op op;
  op.kind = kind;
  op.chunk = chunk;
  op.microbatch = microbatch;
  return op;
}

TEST(TorchExportTest, CheckedExportWritesTheSameComputeOnlyCsv) {
  auto schedule = ZbH1(UniformCosts(2, 1, 1, 1, 0, 1, 0), 4);
  ASSERT_TRUE(schedule.ok());
  auto csv = ExportTorchCsv(*schedule, TorchCsvFormat::kComputeOnly);
  ASSERT_TRUE(csv.ok()) << csv.status().message();
  EXPECT_EQ(*csv, ToTorchCsv(*schedule, TorchDialect::kModern));
  auto legacy = ExportTorchCsv(*schedule, TorchCsvFormat::kLegacyComputeOnly);
  ASSERT_TRUE(legacy.ok()) << legacy.status().message();
  EXPECT_EQ(*legacy, ToTorchCsv(*schedule, TorchDialect::kLegacy));
}

TEST(TorchExportTest, RefusesAWeightGradientBeforeItsInputGradient) {
  auto schedule = ZbH1(UniformCosts(2, 1, 1, 1, 0, 1, 0), 2);
  ASSERT_TRUE(schedule.ok());
  // Rank 1: F0 W0 B0 F1 B1 W1: W0 comes before B0.
  const Schedule bad = WithOrder(
      *schedule, {schedule->programs[0].ops,
                  {MakeOp(OpKind::kF, 0, 0), MakeOp(OpKind::kW, 0, 0), MakeOp(OpKind::kB, 0, 0),
                   MakeOp(OpKind::kF, 0, 1), MakeOp(OpKind::kB, 0, 1), MakeOp(OpKind::kW, 0, 1)}});
  for (TorchCsvFormat format : {TorchCsvFormat::kComputeOnly, TorchCsvFormat::kComputeComms,
                                TorchCsvFormat::kLegacyComputeOnly}) {
    auto csv = ExportTorchCsv(bad, format);
    ASSERT_FALSE(csv.ok());
    EXPECT_EQ(csv.status().code(), ErrorCode::kInfeasible);
    EXPECT_EQ(
        csv.status().message(),
        "ranks[1].ops[1]: W stage 1 mb 0 runs before its input gradient B stage 1 mb 0; PyTorch "
        "cannot run a weight gradient first");
  }
}

TEST(TorchExportTest, RefusesAnOrderThatDeadlocks) {
  auto schedule = OneFOneB(UniformCosts(2, 1, 1, 1, 0, 1, 0), 2);
  ASSERT_TRUE(schedule.ok());
  // Rank 0 waits in B0 for rank 1's B0, which rank 1 runs last; rank 1 waits in F1 for rank 0's
  // F1, which comes after B0: a cycle.
  const Schedule bad =
      WithOrder(*schedule, {{MakeOp(OpKind::kF, 0, 0), MakeOp(OpKind::kBW, 0, 0),
                             MakeOp(OpKind::kF, 0, 1), MakeOp(OpKind::kBW, 0, 1)},
                            {MakeOp(OpKind::kF, 0, 1), MakeOp(OpKind::kBW, 0, 1),
                             MakeOp(OpKind::kF, 0, 0), MakeOp(OpKind::kBW, 0, 0)}});
  for (TorchCsvFormat format : {TorchCsvFormat::kComputeOnly, TorchCsvFormat::kComputeComms}) {
    auto csv = ExportTorchCsv(bad, format);
    ASSERT_FALSE(csv.ok());
    EXPECT_EQ(csv.status().code(), ErrorCode::kInfeasible);
    EXPECT_EQ(csv.status().message().rfind("PyTorch would hang on this order: deadlock", 0), 0u)
        << csv.status().message();
    EXPECT_EQ(csv.status().message().find('\n'), std::string::npos);
  }
}

// PyTorch's runtime pairs the k-th loss the last stage computes with microbatch k
// (docs/formats.md §4.1): an order whose last stage runs F1 before F0 would train wrong, so every
// export refuses it with one line naming the rule, the rank, the stage and the microbatches.
TEST(TorchExportTest, RefusesTheLastStagesForwardsOutOfMicrobatchOrder) {
  auto schedule = OneFOneB(UniformCosts(2, 1, 1, 1, 0, 1, 0), 2);
  ASSERT_TRUE(schedule.ok());
  // Rank 1 holds the last stage: F1 F0 B0 B1 runs without deadlock, but out of order.
  const Schedule swapped =
      WithOrder(*schedule, {schedule->programs[0].ops,
                            {MakeOp(OpKind::kF, 0, 1), MakeOp(OpKind::kF, 0, 0),
                             MakeOp(OpKind::kBW, 0, 0), MakeOp(OpKind::kBW, 0, 1)}});
  Schedule simulated = swapped;
  ASSERT_TRUE(Simulate(simulated).ok()) << "the order itself can run";
  const std::string expected =
      "PyTorch runtime rule \"last stage's forwards in microbatch order\" (docs/formats.md "
      "§4.1): rank 1, stage 1 runs F1 (ops[0]) before F0; PyTorch would start microbatch 0's "
      "backward from microbatch 1's loss (tune with --runtime torch)";
  EXPECT_EQ(CheckTorchRuntimeRules(swapped).message(), expected);
  for (TorchCsvFormat format : {TorchCsvFormat::kComputeOnly, TorchCsvFormat::kComputeComms,
                                TorchCsvFormat::kLegacyComputeOnly}) {
    auto csv = ExportTorchCsv(swapped, format);
    ASSERT_FALSE(csv.ok());
    EXPECT_EQ(csv.status().code(), ErrorCode::kInfeasible);
    EXPECT_EQ(csv.status().message(), expected);
  }
  // Rank 0 (stage 0) may run its forwards in any order: the rule is the last stage's.
  EXPECT_TRUE(CheckTorchRuntimeRules(*schedule).ok());
}

TEST(TorchExportTest, TheRuntimeRuleOrdersOnlyTheLastStagesForwards) {
  // 4 stages: stage 3 is the last.
  EXPECT_TRUE(TorchRuntimeOrders(4, OpKind::kF, 3, 5, OpKind::kF, 3, 2));
  EXPECT_FALSE(TorchRuntimeOrders(4, OpKind::kF, 3, 2, OpKind::kF, 3, 5));
  EXPECT_FALSE(TorchRuntimeOrders(4, OpKind::kF, 2, 5, OpKind::kF, 2, 2));
  EXPECT_FALSE(TorchRuntimeOrders(4, OpKind::kB, 3, 5, OpKind::kB, 3, 2));
  EXPECT_FALSE(TorchRuntimeOrders(4, OpKind::kF, 3, 5, OpKind::kB, 3, 2));
  EXPECT_EQ(ParseReplayRuntime("torch"), ReplayRuntime::kTorch);
  EXPECT_EQ(ParseReplayRuntime("zbkit"), ReplayRuntime::kZbkit);
  EXPECT_EQ(ParseReplayRuntime("executor"), std::nullopt);
}

// Every family writes the last stage's forwards in microbatch order on every placement, so none
// is lost to the rule.
TEST(TorchExportTest, EveryFamilyKeepsTheRuntimeRule) {
  for (int p : {2, 3, 4}) {
    for (int m : {4, 8, 12}) {
      const CostProfile costs = UniformCosts(p, 1, 1, 1, 0, 1, 0);
      for (const FamilyInfo& family : Families()) {
        auto schedule = GenerateFamily(family.name, FamilyRequest{costs, m, 2, {}});
        if (!schedule.ok()) continue;  // an instance the family cannot schedule
        EXPECT_TRUE(CheckTorchRuntimeRules(*schedule).ok())
            << family.name << " p" << p << " m" << m << ": "
            << CheckTorchRuntimeRules(*schedule).message();
      }
    }
  }
}

TEST(TorchExportTest, LegacyDialectRefusesMixedFusedAndSplitBackwards) {
  auto schedule = ZbH1(UniformCosts(2, 1, 1, 1, 0, 1, 0), 2);
  ASSERT_TRUE(schedule.ok());
  // Rank 0 fuses microbatch 1's backward (BW), everything else stays split.
  const Schedule mixed = WithOrder(
      *schedule, {{MakeOp(OpKind::kF, 0, 0), MakeOp(OpKind::kF, 0, 1), MakeOp(OpKind::kB, 0, 0),
                   MakeOp(OpKind::kW, 0, 0), MakeOp(OpKind::kBW, 0, 1)},
                  schedule->programs[1].ops});
  auto legacy = ExportTorchCsv(mixed, TorchCsvFormat::kLegacyComputeOnly);
  ASSERT_FALSE(legacy.ok());
  EXPECT_EQ(legacy.status().code(), ErrorCode::kInfeasible);
  EXPECT_NE(legacy.status().message().find("torch-csv-legacy cannot express this schedule: it "
                                           "mixes fused (BW) and split (B then W) backwards"),
            std::string::npos)
      << legacy.status().message();
  // The modern dialect has a token for each, so it exports.
  auto modern = ExportTorchCsv(mixed, TorchCsvFormat::kComputeOnly);
  ASSERT_TRUE(modern.ok()) << modern.status().message();
  EXPECT_EQ(modern->substr(0, modern->find('\n')), "0F0,0F1,0I0,0W0,0B1");
}

// FSDP's window too (docs/data-parallel.md §4): UNSHARD before a stage's first op, RESHARD after
// the rank's last, as torch's own lowering adds them (a stage that is not FSDP ignores them).
TEST(TorchExportTest, CommsFormatPostsEachSendWithItsReceiveAndReducesAfterTheLastBackward) {
  auto schedule = OneFOneB(UniformCosts(2, 1, 1, 1, 0, 1, 0), 2);
  ASSERT_TRUE(schedule.ok());
  auto csv = ExportTorchCsv(*schedule, TorchCsvFormat::kComputeComms);
  ASSERT_TRUE(csv.ok()) << csv.status().message();
  EXPECT_EQ(*csv,
            "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n"
            "1RECV_F0,1UNSHARD,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,"
            "1RESHARD\n");
}

TEST(TorchExportTest, CommsFormatHandsTheVTurnOverLocally) {
  FamilyRequest request;
  request.rank_costs = UniformCosts(2, 2, 2, 2, 0, 1, 0);
  request.microbatches = 4;
  auto schedule = GenerateFamily("zb-v", request);
  ASSERT_TRUE(schedule.ok()) << schedule.status().message();
  auto csv = ExportTorchCsv(*schedule, TorchCsvFormat::kComputeComms);
  ASSERT_TRUE(csv.ok()) << csv.status().message();
  // Stages 1 and 2 are both on rank 1: no SEND/RECV between them, in either direction.
  EXPECT_EQ(csv->find("1SEND_F"), std::string::npos);
  EXPECT_EQ(csv->find("2RECV_F"), std::string::npos);
  EXPECT_EQ(csv->find("2SEND_B"), std::string::npos);
  EXPECT_EQ(csv->find("1RECV_B"), std::string::npos);
  EXPECT_NE(csv->find("0SEND_F3"), std::string::npos);
  EXPECT_NE(csv->find("3SEND_B3"), std::string::npos);
  EXPECT_EQ(csv->find(",,"), std::string::npos);  // no empty cells
}

}  // namespace
}  // namespace zb::tuner
