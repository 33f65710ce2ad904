// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/reduce_aware.h"

#include <algorithm>

namespace zb::tuner {

Expected<int> BringWeightPassesForward(Schedule& schedule, Simulator& simulator,
                                       Objective objective) {
  if (!schedule.predicted)
    return InternalError("BringWeightPassesForward needs a simulated schedule");
  const bool reduces = std::any_of(schedule.costs.stages.begin(), schedule.costs.stages.end(),
                                   [](const StageCost& stage) { return stage.reduce > 0; });
  if (!reduces) return 0;
  Prediction kept = *schedule.predicted;
  int moved = 0;
  int trials = 0;
  for (int rank = schedule.ranks - 1; rank >= 0; --rank) {
    std::vector<Op>& ops = schedule.programs[rank].ops;
    for (size_t i = 0; i < ops.size() && trials < kMaxReduceAwareTrials; ++i) {
      if (ops[i].kind != OpKind::kW) continue;
      const Op w = ops[i];
      auto b = std::find_if(
          ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(i), [&w](const Op& op) {
            return op.kind == OpKind::kB && op.chunk == w.chunk && op.microbatch == w.microbatch;
          });
      const size_t target = static_cast<size_t>(b - ops.begin()) + 1;
      if (b == ops.begin() + static_cast<std::ptrdiff_t>(i) || target == i) continue;
      const std::vector<Op> before = ops;
      ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(i));
      ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(target), w);
      ++trials;
      // A failed run (impossible, see the header) would be undone, never kept.
      const Status run = simulator.Run(schedule);
      if (run.ok() && !Better(kept, *schedule.predicted, objective)) {
        kept = *schedule.predicted;
        ++moved;
        continue;
      }
      ops = before;
    }
  }
  ZB_RETURN_IF_ERROR(simulator.Run(schedule));  // the kept order's times
  return moved;
}

}  // namespace zb::tuner
