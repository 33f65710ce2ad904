// SPDX-License-Identifier: Apache-2.0
// Bubbles of a timeline: the rules zbview's bubble list, its tooltips and its summary share, so
// they cannot disagree (docs/bubbles.md §5). The rest of what a timeline says (figures, range
// summaries, waits, comparison) is TimelineIndex's (timeline_index.h); both live in
// schemas/src/timeline_analysis.cpp.
#ifndef ZBKIT_SCHEMAS_TIMELINE_ANALYSIS_H_
#define ZBKIT_SCHEMAS_TIMELINE_ANALYSIS_H_

#include <cstdint>
#include <vector>

#include "zbkit/schemas/timeline_index.h"

namespace zb {

// Where a timeline's time counts from: 0 for a predicted timeline (the makespan convention), its
// first op's start for a measured one (its clock has an arbitrary origin).
TimeNs TimelineOrigin(const TimelineIndex& index);

// An idle stretch of a rank lane: [start, end). It starts where every earlier op of the rank has
// ended (the running maximum of their ends, or the origin), so overlapping measured ops leave no
// phantom gap, and ends at op `next` of the lane (-1: the idle tail up to the timeline's end).
struct Bubble {
  int lane = 0;  // a kRank lane
  int32_t rank = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  int64_t next = -1;

  TimeNs length() const { return end - start; }
};

// The idle stretch before op `next` of rank lane `lane` (empty, length 0, when the op starts
// while an earlier op still runs).
Bubble IdleBefore(const TimelineIndex& index, int lane, size_t next);

// The `count` longest idle stretches of the rank lanes inside [origin, max(end, origin +
// makespan)], longest first (ties: lower lane, then earlier); O(ops log count).
std::vector<Bubble> LongestBubbles(const TimelineIndex& index, TimeNs makespan, int count);

// Iterations of a measured run (docs/zbview.md §8). A prediction is one iteration; a measured
// run of several is compared against it one iteration at a time.
//
// The iteration of median duration (end of its last op minus start of its first) among those with
// ops; the lower median of an even count; 0 for a timeline of one iteration. The first step of a
// run (warm-up, allocator growth) and a straggler do not stand for the run; the median does.
int32_t MedianIteration(const TimelineIndex& index);

// Iteration `iteration`'s ops and memory as a timeline of its own, shifted so that its first op
// starts at 0 and renumbered iteration 0, with every op's busy time, kernels and range name; the
// memory of each rank starts with the value it held when the iteration began. An iteration
// without ops gives an empty timeline of the same kind.
Timeline ExtractIteration(const TimelineIndex& index, int32_t iteration);

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_TIMELINE_ANALYSIS_H_
