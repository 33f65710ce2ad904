// SPDX-License-Identifier: Apache-2.0
// Placeholder until the V-Half / V-Min port lands.
#include "zbkit/tuner/v_schedules.h"

namespace zb::tuner {
Expected<VGreedyResult> VGreedy(VMemorySetup, const CostProfile&, int) {
  return InternalError("v-half/v-min are not implemented yet");
}
}  // namespace zb::tuner
