// SPDX-License-Identifier: Apache-2.0
// The per-rank activation-memory cap of `zb tune --mem-limit L`.
//   "Nx"    N x p x M_B of the rank's share of the model, i.e. N times 1F1B's peak on the first
//           rank ("1x" is the paper's ZB-1p budget, "2x" its ZB-2p budget); N may be fractional.
//   "S"     an absolute per-rank size in the unit of the profile's M_B; suffixes KiB, MiB, GiB
//           (powers of 1024) scale it, e.g. "24GiB" for a profile in bytes.
//   "none"  no cap.
#ifndef ZBKIT_TUNER_MEMORY_LIMIT_H_
#define ZBKIT_TUNER_MEMORY_LIMIT_H_

#include <string>
#include <string_view>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::tuner {

struct MemoryLimit {
  enum class Kind { kNone, kRelative, kAbsolute };
  Kind kind = Kind::kNone;
  double value = 0;  // N for kRelative, the size for kAbsolute

  // Caps per rank for a schedule whose per-stage costs are `scheduled_costs` laid out over
  // `ranks` ranks by `placement`; +infinity for kNone.
  std::vector<double> RankCaps(const CostProfile& scheduled_costs, int ranks,
                               Placement placement) const;
  std::string ToString() const;  // the spelling it was parsed from, normalised
};

// kUsage with the reason for anything that is not one of the three forms or is not > 0.
Expected<MemoryLimit> ParseMemoryLimit(std::string_view text);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_MEMORY_LIMIT_H_
