// SPDX-License-Identifier: Apache-2.0
// The ranks' recorded history (version-2 progress records, progress.h) as one measured timeline:
// the ops each rank ended last and the op it is in, on the records' clock (CLOCK_REALTIME, one
// clock for the ranks of one host), for `zb doctor --trace-out` (docs/stalls.md §3): the steps
// before a stall in Perfetto, rank beside rank.
#ifndef ZBKIT_DOCTOR_HISTORY_H_
#define ZBKIT_DOCTOR_HISTORY_H_

#include <cstdint>

#include "zbkit/doctor/progress.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::doctor {

// Every history entry of every rank as an op (F, B, W, BW; sends and receives as COMM ops of
// their stage; torch's other actions left out), and each rank's current op (in it, or the step
// raised in it) from the state's time to `now_ns`, named "... (not ended)". Each op's range
// name is its OpText. t = 0 at the earliest op. NotFound when no record keeps a history (all
// version 1, or no op ended yet).
Expected<Timeline> HistoryTimeline(const RunProgress& run, int64_t now_ns);

}  // namespace zb::doctor

#endif  // ZBKIT_DOCTOR_HISTORY_H_
