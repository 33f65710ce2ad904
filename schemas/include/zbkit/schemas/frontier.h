// SPDX-License-Identifier: Apache-2.0
// A memory-vs-bubble frontier (`zb tune --frontier`): for each per-rank memory cap on a grid, the
// figures of the best schedule each method found under it, side by side. The store keeps them
// (Store::RecordFrontier, tables `frontiers` and `frontier_points`, docs/store.md) and zbview
// plots them.
#ifndef ZBKIT_SCHEMAS_FRONTIER_H_
#define ZBKIT_SCHEMAS_FRONTIER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/schemas/types.h"

namespace zb {

// One (method, cap) cell of a frontier.
struct FrontierPoint {
  std::string method;  // "search" or "heuristic"; free text, non-empty
  // N of the cap "Nx": N x the peak activation memory 1F1B reaches on the profile's fullest rank
  // (docs/schedules.md §2); > 0.
  double cap_factor = 0;
  double cap = 0;  // the per-rank cap in the profile's memory unit, >= 0
  // false: no schedule of this method fits this cap; the figures below are then placeholders
  // (the tuner writes them below 0) and there is no schedule.
  bool fits = false;
  TimeNs makespan = 0;
  TimeNs span = 0;
  double bubble_rate = 0;              // makespan convention (docs/bubbles.md)
  double paper_bubble_rate = 0;        // span convention (the paper's)
  std::optional<int64_t> schedule_id;  // the stored schedule of this point, if any

  bool operator==(const FrontierPoint&) const = default;
};

struct Frontier {
  int64_t cost_profile_id = 0;  // the costs the frontier was computed from
  int microbatches = 0;
  std::string objective;  // "makespan" or "span": what "best" meant
  std::string placement;  // "loop", "v" or "any"
  // In the order they were computed; the store keeps this order.
  std::vector<FrontierPoint> points;

  bool operator==(const Frontier&) const = default;
};

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_FRONTIER_H_
