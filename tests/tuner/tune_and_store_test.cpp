// SPDX-License-Identifier: Apache-2.0
// zb::tuner::TuneAndStore called as the runtime and the adapters call it, without the CLI: the
// comparison rows, the chosen schedule, what lands in the store, and nothing fitting the cap.
#include "zbkit/tuner/tune_and_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/store.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/frontier.h"

namespace zb::tuner {
namespace {

namespace fs = std::filesystem;

class TuneAndStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/zbkit_tune_and_store_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    auto costs = ReadCostsFile(std::string(ZBKIT_TEST_DATA_DIR) + "/costs/hetero4.json");
    ASSERT_TRUE(costs.ok()) << costs.status().message();
    request_.costs = *costs;
    request_.costs_name = "hetero4.json";
    request_.microbatches = 8;
    auto limit = ParseMemoryLimit("1.5x");
    ASSERT_TRUE(limit.ok());
    request_.options.memory_limit = *limit;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
  TuneRequest request_;
};

TEST_F(TuneAndStoreTest, RowsChosenScheduleAndStoreAgree) {
  request_.store = StoreTarget{dir_ + "/zb.db", "lab", "hetero"};
  auto outcome = TuneAndStore(request_);
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_EQ(outcome->ranks, 4);
  EXPECT_EQ(outcome->microbatches, 8);
  EXPECT_EQ(outcome->memory_limit, "1.5x");
  ASSERT_EQ(outcome->rows.size(), Families().size());
  for (size_t i = 0; i < outcome->rows.size(); ++i) {
    EXPECT_EQ(outcome->rows[i].family, Families()[i].name);
    ASSERT_TRUE(outcome->rows[i].placement.has_value());
    EXPECT_EQ(*outcome->rows[i].placement, Families()[i].placement);
  }

  ASSERT_GE(outcome->best, 0);
  const ComparisonRow& best = outcome->rows[outcome->best];
  EXPECT_TRUE(best.status.ok());
  EXPECT_TRUE(best.fits);
  for (const ComparisonRow& row : outcome->rows) {
    if (row.status.ok() && row.fits) {
      EXPECT_GE(row.makespan, best.makespan) << row.family;
    }
    if (row.status.ok()) {
      EXPECT_GE(row.makespan, row.lower_bound) << row.family;
    }
  }
  ASSERT_TRUE(outcome->chosen.has_value());
  EXPECT_EQ(outcome->chosen->family, best.family);
  ASSERT_TRUE(outcome->chosen->predicted.has_value());
  EXPECT_EQ(outcome->chosen->predicted->makespan, best.makespan);
  ASSERT_TRUE(outcome->chosen_cap.has_value());
  EXPECT_GT(*outcome->chosen_cap, 0);

  ASSERT_TRUE(outcome->schedule_id.has_value());
  ASSERT_TRUE(outcome->cost_profile_id.has_value());
  auto store = Store::Open(dir_ + "/zb.db", Store::Mode::kReadOnly);
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto stored = store->LoadSchedule(*outcome->schedule_id);
  ASSERT_TRUE(stored.ok()) << stored.status().message();
  EXPECT_EQ(stored->family, best.family);
  EXPECT_EQ(stored->programs, outcome->chosen->programs);
  auto infos = store->ListSchedules();
  ASSERT_TRUE(infos.ok());
  ASSERT_EQ(infos->size(), 1u);
  EXPECT_EQ((*infos)[0].cluster, "lab");
  EXPECT_EQ((*infos)[0].job, "hetero");
  ASSERT_TRUE((*infos)[0].cap.has_value());
  EXPECT_DOUBLE_EQ(*(*infos)[0].cap, *outcome->chosen_cap);
  // Every rank's own cap, as the tuner judged the chosen schedule (not the largest for all).
  EXPECT_EQ((*infos)[0].rank_caps, best.caps);
  auto costs = store->LoadCostProfile(*outcome->cost_profile_id);
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  EXPECT_EQ(*costs, request_.costs);
}

// One meaning of a cap (memory_limit.h): Nx is N x 1F1B's peak on its fullest rank, the same
// budget on every rank and for every family, whatever its placement and chunking.
TEST_F(TuneAndStoreTest, ARelativeCapIsOneBudgetForEveryRankAndPlacement) {
  // hetero4: 1F1B holds 4 x 2.4 on rank 0, 3 x 2.0, 2 x 2.0, 1 x 2.2 on the others.
  const std::vector<double> caps = request_.options.memory_limit.RankCaps(request_.costs);
  ASSERT_EQ(caps.size(), 4u);
  for (double cap : caps)
    EXPECT_DOUBLE_EQ(cap, 1.5 * 4 * 2.4);
  auto outcome = TuneAndCompare(request_);
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  for (const ComparisonRow& row : outcome->rows) {
    EXPECT_EQ(row.caps, caps) << row.family;
  }
  // The heaviest activations need not be on rank 0: here rank 3 would bind under 1F1B.
  CostProfile late = request_.costs;
  late.stages[3].m_b = 20;
  late.stages[3].m_w = 5;
  EXPECT_DOUBLE_EQ(ParseMemoryLimit("1x")->RankCaps(late)[0], 20);
  EXPECT_DOUBLE_EQ(ParseMemoryLimit("512")->RankCaps(late)[2], 512);
}

TEST_F(TuneAndStoreTest, WithoutAStoreNothingIsRecorded) {
  auto outcome = TuneAndStore(request_);
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_GE(outcome->best, 0);
  EXPECT_FALSE(outcome->schedule_id.has_value());
  EXPECT_FALSE(outcome->cost_profile_id.has_value());
  EXPECT_TRUE(fs::is_empty(dir_));
}

// `zb tune --exact` through the library: the chosen order is certified before it is stored, and
// what is stored is what the certification kept (never worse than the tuner's choice).
TEST_F(TuneAndStoreTest, CertificationRunsBeforeStoringAndKeepsTheBetterOrder) {
  request_.microbatches = 4;
  request_.options.family = "zb-h1";
  const auto uncertified = TuneAndStore(request_);
  ASSERT_TRUE(uncertified.ok()) << uncertified.status().message();
  ASSERT_TRUE(uncertified->chosen.has_value());
  request_.exact = ExactOptions{};
  request_.exact->time_limit_s = 20;
  request_.store = StoreTarget{dir_ + "/zb.db", "lab", "hetero"};
  auto outcome = TuneAndStore(request_);
  if (!ExactSolverAvailable()) {
    std::printf("built without Z3: certification must be refused, and nothing stored\n");
    ASSERT_FALSE(outcome.ok());
    EXPECT_EQ(outcome.status().code(), ErrorCode::kUsage);
    EXPECT_FALSE(fs::exists(dir_ + "/zb.db"));
    return;
  }
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  ASSERT_TRUE(outcome->exact.has_value());
  EXPECT_LE(outcome->exact->lower, outcome->exact->upper);
  const TimeNs chosen = outcome->chosen->predicted->makespan;
  EXPECT_EQ(chosen, std::min(outcome->exact->upper, uncertified->chosen->predicted->makespan));
  EXPECT_EQ(outcome->chosen->family, "zb-h1");
  ASSERT_TRUE(outcome->schedule_id.has_value());
  auto store = Store::Open(dir_ + "/zb.db");
  ASSERT_TRUE(store.ok());
  auto stored = store->LoadSchedule(*outcome->schedule_id);
  ASSERT_TRUE(stored.ok()) << stored.status().message();
  ASSERT_TRUE(stored->predicted.has_value());
  EXPECT_EQ(stored->predicted->makespan, chosen);
}

TEST_F(TuneAndStoreTest, NothingFittingIsAnOutcomeNotAnErrorAndStoresNothing) {
  request_.options.memory_limit = *ParseMemoryLimit("0.1x");
  request_.store = StoreTarget{dir_ + "/zb.db", "local", "hetero"};
  auto outcome = TuneAndStore(request_);
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_EQ(outcome->best, -1);
  EXPECT_FALSE(outcome->chosen.has_value());
  EXPECT_FALSE(outcome->schedule_id.has_value());
  EXPECT_FALSE(fs::exists(dir_ + "/zb.db"));
  for (const ComparisonRow& row : outcome->rows)
    EXPECT_FALSE(row.status.ok() && row.fits) << row.family;
}

TEST_F(TuneAndStoreTest, BadRequestsFailWithTheirReason) {
  request_.options.family = "no-such-family";
  auto unknown = TuneAndStore(request_);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kUsage);
  EXPECT_NE(unknown.status().message().find("no-such-family"), std::string::npos)
      << unknown.status().message();

