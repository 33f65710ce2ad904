// SPDX-License-Identifier: Apache-2.0
// Per-layer costs: what one top-level block of a model (torchtitan's `tok_embeddings`,
// `layers.N`, `norm`, `output`; a plain script's stage children) costs per microbatch, so that a
// layer split can be chosen with the schedule (docs/partition.md). The exchange format is
// zb-layers/1 (docs/formats.md §6; json_io.h reads and writes it).
#ifndef ZBKIT_SCHEMAS_LAYERS_H_
#define ZBKIT_SCHEMAS_LAYERS_H_

#include <optional>
#include <string>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb {

// What one block costs under another checkpointing mode than the one it ran in (the memory
// plan, docs/memory-plan.md): F, B (with its one recomputation under full and op), W, M_B and
// M_W, measured by the profiler or derived by the documented rule (DeriveFullCheckpointing).
struct CheckpointingOption {
  std::string mode;  // none, full or op (IsPlannableCheckpointingMode)
  TimeNs f = 0;
  TimeNs b = 0;
  TimeNs w = 0;
  double m_b = 0;
  double m_w = 0;
  bool measured = true;  // false: derived by the rule
  bool operator==(const CheckpointingOption&) const = default;
};

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
  // Its costs under the other modes it could run in (never its own mode, each mode once).
  std::vector<CheckpointingOption> options;
  // false where the figures above were derived, not measured: a block WithCheckpointing gave an
  // option's figures (files always hold measured figures there).
  bool own_measured = true;
  bool operator==(const LayerCost&) const = default;

  // The mode the block's own figures are for: its `checkpointing`, "none" where not known.
  std::string own_mode() const { return checkpointing.empty() ? "none" : checkpointing; }
  // Its own mode and every option's, in that order.
  std::vector<std::string> modes() const;
  bool has_mode(const std::string& mode) const;
  // Its figures under `mode` (its own, or an option's); nullopt when it has none.
  std::optional<CheckpointingOption> figures_under(const std::string& mode) const;
};

// The modes a memory plan may choose for a block: none, full, op (reentrant checkpointing is
// refused for split orders, docs/activation-checkpointing.md §1).
bool IsPlannableCheckpointingMode(std::string_view mode);

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

// A checkpointing plan: one mode per block, in model order.
using CheckpointingPlan = std::vector<std::string>;

// The blocks' own modes (own_mode), what the job ran.
CheckpointingPlan AsRunPlan(const LayerProfile& profile);

// The profile with every block's figures those of its mode in `plan` (the block's own figures
// and options swapped, so the result still knows every mode). kInvalidInput naming the block
// when it has no figures for the mode asked, or the plan has another number of blocks.
Expected<LayerProfile> WithCheckpointing(const LayerProfile& profile,
                                         const CheckpointingPlan& plan);

// Adds a derived "full" option to every block that runs without checkpointing and has none,
// by the rule docs/memory-plan.md §2 states and checks against measurements: F and W as they
// are, B + F (B recomputes the forward once), M_B the block's input (the previous block's
// `send`: what the checkpoint keeps), M_W as it is (W reads the same tensors, recomputed).
// The first block (its input is the model's) is left as it is. Returns how many it added.
int DeriveFullCheckpointing(LayerProfile& profile);

// A stage-level profile shared out over `blocks_per_stage[s]` blocks of stage s, each block an
// equal share (LayerSource::kEvenShareOfStages), named "stage<S>.<i>": what zb partition works with
// where only stage totals were measured. kUsage when the counts do not match the stages or are
// below 1.
Expected<LayerProfile> EvenShareOfStages(const CostProfile& stages,
                                         const std::vector<int>& blocks_per_stage);

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_LAYERS_H_
