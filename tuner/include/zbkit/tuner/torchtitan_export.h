// SPDX-License-Identifier: Apache-2.0
// What torchtitan needs to run a layer split and layout with no code change (docs/partition.md
// §3), beside torch_export.h (what PyTorch's runtime needs of an order): its [parallelism]
// settings (the pipeline degree, the schedule class of the layout, the modules of each model
// part) and the TOML a user pastes into the job's config.
#ifndef ZBKIT_TUNER_TORCHTITAN_EXPORT_H_
#define ZBKIT_TUNER_TORCHTITAN_EXPORT_H_

#include <string>
#include <vector>

#include "zbkit/schemas/layers.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/partition.h"

namespace zb::tuner {

// The blocks of each stage of `split`, by name: torchtitan's module_fqns_per_model_part.
std::vector<std::vector<std::string>> StageModuleNames(const LayerProfile& profile,
                                                       const LayerSplit& split);

struct TorchtitanSettings {
  int pipeline_parallel_degree = 0;
  std::string pipeline_parallel_schedule;  // torch's class of the layout, without "Schedule"
  std::vector<std::vector<std::string>> module_fqns_per_model_part;
};
TorchtitanSettings TorchtitanSettingsFor(const LayerProfile& profile, const JobLayout& layout,
                                         int ranks, const LayerSplit& split);

// The [parallelism] table of the settings, and a comment saying how to run `family` (zbkit's
// order of the layout) instead of torchtitan's own.
std::string TorchtitanToml(const TorchtitanSettings& settings, const std::string& family);

// kUsage when the profile's blocks are not modules the model has (an even share of stage totals,
// LayerSource::kEvenShareOfStages): torchtitan could not build that split.
Status CheckTorchtitanRealisable(const LayerProfile& profile);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_TORCHTITAN_EXPORT_H_