  request_.options.family = "best";
  request_.microbatches = 0;
  auto no_microbatches = TuneAndStore(request_);
  ASSERT_FALSE(no_microbatches.ok());
  EXPECT_EQ(no_microbatches.status().code(), ErrorCode::kUsage);

  request_.microbatches = 8;
  request_.store = StoreTarget{dir_ + "/no/such/dir/zb.db", "local", "hetero"};
  auto unwritable = TuneAndStore(request_);
  EXPECT_FALSE(unwritable.ok());
}

// hetero4, m = 8, 1.5x on the loop placement: 1F1B-I has the smallest makespan, but ZB-auto's
// last rank starts late and ends late, so its span (what overlapping iterations run at) is the
// smallest. The two objectives must pick different schedules here, each the minimum of its own.
TEST_F(TuneAndStoreTest, TheObjectivePicksTheSmallestMakespanOrTheSmallestSpan) {
  request_.options.placement = Placement::kLoop;
  auto by_makespan = TuneAndCompare(request_);
  ASSERT_TRUE(by_makespan.ok()) << by_makespan.status().message();
  EXPECT_EQ(by_makespan->objective, Objective::kMakespan);  // the default
  request_.options.objective = Objective::kSpan;
  auto by_span = TuneAndCompare(request_);
  ASSERT_TRUE(by_span.ok()) << by_span.status().message();
  EXPECT_EQ(by_span->objective, Objective::kSpan);

  ASSERT_GE(by_makespan->best, 0);
  ASSERT_GE(by_span->best, 0);
  const ComparisonRow& fastest = by_makespan->rows[by_makespan->best];
  const ComparisonRow& shortest = by_span->rows[by_span->best];
  EXPECT_NE(fastest.family, shortest.family) << "the instance no longer tells them apart";
  EXPECT_LT(shortest.span, fastest.span);
  EXPECT_GT(shortest.makespan, fastest.makespan);
  // Same candidates, only the choice differs.
  ASSERT_EQ(by_makespan->rows.size(), by_span->rows.size());
  for (size_t i = 0; i < by_span->rows.size(); ++i) {
    const ComparisonRow& row = by_span->rows[i];
    EXPECT_EQ(row.family, by_makespan->rows[i].family);
    if (!row.status.ok() || !row.fits) continue;
    EXPECT_GE(row.makespan, fastest.makespan) << row.family;
    EXPECT_GE(row.span, shortest.span) << row.family;
    if (row.span == shortest.span && static_cast<int>(i) != by_span->best) {
      EXPECT_GE(row.makespan, shortest.makespan) << row.family << ": ties go to the makespan";
    }
  }
  ASSERT_TRUE(by_span->chosen.has_value());
  EXPECT_EQ(by_span->chosen->family, shortest.family);
  ASSERT_TRUE(by_span->chosen->predicted.has_value());
  EXPECT_EQ(by_span->chosen->predicted->span, shortest.span);
}

