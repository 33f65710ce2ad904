// SPDX-License-Identifier: Apache-2.0
// ZB-V, V-Half and V-Min against the reference implementation's golden vectors
// (paper_tables.json, golden_vectors_repo_algorithms), plus structural and timing properties on
// random heterogeneous instances, checked with an independent re-simulation.
#include "zbkit/tuner/v_schedules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "golden.h"
#include "zbkit/tuner/simulator.h"

namespace zb::tuner {
namespace {

using nlohmann::json;

constexpr double kInf = std::numeric_limits<double>::infinity();

using zb::testing::GoldenVectors;

// The golden vectors' units: every chunk costs F/B/W, memory F +2, B -1, W -1.
CostProfile UniformChunks(int p, TimeNs f, TimeNs b, TimeNs w, TimeNs comm) {
  CostProfile costs;
  costs.comm = comm;
  costs.stages.assign(2 * p, StageCost{f, b, w, /*m_b=*/2, /*m_w=*/1});
  return costs;
}

// JSON order notation: F/f = F of local chunk 0/1; B/b = backward travelling up/down the V, i.e.
// local chunk 1/0; W/w their weight gradients.
std::string OrderString(const RankProgram& program) {
  std::string text;
  for (const Op& op : program.ops) {
    const bool second = op.kind == OpKind::kF ? op.chunk == 1 : op.chunk == 0;
    const char* letters = op.kind == OpKind::kF ? "Ff" : (op.kind == OpKind::kB ? "Bb" : "Ww");
    if (!text.empty()) text += ' ';
    text += letters[second ? 1 : 0];
    text += std::to_string(op.microbatch);
  }
  return text;
}

double ZbVCap(const json& entry, int p) {
  const json& cap = entry.at("max_mem");
  return cap.is_number() ? cap.get<double>() : 4.0 * p;  // "default 2p*f_mem" = 4p units
}

// ---------------------------------------------------------------------------------------------
// Independent checks.

// Re-simulates `schedule`'s orders with the simulator's semantics (each op starts at the later of
// its rank's previous op end and its dependency's end, plus comm across ranks) and reports the
// first op whose recorded start/end disagree, or a structural problem.
std::string CheckStructureAndTimes(const Schedule& schedule) {
  const int p = schedule.ranks;
  const int m = schedule.microbatches;
  const int stages = 2 * p;
  if (schedule.chunks != 2 || schedule.placement != Placement::kV) return "not a V schedule";
  if (static_cast<int>(schedule.programs.size()) != p) return "wrong number of programs";
  // (kind, stage, mb) -> (rank, position)
  std::map<std::tuple<int, int, int>, std::pair<int, int>> where;
  for (int r = 0; r < p; ++r) {
    const RankProgram& program = schedule.programs[r];
    if (program.stages != std::vector<int32_t>{r, 2 * p - 1 - r}) {
      return "rank " + std::to_string(r) + " holds the wrong stages";
    }
    if (static_cast<int>(program.ops.size()) != 6 * m) {
      return "rank " + std::to_string(r) + " has " + std::to_string(program.ops.size()) + " ops";
    }
    for (int i = 0; i < static_cast<int>(program.ops.size()); ++i) {
      const Op& op = program.ops[i];
      if (op.chunk < 0 || op.chunk > 1 || op.microbatch < 0 || op.microbatch >= m ||
          op.kind == OpKind::kBW) {
        return "malformed op on rank " + std::to_string(r);
      }
      const int stage = StageOfChunk(Placement::kV, p, r, op.chunk);
      if (!where
               .emplace(std::make_tuple(static_cast<int>(op.kind), stage, op.microbatch),
                        std::make_pair(r, i))
               .second) {
        return "duplicate op on rank " + std::to_string(r);
      }
    }
  }
  if (static_cast<int>(where.size()) != 3 * stages * m) return "ops missing";
  // Same-rank order: F before B before W of each (stage, microbatch).
  for (int s = 0; s < stages; ++s) {
    for (int j = 0; j < m; ++j) {
      const auto f = where.at({static_cast<int>(OpKind::kF), s, j});
      const auto b = where.at({static_cast<int>(OpKind::kB), s, j});
      const auto w = where.at({static_cast<int>(OpKind::kW), s, j});
      if (!(f.second < b.second && b.second < w.second)) {
        return "F/B/W out of order at stage " + std::to_string(s) + " mb " + std::to_string(j);
      }
    }
  }
  // Re-simulate: sweep ranks until no rank can advance.
  std::map<std::tuple<int, int, int>, TimeNs> end;
  std::vector<size_t> next(p, 0);
  std::vector<TimeNs> clock(p, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      const RankProgram& program = schedule.programs[r];
      while (next[r] < program.ops.size()) {
        const Op& op = program.ops[next[r]];
        const int s = program.stages[op.chunk];
        std::tuple<int, int, int> dep{-1, -1, -1};
        if (op.kind == OpKind::kF && s > 0)
          dep = {static_cast<int>(OpKind::kF), s - 1, op.microbatch};
        if (op.kind == OpKind::kB) {
          dep = s < stages - 1 ? std::make_tuple(static_cast<int>(OpKind::kB), s + 1, op.microbatch)
                               : std::make_tuple(static_cast<int>(OpKind::kF), s, op.microbatch);
        }
        if (op.kind == OpKind::kW) dep = {static_cast<int>(OpKind::kB), s, op.microbatch};
        TimeNs start = clock[r];
        if (std::get<0>(dep) >= 0) {
          auto it = end.find(dep);
          if (it == end.end()) break;  // wait for it
          const int dep_rank = RankOfStage(Placement::kV, p, std::get<1>(dep));
          start = std::max(start, it->second + (dep_rank == r ? 0 : schedule.costs.comm));
        }
        const TimeNs finish = start + schedule.costs.stages[s].Duration(op.kind);
        if (op.start != start || op.end != finish) {
          return "rank " + std::to_string(r) + " op " + std::to_string(next[r]) + " recorded [" +
                 std::to_string(op.start) + ", " + std::to_string(op.end) + "], simulated [" +
                 std::to_string(start) + ", " + std::to_string(finish) + "]";
        }
        end[{static_cast<int>(op.kind), s, op.microbatch}] = finish;
        clock[r] = finish;
        ++next[r];
        progress = true;
      }
    }
  }
  for (int r = 0; r < p; ++r) {
    if (next[r] != schedule.programs[r].ops.size()) return "deadlock on rank " + std::to_string(r);
  }
  return "";
}

// The per-rank orders of a golden entry, where it has them.
void ExpectOrders(const Schedule& schedule, const json& entry) {
  if (!entry.contains("orders")) return;
  const auto orders = entry.at("orders").get<std::vector<std::string>>();
  ASSERT_EQ(orders.size(), schedule.programs.size());
  for (size_t r = 0; r < orders.size(); ++r) {
    EXPECT_EQ(OrderString(schedule.programs[r]), orders[r]) << "rank " << r;
  }
}

// The heuristic's objective: per rank, time not spent computing between its first op (always
// F0 of microbatch 0) and its last op.
TimeNs MaxIdleAfterFirstF(const Schedule& schedule) {
  TimeNs worst = 0;
  for (const RankProgram& program : schedule.programs) {
    TimeNs busy = 0;
    for (const Op& op : program.ops)
      busy += op.end - op.start;
    worst = std::max(worst, program.ops.back().end - program.ops.front().start - busy);
  }
  return worst;
}

int PeakChunkActivations(const Schedule& schedule) {
  int peak = 0;
  for (const RankProgram& program : schedule.programs) {
    int current = 0;
    for (const Op& op : program.ops) {
      current += op.kind == OpKind::kF ? 1 : (op.kind == OpKind::kW ? -1 : 0);
      peak = std::max(peak, current);
    }
  }
  return peak;
}

// V-Greedy's objective: per rank, end of the last microbatch's W of local chunk 0 (the
// reference's last type list, "w") minus the start of its first F.
TimeNs VGreedySpan(const Schedule& schedule) {
  TimeNs worst = 0;
  for (const RankProgram& program : schedule.programs) {
    TimeNs first_start = -1;
    TimeNs last_w_end = -1;
    for (const Op& op : program.ops) {
      if (op.kind == OpKind::kF && op.chunk == 0 && op.microbatch == 0) first_start = op.start;
      if (op.kind == OpKind::kW && op.chunk == 0 && op.microbatch == schedule.microbatches - 1) {
        last_w_end = op.end;
      }
    }
    worst = std::max(worst, last_w_end - first_start);
  }
  return worst;
}

// ---------------------------------------------------------------------------------------------
// Golden vectors.

void CheckZbVEntry(const json& entry) {
  const int p = entry.at("p");
  const int m = entry.at("m");
  const TimeNs f = entry.at("F"), b = entry.at("B"), w = entry.at("W"), c = entry.at("C");
  const double cap = ZbVCap(entry, p);
  SCOPED_TRACE(entry.dump());
  Expected<ZbVResult> result =
      ZbVHeuristic(UniformChunks(p, f, b, w, c), m, std::vector<double>(p, cap));
  if (entry.contains("result")) {
    ASSERT_NE(entry.at("result").get<std::string>().find("AssertionError"), std::string::npos);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), ErrorCode::kInfeasible);
    EXPECT_EQ(result.status().message().find('\n'), std::string::npos);
    return;
  }
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->max_stage_idle, entry.at("max_stage_bubble").get<TimeNs>());
  const auto knobs =
      entry.at("knob_max_bubbles_fillb_fillf_TT_TF_FT_FF").get<std::vector<TimeNs>>();
  ASSERT_EQ(knobs.size(), 4u);
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(result->knob_max_idle[k], knobs[k]) << "knob " << k;
  const double expected_work = 2.0 * m * static_cast<double>(f + b + w);
  const double rate = result->max_stage_idle / (expected_work + result->max_stage_idle);
  EXPECT_NEAR(rate, entry.at("bubble_rate").get<double>(), 5e-5);
  const Schedule& schedule = result->schedule;
  EXPECT_EQ(schedule.family, "zb-v");
  EXPECT_EQ(schedule.costs, UniformChunks(p, f, b, w, c));
  ExpectOrders(schedule, entry);
  EXPECT_EQ(CheckStructureAndTimes(schedule), "");
  EXPECT_EQ(MaxIdleAfterFirstF(schedule), result->max_stage_idle);
  for (double peak : PeakMemory(schedule))
    EXPECT_LE(peak, cap);
}

