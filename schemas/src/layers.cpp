// SPDX-License-Identifier: Apache-2.0
#include "zbkit/schemas/layers.h"

#include <algorithm>
#include <string>
#include <utility>

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

std::vector<std::string> LayerCost::modes() const {
  std::vector<std::string> all{own_mode()};
  for (const CheckpointingOption& option : options)
    all.push_back(option.mode);
  return all;
}

bool LayerCost::has_mode(const std::string& mode) const {
  return figures_under(mode).has_value();
}

std::optional<CheckpointingOption> LayerCost::figures_under(const std::string& mode) const {
  if (mode == own_mode()) return CheckpointingOption{mode, f, b, w, m_b, m_w, own_measured};
  for (const CheckpointingOption& option : options) {
    if (option.mode == mode) return option;
  }
  return std::nullopt;
}

bool IsPlannableCheckpointingMode(std::string_view mode) {
  return mode == "none" || mode == "full" || mode == "op";
}

CheckpointingPlan AsRunPlan(const LayerProfile& profile) {
  CheckpointingPlan plan;
  for (const LayerCost& layer : profile.layers)
    plan.push_back(layer.own_mode());
  return plan;
}

Expected<LayerProfile> WithCheckpointing(const LayerProfile& profile,
                                         const CheckpointingPlan& plan) {
  if (plan.size() != profile.layers.size()) {
    return InvalidInput("checkpointing plan: " + std::to_string(plan.size()) + " modes for " +
                        std::to_string(profile.layers.size()) + " blocks");
  }
  LayerProfile planned = profile;
  for (size_t i = 0; i < plan.size(); ++i) {
    LayerCost& layer = planned.layers[i];
    if (plan[i] == layer.own_mode()) continue;
    auto chosen = std::find_if(layer.options.begin(), layer.options.end(),
                               [&](const CheckpointingOption& o) { return o.mode == plan[i]; });
    if (chosen == layer.options.end()) {
      std::string has;
      for (const std::string& mode : layer.modes())
        has += (has.empty() ? "" : ", ") + mode;
      return InvalidInput("block " + layer.name + ": no costs under checkpointing \"" + plan[i] +
                          "\" (it has " + has + ")");
    }
    // The block's own figures become an option, the chosen option its figures.
    const CheckpointingOption taken = *chosen;
    *chosen = *layer.figures_under(layer.own_mode());
    layer.f = taken.f;
    layer.b = taken.b;
    layer.w = taken.w;
    layer.m_b = taken.m_b;
    layer.m_w = taken.m_w;
    layer.checkpointing = taken.mode;
    layer.own_measured = taken.measured;
  }
  return planned;
}

int DeriveFullCheckpointing(LayerProfile& profile) {
  int added = 0;
  for (size_t i = 1; i < profile.layers.size(); ++i) {
    LayerCost& layer = profile.layers[i];
    if (layer.own_mode() != "none" || layer.has_mode("full")) continue;
    const double input = profile.layers[i - 1].send;
    if (!(input > 0)) continue;  // the input's size was not measured: nothing to derive from
    layer.options.push_back({"full", layer.f, layer.b + layer.f, layer.w,
                             std::min(input, layer.m_b), layer.m_w, /*measured=*/false});
    ++added;
  }
  return added;
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
      LayerCost layer;
      layer.name = "stage" + std::to_string(s) + "." + std::to_string(i);
      layer.f = share.f;
      layer.b = share.b;
      layer.w = share.w;
      layer.m_b = share.m_b;
      layer.m_w = share.m_w;
      profile.layers.push_back(std::move(layer));
    }
  }
  return profile;
}

}  // namespace zb
