// SPDX-License-Identifier: Apache-2.0
// Property tests over random heterogeneous instances: every family's schedule holds every op
// exactly once, respects every dependency, stays under the cap it was given, never beats the
// lower bound, and the simulator agrees with an independent fixed-point recomputation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <tuple>

#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/lower_bound.h"
#include "zbkit/tuner/memory_limit.h"
#include "zbkit/tuner/simulator.h"

namespace zb::tuner {
namespace {

constexpr uint32_t kSeed = 20240101;
constexpr int kInstances = 1500;

CostProfile RandomCosts(std::mt19937& rng, int p) {
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  CostProfile costs;
  costs.comm = uniform(0, 3) == 0 ? 0 : uniform(1, 12);
  for (int s = 0; s < p; ++s) {
    StageCost stage;
    stage.f = uniform(4, 60);
    stage.b = uniform(4, 70);
    stage.w = uniform(0, 45);
    stage.m_b = uniform(2, 20);
    stage.m_w = uniform(0, static_cast<int>(stage.m_b));
    costs.stages.push_back(stage);
  }
  return costs;
}

// The op an op waits for and the delay of that edge, recomputed here from the definitions
// (docs/cost-model.md §3) without the simulator's slot tables.
struct Dependency {
  int rank = -1;
  size_t index = 0;
  TimeNs delay = 0;
};

std::map<std::tuple<int, int, int>, std::pair<int, size_t>> IndexOps(const Schedule& schedule) {
  std::map<std::tuple<int, int, int>, std::pair<int, size_t>> where;  // (kind, stage, mb)
  for (int r = 0; r < schedule.ranks; ++r) {
    const RankProgram& program = schedule.programs[r];
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      const int stage = program.stages[op.chunk];
      if (op.kind == OpKind::kBW) {
        where[{1, stage, op.microbatch}] = {r, i};
        where[{2, stage, op.microbatch}] = {r, i};
      } else {
        where[{static_cast<int>(op.kind), stage, op.microbatch}] = {r, i};
      }
    }
  }
  return where;
}

Dependency DependencyOf(const Schedule& schedule,
                        const std::map<std::tuple<int, int, int>, std::pair<int, size_t>>& where,
                        int rank, const Op& op) {
  const int stage = schedule.programs[rank].stages[op.chunk];
  const int last = schedule.num_stages() - 1;
  std::tuple<int, int, int> key;
  switch (op.kind) {
    case OpKind::kF:
      if (stage == 0) return {};
      key = {0, stage - 1, op.microbatch};
      break;
    case OpKind::kB:
    case OpKind::kBW:
      key = stage == last ? std::tuple<int, int, int>{0, stage, op.microbatch}
                          : std::tuple<int, int, int>{1, stage + 1, op.microbatch};
      break;
    case OpKind::kW:
      key = {1, stage, op.microbatch};
      break;
    case OpKind::kComm:
      return {};
  }
  const auto [dep_rank, dep_index] = where.at(key);
  return {dep_rank, dep_index, dep_rank == rank ? 0 : schedule.costs.comm};
}

// Relaxes start = max(previous op's end, dependency end + delay) over all ops until nothing
// changes: the longest-path fixed point, computed without any ordering cleverness.
std::vector<std::vector<TimeNs>> FixedPointStarts(const Schedule& schedule) {
  const auto where = IndexOps(schedule);
  std::vector<std::vector<TimeNs>> start(schedule.ranks);
  for (int r = 0; r < schedule.ranks; ++r)
    start[r].assign(schedule.programs[r].ops.size(), 0);
  auto end_of = [&](int r, size_t i) {
    const Op& op = schedule.programs[r].ops[i];
    return start[r][i] +
           schedule.costs.stages[schedule.programs[r].stages[op.chunk]].Duration(op.kind);
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (int r = 0; r < schedule.ranks; ++r) {
      for (size_t i = 0; i < schedule.programs[r].ops.size(); ++i) {
        TimeNs earliest = i > 0 ? end_of(r, i - 1) : 0;
        const Dependency dep = DependencyOf(schedule, where, r, schedule.programs[r].ops[i]);
        if (dep.rank >= 0) earliest = std::max(earliest, end_of(dep.rank, dep.index) + dep.delay);
        if (earliest != start[r][i]) {
          start[r][i] = earliest;
          changed = true;
        }
      }
    }
  }
  return start;
}

TEST(PropertyTest, RandomHeterogeneousInstancesHoldEveryInvariant) {
  std::mt19937 rng(kSeed);
  const char* limits[] = {"1x", "1.5x", "2x", "3x", "none"};
  int checked = 0;
  std::map<std::string, int> refused;  // per family, for the summary line
  Simulator simulator;
  for (int instance = 0; instance < kInstances; ++instance) {
    const int p = std::uniform_int_distribution<int>(1, 8)(rng);
    const int m = std::uniform_int_distribution<int>(1, 4 * p)(rng);
    const CostProfile costs = RandomCosts(rng, p);
    const FamilyInfo& family =
        Families()[std::uniform_int_distribution<size_t>(0, Families().size() - 1)(rng)];
    const std::string limit_text = limits[std::uniform_int_distribution<int>(0, 4)(rng)];
    const MemoryLimit limit = *ParseMemoryLimit(limit_text);
    const int parts = family.placement == Placement::kV ? 2 : family.name == "1f1b-i" ? 2 : 1;
    const CostProfile scheduled = costs.SplitStages(parts);
    const std::vector<double> caps = limit.RankCaps(costs);
    SCOPED_TRACE("seed " + std::to_string(kSeed) + " instance " + std::to_string(instance) + ": " +
                 std::string(family.name) + " p=" + std::to_string(p) + " m=" + std::to_string(m) +
                 " mem-limit " + limit_text);

    auto generated = GenerateFamily(family.name, {costs, m, 2, caps});
    if (!generated.ok()) {
      // Only "this family does not take this m" or "nothing fits the cap" are acceptable.
      EXPECT_TRUE(generated.status().code() == ErrorCode::kUsage ||
                  generated.status().code() == ErrorCode::kInfeasible)
          << generated.status().message();
      ++refused[std::string(family.name)];
      continue;
    }
    Schedule schedule = std::move(generated).value();
    ASSERT_EQ(schedule.costs, scheduled);
    Status valid = ValidateSchedule(schedule);  // every (kind, stage, mb) exactly once
    ASSERT_TRUE(valid.ok()) << valid.message();
    const Schedule as_generated = schedule;
    Status ran = simulator.Run(schedule);
    ASSERT_TRUE(ran.ok()) << ran.message();
    // Generators that time their ops while placing them (the heuristics) must agree with the
    // simulator, or their own objective, which picks among knob settings, would be wrong.
    bool generator_timed = false;
    for (const RankProgram& program : as_generated.programs) {
      for (const Op& op : program.ops)
        generator_timed = generator_timed || op.end > 0;
    }
    if (generator_timed) {
      ASSERT_EQ(as_generated.programs, schedule.programs);
    }

    // The simulator equals the independent fixed point, op by op.
    const auto starts = FixedPointStarts(schedule);
    const auto where = IndexOps(schedule);
    for (int r = 0; r < p; ++r) {
      const RankProgram& program = schedule.programs[r];
      for (size_t i = 0; i < program.ops.size(); ++i) {
        const Op& op = program.ops[i];
        ASSERT_EQ(op.start, starts[r][i]) << "rank " << r << " op " << i;
        ASSERT_EQ(op.end - op.start, scheduled.stages[program.stages[op.chunk]].Duration(op.kind));
        // Dependencies respected (with comm across ranks), one op at a time per rank.
        const Dependency dep = DependencyOf(schedule, where, r, op);
        if (dep.rank >= 0) {
          ASSERT_GE(op.start, schedule.programs[dep.rank].ops[dep.index].end + dep.delay);
        }
        if (i > 0) {
          ASSERT_GE(op.start, program.ops[i - 1].end);
        }
      }
    }
    // Families that adapt to the cap stay under it.
    const Prediction& predicted = *schedule.predicted;
    if (family.uses_memory_cap) {
      for (int r = 0; r < p; ++r) {
        ASSERT_LE(predicted.peak_memory[r], caps[r] * (1 + 1e-9)) << "rank " << r;
      }
    }
    // No schedule beats the lower bound (without a cap it must hold for every schedule; with
    // the cap for those that respect it).
    const LowerBounds free_bounds = ComputeLowerBounds(scheduled, p, m, family.placement, {});
    ASSERT_GE(predicted.makespan, free_bounds.makespan);
    ASSERT_GE(predicted.span, free_bounds.span);
    bool fits = true;
    for (int r = 0; r < p; ++r)
      fits = fits && predicted.peak_memory[r] <= caps[r] * (1 + 1e-9);
    if (fits) {
      const LowerBounds capped = ComputeLowerBounds(scheduled, p, m, family.placement, caps);
      ASSERT_GE(predicted.makespan, capped.makespan);
      ASSERT_GE(predicted.span, capped.span);
    }
    ++checked;
  }
  std::cout << "[ property ] " << checked << " schedules checked; refused (m or cap unsuitable):";
  for (const auto& [name, count] : refused)
    std::cout << " " << name << " " << count;
  std::cout << "\n";
  EXPECT_GE(checked, 1000);
}

}  // namespace
}  // namespace zb::tuner
