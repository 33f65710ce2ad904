// SPDX-License-Identifier: Apache-2.0
// Per-block costs measured by the PyTorch hook
// (adapters/pytorch/zbkit/pipelining/measure/blocks.py): each rank writes <dir>/rank<R>.blocks.json
// (zb-block-costs/1, docs/formats.md §6) beside its trace, with the F, B, W, M_B, M_W, state and
// send of every top-level block of its stages. This merges the ranks' files into the profile's
// per-layer costs (zb-layers/1), in model order.
#ifndef ZBKIT_PROFILER_BLOCK_COSTS_H_
#define ZBKIT_PROFILER_BLOCK_COSTS_H_

#include <optional>
#include <string>
#include <vector>

#include "zbkit/profiler/costs.h"
#include "zbkit/schemas/layers.h"
#include "zbkit/schemas/types.h"

namespace zb::profiler {

inline constexpr const char* kBlockCostsFormat = "zb-block-costs/1";

// "rank<R>.blocks.json": a per-block file, not a trace.
bool IsBlockCostsFileName(const std::string& name);

struct BlockCosts {
  std::optional<LayerProfile> layers;  // nullopt: none, or not usable (notes say why)
  std::vector<std::string> notes;      // one line each: what was left out and why
};

// Reads every rank<R>.blocks.json of `dirs` (a multi-host job's hosts each keep their own) and puts
// the stages' blocks in stage order. The result holds per-layer costs only when every stage of
// `report` (what the schedule measured, per global stage) has blocks, with `comm` as their hop, and
// a note of how much of each stage's measured F and backward its blocks account for; a stage
// missing, a file unreadable or malformed, a block the zb-layers/1 rules refuse: a note, and no
// per-layer costs. Names that two stages share (a plain script's stage modules both have
// `blocks.0`) are made unique as "stage<S>.<name>", with a note. Never fails: the stage totals
// stand without it.
BlockCosts ReadBlockCosts(const std::vector<std::string>& dirs, const CostReport& report,
                          TimeNs comm);

}  // namespace zb::profiler

#endif  // ZBKIT_PROFILER_BLOCK_COSTS_H_
