// SPDX-License-Identifier: Apache-2.0
#include "zbkit/schemas/layers.h"

#include <string>

namespace zb {

const char* LayerSourceName(LayerSource source) {
  return source == LayerSource::kMeasured ? "measured" : "even share of stages";
}

StageCost StageCostOfLayers(const LayerProfile& profile, int first, int count) {
  StageCost stage;
  for (int i = first; i < first + count; ++i) {
    const LayerCost& layer = profile.layers[i];
    stage.f += layer.f;
    stage.b += layer.b;
    stage.w += layer.w;
    stage.m_b += layer.m_b;
    stage.m_w += layer.m_w;
  }
  return stage;
}

double StateOfLayers(const LayerProfile& profile, int first, int count) {
  double state = 0;
  for (int i = first; i < first + count; ++i)
    state += profile.layers[i].state;
  return state;
}

Expected<LayerProfile> EvenShareOfStages(const CostProfile& stages,
                                         const std::vector<int>& blocks_per_stage) {
  if (static_cast<int>(blocks_per_stage.size()) != stages.num_stages()) {
    return UsageError("blocks per stage: " + std::to_string(blocks_per_stage.size()) +
                      " counts for " + std::to_string(stages.num_stages()) + " stages");
  }
  LayerProfile profile;
  profile.comm = stages.comm;
  profile.source = LayerSource::kEvenShareOfStages;
  for (int s = 0; s < stages.num_stages(); ++s) {
    const int parts = blocks_per_stage[s];
    if (parts < 1) {
      return UsageError("blocks per stage: stage " + std::to_string(s) + " has " +
                        std::to_string(parts) + ", needs at least 1");
    }
    // The same shares SplitStages gives (the remainder to the first blocks), so that the blocks
    // of a stage add up to it exactly.
    CostProfile one;
    one.stages = {stages.stages[s]};
    const CostProfile split = one.SplitStages(parts);
    for (int i = 0; i < parts; ++i) {
      const StageCost& share = split.stages[i];
      profile.layers.push_back({"stage" + std::to_string(s) + "." + std::to_string(i), share.f,
                                share.b, share.w, share.m_b, share.m_w, 0, 0});
    }
  }
  return profile;
}

}  // namespace zb
