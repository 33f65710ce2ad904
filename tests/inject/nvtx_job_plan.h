// SPDX-License-Identifier: Apache-2.0
// What nvtx_job plants, shared by the job and the tests that check what the profiler recovered.
#ifndef ZBKIT_TESTS_INJECT_NVTX_JOB_PLAN_H_
#define ZBKIT_TESTS_INJECT_NVTX_JOB_PLAN_H_

#include <cstdint>

namespace zb::nvtx_job {

// Busy (spinning, not sleeping) durations of one microbatch's F, B and W on pipeline stage
// `stage` (= RANK), in microseconds. They differ per stage so that a mix-up shows.
inline int64_t ForwardUs(int stage) {
  return 2000 + 250 * stage;
}
inline int64_t BackwardUs(int stage) {
  return 3000 + 250 * stage;
}
inline int64_t WeightUs(int stage) {
  return 1000 + 250 * stage;
}
// The NCCL-domain range ("ncclSend", a registered string) after each forward.
inline constexpr int64_t kSendUs = 200;
// The auxiliary thread's nested ranges ("aux_outer" > "aux_inner") and the cross-thread
// start/end range "handoff_<rank>" it ends.
inline constexpr int64_t kAuxUs = 300;
inline constexpr int kForkChildRanges = 5;

}  // namespace zb::nvtx_job

#endif  // ZBKIT_TESTS_INJECT_NVTX_JOB_PLAN_H_
