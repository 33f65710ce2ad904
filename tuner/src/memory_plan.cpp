// SPDX-License-Identifier: Apache-2.0
#include "memory_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace zb::tuner {

CheckpointingOption FiguresUnder(const LayerCost& layer, const std::string& mode) {
  return layer.figures_under(mode).value_or(CheckpointingOption{});
}

std::optional<ModeStep> StageModeStep(const LayerProfile& profile, const CheckpointingPlan& plan,
                                      int first, int count, bool save,
                                      const std::vector<std::string>& modes) {
  double best_ratio = -1;
  std::optional<ModeStep> best;
  for (int i = first; i < first + count; ++i) {
    const LayerCost& layer = profile.layers[i];
    const CheckpointingOption now = FiguresUnder(layer, plan[i]);
    // The nearest mode below (save) or above in M_B among the allowed ones the block has.
    std::optional<CheckpointingOption> step;
    for (const std::string& mode : modes) {
      if (mode == plan[i]) continue;
      const std::optional<CheckpointingOption> other = layer.figures_under(mode);
      if (!other || (save ? other->m_b >= now.m_b : other->m_b <= now.m_b)) continue;
      if (!step || (save ? other->m_b > step->m_b : other->m_b < step->m_b)) step = other;
    }
    if (!step) continue;
    const double memory = std::abs(now.m_b - step->m_b);
    const double time =
        std::abs(static_cast<double>((step->f + step->b + step->w) - (now.f + now.b + now.w)));
    // Saving: memory per time added (free savings first); spending: time saved per memory.
    const double ratio = save ? memory / (time + 1.0) : time / (memory + 1e-9);
    if (ratio > best_ratio) {
      best_ratio = ratio;
      best = ModeStep{i, step->mode};
    }
  }
  return best;
}

namespace {

// How many microbatches 1F1B keeps in flight on `rank`'s stage of chunk `chunk`: p - rank for
// one stage per rank; with several, the first chunk's stage the most (the warm-up runs its
// forwards), each later chunk's one round fewer.
int InFlight(const PartitionOptions& options, int rank, int chunk) {
  const int p = options.ranks;
  const int held =
      options.layout.chunks == 1 ? p - rank : p - rank + (options.layout.chunks - 1 - chunk) * p;
  return std::clamp(held, 1, options.microbatches);
}

}  // namespace

CheckpointingPlan FitPlan(const LayerProfile& profile, const LayerSplit& split,
                          const PartitionOptions& options, double headroom) {
  CheckpointingPlan plan = AsRunPlan(profile);
  const int n = profile.num_layers();
  // Every block in its fastest allowed mode first.
  for (int i = 0; i < n; ++i) {
    TimeNs fastest = std::numeric_limits<TimeNs>::max();
    for (const std::string& mode : options.plan_modes) {
      const std::optional<CheckpointingOption> figures = profile.layers[i].figures_under(mode);
      if (figures && figures->f + figures->b + figures->w < fastest) {
        fastest = figures->f + figures->b + figures->w;
        plan[i] = mode;
      }
    }
  }
  if (std::isinf(options.cap)) return plan;
  const int stages = static_cast<int>(split.size());
  std::vector<int> first(stages, 0);
  for (int s = 1; s < stages; ++s)
    first[s] = first[s - 1] + split[s - 1];
  for (int rank = 0; rank < options.ranks; ++rank) {
    std::vector<int> own;  // the rank's stages, with their weight in the rank's memory
    std::vector<double> held;
    for (int s = 0; s < stages; ++s) {
      if (RankOfStage(options.layout.placement, options.ranks, s) != rank) continue;
      own.push_back(s);
      held.push_back(headroom * InFlight(options, rank, s / options.ranks));
    }
    auto memory = [&] {
      double total = 0;
      for (size_t k = 0; k < own.size(); ++k) {
        for (int i = first[own[k]]; i < first[own[k]] + split[own[k]]; ++i) {
          const LayerCost& layer = profile.layers[i];
          total += layer.state + held[k] * FiguresUnder(layer, plan[i]).m_b;
        }
      }
      return total;
    };
    // The cheapest step down among the rank's stages, each step's memory weighted by how many
    // microbatches its stage holds, until the rank fits or nothing is left to step.
    while (memory() > options.cap) {
      std::optional<ModeStep> best;
      double best_ratio = -1;
      for (size_t k = 0; k < own.size(); ++k) {
        const auto step =
            StageModeStep(profile, plan, first[own[k]], split[own[k]], true, options.plan_modes);
        if (!step) continue;
        const CheckpointingOption before =
            FiguresUnder(profile.layers[step->block], plan[step->block]);
        const CheckpointingOption after = FiguresUnder(profile.layers[step->block], step->mode);
        const double saved = held[k] * (before.m_b - after.m_b);
        const TimeNs added = (after.f + after.b + after.w) - (before.f + before.b + before.w);
        const double ratio = saved / (static_cast<double>(added) + 1.0);
        if (ratio > best_ratio) {
          best_ratio = ratio;
          best = step;
        }
      }
      if (!best) break;
      plan[best->block] = best->mode;
    }
  }
  return plan;
}

}  // namespace zb::tuner
