// SPDX-License-Identifier: Apache-2.0
// Schedules on the V placement (p ranks, 2p stages; rank r holds stages r and 2p-1-r):
//  - ZB-V: the zero-bubble V heuristic of the ZB paper, §6 (docs/schedules.md §5), with its
//    grid over the (fill_b, fill_f) knobs, under a per-rank activation-memory cap;
//  - V-Half and V-Min: the controllable-memory greedy schedules (docs/schedules.md §6).
// Both reproduce the reference implementation's golden vectors (docs/schedules.md §8) and
// accept heterogeneous per-stage costs.
#ifndef ZBKIT_TUNER_V_SCHEDULES_H_
#define ZBKIT_TUNER_V_SCHEDULES_H_

#include <array>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::tuner {

struct ZbVResult {
  Schedule schedule;          // placement v, chunks 2, ops in order, not yet simulated
  TimeNs max_stage_idle = 0;  // the heuristic's own objective for the winning knob setting
  std::array<TimeNs, 4> knob_max_idle{};  // per (fill_b, fill_f) = TT, TF, FT, FF; -1 = failed
};

// `chunk_costs` has 2p stages in model order (stage s is chunk s of the model); `rank_caps` has
// one activation-memory cap per rank (use +infinity for none; empty = the reference's default,
// 1F1B's memory p * (M_B(r) + M_B(2p-1-r))). Fails with kInfeasible when no knob setting stays
// under the cap. Caps below 1F1B's memory are outside the reference's range and are run exactly
// like the reference (which often aborts there); at or above it, ops the reference's rules would
// trip on (common with heterogeneous stages) are deferred rather than aborting the knob.
Expected<ZbVResult> ZbVHeuristic(const CostProfile& chunk_costs, int microbatches,
                                 const std::vector<double>& rank_caps);

enum class VMemorySetup { kHalf, kMin };

struct VGreedyResult {
  Schedule schedule;               // placement v, chunks 2, ops in order, not yet simulated
  TimeNs cost = 0;                 // the reference's objective (span convention)
  int peak_chunk_activations = 0;  // max prefix sum with F +1, W -1 along each rank's order
};

Expected<VGreedyResult> VGreedy(VMemorySetup setup, const CostProfile& chunk_costs,
                                int microbatches);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_V_SCHEDULES_H_
