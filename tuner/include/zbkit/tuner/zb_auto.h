// SPDX-License-Identifier: Apache-2.0
// The family `zb-auto`: the ZB paper's automatic scheduling heuristic (docs/schedules.md §4) on p
// loop-placed stages with per-stage activation caps, run over its grid of three knobs. Its order
// is timed while it is built; GenerateFamily("zb-auto", ...) in families.h wraps it.
#ifndef ZBKIT_TUNER_ZB_AUTO_H_
#define ZBKIT_TUNER_ZB_AUTO_H_

#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::tuner {

struct ZbKnobs {
  bool allow_bubble_before_first_b = false;
  bool prioritize_b = false;
  bool no_bubble_greedy = true;
};

struct ZbAutoResult {
  Schedule schedule;               // ops in order with the heuristic's own start/end times
  TimeNs cost = 0;                 // span convention, the heuristic's objective
  std::vector<TimeNs> knob_costs;  // 8 entries, order TTT..FFF; -1 = "cannot fit memory"
};

// One knob setting (`stage_caps` empty = the reference default of 3m * M_B per stage); `cost`
// receives the heuristic's objective.
Expected<Schedule> ZbManualOrder(const CostProfile& costs, int microbatches,
                                 const std::vector<double>& stage_caps, const ZbKnobs& knobs,
                                 TimeNs* cost);
// Every knob setting; the cheapest that fits wins.
Expected<ZbAutoResult> ZbAuto(const CostProfile& costs, int microbatches,
                              const std::vector<double>& stage_caps);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_ZB_AUTO_H_
