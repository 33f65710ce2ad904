// SPDX-License-Identifier: Apache-2.0
// TimelineIndex against the simulator on real schedules: the figures the GUI computes from a
// predicted timeline must equal the schedule's prediction exactly, and every bubble of a predicted
// timeline must be explained by WaitedFor. (In tests/tuner because it needs zbkit::tuner; the
// index itself is tested in tests/schemas/timeline_index_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "zbkit/schemas/timeline_index.h"
#include "zbkit/schemas/types.h"
#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/simulator.h"

namespace zb::tuner {
namespace {

// Per-rank costs that differ from rank to rank, with a hop latency and non-integral memory, so
// that no figure comes out right by symmetry.
CostProfile UnevenCosts(int ranks, TimeNs comm) {
  CostProfile costs;
  costs.comm = comm;
  for (int r = 0; r < ranks; ++r) {
    costs.stages.push_back({1000 + 37 * r, 1100 + 53 * r, 700 + 11 * r, 3.25 + 0.1 * r, 1.125});
  }
  return costs;
}

struct Case {
  std::string family;
  int ranks;
  int microbatches;
  TimeNs comm;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const FamilyInfo& family : Families()) {
    for (auto [p, m] : {std::pair{2, 4}, std::pair{4, 8}, std::pair{4, 12}, std::pair{3, 7}}) {
      for (TimeNs comm : {0, 40}) {
        cases.push_back({std::string(family.name), p, m, comm});
      }
    }
  }
  return cases;
}

// The op a rank-lane op depends on, by the simulator's rules, or false if it has none.
bool ExpectedDependency(const TimelineLane& lane, size_t i, int num_stages, OpKind* kind,
                        int* stage) {
  const int s = lane.stage_of[i];
  switch (lane.kind_of[i]) {
    case OpKind::kF:
      if (s == 0) return false;
      *kind = OpKind::kF;
      *stage = s - 1;
      return true;
    case OpKind::kB:
    case OpKind::kBW:
      *kind = s == num_stages - 1 ? OpKind::kF : OpKind::kB;  // B stands for B or BW below
      *stage = s == num_stages - 1 ? s : s + 1;
      return true;
    case OpKind::kW:
      *kind = OpKind::kB;
      *stage = s;
      return true;
    case OpKind::kComm:
      return false;
  }
  return false;
}

TEST(TimelineIndexFiguresTest, FiguresOfAPredictedTimelineEqualTheSimulatorsPrediction) {
  int checked = 0;
  std::vector<std::string> families_checked;
  for (const Case& c : Cases()) {
    const FamilyRequest request{UnevenCosts(c.ranks, c.comm), c.microbatches, 2, {}};
    auto generated = GenerateFamily(c.family, request);
    if (!generated.ok()) continue;  // an instance the family cannot schedule (m % p, m < 2p, ...)
    Schedule schedule = std::move(generated).value();
    ASSERT_TRUE(ValidateSchedule(schedule).ok()) << c.family;
    ASSERT_TRUE(Simulate(schedule).ok()) << c.family;
    ASSERT_TRUE(schedule.predicted.has_value());
    const std::string what = c.family + " p=" + std::to_string(c.ranks) +
                             " m=" + std::to_string(c.microbatches) +
                             " comm=" + std::to_string(c.comm);

    const TimelineIndex index(TimelineFromSchedule(schedule), schedule.costs.comm,
                              schedule.num_stages());
    const Prediction figures = index.Figures();
    const Prediction& predicted = *schedule.predicted;
    EXPECT_EQ(figures.makespan, predicted.makespan) << what;
    EXPECT_EQ(figures.span, predicted.span) << what;
    EXPECT_EQ(figures.bubble_rate, predicted.bubble_rate) << what;
    EXPECT_EQ(figures.paper_bubble_rate, predicted.paper_bubble_rate) << what;
    EXPECT_EQ(figures.peak_memory, predicted.peak_memory) << what;
    EXPECT_TRUE(figures == predicted) << what;
    EXPECT_EQ(index.num_ranks(), schedule.ranks) << what;
    EXPECT_EQ(index.num_stages(), schedule.num_stages()) << what;
    for (int r = 0; r < schedule.ranks; ++r) {
      EXPECT_EQ(index.PeakMemory(r), predicted.peak_memory[r]) << what;
    }
    if (families_checked.empty() || families_checked.back() != c.family) {
      families_checked.push_back(c.family);
    }
    ++checked;
  }
  EXPECT_GT(checked, 40);
  for (const char* family : {"1f1b", "zb-h1", "zb-h2", "zb-auto", "zb-v", "v-half", "v-min"}) {
    EXPECT_NE(std::find(families_checked.begin(), families_checked.end(), family),
              families_checked.end())
        << family << " produced no schedule";
  }
}

TEST(TimelineIndexFiguresTest, WaitedForExplainsEveryBubbleOfASimulatedSchedule) {
  int bubbles = 0;
  for (const Case& c : Cases()) {
    const FamilyRequest request{UnevenCosts(c.ranks, c.comm), c.microbatches, 2, {}};
    auto generated = GenerateFamily(c.family, request);
    if (!generated.ok()) continue;
    Schedule schedule = std::move(generated).value();
    ASSERT_TRUE(Simulate(schedule).ok()) << c.family;
    const std::string what = c.family + " p=" + std::to_string(c.ranks) +
                             " m=" + std::to_string(c.microbatches) +
                             " comm=" + std::to_string(c.comm);
    const TimelineIndex index(TimelineFromSchedule(schedule), schedule.costs.comm,
                              schedule.num_stages());
    for (int r = 0; r < index.num_ranks(); ++r) {
      const int lane_index = index.RankLane(r);
      const TimelineLane& lane = index.lane(lane_index);
      for (size_t i = 0; i < lane.size(); ++i) {
        const TimeNs previous_end = i == 0 ? 0 : lane.end[i - 1];
        const auto cause = index.WaitedFor(lane_index, i);
        if (lane.start[i] <= previous_end) {
          EXPECT_FALSE(cause.has_value()) << what << ": rank " << r << " op " << i;
          continue;
        }
        ++bubbles;
        ASSERT_TRUE(cause.has_value())
            << what << ": rank " << r << " op " << i << " " << OpKindName(lane.kind_of[i]) << "("
            << lane.stage_of[i] << ", " << lane.microbatch[i] << ") at " << lane.start[i]
            << " after idle time, but no cause";
        // The cause is the op's dependency and ended exactly one hop (or nothing) before it.
        const TimelineLane& dep_lane = index.lane(cause->lane);
        EXPECT_EQ(dep_lane.kind, LaneKind::kRank);
        OpKind kind = OpKind::kF;
        int stage = 0;
        ASSERT_TRUE(ExpectedDependency(lane, i, index.num_stages(), &kind, &stage)) << what;
        const OpKind dep_kind = dep_lane.kind_of[cause->index];
        if (kind == OpKind::kB) {
          EXPECT_TRUE(dep_kind == OpKind::kB || dep_kind == OpKind::kBW) << what;
        } else {
          EXPECT_EQ(dep_kind, kind) << what;
        }
        EXPECT_EQ(dep_lane.stage_of[cause->index], stage) << what;
        EXPECT_EQ(dep_lane.microbatch[cause->index], lane.microbatch[i]) << what;
        const TimeNs hop = dep_lane.rank == r ? 0 : schedule.costs.comm;
        EXPECT_EQ(dep_lane.end[cause->index] + hop, lane.start[i]) << what;
      }
    }
  }
  EXPECT_GT(bubbles, 100);
}

}  // namespace
}  // namespace zb::tuner
