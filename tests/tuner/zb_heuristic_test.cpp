// SPDX-License-Identifier: Apache-2.0
// The ZB automatic heuristic against the reference implementation's own outputs
// (docs/schedules.md §4, §8; paper_tables.json golden_vectors_repo_algorithms).
#include <gtest/gtest.h>

#include <cmath>

#include "golden.h"
#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/simulator.h"
#include "zbkit/tuner/tune.h"

namespace zb::tuner {
namespace {

using zb::testing::GoldenVectors;
using zb::testing::LoopOrderString;
using zb::testing::UniformCosts;

// Memory units of the golden vectors: F +2, B -1, W -1, i.e. M_B = 2, M_W = 1.
void CheckGoldenEntry(const nlohmann::json& entry) {
  const int p = entry["p"];
  const int m = entry["m"];
  SCOPED_TRACE(entry.dump());
  const CostProfile costs = UniformCosts(p, entry["F"], entry["B"], entry["W"], entry["C"], 2, 1);
  const std::vector<double> caps(p, entry["M_limit"].get<double>());
  auto result = ZbAuto(costs, m, caps);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->cost, entry["cost"].get<TimeNs>());
  std::vector<TimeNs> expected_knobs = entry["knob_costs"];
  EXPECT_EQ(result->knob_costs, expected_knobs);
  if (entry.contains("orders")) {
    for (int stage = 0; stage < p; ++stage) {
      EXPECT_EQ(LoopOrderString(result->schedule.programs[stage]),
                entry["orders"][stage].get<std::string>())
          << "stage " << stage;
    }
  }
  const double work =
      static_cast<double>(m) *
      (entry["F"].get<double>() + entry["B"].get<double>() + entry["W"].get<double>());
  const double bubble = (static_cast<double>(result->cost) - work) / result->cost;
  EXPECT_NEAR(bubble, entry["bubble"].get<double>(), 5e-5);

  // The heuristic times its ops as it places them; an independent simulation of the order it
  // returns must agree op by op, and its span must be the heuristic's cost.
  Schedule simulated = result->schedule;
  ASSERT_TRUE(ValidateSchedule(simulated).ok());
  ASSERT_TRUE(Simulate(simulated).ok());
  EXPECT_EQ(simulated.programs, result->schedule.programs);
  EXPECT_EQ(simulated.predicted->span, result->cost);
  for (int stage = 0; stage < p; ++stage) {
    EXPECT_LE(simulated.predicted->peak_memory[stage], caps[stage]);
  }
}

TEST(ZbHeuristicTest, ReproducesEveryGoldenVector) {
  for (const auto& entry : GoldenVectors()["zb_heuristic"])
    CheckGoldenEntry(entry);
}

TEST(ZbHeuristicTest, ReproducesEveryExtraGoldenVector) {
  for (const auto& entry : GoldenVectors()["zb_heuristic_extra"])
    CheckGoldenEntry(entry);
}

TEST(ZbHeuristicTest, ReproducesTheProfiled8x32Instances) {
  const auto& golden = GoldenVectors()["zb_heuristic_profiled_8x32"];
  for (const auto& run : golden["results"]) {
    SCOPED_TRACE(run.dump());
    const auto& instance = golden["instances"][run["instance"].get<std::string>()];
    CostProfile costs;
    costs.comm = instance["cost_comm"];
    for (int s = 0; s < 8; ++s) {
      const double mem_f = instance["mem_f"][s];
      const double mem_w = instance["mem_w"][s];
      costs.stages.push_back(
          {instance["cost_f"][s], instance["cost_b"][s], instance["cost_w"][s], mem_f, -mem_w});
    }
    const std::vector<double> caps(8, run["max_mem_per_stage"].get<double>());
    auto result = ZbAuto(costs, run["m"], caps);
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_EQ(result->cost, run["cost"].get<TimeNs>());
    std::vector<TimeNs> expected_knobs = run["knob_costs"];
    EXPECT_EQ(result->knob_costs, expected_knobs);
  }
}

TEST(ZbHeuristicTest, CapBelowOneForwardCannotFit) {
  const CostProfile costs = UniformCosts(4, 1, 1, 1, 0, 2, 1);
  // Less than one forward's activation (M_B = 2): after the first microbatch no F ever fits.
  auto result = ZbAuto(costs, 8, std::vector<double>(4, 1.5));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kInfeasible);
  EXPECT_NE(result.status().message().find("cannot fit memory"), std::string::npos);
}

// The paper's own setting (p 4, m 12, F/B/W 5/6/4, comm 1) at its ZB-2p budget: PyTorch's runtime
// runs the first stage's whole backward in its W, so rank 0 holds M_B until W. Built for the
// paper's model and checked after, the heuristic's order needed 2.25x there and nothing fitted;
// built for the costs that runtime spends, it fits, and under the paper's model it is unchanged.
TEST(ZbHeuristicTest, BuildsForTheMemoryTorchsRuntimeHolds) {
  const CostProfile costs = UniformCosts(4, 5, 6, 4, 1, 2, 1);
  TuneOptions options;
  options.family = "zb-auto";
  options.memory_limit = {MemoryLimit::Kind::kRelative, 2};
  options.runtime = ReplayRuntime::kTorch;
  auto torch = Tune(costs, 12, options);
  ASSERT_TRUE(torch.ok()) << torch.status().message();
  ASSERT_EQ(torch->best, 0) << torch->candidates[0].status.message();
  const Candidate& chosen = torch->candidates[0];
  EXPECT_TRUE(chosen.fits);
  for (double peak : chosen.peak_over_1f1b)
    EXPECT_LE(peak, 2.0);
  // What the runtime spends is what was simulated: stage 0 has no B of its own.
  EXPECT_EQ(chosen.schedule.costs.stages[0].b, 0);

  options.runtime = ReplayRuntime::kZbkit;
  auto paper = Tune(costs, 12, options);
  ASSERT_TRUE(paper.ok()) << paper.status().message();
  ASSERT_EQ(paper->best, 0);
  auto reference = ZbAuto(costs, 12, paper->candidates[0].caps);
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ(paper->candidates[0].schedule.programs, reference->schedule.programs);
}

}  // namespace
}  // namespace zb::tuner
