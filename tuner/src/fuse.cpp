// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/fuse.h"

#include <algorithm>

namespace zb::tuner {

bool FusingCanPay(const CostProfile& costs) {
  return std::any_of(costs.stages.begin(), costs.stages.end(), [](const StageCost& stage) {
    return stage.bw > 0 && stage.bw < stage.b + stage.w;
  });
}

Expected<int> FuseBackwards(Schedule& schedule, Simulator& simulator, Objective objective) {
  if (!schedule.predicted) return InternalError("FuseBackwards needs a simulated schedule");
  if (!FusingCanPay(schedule.costs)) return 0;
  Prediction kept = *schedule.predicted;
  int fused = 0;
  for (RankProgram& program : schedule.programs) {
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op b = program.ops[i];
      if (b.kind != OpKind::kB) continue;
      const StageCost& cost = schedule.costs.stages[program.stages[b.chunk]];
      if (cost.bw <= 0 || cost.bw >= cost.b + cost.w) continue;
      auto w = std::find_if(program.ops.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                            program.ops.end(), [&](const Op& op) {
                              return op.kind == OpKind::kW && op.chunk == b.chunk &&
                                     op.microbatch == b.microbatch;
                            });
      if (w == program.ops.end()) continue;  // a valid schedule has it; nothing to fuse if not
      const std::vector<Op> before = program.ops;
      program.ops.erase(w);
      program.ops[i].kind = OpKind::kBW;
      // A failed run (impossible, see the header) would be undone, never kept.
      Status run = simulator.Run(schedule);
      if (run.ok() && !Better(kept, *schedule.predicted, objective)) {
        kept = *schedule.predicted;
        ++fused;
        continue;
      }
      program.ops = before;
    }
  }
  ZB_RETURN_IF_ERROR(simulator.Run(schedule));  // the kept order's times
  return fused;
}

}  // namespace zb::tuner
