// SPDX-License-Identifier: Apache-2.0
// Tests of the profiled job's layout kept with its cost profile (schema version 8): round trips
// with and without it, a class without a layout refused without leaving a row, the columns'
// checks, and a version-7 store migrated with its profiles kept (layout unknown).
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

CostProfile TwoRanks() {
  CostProfile costs;
  costs.comm = 100;
  costs.stages = {{1000, 1100, 700, 4.0, 1.5, 0}, {1200, 1300, 800, 4.0, 1.5, 0}};
  return costs;
}

using StoreLayoutTest = testing_support::StoreDirTest;

TEST_F(StoreLayoutTest, LayoutAndClassRoundTripAndAbsentStaysAbsent) {
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t cluster, store.EnsureCluster({"local", "", "", "", ""}));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t job, store.EnsureJob(cluster, "job"));

  CostProfile interleaved = TwoRanks();
  interleaved.layout = JobLayout{Placement::kLoop, 2};
  interleaved.schedule_class = "ScheduleInterleaved1F1B";
  ZB_ASSERT_OK_AND_ASSIGN(int64_t a, store.InsertCostProfile(job, "interleaved", interleaved));
  ZB_ASSERT_OK_AND_ASSIGN(CostProfile loaded, store.LoadCostProfile(a));
  EXPECT_EQ(loaded, interleaved);

  // Migration 12: the job's activation checkpointing, with or without a layout; a checkpointed
  // stage's M_W above its M_B.
  CostProfile checkpointed = TwoRanks();
  checkpointed.checkpointing = "op";
  checkpointed.stages[0].m_w = 9.0;
  ZB_ASSERT_OK_AND_ASSIGN(int64_t ac, store.InsertCostProfile(job, "checkpointed", checkpointed));
  ZB_ASSERT_OK_AND_ASSIGN(loaded, store.LoadCostProfile(ac));
  EXPECT_EQ(loaded, checkpointed);
  {
    RawDb raw(path_);
    EXPECT_TRUE(raw.Fails("UPDATE cost_profiles SET checkpointing = 'sometimes' WHERE id = " +
                          std::to_string(ac)));
    raw.Exec("PRAGMA foreign_keys = ON; DELETE FROM cost_profiles WHERE id = " +
             std::to_string(ac));
  }

  // Migration 13: the data-parallel replicas folded into the profile (docs/data-parallel.md §3).
  CostProfile replicated = TwoRanks();
  replicated.data_parallel = 2;
  ZB_ASSERT_OK_AND_ASSIGN(int64_t dp, store.InsertCostProfile(job, "replicated", replicated));
  ZB_ASSERT_OK_AND_ASSIGN(loaded, store.LoadCostProfile(dp));
  EXPECT_EQ(loaded.data_parallel, 2);
  {
    RawDb raw(path_);
    EXPECT_TRUE(
        raw.Fails("UPDATE cost_profiles SET data_parallel = 0 WHERE id = " + std::to_string(dp)));
    raw.Exec("PRAGMA foreign_keys = ON; DELETE FROM cost_profiles WHERE id = " +
             std::to_string(dp));
  }

  // Migration 14: each stage's data-parallel work and when the ranks wait for reductions
  // (docs/data-parallel.md §5).
  CostProfile reducing = TwoRanks();
  reducing.stages[0].reduce = 900;
  reducing.stages[1].unshard = 400;
  reducing.stages[1].unsharded = 2.5e6;
  reducing.stages[0].reduced = 5e6;  // migration 15
  reducing.reduce_wait = ReduceWait::kStepEnd;
  ZB_ASSERT_OK_AND_ASSIGN(int64_t work, store.InsertCostProfile(job, "reducing", reducing));
  ZB_ASSERT_OK_AND_ASSIGN(loaded, store.LoadCostProfile(work));
  EXPECT_EQ(loaded, reducing);
  {
    RawDb raw(path_);
    const std::string where = " WHERE profile_id = " + std::to_string(work);
    EXPECT_TRUE(raw.Fails("UPDATE cost_profile_stages SET reduce_ns = -1" + where));
    EXPECT_TRUE(raw.Fails("UPDATE cost_profile_stages SET unsharded = -1" + where));
    EXPECT_TRUE(raw.Fails("UPDATE cost_profile_stages SET reduced = -1" + where));
    EXPECT_TRUE(raw.Fails("UPDATE cost_profiles SET reduce_wait = 'never' WHERE id = " +
                          std::to_string(work)));
    raw.Exec("PRAGMA foreign_keys = ON; DELETE FROM cost_profiles WHERE id = " +
             std::to_string(work));
  }

  CostProfile v = TwoRanks();
  v.layout = JobLayout{Placement::kV, 2};  // no class: known layout, unknown class
  ZB_ASSERT_OK_AND_ASSIGN(int64_t b, store.InsertCostProfile(job, "v", v));
  ZB_ASSERT_OK_AND_ASSIGN(loaded, store.LoadCostProfile(b));
  EXPECT_EQ(loaded, v);

  ZB_ASSERT_OK_AND_ASSIGN(int64_t c, store.InsertCostProfile(job, "plain", TwoRanks()));
  ZB_ASSERT_OK_AND_ASSIGN(loaded, store.LoadCostProfile(c));
  EXPECT_FALSE(loaded.layout.has_value());
  EXPECT_EQ(loaded, TwoRanks());

  CostProfile class_alone = TwoRanks();
  class_alone.schedule_class = "Schedule1F1B";
  auto refused = store.InsertCostProfile(job, "class alone", class_alone);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("a schedule class without a layout"), std::string::npos)
      << refused.status().message();
  RawDb raw(path_);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profiles"), 3);  // nothing of the refused one
  EXPECT_EQ(raw.Text("SELECT layout_placement || ':' || layout_stages_per_rank FROM cost_profiles"
                     " WHERE id = " +
                     std::to_string(a)),
            "loop:2");
}

