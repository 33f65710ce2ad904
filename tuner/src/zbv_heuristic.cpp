// SPDX-License-Identifier: Apache-2.0
// Placeholder until the ZB-V port lands.
#include "zbkit/tuner/v_schedules.h"

namespace zb::tuner {
Expected<ZbVResult> ZbVHeuristic(const CostProfile&, int, const std::vector<double>&) {
  return InternalError("zb-v is not implemented yet");
}
}  // namespace zb::tuner
