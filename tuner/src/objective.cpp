// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/objective.h"

namespace zb::tuner {

const char* ObjectiveName(Objective objective) {
  return objective == Objective::kSpan ? "span" : "makespan";
}

std::optional<Objective> ParseObjective(std::string_view name) {
  if (name == "makespan") return Objective::kMakespan;
  if (name == "span") return Objective::kSpan;
  return std::nullopt;
}

TimeNs ObjectiveFigure(const Prediction& predicted, Objective objective) {
  return objective == Objective::kSpan ? predicted.span : predicted.makespan;
}

bool Better(const Prediction& a, const Prediction& b, Objective objective) {
  if (objective == Objective::kSpan && a.span != b.span) return a.span < b.span;
  return a.makespan < b.makespan;
}

}  // namespace zb::tuner
