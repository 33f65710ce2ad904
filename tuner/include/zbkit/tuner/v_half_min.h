// SPDX-License-Identifier: Apache-2.0
// The families `v-half` and `v-min`: the controllable-memory greedy V schedules
// (docs/schedules.md §6), about a half and a third of 1F1B's activation memory, on the V placement
// (p ranks, 2p stages; rank r holds stages r and 2p-1-r). They reproduce the reference
// implementation's golden vectors (docs/schedules.md §8) and accept heterogeneous per-stage costs.
#ifndef ZBKIT_TUNER_V_HALF_MIN_H_
#define ZBKIT_TUNER_V_HALF_MIN_H_

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::tuner {

enum class VMemorySetup { kHalf, kMin };

struct VGreedyResult {
  Schedule schedule;               // placement v, chunks 2, ops in order, not yet simulated
  TimeNs cost = 0;                 // the reference's objective (span convention)
  int peak_chunk_activations = 0;  // max prefix sum with F +1, W -1 along each rank's order
};

// `chunk_costs` has 2p stages in model order.
Expected<VGreedyResult> VGreedy(VMemorySetup setup, const CostProfile& chunk_costs,
                                int microbatches);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_V_HALF_MIN_H_
