// SPDX-License-Identifier: Apache-2.0
// The per-rank activation-memory cap of `zb tune --mem-limit L`: one byte budget, the same on
// every rank whatever the placement (the devices are alike), docs/schedules.md §8.
//   "Nx"    N x the peak activation memory 1F1B reaches on this profile, on its fullest rank:
//           N x max over ranks r of (p - r) x M_B(r), M_B(r) that of the p-stage profile's stage r
//           (1F1B holds p - r microbatches on rank r). Uniform stages: N x p x M_B, so "1x" is the
//           paper's ZB-1p budget and "2x" its ZB-2p budget; N may be fractional.
//   "S"     an absolute per-rank size in the unit of the profile's M_B; suffixes KiB, MiB, GiB
//           (powers of 1024) scale it, e.g. "24GiB" for a profile in bytes. Less, on each rank,
//           the parameters FSDP holds unsharded there (StageCost::unsharded, data-parallel.md §5).
//   "none"  no cap.
#ifndef ZBKIT_TUNER_MEMORY_LIMIT_H_
#define ZBKIT_TUNER_MEMORY_LIMIT_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::tuner {

struct MemoryLimit {
  // kPerRank: each rank's own activation budget, set by a caller rather than parsed (a layer
  // split's cap less the weights and optimizer state each rank holds, partition.h).
  enum class Kind { kNone, kRelative, kAbsolute, kPerRank };
  Kind kind = Kind::kNone;
  double value = 0;              // N for kRelative, the size for kAbsolute
  std::vector<double> per_rank;  // kPerRank: one budget per rank

  MemoryLimit() = default;
  MemoryLimit(Kind limit_kind, double limit_value) : kind(limit_kind), value(limit_value) {}
  static MemoryLimit PerRank(std::vector<double> budgets) {
    MemoryLimit limit(Kind::kPerRank, 0);
    limit.per_rank = std::move(budgets);
    return limit;
  }

  // The cap of each rank of the pipeline `rank_costs` measures (one stage per rank), for any
  // placement and chunking of that model; +infinity for kNone.
  std::vector<double> RankCaps(const CostProfile& rank_costs) const;
  std::string ToString() const;  // the spelling it was parsed from, normalised
};

// kUsage with the reason for anything that is not one of the three forms or is not > 0.
Expected<MemoryLimit> ParseMemoryLimit(std::string_view text);

// Why nothing can fit, where the cap itself says so: the first rank whose cap is below one
// microbatch's activations of its smallest stage (its M_B split over `most_chunks` stages per
// rank, the finest any candidate uses), as "rank R's cap C is below ..."; "" when every rank
// could hold one microbatch (then it is the families that need more).
std::string CapBelowOneMicrobatch(const CostProfile& rank_costs, const std::vector<double>& caps,
                                  int most_chunks);

// "Fits the cap", the one definition every family, the search, the frontier, the exact solver
// and tune judge by: `memory` (a peak, or a sum of memory deltas) is within `cap` (+infinity: no
// cap) up to the rounding of the fractional deltas split costs carry: a tolerance of
// kCapTolerance times the magnitude involved, at least 1 unit: the cap's, or `scale` (the sum of
// the absolute values added up into `memory`) where that is larger. Integer-valued inputs (byte
// counts, the golden vectors) are unaffected.
inline constexpr double kCapTolerance = 1e-9;
bool FitsCap(double memory, double cap, double scale = 0);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_MEMORY_LIMIT_H_