TEST_F(StoreLayoutTest, ColumnsRefuseWhatTheTypesCannotHold) {
  { ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_)); }
  RawDb raw(path_);
  raw.Exec(
      "INSERT INTO clusters (id, name, schema_version) VALUES (1, 'c', 8);"
      "INSERT INTO jobs (id, cluster_id, name, schema_version) VALUES (1, 1, 'j', 8);");
  const std::string insert =
      "INSERT INTO cost_profiles (job_id, name, comm_ns, schema_version, layout_placement,"
      " layout_stages_per_rank, schedule_class) VALUES (1, 'p', 0, 8, ";
  EXPECT_TRUE(raw.Fails(insert + "'zigzag', 1, NULL)"));
  EXPECT_TRUE(raw.Fails(insert + "'loop', NULL, NULL)"));  // both or neither
  EXPECT_TRUE(raw.Fails(insert + "NULL, 2, NULL)"));
  EXPECT_TRUE(raw.Fails(insert + "'loop', 0, NULL)"));
  EXPECT_TRUE(raw.Fails(insert + "NULL, NULL, 'Schedule1F1B')"));  // a class needs a layout
  EXPECT_TRUE(raw.Fails(insert + "'loop', 1, '')"));
  EXPECT_FALSE(raw.Fails(insert + "'v', 2, 'ScheduleZBVZeroBubble')"));
  EXPECT_FALSE(raw.Fails(insert + "NULL, NULL, NULL)"));
}

TEST_F(StoreLayoutTest, VersionSevenStoreMigratesKeepingItsProfiles) {
  {
    RawDb raw(path_);
    raw.Exec(SchemaFile("store.sql"));
    for (const char* step : {"002_timeline_ops_comm.sql", "003_runs_and_measured_costs.sql",
                             "004_timeline_op_iteration.sql", "005_fused_backward_cost.sql",
                             "006_frontiers.sql", "007_cluster_hops.sql"}) {
      raw.Exec(SchemaFile(std::string("migrations/") + step));
    }
    raw.Exec("PRAGMA user_version = 7; PRAGMA application_id = 2053270388;");
    raw.Exec(
        "INSERT INTO clusters (id, name, schema_version) VALUES (1, 'c', 7);"
        "INSERT INTO jobs (id, cluster_id, name, schema_version) VALUES (1, 1, 'j', 7);"
        "INSERT INTO cost_profiles (id, job_id, name, comm_ns, schema_version)"
        " VALUES (1, 1, 'old', 100, 7);"
        "INSERT INTO cost_profile_stages (profile_id, stage, f_ns, b_ns, w_ns, m_b, m_w, bw_ns)"
        " VALUES (1, 0, 1000, 1100, 700, 4.0, 1.5, 0);");
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
  ZB_ASSERT_OK_AND_ASSIGN(CostProfile old, store.LoadCostProfile(1));
  EXPECT_FALSE(old.layout.has_value());
  EXPECT_EQ(old.schedule_class, "");
  EXPECT_EQ(old.data_parallel, 0);  // not known
  ASSERT_EQ(old.num_stages(), 1);
  EXPECT_EQ(old.stages[0].f, 1000);
  RawDb raw(path_);
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
}

}  // namespace
}  // namespace zb
