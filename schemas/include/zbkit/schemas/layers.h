// SPDX-License-Identifier: Apache-2.0
// Per-layer costs: what one top-level block of a model (torchtitan's `tok_embeddings`,
// `layers.N`, `norm`, `output`; a plain script's stage children) costs per microbatch, so that a
// layer split can be chosen with the schedule (docs/partition.md). The exchange format is
// zb-layers/1 (docs/formats.md §6; json_io.h reads and writes it).
#ifndef ZBKIT_SCHEMAS_LAYERS_H_
#define ZBKIT_SCHEMAS_LAYERS_H_

#include <string>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb {

// One top-level block, per microbatch. Times and activations as in StageCost; `state` is what
// the block holds whatever the schedule: its parameters, their gradients and the optimizer's
// state, in the unit of m_b; `send` the bytes of its output (what a stage boundary after it sends).
struct LayerCost {
  std::string name;  // fully qualified in the model: "layers.3"
  TimeNs f = 0;
  TimeNs b = 0;
  TimeNs w = 0;
  double m_b = 0;
  double m_w = 0;
  double state = 0;
  double send = 0;
  // How the block checkpoints its activations (IsBlockCheckpointingMode: none, full, op,
  // reentrant; "" not known): under full and op, B holds its one recomputation and M_W may exceed
  // M_B (docs/activation-checkpointing.md §2).
  std::string checkpointing;
  bool operator==(const LayerCost&) const = default;
};

// How the per-layer figures came to be: measured per block, or a stage total shared out evenly
// over the stage's blocks (an old profile, an imported trace), which says nothing about how the
// blocks differ.
enum class LayerSource { kMeasured, kEvenShareOfStages };
const char* LayerSourceName(LayerSource source);  // "measured", "even share of stages"

struct LayerProfile {
  std::vector<LayerCost> layers;  // in model order
  TimeNs comm = 0;                // one stage-to-stage hop, as in CostProfile
  LayerSource source = LayerSource::kMeasured;
  bool operator==(const LayerProfile&) const = default;

  int num_layers() const { return static_cast<int>(layers.size()); }
};

// The cost of the blocks [first, first + count) run as one stage: the sums of the blocks.
StageCost StageCostOfLayers(const LayerProfile& profile, int first, int count);
double StateOfLayers(const LayerProfile& profile, int first, int count);

// A stage-level profile shared out over `blocks_per_stage[s]` blocks of stage s, each block an
// equal share (LayerSource::kEvenShareOfStages), named "stage<S>.<i>": what zb partition works with
// where only stage totals were measured. kUsage when the counts do not match the stages or are
// below 1.
Expected<LayerProfile> EvenShareOfStages(const CostProfile& stages,
                                         const std::vector<int>& blocks_per_stage);

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_LAYERS_H_
