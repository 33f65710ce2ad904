// SPDX-License-Identifier: Apache-2.0
// Tests of what a measured op did inside its span (schema version 9, TimelineOp::busy, kernels,
// name): a round trip keeps them and each name once, a prediction stores none, the columns refuse
// a busy time beyond the span, and a version-8 store migrates with its ops read as "whole span
// busy, no kernels, no name".
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "assert_ok.h"
#include "raw_db.h"
#include "store_dir.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/types.h"

namespace zb {
namespace {

using testing_support::RawDb;
using testing_support::SchemaFile;

using StoreOpDetailTest = testing_support::StoreDirTest;

Timeline MeasuredTwoIterations() {
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  timeline.names = {"fwd_stage_0", "bwd_input_stage_0"};
  TimelineOp f{0, 0, OpKind::kF, 0, 0, 97'000'000, 0};
  f.busy = 12'900'000;
  f.kernels = 41;
  f.name = 0;
  TimelineOp b{0, 0, OpKind::kB, 0, 97'000'000, 130'000'000, 1};
  b.busy = 33'000'000;  // the whole span
  b.kernels = 7;
  b.name = 1;
  TimelineOp again = f;  // the same name again: stored as text, read back as the same id
  again.start = 130'000'000;
  again.end = 140'000'000;
  again.busy = 0;
  again.kernels = 0;
  TimelineOp cpu_only{0, 0, OpKind::kW, 0, 140'000'000, 150'000'000, 1};  // busy -1, no name
  timeline.ops = {f, b, again, cpu_only};
  return timeline;
}

TEST_F(StoreOpDetailTest, MeasuredDetailRoundTripsAndPredictionsStoreNone) {
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  const Timeline measured = MeasuredTwoIterations();
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.InsertTimeline(std::nullopt, measured));
  ZB_ASSERT_OK_AND_ASSIGN(Timeline loaded, store.LoadTimeline(id));
  EXPECT_EQ(loaded, measured);
  EXPECT_EQ(loaded.ops[0].BusyTime(), 12'900'000);
  EXPECT_EQ(loaded.ops[3].BusyTime(), 10'000'000);  // not measured: the span

  Timeline predicted;
  predicted.ops = {{0, 0, OpKind::kF, 0, 0, 10, 0}, {1, 1, OpKind::kF, 0, 10, 20, 0}};
  ZB_ASSERT_OK_AND_ASSIGN(int64_t pid, store.InsertTimeline(std::nullopt, predicted));
  ZB_ASSERT_OK_AND_ASSIGN(loaded, store.LoadTimeline(pid));
  EXPECT_EQ(loaded, predicted);
  EXPECT_TRUE(loaded.names.empty());

  RawDb raw(path_);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM timeline_ops WHERE timeline_id = " + std::to_string(pid) +
                    " AND (busy_ns IS NOT NULL OR name IS NOT NULL)"),
            0);
  EXPECT_EQ(raw.Text("SELECT group_concat(coalesce(busy_ns, 'null') || '/' || kernels || '/' ||"
                     " coalesce(name, 'null'), ' ') FROM timeline_ops WHERE timeline_id = " +
                     std::to_string(id)),
            "12900000/41/fwd_stage_0 33000000/7/bwd_input_stage_0 0/0/fwd_stage_0 null/0/null");
}

TEST_F(StoreOpDetailTest, ColumnsRefuseABusyTimeBeyondTheSpanOrNegativeKernels) {
  { ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_)); }
  RawDb raw(path_);
  raw.Exec(
      "INSERT INTO timelines (id, kind, num_ops, schema_version) VALUES (1, 'measured', 1, 9)");
  const std::string insert =
      "INSERT INTO timeline_ops (timeline_id, seq, rank, stage, kind, microbatch, start_ns, end_ns,"
      " busy_ns, kernels) VALUES (1, 0, 0, 0, 'F', 0, 100, 200, ";
  EXPECT_TRUE(raw.Fails(insert + "101, 1)"));
  EXPECT_TRUE(raw.Fails(insert + "-1, 1)"));
  EXPECT_TRUE(raw.Fails(insert + "50, -1)"));
  EXPECT_FALSE(raw.Fails(insert + "100, 1)"));
}

TEST_F(StoreOpDetailTest, VersionEightStoreMigratesWithOpsWhollyBusy) {
  {
    RawDb raw(path_);
    raw.Exec(SchemaFile("store.sql"));
    for (const char* step :
         {"002_timeline_ops_comm.sql", "003_runs_and_measured_costs.sql",
          "004_timeline_op_iteration.sql", "005_fused_backward_cost.sql", "006_frontiers.sql",
          "007_cluster_hops.sql", "008_profiled_layout.sql"}) {
      raw.Exec(SchemaFile(std::string("migrations/") + step));
    }
    raw.Exec("PRAGMA user_version = 8; PRAGMA application_id = 2053270388;");
    raw.Exec(
        "INSERT INTO timelines (id, kind, num_ops, schema_version) VALUES (1, 'measured', 1, 8);"
        "INSERT INTO timeline_ops (timeline_id, seq, rank, stage, kind, microbatch, start_ns,"
        " end_ns, iteration) VALUES (1, 0, 0, 0, 'F', 0, 100, 300, 2);");
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
  ZB_ASSERT_OK_AND_ASSIGN(Timeline old, store.LoadTimeline(1));
  ASSERT_EQ(old.ops.size(), 1u);
  EXPECT_EQ(old.ops[0].busy, -1);
  EXPECT_EQ(old.ops[0].BusyTime(), 200);
  EXPECT_EQ(old.ops[0].kernels, 0);
  EXPECT_EQ(old.ops[0].name, -1);
  EXPECT_EQ(old.ops[0].iteration, 2);
  RawDb raw(path_);
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
}

}  // namespace
}  // namespace zb
