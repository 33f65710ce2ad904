// SPDX-License-Identifier: Apache-2.0
// `zb tune --frontier FROM:TO:STEP` (docs/search.md §frontier): the memory-vs-bubble curve, like
// the paper's Figure 7. For each cap factor on the grid, the paper's heuristic (zb-auto) and the
// search, side by side; each search also starts from the previous cap's result, so the search's
// curve never rises as the cap grows. A point's bubble rates are the idle share of p x its
// makespan or span, 1 - (the ranks' work / p) / length: for uniform stages the paper's rate; for
// uneven ones it stays comparable across layouts that move work between ranks.
#ifndef ZBKIT_TUNER_FRONTIER_H_
#define ZBKIT_TUNER_FRONTIER_H_

#include <optional>
#include <string_view>
#include <vector>

#include "zbkit/schemas/frontier.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/tune_and_store.h"

namespace zb::tuner {

// "1x:3x:0.125x": from, to, step as cap factors (the x optional); kUsage naming what is wrong.
// At most 1000 points.
Expected<std::vector<double>> ParseFrontierGrid(std::string_view text);

struct FrontierOutcome {
  Frontier
      frontier;  // points per factor: "heuristic" then "search"; cost_profile_id set by storing
  std::vector<std::optional<Schedule>> schedules;  // parallel to frontier.points
};

// `request.options` gives the objective, placement (for the search), chunks and the search's
// budget per cap; its family and memory limit are not used.
Expected<FrontierOutcome> ComputeFrontier(const TuneRequest& request,
                                          const std::vector<double>& factors);

// The area under one method's curve ("heuristic" or "search"): paper bubble rate against the cap
// factor, by the trapezoid rule over the points that fit. `complete` is false when a point of the
// method does not fit (the area then leaves out the stretch around it).
double FrontierArea(const std::vector<FrontierPoint>& points, const std::string& method,
                    bool& complete);

// Records the cost profile, each point's schedule and the frontier in one store; sets the ids.
Status StoreFrontier(const TuneRequest& request, const StoreTarget& target,
                     FrontierOutcome& outcome, int64_t& frontier_id);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_FRONTIER_H_