TEST(VSchedulesGolden, ZbVHeuristic) {
  const json& golden = GoldenVectors();
  ASSERT_TRUE(golden.contains("zbv_heuristic"));
  ASSERT_TRUE(golden.contains("zbv_heuristic_extra"));
  int checked = 0;
  for (const char* key : {"zbv_heuristic", "zbv_heuristic_extra"}) {
    for (const json& entry : golden.at(key)) {
      CheckZbVEntry(entry);
      ++checked;
    }
  }
  EXPECT_GE(checked, 10);
}

TEST(VSchedulesGolden, VHalfAndVMin) {
  const json& golden = GoldenVectors();
  ASSERT_TRUE(golden.contains("v_greedy"));
  int checked = 0;
  for (const json& entry : golden.at("v_greedy")) {
    SCOPED_TRACE(entry.dump());
    const std::string mode = entry.at("mode");
    ASSERT_TRUE(mode == "half" || mode == "min");
    const int p = entry.at("p");
    const int m = entry.at("m");
    const TimeNs f = entry.at("F"), b = entry.at("B"), w = entry.at("W"), c = entry.at("C");
    Expected<VGreedyResult> result = VGreedy(
        mode == "half" ? VMemorySetup::kHalf : VMemorySetup::kMin, UniformChunks(p, f, b, w, c), m);
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_EQ(result->cost, entry.at("cost").get<TimeNs>());
    const double work = 2.0 * m * static_cast<double>(f + b + w);
    EXPECT_NEAR((result->cost - work) / result->cost, entry.at("bubble").get<double>(), 5e-5);
    EXPECT_EQ(result->peak_chunk_activations, entry.at("peak_chunk_acts").get<int>());
    const Schedule& schedule = result->schedule;
    EXPECT_EQ(schedule.family, mode == "half" ? "v-half" : "v-min");
    ExpectOrders(schedule, entry);
    EXPECT_EQ(CheckStructureAndTimes(schedule), "");
    EXPECT_EQ(PeakChunkActivations(schedule), result->peak_chunk_activations);
    EXPECT_EQ(VGreedySpan(schedule), result->cost);
    ++checked;
  }
  EXPECT_GE(checked, 13);
}

