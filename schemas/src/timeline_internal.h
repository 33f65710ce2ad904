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

}  // namespace zb::timeline_internal

#endif  // ZBKIT_SCHEMAS_SRC_TIMELINE_INTERNAL_H_
