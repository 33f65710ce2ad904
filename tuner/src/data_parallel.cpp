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

void EnterUnshardWindow(const UnshardWindow& window, std::vector<int32_t>& held,
                        UnshardStep& step) {
  auto has = [](const auto& stages, int32_t stage) {
    return std::find(stages.begin(), stages.end(), stage) != stages.end();
  };
  step.resharded.clear();
  step.unsharded.clear();
  for (int32_t stage : held) {
    if (!has(window, stage)) step.resharded.push_back(stage);
  }
  std::sort(step.resharded.begin(), step.resharded.end());
  for (int32_t stage : step.resharded)
    held.erase(std::find(held.begin(), held.end(), stage));
  for (int32_t stage : window) {
    if (stage < 0 || has(held, stage)) continue;
    step.unsharded.push_back(stage);
    held.push_back(stage);
  }
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