// The algorithms compare only sums and differences of costs, so nanosecond-scaled inputs give the
// same orders and a scaled objective.
TEST(VSchedulesGolden, ScaleInvariantInNanoseconds) {
  const CostProfile unit = UniformChunks(4, 5, 6, 4, 1);
  const CostProfile ns = UniformChunks(4, 5 * kNsPerMs, 6 * kNsPerMs, 4 * kNsPerMs, kNsPerMs);
  const std::vector<double> caps(4, 16.0);
  Expected<ZbVResult> a = ZbVHeuristic(unit, 8, caps);
  Expected<ZbVResult> b = ZbVHeuristic(ns, 8, caps);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(b->max_stage_idle, a->max_stage_idle * kNsPerMs);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(OrderString(a->schedule.programs[r]), OrderString(b->schedule.programs[r]));
  }
  for (VMemorySetup setup : {VMemorySetup::kHalf, VMemorySetup::kMin}) {
    Expected<VGreedyResult> x = VGreedy(setup, unit, 8);
    Expected<VGreedyResult> y = VGreedy(setup, ns, 8);
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_EQ(y->cost, x->cost * kNsPerMs);
  }
}

// ---------------------------------------------------------------------------------------------
// Inputs.

TEST(VSchedulesInput, EmptyCapsMeanOneF1BMemory) {
  const CostProfile costs = UniformChunks(4, 5, 6, 4, 1);
  Expected<ZbVResult> by_default = ZbVHeuristic(costs, 8, {});
  Expected<ZbVResult> explicit_caps = ZbVHeuristic(costs, 8, std::vector<double>(4, 16.0));
  ASSERT_TRUE(by_default.ok() && explicit_caps.ok());
  EXPECT_EQ(by_default->max_stage_idle, explicit_caps->max_stage_idle);
  EXPECT_EQ(by_default->schedule, explicit_caps->schedule);
}

