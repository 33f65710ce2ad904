// SPDX-License-Identifier: Apache-2.0
// Lower bounds on the makespan and span of any schedule of a given instance (docs/bubbles.md §4),
// used to report T/LB: how far a schedule can at most still be improved.
//
// With s a stage (model chunk), a_s = M_B, b_s = M_B - M_W, cap M_d per rank d, c the hop latency
// on edges between ranks, head(s) the earliest start of stage s's first F, and R(s) the round trip
// from stage s to the last stage and back:
//   LB1 (first-B window)  T >= H_d + L_d + idle before the first B that K_s forwards cannot fill
//   LB2 (memory)          T >= H_d + m * sum_s [(F_s + R_s + B_s) a_s + W_s (a_s - b_s)] / M_d
//   LB3 (critical path)   T >= head(s) + m F_s + R(s) + (B chain to stage 0) + W_0, for every s
// LB1's idle term is only used for one chunk per rank (with several chunks the rank can fill the
// window with other chunks' work). With data-parallel work (docs/data-parallel.md §5) LB1 adds the
// rank's reductions that must follow its last op (all of them in place, else the smallest) and
// starts after its first all-gather, and LB3 adds stage 0's reduction. Every bound holds for any
// per-rank order.
#ifndef ZBKIT_TUNER_LOWER_BOUND_H_
#define ZBKIT_TUNER_LOWER_BOUND_H_

#include <vector>

#include "zbkit/schemas/types.h"

namespace zb::tuner {

struct LowerBounds {
  TimeNs makespan = 0;  // from t = 0
  TimeNs span = 0;      // from each rank's first F (the paper's convention)
};

// `costs` per scheduled stage (ranks * chunks entries); `rank_caps` per rank, empty or +inf = none.
LowerBounds ComputeLowerBounds(const CostProfile& costs, int ranks, int microbatches,
                               Placement placement, const std::vector<double>& rank_caps);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_LOWER_BOUND_H_