// uniform4, m = 8, no cap, loop: ZB-H2 and ZB-auto tie on makespan and the earlier in Families()
// order wins, as it always has; by span ZB-auto is shorter.
TEST_F(TuneAndStoreTest, AMakespanTieKeepsFamiliesOrderUnlessTheSpanDiffers) {
  auto costs = ReadCostsFile(std::string(ZBKIT_TEST_DATA_DIR) + "/costs/uniform4.json");
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  request_.costs = *costs;
  request_.options.memory_limit = *ParseMemoryLimit("none");
  request_.options.placement = Placement::kLoop;
  auto by_makespan = TuneAndCompare(request_);
  ASSERT_TRUE(by_makespan.ok()) << by_makespan.status().message();
  ASSERT_GE(by_makespan->best, 0);
  EXPECT_EQ(by_makespan->rows[by_makespan->best].family, "zb-h2");
  request_.options.objective = Objective::kSpan;
  auto by_span = TuneAndCompare(request_);
  ASSERT_TRUE(by_span.ok()) << by_span.status().message();
  ASSERT_GE(by_span->best, 0);
  EXPECT_EQ(by_span->rows[by_span->best].family, "zb-auto");
  EXPECT_EQ(by_span->rows[by_span->best].makespan, by_makespan->rows[by_makespan->best].makespan);
}