TEST(VSchedulesInput, NoCapStillSchedules) {
  Expected<ZbVResult> result =
      ZbVHeuristic(UniformChunks(4, 5, 6, 4, 1), 8, std::vector<double>(4, kInf));
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(CheckStructureAndTimes(result->schedule), "");
}

TEST(VSchedulesInput, RejectsMalformedRequests) {
  const CostProfile odd = [] {
    CostProfile costs = UniformChunks(2, 1, 1, 1, 0);
    costs.stages.pop_back();
    return costs;
  }();
  EXPECT_EQ(ZbVHeuristic(odd, 4, {}).status().code(), ErrorCode::kUsage);
  EXPECT_EQ(VGreedy(VMemorySetup::kHalf, odd, 4).status().code(), ErrorCode::kUsage);
  EXPECT_EQ(ZbVHeuristic(UniformChunks(2, 1, 1, 1, 0), 0, {}).status().code(), ErrorCode::kUsage);
  EXPECT_EQ(VGreedy(VMemorySetup::kMin, UniformChunks(2, 1, 1, 1, 0), 0).status().code(),
            ErrorCode::kUsage);
  EXPECT_EQ(ZbVHeuristic(UniformChunks(2, 1, 1, 1, 0), 4, {8.0}).status().code(),
            ErrorCode::kUsage);
  EXPECT_EQ(ZbVHeuristic(UniformChunks(2, 1, 1, 1, 0), 4, {0.0, 0.0}).status().code(),
            ErrorCode::kInfeasible);
}

