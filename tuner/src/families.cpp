// SPDX-License-Identifier: Apache-2.0
// The handcrafted families (ZB paper Table 2, docs/schedules.md §3) and the family registry.
#include "zbkit/tuner/families.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "zbkit/tuner/torch_export.h"
#include "zbkit/tuner/v_half_min.h"
#include "zbkit/tuner/zb_auto.h"
#include "zbkit/tuner/zb_v.h"

namespace zb::tuner {
namespace {

Schedule EmptyLoopSchedule(const CostProfile& costs, int ranks, int microbatches,
                           std::string_view family) {
  Schedule schedule;
  schedule.ranks = ranks;
  schedule.microbatches = microbatches;
  schedule.chunks = costs.num_stages() / ranks;
  schedule.placement = Placement::kLoop;
  schedule.family = std::string(family);
  schedule.costs = costs;
  schedule.programs.resize(ranks);
  for (int rank = 0; rank < ranks; ++rank) {
    for (int chunk = 0; chunk < schedule.chunks; ++chunk) {
      schedule.programs[rank].stages.push_back(rank + chunk * ranks);
    }
  }
  return schedule;
}

// The family of "warm up with F's, then one F and one backward per step, W's delayed by a
// per-rank lag" orders: 1F1B (fused, no lag), ZB-H1 (lag r) and ZB-H2 (lag 2r, twice the warm-up).
Schedule StaircaseSchedule(const CostProfile& costs, int microbatches, std::string_view family,
                           int warmup_factor, int w_lag_factor, bool fused) {
  const int p = costs.num_stages();
  const int m = microbatches;
  Schedule schedule = EmptyLoopSchedule(costs, p, m, family);
  for (int rank = 0; rank < p; ++rank) {
    std::vector<Op>& ops = schedule.programs[rank].ops;
    ops.reserve(static_cast<size_t>(3) * m);
    const int warmup = std::min(m, warmup_factor * (p - 1 - rank));
    const int w_lag = w_lag_factor * rank;
    int forwards = 0;
    int weights = 0;
    for (; forwards < warmup; ++forwards)
      ops.push_back({OpKind::kF, 0, forwards});
    for (int i = 0; i < m; ++i) {
      if (forwards < m) ops.push_back({OpKind::kF, 0, forwards++});
      if (fused) {
        ops.push_back({OpKind::kBW, 0, i});
        continue;
      }
      ops.push_back({OpKind::kB, 0, i});
      if (i >= w_lag) ops.push_back({OpKind::kW, 0, weights++});
    }
    while (!fused && weights < m)
      ops.push_back({OpKind::kW, 0, weights++});
  }
  return schedule;
}

Status CheckMicrobatches(std::string_view family, int microbatches, int minimum) {
  if (microbatches < minimum) {
    return UsageError(std::string(family) + ": needs at least " + std::to_string(minimum) +
                      " microbatches, got " + std::to_string(microbatches));
  }
  return Status::Ok();
}

}  // namespace

const std::vector<FamilyInfo>& Families() {
  static const std::vector<FamilyInfo> kFamilies = {
      {"1f1b", Placement::kLoop, false, "1F1B, fused backward"},
      {"1f1b-i", Placement::kLoop, false, "interleaved 1F1B, --chunks v per rank"},
      {"zb-h1", Placement::kLoop, false, "handcrafted zero bubble, 1F1B memory"},
      {"zb-h2", Placement::kLoop, false, "handcrafted zero bubble, ~2x 1F1B memory"},
      {"zb-auto", Placement::kLoop, true, "ZB paper heuristic under the cap, 8 knob settings"},
      {"zb-v", Placement::kV, true, "ZB-V heuristic under the cap, V placement"},
      {"v-half", Placement::kV, false, "V-Half, 1/2 of 1F1B activation memory"},
      {"v-min", Placement::kV, false, "V-Min, 1/3 of 1F1B activation memory"},
  };
  return kFamilies;
}

const FamilyInfo* FindFamily(std::string_view name) {
  for (const FamilyInfo& family : Families()) {
    if (family.name == name) return &family;
  }
  return nullptr;
}

Expected<Schedule> OneFOneB(const CostProfile& costs, int microbatches) {
  ZB_RETURN_IF_ERROR(CheckMicrobatches("1f1b", microbatches, 1));
  return StaircaseSchedule(costs, microbatches, "1f1b", 1, 0, /*fused=*/true);
}

Expected<Schedule> ZbH1(const CostProfile& costs, int microbatches) {
  ZB_RETURN_IF_ERROR(CheckMicrobatches("zb-h1", microbatches, 1));
  return StaircaseSchedule(costs, microbatches, "zb-h1", 1, 1, /*fused=*/false);
}

Expected<Schedule> ZbH2(const CostProfile& costs, int microbatches) {
  // Below 2p microbatches rank 0 cannot hold its 2p-1 forwards in flight and the schedule is
  // not ZB-H2 any more (docs/schedules.md §3).
  ZB_RETURN_IF_ERROR(CheckMicrobatches("zb-h2", microbatches, 2 * costs.num_stages()));
  return StaircaseSchedule(costs, microbatches, "zb-h2", 2, 2, /*fused=*/false);
}

Expected<Schedule> Interleaved1F1B(const CostProfile& chunk_costs, int ranks, int microbatches) {
  const int p = ranks;
  const int m = microbatches;
  if (p < 1 || chunk_costs.num_stages() % p != 0) {
    return InternalError("1f1b-i: chunk costs must hold a multiple of p stages");
  }
  const int v = chunk_costs.num_stages() / p;
  if (m % p != 0) {
    return UsageError("1f1b-i: needs a multiple of p = " + std::to_string(p) +
                      " microbatches, got " + std::to_string(m));
  }
  Schedule schedule = EmptyLoopSchedule(chunk_costs, p, m, "1f1b-i");
  const int total = m * v;  // forwards (and backwards) per rank
  // The k-th forward of a rank runs chunk (k mod pv) div p for microbatch (k div pv) p + k mod p:
  // groups of p microbatches sweep all chunks before the next group starts (Megatron's order).
  auto microbatch_of = [&](int k) { return (k / (p * v)) * p + k % p; };
  auto chunk_of = [&](int k) { return (k % (p * v)) / p; };
  for (int rank = 0; rank < p; ++rank) {
    std::vector<Op>& ops = schedule.programs[rank].ops;
    ops.reserve(static_cast<size_t>(2) * total);
    const int warmup = std::min(total, 2 * (p - rank - 1) + (v - 1) * p);
    int forwards = 0;
    for (; forwards < warmup; ++forwards) {
      ops.push_back({OpKind::kF, chunk_of(forwards), microbatch_of(forwards)});
    }
    for (int k = 0; k < total; ++k) {
      if (forwards < total) {
        ops.push_back({OpKind::kF, chunk_of(forwards), microbatch_of(forwards)});
        ++forwards;
      }
      ops.push_back({OpKind::kBW, v - 1 - chunk_of(k), microbatch_of(k)});
    }
  }
  return schedule;
}

Expected<Schedule> GenerateFamily(std::string_view family, const FamilyRequest& request) {
  const FamilyInfo* info = FindFamily(family);
  if (info == nullptr) {
    std::string known;
    for (const FamilyInfo& f : Families())
      known += (known.empty() ? "" : ", ") + std::string(f.name);
    return UsageError("unknown family \"" + std::string(family) + "\" (known: " + known + ")");
  }
  const CostProfile& costs = request.rank_costs;
  const int p = costs.num_stages();
  const int m = request.microbatches;
  if (p < 1) return UsageError(std::string(family) + ": the cost profile has no stages");
  if (m < 1) return UsageError(std::string(family) + ": needs at least 1 microbatch");
  if (!request.rank_caps.empty() && static_cast<int>(request.rank_caps.size()) != p) {
    return InternalError("one memory cap per rank expected");
  }
  std::vector<double> caps = request.rank_caps;
  if (caps.empty()) caps.assign(p, kNoMemoryCap);

  // The costs the generator schedules: `chunks` stages per rank, as the request knows them.
  auto scheduled = [&](int chunks) {
    CostProfile split = request.stage_costs && request.stage_costs->num_stages() == p * chunks
                            ? request.stage_costs->CostsOnly()
                            : costs.SplitStages(chunks);
    return request.torch_runtime_costs ? TorchRuntimeCosts(std::move(split)) : split;
  };
  if (family == "1f1b") return OneFOneB(scheduled(1), m);
  if (family == "zb-h1") return ZbH1(scheduled(1), m);
  if (family == "zb-h2") return ZbH2(scheduled(1), m);
  if (family == "1f1b-i") {
    if (request.interleave_chunks < 2) {
      return UsageError("1f1b-i: needs --chunks >= 2, got " +
                        std::to_string(request.interleave_chunks));
    }
    return Interleaved1F1B(scheduled(request.interleave_chunks), p, m);
  }
  if (family == "zb-auto") {
    const CostProfile stage_costs = scheduled(1);
    // The heuristic needs a finite cap to decide its warm-up; without one, m forwards always fit.
    std::vector<double> stage_caps = caps;
    for (int stage = 0; stage < p; ++stage) {
      if (std::isinf(stage_caps[stage])) stage_caps[stage] = stage_costs.stages[stage].m_b * m;
    }
    ZB_ASSIGN_OR_RETURN(ZbAutoResult result, ZbAuto(stage_costs, m, stage_caps));
    return std::move(result.schedule);
  }
  const CostProfile chunk_costs = scheduled(2);
  if (family == "zb-v") {
    ZB_ASSIGN_OR_RETURN(ZbVResult result, ZbVHeuristic(chunk_costs, m, caps));
    return std::move(result.schedule);
  }
  const VMemorySetup setup = family == "v-half" ? VMemorySetup::kHalf : VMemorySetup::kMin;
  ZB_ASSIGN_OR_RETURN(VGreedyResult result, VGreedy(setup, chunk_costs, m));
  return std::move(result.schedule);
}

}  // namespace zb::tuner
