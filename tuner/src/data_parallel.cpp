// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/data_parallel.h"

#include <algorithm>
#include <unordered_map>

namespace zb::tuner {

std::vector<UnshardWindow> UnshardWindows(const RankProgram& program) {
  std::vector<UnshardWindow> windows(program.ops.size());
  UnshardWindow next;
  next.fill(-1);
  // Backwards: the window at i is ops[i]'s stage followed by the window at i + 1 without it.
  for (size_t i = program.ops.size(); i-- > 0;) {
    const int32_t stage = program.stages[program.ops[i].chunk];
    UnshardWindow here;
    here.fill(-1);
    here[0] = stage;
    size_t filled = 1;
    for (int32_t later : next) {
      if (later < 0 || filled == kMaxUnshardedStages) break;
      if (later != stage) here[filled++] = later;
    }
    windows[i] = here;
    next = here;
  }
  return windows;
}

std::vector<int32_t> ReductionsAfter(const RankProgram& program, int microbatches) {
  std::vector<int32_t> reduces(program.ops.size(), -1);
  std::unordered_map<int32_t, int> weight_passes;  // per stage, W and BW ops so far
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    if (op.kind != OpKind::kW && op.kind != OpKind::kBW) continue;
    const int32_t stage = program.stages[op.chunk];
    if (++weight_passes[stage] == microbatches) reduces[i] = stage;
  }
  return reduces;
}

}  // namespace zb::tuner