// ---------------------------------------------------------------------------------------------
// Properties on random heterogeneous instances.

CostProfile RandomChunks(std::mt19937& rng, int p) {
  std::uniform_int_distribution<int> cost(1, 40);
  std::uniform_int_distribution<int> memory(1, 6);
  CostProfile costs;
  costs.comm = std::uniform_int_distribution<int>(0, 6)(rng);
  for (int s = 0; s < 2 * p; ++s) {
    StageCost stage;
    stage.f = cost(rng) * 1000;
    stage.b = cost(rng) * 1000;
    stage.w = cost(rng) * 1000;
    stage.m_b = memory(rng);
    stage.m_w = std::uniform_int_distribution<int>(0, static_cast<int>(stage.m_b))(rng);
    costs.stages.push_back(stage);
  }
  costs.comm *= 100;
  return costs;
}

TEST(VSchedulesProperty, RandomHeterogeneousInstances) {
  std::mt19937 rng(20240611);
  int below_one_f1b_scheduled = 0;
  constexpr int kVInstances = 320;
  for (int instance = 0; instance < kVInstances; ++instance) {
    const int p = std::uniform_int_distribution<int>(2, 8)(rng);
    const int m = std::uniform_int_distribution<int>(p, 4 * p)(rng);
    const CostProfile costs = RandomChunks(rng, p);
    SCOPED_TRACE("instance " + std::to_string(instance) + " p=" + std::to_string(p) +
                 " m=" + std::to_string(m));

    // Caps: 1F1B's memory, more, none, or less (outside the reference's range).
    const int cap_kind = instance % 4;
    const double scale[] = {1.0, 1.5, kInf, 0.75};
    std::vector<double> caps(p);
    for (int r = 0; r < p; ++r) {
      const double one_f1b = p * (costs.stages[r].m_b + costs.stages[2 * p - 1 - r].m_b);
      caps[r] = cap_kind == 2 ? kInf : scale[cap_kind] * one_f1b;
    }
    Expected<ZbVResult> zbv = ZbVHeuristic(costs, m, caps);
    if (cap_kind == 3 && !zbv.ok()) {
      EXPECT_EQ(zbv.status().code(), ErrorCode::kInfeasible) << zbv.status().message();
    } else {
      ASSERT_TRUE(zbv.ok()) << zbv.status().message();
      below_one_f1b_scheduled += cap_kind == 3;
      EXPECT_EQ(CheckStructureAndTimes(zbv->schedule), "");
      const std::vector<double> peaks = PeakMemory(zbv->schedule);
      for (int r = 0; r < p; ++r)
        EXPECT_LE(peaks[r], caps[r]) << "rank " << r;
      EXPECT_EQ(MaxIdleAfterFirstF(zbv->schedule), zbv->max_stage_idle);
      TimeNs best_knob = -1;
      for (TimeNs knob : zbv->knob_max_idle) {
        if (knob >= 0 && (best_knob < 0 || knob < best_knob)) best_knob = knob;
      }
      EXPECT_EQ(best_knob, zbv->max_stage_idle);
    }

    for (VMemorySetup setup : {VMemorySetup::kHalf, VMemorySetup::kMin}) {
      Expected<VGreedyResult> greedy = VGreedy(setup, costs, m);
      ASSERT_TRUE(greedy.ok()) << greedy.status().message();
      EXPECT_EQ(CheckStructureAndTimes(greedy->schedule), "");
      EXPECT_EQ(PeakChunkActivations(greedy->schedule), greedy->peak_chunk_activations);
      EXPECT_LE(greedy->peak_chunk_activations, 2 * p);
      EXPECT_EQ(VGreedySpan(greedy->schedule), greedy->cost);
    }
  }
  // Informational: how often the strict reference still fits below 1F1B's memory.
  RecordProperty("zbv_below_one_f1b_scheduled", below_one_f1b_scheduled);
}

}  // namespace
}  // namespace zb::tuner
