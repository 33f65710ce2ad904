// SPDX-License-Identifier: Apache-2.0
// Fusing backwards: where a stage's fused backward is shorter than its split (StageCost::bw <
// B + W, docs/cost-model.md §2), replacing B(s, j) ... W(s, j) by one BW(s, j) at B's place saves
// B + W - BW of the rank's work and frees M_W at once, but gives up W's freedom to fill a bubble
// and delays the input gradient the upstream stage waits for until the weight gradients are done
// too. Which way pays depends on the order around it, so the simulator decides, one backward at a
// time (docs/schedules.md §7).
#ifndef ZBKIT_TUNER_FUSE_H_
#define ZBKIT_TUNER_FUSE_H_

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/objective.h"
#include "zbkit/tuner/simulator.h"

namespace zb::tuner {

// True when some stage of `costs` has a measured fused backward shorter than B + W: only then
// can fusing shorten a schedule.
bool FusingCanPay(const CostProfile& costs);

// Greedy, in each rank's order: fuses a split backward into a BW when the simulated figure
// `objective` names does not grow (by span: nor the makespan when the span stays equal), keeping
// the schedule otherwise as it was. By makespan a fusion that ends the last rank earlier wins
// even when it ends the first rank later too, which can cost the span: a span-objective tuning
// must judge fusions by span. No rank's peak memory grows (a BW frees all
// of M_B where B freed M_B - M_W and W the rest later), nor can the order deadlock (BW waits for
// what B waited for, and W waited only for B). `schedule` must be valid and simulated; it comes
// back simulated. Returns how many backwards were fused. O(B ops x ops) simulation work.
Expected<int> FuseBackwards(Schedule& schedule, Simulator& simulator,
                            Objective objective = Objective::kMakespan);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_FUSE_H_
