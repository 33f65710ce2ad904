// SPDX-License-Identifier: Apache-2.0
// Tests of cost profiles in the store (store_costs.cpp): round trips, listing, refusal of bad ones.
#include "store_test_support.h"

namespace zb {
namespace {

using namespace store_testing;
using testing_support::RawDb;
using testing_support::ReadBytes;

TEST_F(StoreTest, CostProfileRoundTripsAndIsListed) {
  const std::string path = PathOf("store.db");
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t cluster, store.EnsureCluster(Cluster("node-a")));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t job, store.EnsureJob(cluster, "gpt"));
  CostProfile costs = MakeVSchedule().costs;
  costs.stages[2].bw =
      123'456;  // a measured fused backward on one stage, "not measured" on the rest
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.InsertCostProfile(job, "measured", costs));
  ZB_ASSERT_OK_AND_ASSIGN(CostProfile loaded, store.LoadCostProfile(id));
  EXPECT_EQ(loaded, costs);
  EXPECT_EQ(loaded.stages[1].m_b, 0.1);  // bit-exact doubles, not "close"
  EXPECT_EQ(loaded.stages[2].bw, 123'456);
  EXPECT_EQ(loaded.stages[1].bw, 0);

  ZB_ASSERT_OK_AND_ASSIGN(auto infos, store.ListCostProfiles());
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].id, id);
  EXPECT_EQ(infos[0].cluster, "node-a");
  EXPECT_EQ(infos[0].job, "gpt");
  EXPECT_EQ(infos[0].name, "measured");
  EXPECT_EQ(infos[0].num_stages, 4);
  EXPECT_TRUE(std::regex_match(infos[0].created_at,
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << infos[0].created_at;

  auto missing = store.LoadCostProfile(id + 100);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);

  auto no_job = store.InsertCostProfile(job + 100, "x", costs);
  ASSERT_FALSE(no_job.ok());
  EXPECT_EQ(no_job.status().code(), ErrorCode::kNotFound);
}

TEST_F(StoreTest, NegativeCostIsRejectedWithoutLeavingAProfile) {
  const std::string path = PathOf("store.db");
  int64_t job = 0;
  MakeStoreWithJob(path, &job);
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
  CostProfile costs = MakeVSchedule().costs;
  costs.stages.back().w = -1;  // the last stage is wrong
  auto result = store.InsertCostProfile(job, "broken", costs);
  ASSERT_FALSE(result.ok());
  // The store refuses what ValidateCostProfile (and so `zb costs export`) refuses, by its rule.
  EXPECT_EQ(result.status().code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(IsOneLine(result.status().message()));
  EXPECT_EQ(result.status().message(), path + ": insert cost profile: stages[3].W: must be >= 0");
  // A forward of 0 (a stage nothing measured) is refused the same way.
  costs = MakeVSchedule().costs;
  costs.stages[0].f = 0;
  auto no_forward = store.InsertCostProfile(job, "empty stage", costs);
  ASSERT_FALSE(no_forward.ok());
  EXPECT_EQ(no_forward.status().message(),
            path + ": insert cost profile: stages[0].F: must be > 0");
  RawDb raw(path);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profiles"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profile_stages"), 0);
}

}  // namespace
}  // namespace zb
