// SPDX-License-Identifier: Apache-2.0
// The GUI's model (zbkit/gui/store_model.h) without Qt or a display: a real store written by the
// real tuner (as `zb tune --store` writes it), listed and loaded as zbview shows it.
#include "zbkit/gui/store_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "assert_ok.h"
#include "four_stage_costs.h"
#include "temp_dir.h"
#include "zbkit/schemas/store.h"
#include "zbkit/tuner/memory_limit.h"
#include "zbkit/tuner/simulator.h"
#include "zbkit/tuner/tune.h"

namespace zb::gui {
namespace {

using testing_support::FourStageCosts;

class StoreModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Path("tuned.db");
    ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
    ZB_ASSERT_OK_AND_ASSIGN(int64_t cluster, store.EnsureCluster({"test-cluster", "", "", "", ""}));
    ZB_ASSERT_OK_AND_ASSIGN(job_, store.EnsureJob(cluster, "gpt-4stage"));
    for (const char* family : {"1f1b", "zb-h1"}) {
      tuner::TuneOptions options;
      options.family = family;
      options.runtime = tuner::ReplayRuntime::kZbkit;
      // Each rank's own budget, as `zb partition` sets them (device memory less the rank's state).
      options.memory_limit = tuner::MemoryLimit::PerRank({900, 850, 800, 700});
      ZB_ASSERT_OK_AND_ASSIGN(tuner::TuneResult result, tuner::Tune(FourStageCosts(), 8, options));
      ASSERT_GE(result.best, 0) << family;
      const tuner::Candidate& best = result.candidates[static_cast<size_t>(result.best)];
      ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.InsertSchedule(job_, best.schedule, best.caps));
      ids_.push_back(id);
      caps_.push_back(best.caps);
      // created_at has millisecond resolution: keep "most recent" unambiguous.
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
  }

  testing_support::TempDir dir_;
  std::string path_;
  int64_t job_ = 0;
  std::vector<int64_t> ids_;
  std::vector<std::vector<double>> caps_;
};

TEST(ItemSpec, NamesAndCommandLineSpellings) {
  EXPECT_EQ(ItemName({ItemKind::kSchedule, 3}), "schedule 3");
  EXPECT_EQ(ItemName({ItemKind::kCostProfile, 2}), "cost profile 2");
  EXPECT_EQ(ParseItemSpec("3"), (ItemRef{ItemKind::kSchedule, 3}));
  EXPECT_EQ(ParseItemSpec(" S12 "), (ItemRef{ItemKind::kSchedule, 12}));
  EXPECT_EQ(ParseItemSpec("timeline:7"), (ItemRef{ItemKind::kTimeline, 7}));
  EXPECT_EQ(ParseItemSpec("f4"), (ItemRef{ItemKind::kFrontier, 4}));
  for (const char* bad : {"", "x", "0", "-1", "t", "3.5", "+3", "s-2", "s 2", "12a"}) {
    EXPECT_FALSE(ParseItemSpec(bad).has_value()) << bad;
  }
}

TEST(ReadListing, BrokenFilesAreOneLineNamingThePath) {
  testing_support::TempDir dir;
  const std::string empty = dir.Path("zero.db");
  std::ofstream(empty).close();
  for (const std::string& path : {empty, dir.Path("missing.db")}) {
    auto listing = ReadListing(path);
    ASSERT_FALSE(listing.ok()) << path;
    EXPECT_NE(listing.status().message().find(path), std::string::npos);
    EXPECT_EQ(listing.status().message().find('\n'), std::string::npos);
  }
  EXPECT_NE(ReadListing(empty).status().message().find("the file is empty (0 bytes)"),
            std::string::npos);
}

TEST_F(StoreModelTest, ListsTheStoreAndPicksTheMostRecent) {
  ZB_ASSERT_OK_AND_ASSIGN(StoreListing listing, ReadListing(path_));
  ASSERT_EQ(listing.schedules.size(), 2u);
  EXPECT_EQ(listing.timelines.size(), 2u);  // each schedule's prediction
  EXPECT_FALSE(listing.empty());
  EXPECT_TRUE(listing.Contains({ItemKind::kSchedule, ids_[1]}));
  EXPECT_FALSE(listing.Contains({ItemKind::kSchedule, 999}));
  // A prediction stands for its schedule: the most recent item is the last schedule tuned.
  EXPECT_EQ(listing.MostRecent(), (ItemRef{ItemKind::kSchedule, ids_[1]}));
  // A tuned profile counts in the profile's own units, not bytes.
  EXPECT_EQ(listing.MemoryUnitOf("test-cluster", "gpt-4stage"), MemoryUnit::kProfileUnits);
}

