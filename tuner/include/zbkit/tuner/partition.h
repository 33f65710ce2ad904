// SPDX-License-Identifier: Apache-2.0
// Choosing the layer split together with the schedule (`zb partition`, docs/partition.md).
//
// Real models are not balanced: the first stage carries the embedding, the last the norm, the
// head and the loss. Given the measured cost of every top-level block (layers.h), this chooses
// how many consecutive blocks each stage holds and the order that runs them, under a per-rank cap
// on everything a rank holds: its blocks' weights, gradients and optimizer state, plus the
// activations its order keeps in flight. Four splits are compared on the same costs, each with
// its best order:
//   even      what torchtitan does by default (generate_llm_fqn_per_model_part with the
//             embedding and the head counted as one layer each); a model without a head or tail
//             around its repeated blocks: the blocks shared out evenly;
//   torchtitan  torchtitan's pipeline_parallel_first/last_stage_less_layers at its best integer
//             setting;
//   min-max   the exact split (dynamic programme) that minimises the largest stage's F + B + W,
//             with one stage per rank under the cap as 1F1B holds it (p - s microbatches);
//   co-tuned  a local search over the splits, started from the three above, each split judged by
//             the iteration time of its best order that fits the cap; never worse than any of
//             the three (it keeps the best it has seen).
#ifndef ZBKIT_TUNER_PARTITION_H_
#define ZBKIT_TUNER_PARTITION_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/schemas/layers.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/torch_export.h"

namespace zb::tuner {

// How many consecutive blocks each stage holds, stages in model order (p * v of them).
using LayerSplit = std::vector<int>;

// A block named <prefix>.<N>, one of a run of repeated blocks (torchtitan's "layers.12":
// "layers", 12); nullopt for any other name.
struct RepeatedBlockName {
  std::string prefix;
  int index = 0;
};
std::optional<RepeatedBlockName> ParseRepeatedBlockName(const std::string& name);

// The blocks of a model as torchtitan sees them: `head` blocks before the repeated ones (the
// embedding), `body` repeated blocks named <prefix>.<N> (the longest such run), `tail` blocks
// after them (norm, output). A model without a run of at least two repeated blocks is all body.
struct ModelShape {
  int head = 0;
  int body = 0;
  int tail = 0;
};
ModelShape ShapeOf(const LayerProfile& profile);

// torchtitan's generate_llm_fqn_per_model_part(stages, body, input_weight, output_weight) as block
// counts: the head and `body + input_weight + output_weight` effective layers shared out evenly
// (the remainder to the first stages), the first stage `input_weight` body blocks short and with
// the head, the last `output_weight` short and with the tail. kUsage where torchtitan refuses
// (a weight above the layers per stage, more stages than effective layers, an empty stage).
Expected<LayerSplit> TorchtitanSplit(const ModelShape& shape, int stages, int input_weight,
                                     int output_weight);

// The exact min-max split: the smallest possible largest stage F + B + W. With `in_flight` (one
// count per stage) and a finite `cap`, a stage must hold its blocks' state plus in_flight[s]
// microbatches of their M_B within the cap. kInfeasible when no split does.
Expected<LayerSplit> MinMaxSplit(const LayerProfile& profile, int stages,
                                 const std::vector<int>& in_flight, double cap);

// The stage costs of `split` (one StageCost per stage, comm from the profile).
CostProfile StageCostsOf(const LayerProfile& profile, const LayerSplit& split);

struct PartitionOptions {
  int ranks = 0;
  int microbatches = 0;
  JobLayout layout;  // stages per rank and placement of every compared split
  // Per rank, all it holds: weights, gradients, optimizer state and activations, in the unit of
  // the profile's memory (bytes from a profiler). +infinity: none.
  double cap = std::numeric_limits<double>::infinity();
  ReplayRuntime runtime = ReplayRuntime::kTorch;
  int64_t split_evaluations = 300;  // splits the co-tuning judges at most (each by the families)
  // Every compared split's final order: the families and then the order search with this many
  // simulations (deterministic); 0: the best family only.
  int64_t order_evaluations = 2000;
  // The memory plan (docs/memory-plan.md): the checkpointing modes the co-tuning may give a
  // block (among those the block has figures for). Empty: every block keeps the mode it ran in.
  std::vector<std::string> plan_modes;
  // A split to keep (blocks per stage): only the checkpointing plan and the order are chosen, its
  // row named "given" in place of even, torchtitan and min-max. Empty: the split is searched.
  LayerSplit fixed_split;
};

// One compared split with its best order.
struct SplitEvaluation {
  std::string name;    // "even", "torchtitan", "min-max", "co-tuned"
  std::string detail;  // how it was set: "first_stage_less_layers=2, last_stage_less_layers=1"
  LayerSplit split;
  CheckpointingPlan checkpointing;  // each block's mode in this row
  Status status;                    // why there is no order (the split itself, or nothing fits)
  Schedule schedule;                // the best order that fits, simulated
  std::vector<double> state;        // per rank: its blocks' weights, gradients and optimizer state
  std::vector<double> peak;         // per rank: state + the order's activation peak
  TimeNs iteration = 0;             // the order's makespan
};

struct PartitionResult {
  // even, torchtitan, min-max (the blocks' own modes), with plan_modes one uniform-<mode> row
  // per mode (that mode on every block that has it, the split co-tuned), then co-tuned.
  std::vector<SplitEvaluation> splits;
  int64_t splits_judged = 0;  // by the co-tuning's walks (splits, or splits and plans)
  int best = -1;              // the co-tuned row when anything fits
};

// kUsage for fewer blocks than stages, a layout it cannot build (V with other than 2 stages per
// rank), m < 1, a plan mode other than none, full, op; the compared splits that cannot run say why
// in their status.
Expected<PartitionResult> Partition(const LayerProfile& profile, const PartitionOptions& options);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_PARTITION_H_
