// SPDX-License-Identifier: Apache-2.0
// The exact solver's precedence graph and lower bound build and hold without Z3
// (tuner/src/exact_graph.h): on random instances every family's simulated figure is at least the
// graph's bound, and the graph of a valid schedule has no cycle.
#include "exact_graph.h"

#include <gtest/gtest.h>

#include <cmath>

#include "zbkit/tuner/families.h"
#include "zbkit/tuner/memory_limit.h"
#include "zbkit/tuner/search_bench.h"
#include "zbkit/tuner/simulator.h"

namespace zb::tuner {
namespace {

TEST(ExactGraphTest, TheBoundNeverExceedsAFamilysSimulatedFigure) {
  int checked = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const CostProfile costs = RandomUnevenProfile(seed, 3);
    const std::vector<double> caps = MemoryLimit{MemoryLimit::Kind::kRelative, 2}.RankCaps(costs);
    for (const FamilyInfo& family : Families()) {
      auto schedule = GenerateFamily(family.name, FamilyRequest{costs, 6, 2, caps});
      if (!schedule.ok() || !Simulate(*schedule).ok()) continue;
      auto graph = exact_graph::BuildGraph(*schedule, caps);
      ASSERT_TRUE(graph.ok()) << family.name << ": " << graph.status().message();
      if (graph->infeasible) continue;  // the caps force a cycle: nothing to bound
      for (Objective objective : {Objective::kMakespan, Objective::kSpan}) {
        const int64_t bound = exact_graph::LowerBound(*graph, objective);
        const TimeNs figure = ObjectiveFigure(*schedule->predicted, objective);
        EXPECT_GT(bound, 0) << family.name;
        EXPECT_LE(bound * graph->unit, figure) << family.name << " seed " << seed;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 40);
}

}  // namespace
}  // namespace zb::tuner