TEST(ObjectiveTest, NamesRoundTrip) {
  for (Objective objective : {Objective::kMakespan, Objective::kSpan}) {
    EXPECT_EQ(ParseObjective(ObjectiveName(objective)), objective);
  }
  EXPECT_STREQ(ObjectiveName(Objective::kSpan), "span");
  EXPECT_FALSE(ParseObjective("paper").has_value());
  EXPECT_FALSE(ParseObjective("").has_value());
}

// The layout advice and the frontier's area, library calls `zb tune` formats: the other layout's
// fastest fitting row, by the objective, only when faster; the trapezoids of the fitting points.
TEST(TuneAdviceTest, LayoutGainsAndFrontierArea) {
  TuneOutcome outcome;
  outcome.objective = Objective::kSpan;
  auto row = [](const char* family, Placement placement, int chunks, TimeNs span, bool other) {
    ComparisonRow r;
    r.family = family;
    r.placement = placement;
    r.chunks = chunks;
    r.span = span;
    r.makespan = 1000 - span;  // the other figure would rank them the other way round
    r.fits = true;
    r.other_layout = other;
    return r;
  };
  outcome.rows = {
      row("1f1b", Placement::kLoop, 1, 100, false), row("zb-v", Placement::kV, 2, 80, true),
      row("v-half", Placement::kV, 2, 90, true), row("1f1b-i", Placement::kLoop, 2, 120, true)};
  outcome.best = 0;
  const std::vector<LayoutGain> gains = LayoutGains(outcome);
  ASSERT_EQ(gains.size(), 1u);
  EXPECT_EQ(gains[0].row->family, "zb-v");
  EXPECT_EQ(gains[0].layout.placement, Placement::kV);
  EXPECT_DOUBLE_EQ(gains[0].gain, 0.2);
  outcome.best = -1;
  EXPECT_TRUE(LayoutGains(outcome).empty());

  std::vector<FrontierPoint> points(4);
  const double factors[] = {1, 2, 3, 4};
  const double rates[] = {0.4, 0.2, 0.1, 0.1};
  for (int i = 0; i < 4; ++i) {
    points[i].method = "search";
    points[i].cap_factor = factors[i];
    points[i].paper_bubble_rate = rates[i];
    points[i].fits = true;
  }
  bool complete = false;
  EXPECT_DOUBLE_EQ(FrontierArea(points, "search", complete), 0.3 + 0.15 + 0.1);
  EXPECT_TRUE(complete);
  points[1].fits = false;
  EXPECT_DOUBLE_EQ(FrontierArea(points, "search", complete), 0.1);
  EXPECT_FALSE(complete);
  EXPECT_DOUBLE_EQ(FrontierArea(points, "heuristic", complete), 0);
}

}  // namespace
}  // namespace zb::tuner
