// SPDX-License-Identifier: Apache-2.0
// The memory plan's moves (docs/memory-plan.md §3), inside the tuner: what zb partition's
// co-tuning changes in a block's activation checkpointing, beside the split.
#ifndef ZBKIT_TUNER_SRC_MEMORY_PLAN_H_
#define ZBKIT_TUNER_SRC_MEMORY_PLAN_H_

#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/schemas/layers.h"
#include "zbkit/tuner/partition.h"

namespace zb::tuner {

// What the co-tuning walks over: a split and the checkpointing mode of every block.
struct SplitAndPlan {
  LayerSplit split;
  CheckpointingPlan plan;
  // -1: the plan as the walk left it; otherwise FitPlan(split, kFitHeadrooms[fit]), refitted
  // after every move of a block.
  int fit = -1;
  auto operator<=>(const SplitAndPlan&) const = default;
};

// The headrooms FitPlan is tried with: the microbatches a stage holds, as a multiple of 1F1B's.
inline constexpr double kFitHeadrooms[] = {0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0};
inline constexpr int kFitLevels = static_cast<int>(std::size(kFitHeadrooms));

// The figures of `layer` under `mode` (it has them: the plan's modes come from its own).
CheckpointingOption FiguresUnder(const LayerCost& layer, const std::string& mode);

// One block's mode stepped: the block, and the mode it gets.
struct ModeStep {
  int block = -1;
  std::string mode;
};

// One stage's plan move in `plan`: `save` steps the block of [first, first + count) whose step
// down in activation memory (M_B) saves the most per unit of time it adds; otherwise the block
// whose step up saves the most time per unit of memory. nullopt when no block of the stage has
// such a step.
std::optional<ModeStep> StageModeStep(const LayerProfile& profile, const CheckpointingPlan& plan,
                                      int first, int count, bool save,
                                      const std::vector<std::string>& modes);

// A plan fitted to `split`: every block in its fastest mode of `options.plan_modes`, then, rank
// by rank, the cheapest steps down (StageModeStep) until the rank's state plus its stages'
// activations, `headroom` times the microbatches 1F1B keeps in flight there, fit the cap. The
// order's real peak differs (zero-bubble orders keep more, and M_W); the walk tries several
// headrooms and the simulator decides.
CheckpointingPlan FitPlan(const LayerProfile& profile, const LayerSplit& split,
                          const PartitionOptions& options, double headroom);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_SRC_MEMORY_PLAN_H_
