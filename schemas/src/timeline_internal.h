// SPDX-License-Identifier: Apache-2.0
// Helpers the TimelineIndex sources share (timeline_index.cpp, timeline_binning.cpp,
// timeline_analysis.cpp); internal to the schemas library.
#ifndef ZBKIT_SCHEMAS_SRC_TIMELINE_INTERNAL_H_
#define ZBKIT_SCHEMAS_SRC_TIMELINE_INTERNAL_H_

#include "zbkit/schemas/timeline_index.h"

namespace zb::timeline_internal {

// Whether op i of a lane intersects [t0, t1), given that Visible() put it in range (start < t1):
// on an overlapping lane it may have ended before t0.
inline bool EndedBefore(TimeNs start, TimeNs end, TimeNs t0) {
  return end <= t0 && start != t0;  // a zero-duration op at t0 does intersect
}

// The busy share of `overlap` ns of op i's span: all of it, or for a measured op busy / span of
// it (the device's busy time is spread evenly over the span: a renderer cannot know more).
inline TimeNs BusyInside(const TimelineLane& lane, size_t i, TimeNs overlap) {
  if (lane.busy.empty()) return overlap;
  const TimeNs span = lane.end[i] - lane.start[i];
  if (span <= 0 || lane.busy[i] >= span) return overlap;
  return static_cast<TimeNs>(static_cast<double>(overlap) * static_cast<double>(lane.busy[i]) /
                             static_cast<double>(span));
}

}  // namespace zb::timeline_internal

#endif  // ZBKIT_SCHEMAS_SRC_TIMELINE_INTERNAL_H_