TEST_F(StoreModelTest, AScheduleLoadsWithEveryRanksOwnCap) {
  ZB_ASSERT_OK_AND_ASSIGN(StoreListing listing, ReadListing(path_));
  std::vector<int> percents;
  ZB_ASSERT_OK_AND_ASSIGN(LoadedItem item, LoadItem(listing, {ItemKind::kSchedule, ids_[1]},
                                                    [&](int percent, const std::string&) {
                                                      percents.push_back(percent);
                                                      return true;
                                                    }));
  const ScheduleInfo& info = *listing.FindSchedule(ids_[1]);
  ASSERT_NE(item.index, nullptr);
  EXPECT_EQ(item.index->num_ops(), info.num_ops);
  ASSERT_TRUE(item.figures.has_value());
  EXPECT_EQ(item.figures->makespan, info.predicted.makespan);
  EXPECT_EQ(item.title, "schedule " + std::to_string(ids_[1]) + ": zb-h1, p=4 m=8");
  EXPECT_EQ(item.context, "test-cluster/gpt-4stage");
  // Each rank's cap as the tuner judged it, not the largest one for every rank.
  EXPECT_EQ(item.caps, caps_[1]);
  EXPECT_GT(*std::max_element(item.caps.begin(), item.caps.end()),
            *std::min_element(item.caps.begin(), item.caps.end()));
  ASSERT_TRUE(item.TOverLb().has_value());
  EXPECT_GE(*item.TOverLb(), 1.0);
  ASSERT_FALSE(item.bubbles.empty());
  for (size_t i = 1; i < item.bubbles.size(); ++i) {
    EXPECT_GE(item.bubbles[i - 1].end - item.bubbles[i - 1].start,
              item.bubbles[i].end - item.bubbles[i].start);
  }
  EXPECT_TRUE(std::is_sorted(percents.begin(), percents.end()));
  EXPECT_EQ(percents.back(), 100);
}

TEST_F(StoreModelTest, AScheduleStoredWithoutTimesIsSimulated) {
  int64_t id = 0;
  Schedule simulated;
  {
    ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
    ZB_ASSERT_OK_AND_ASSIGN(Schedule schedule, store.LoadSchedule(ids_[0]));
    simulated = schedule;
    ZB_ASSERT_OK(tuner::Simulate(simulated));
    schedule.predicted.reset();
    for (RankProgram& program : schedule.programs) {
      for (Op& op : program.ops)
        op.start = op.end = 0;
    }
    ZB_ASSERT_OK_AND_ASSIGN(id, store.InsertSchedule(job_, schedule));
  }
  ZB_ASSERT_OK_AND_ASSIGN(StoreListing listing, ReadListing(path_));
  EXPECT_FALSE(listing.FindSchedule(id)->cap.has_value());
  ZB_ASSERT_OK_AND_ASSIGN(LoadedItem item, LoadItem(listing, {ItemKind::kSchedule, id}));
  ASSERT_TRUE(item.figures.has_value());
  EXPECT_EQ(item.figures->makespan, simulated.predicted->makespan);
  EXPECT_TRUE(item.caps.empty());  // stored without a cap: none is made up
}

TEST_F(StoreModelTest, UnknownItemsAndCancelledLoads) {
  ZB_ASSERT_OK_AND_ASSIGN(StoreListing listing, ReadListing(path_));
  auto missing = LoadItem(listing, {ItemKind::kSchedule, 999});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(missing.status().message(), path_ + ": no schedule 999 in the store");
  EXPECT_FALSE(IsCancelledLoad(missing.status()));
  auto cancelled = LoadItem(listing, {ItemKind::kSchedule, ids_[0]},
                            [](int percent, const std::string&) { return percent < 50; });
  ASSERT_FALSE(cancelled.ok());
  EXPECT_TRUE(IsCancelledLoad(cancelled.status()));
}

}  // namespace
}  // namespace zb::gui
