// SPDX-License-Identifier: Apache-2.0
// What TimelineIndex's tests share (timeline_index_test.cpp, timeline_binning_test.cpp): a terse
// op constructor and a lane whose ops sit on each kind of edge.
#ifndef ZBKIT_TESTS_SCHEMAS_TIMELINE_TEST_SUPPORT_H_
#define ZBKIT_TESTS_SCHEMAS_TIMELINE_TEST_SUPPORT_H_

#include <cstdint>

#include "zbkit/schemas/timeline_index.h"
#include "zbkit/schemas/types.h"

namespace zb::timeline_testing {

inline TimelineOp Op(int32_t rank, int32_t stage, OpKind kind, int32_t microbatch, TimeNs start,
                     TimeNs end) {
  return {rank, stage, kind, microbatch, start, end};
}

// [10,20) [20,30) [30,30) [40,50) on one rank: ops that touch, and one of zero length.
inline TimelineIndex EdgeLane() {
  Timeline timeline;
  timeline.ops = {Op(0, 0, OpKind::kF, 0, 10, 20), Op(0, 0, OpKind::kB, 0, 20, 30),
                  Op(0, 0, OpKind::kW, 0, 30, 30), Op(0, 0, OpKind::kF, 1, 40, 50)};
  return TimelineIndex(timeline);
}

}  // namespace zb::timeline_testing

#endif  // ZBKIT_TESTS_SCHEMAS_TIMELINE_TEST_SUPPORT_H_
