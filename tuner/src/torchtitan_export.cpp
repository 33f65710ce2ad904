// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/torchtitan_export.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "zbkit/tuner/tune.h"

namespace zb::tuner {

std::vector<std::vector<std::string>> StageModuleNames(const LayerProfile& profile,
                                                       const LayerSplit& split) {
  std::vector<std::vector<std::string>> stages;
  int first = 0;
  for (int count : split) {
    std::vector<std::string>& names = stages.emplace_back();
    for (int i = first; i < first + count; ++i)
      names.push_back(profile.layers[i].name);
    first += count;
  }
  return stages;
}

TorchtitanSettings TorchtitanSettingsFor(const LayerProfile& profile, const JobLayout& layout,
                                         int ranks, const LayerSplit& split) {
  const std::string torch_class = TorchClassFor(layout);
  TorchtitanSettings settings;
  settings.pipeline_parallel_degree = ranks;
  settings.pipeline_parallel_schedule =
      torch_class.rfind("Schedule", 0) == 0 ? torch_class.substr(8) : torch_class;
  settings.module_fqns_per_model_part = StageModuleNames(profile, split);
  return settings;
}

std::string TorchtitanToml(const TorchtitanSettings& settings, const std::string& family) {
  // TOML's strings and arrays of strings are JSON's.
  std::ostringstream out;
  out << "[parallelism]\n"
      << "pipeline_parallel_degree = " << settings.pipeline_parallel_degree << "\n"
      << "pipeline_parallel_schedule = "
      << nlohmann::json(settings.pipeline_parallel_schedule).dump() << "\n"
      << "module_fqns_per_model_part = "
      << nlohmann::json(settings.module_fqns_per_model_part).dump() << "\n"
      << "# the name gives torchtitan's own order of this layout; zbkit's (" << family
      << ", predicted above): --out FILE, then zb export FILE --format "
         "torch-csv -o order.csv --for torchtitan (pipeline_parallel_schedule_csv)\n";
  return out.str();
}

Status CheckTorchtitanRealisable(const LayerProfile& profile) {
  if (profile.source == LayerSource::kEvenShareOfStages) {
    return UsageError("--for torchtitan: the blocks are shares of stage totals (" +
                      profile.layers.front().name +
                      ", ...), not modules the model has: give each block's costs as zb-layers/1 "
                      "(docs/formats.md §6)");
  }
  return Status::Ok();
}

}  // namespace zb::tuner
