// SPDX-License-Identifier: Apache-2.0
// What the tuner minimises: the makespan or the span of one iteration (docs/bubbles.md §1).
#ifndef ZBKIT_TUNER_OBJECTIVE_H_
#define ZBKIT_TUNER_OBJECTIVE_H_

#include <optional>
#include <string_view>

#include "zbkit/schemas/types.h"

namespace zb::tuner {

// The two differ when a late-starting rank also ends late: its idle time before its first F
// counts in the makespan only, and is filled by the next iteration's warm-up when no global
// barrier separates iterations (e.g. with optimizer post-validation), so there the span is what
// the pipeline runs.
enum class Objective {
  kMakespan,  // Prediction::makespan, from t = 0: one synchronous iteration
  kSpan,      // Prediction::span, from each rank's first F; ties go to the smaller makespan
};
const char* ObjectiveName(Objective objective);  // "makespan", "span"
std::optional<Objective> ParseObjective(std::string_view name);

// Whether `a` beats `b` by `objective` (by span, equal spans go to the makespan). Strict, so that
// a tie keeps the incumbent: the earlier candidate in Families() order, the unfused order.
bool Better(const Prediction& a, const Prediction& b, Objective objective);

// The figure `objective` names, of a simulated schedule: its makespan or its span.
TimeNs ObjectiveFigure(const Prediction& predicted, Objective objective);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_OBJECTIVE_H_
