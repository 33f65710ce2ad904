// SPDX-License-Identifier: Apache-2.0
// Weight passes brought forward for the gradient reductions (docs/data-parallel.md §5). A stage's
// reduction starts after its last W (torch's REDUCE_GRAD), so the zero-bubble habit of deferring
// W into the tail defers every reduction to the step's end, where 1F1B had hidden some in its
// idle tail. No family knows this; the simulator does. So each family's order, and the search's
// result, gets a greedy pass: one W at a time, moved to right after its own B where the
// simulated figure does not grow.
#ifndef ZBKIT_TUNER_REDUCE_AWARE_H_
#define ZBKIT_TUNER_REDUCE_AWARE_H_

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/objective.h"
#include "zbkit/tuner/simulator.h"

namespace zb::tuner {

// The most simulations one pass may run: the pass is O(W ops x ops), and beyond this it stops
// with what it has (every kept move is an improvement or a tie).
inline constexpr int kMaxReduceAwareTrials = 4096;

// Where some stage of `schedule` reduces gradients (StageCost::reduce > 0): rank by rank from
// the last, each W in its rank's order moved to right after its B, kept when the figure
// `objective` names does not grow (as FuseBackwards judges). No rank's peak memory grows (W frees
// its M_W sooner) and no order deadlocks (W waits only for its own B). `schedule` must be valid
// and simulated; it comes back simulated. Returns how many W moved; 0 without reductions.
Expected<int> BringWeightPassesForward(Schedule& schedule, Simulator& simulator,
                                       Objective objective = Objective::kMakespan);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_REDUCE_AWARE_H_
