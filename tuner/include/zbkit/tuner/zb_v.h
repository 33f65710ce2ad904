// SPDX-License-Identifier: Apache-2.0
// The family `zb-v`: the zero-bubble V heuristic of the ZB paper, §6 (docs/schedules.md §5), on the
// V placement (p ranks, 2p stages; rank r holds stages r and 2p-1-r), with its grid over the
// (fill_b, fill_f) knobs, under a per-rank activation-memory cap. It reproduces the reference
// implementation's golden vectors (docs/schedules.md §8) and accepts heterogeneous per-stage costs.
#ifndef ZBKIT_TUNER_ZB_V_H_
#define ZBKIT_TUNER_ZB_V_H_

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

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_ZB_V_H_
