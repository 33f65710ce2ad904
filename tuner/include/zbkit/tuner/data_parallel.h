// SPDX-License-Identifier: Apache-2.0
// What PyTorch's pipeline runtime does for a pipeline inside data parallelism, as rules over one
// rank's order (docs/data-parallel.md §4-5): where FSDP holds stages unsharded and where a
// stage's gradients are reduced. One home for the comms lowering (torch_export) and the
// simulator, so that what zbkit writes for torch and what it predicts cannot part.
#ifndef ZBKIT_TUNER_DATA_PARALLEL_H_
#define ZBKIT_TUNER_DATA_PARALLEL_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "zbkit/schemas/types.h"

namespace zb::tuner {

// torch's `_add_unshard_reshard(max_active_stages=3)` (torch 2.13): at most three stages unsharded.
inline constexpr size_t kMaxUnshardedStages = 3;
// The stages FSDP holds unsharded while one op runs, in order of first use; -1 pads.
using UnshardWindow = std::array<int32_t, kMaxUnshardedStages>;

// For each position i of program.ops, its window: the first kMaxUnshardedStages distinct stages
// of ops[i..]. Before ops[i] torch reshards the unsharded stages outside it and unshards those
// in it not yet unsharded (the all-gather the op then waits for); after the last op every stage
// left is resharded. O(ops).
std::vector<UnshardWindow> UnshardWindows(const RankProgram& program);

// What changes when a rank reaches an op with `window`: the stages `held` unsharded outside it
// leave (`resharded`, ascending) and its stages not held enter (`unsharded`, in window order);
// `held` becomes the window's stages. The one step of the rule for the comms export and the
// simulator; `step` is overwritten (its buffers reused: the simulator takes it for every op).
struct UnshardStep {
  std::vector<int32_t> resharded;
  std::vector<int32_t> unsharded;
};
void EnterUnshardWindow(const UnshardWindow& window, std::vector<int32_t>& held, UnshardStep& step);

// For each position i, the stage whose gradients torch reduces right after ops[i] (REDUCE_GRAD,
// `_add_reduce_grad`: after the m-th W or BW of a stage, its last in a valid order), -1 for none.
std::vector<int32_t> ReductionsAfter(const RankProgram& program, int microbatches);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_DATA_PARALLEL_H_
