// SPDX-License-Identifier: Apache-2.0
// Schedule families: generators that turn per-stage costs into per-rank op orders.
//
//   1f1b     one forward one backward (fused BW), loop placement
//   1f1b-i   interleaved 1F1B with v chunks per rank (fused BW), loop placement, m % p == 0
//   zb-h1    handcrafted zero-bubble, 1F1B's memory
//   zb-h2    handcrafted zero-bubble, about twice 1F1B's memory, m >= 2p - 1
//   zb-auto  the ZB paper's automatic heuristic (docs/schedules.md §4) over its 8 knob settings,
//            under a per-rank memory cap
//   zb-v     the ZB-V heuristic, V placement (v_schedules.h)
//   v-half   V-Half, half of 1F1B's activation memory, V placement
//   v-min    V-Min, a third of 1F1B's activation memory, V placement
//
// Every generator takes the per-rank cost profile (p stages, one per rank, as a profiler
// measures a p-stage pipeline) and splits it into finer model chunks itself where the family
// needs them (CostProfile::SplitStages), so all families are compared on the same model.
#ifndef ZBKIT_TUNER_FAMILIES_H_
#define ZBKIT_TUNER_FAMILIES_H_

#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::tuner {

inline constexpr double kNoMemoryCap = std::numeric_limits<double>::infinity();

struct FamilyInfo {
  std::string_view name;
  Placement placement;
  bool uses_memory_cap;  // the generator adapts its order to the cap (otherwise it is only checked)
  std::string_view summary;
};

// All families in the order tables list them.
const std::vector<FamilyInfo>& Families();
const FamilyInfo* FindFamily(std::string_view name);

struct FamilyRequest {
  CostProfile rank_costs;         // p stages: the share of the model each rank holds
  int microbatches = 0;           // m
  int interleave_chunks = 2;      // v for 1f1b-i
  std::vector<double> rank_caps;  // per-rank activation-memory cap; empty = none
};

// Builds the family's schedule (ops in order, costs split per scheduled stage, family set), not
// yet simulated. kUsage for an unknown family or an instance the family cannot schedule (e.g.
// m % p != 0 for 1f1b-i), with the reason; kInfeasible when a cap-driven family cannot fit.
Expected<Schedule> GenerateFamily(std::string_view family, const FamilyRequest& request);

// The handcrafted generators, callable directly (tests, bench). `costs` are per stage as
// scheduled (p stages for loop families, p*v for 1f1b-i).
Expected<Schedule> OneFOneB(const CostProfile& costs, int microbatches);
Expected<Schedule> ZbH1(const CostProfile& costs, int microbatches);
Expected<Schedule> ZbH2(const CostProfile& costs, int microbatches);
Expected<Schedule> Interleaved1F1B(const CostProfile& chunk_costs, int ranks, int microbatches);

// The ZB automatic heuristic (docs/schedules.md §4) on p stages with per-stage caps
// (`stage_caps` empty = the reference default of 3m * M_B per stage).
struct ZbKnobs {
  bool allow_bubble_before_first_b = false;
  bool prioritize_b = false;
  bool no_bubble_greedy = true;
};
struct ZbAutoResult {
  Schedule schedule;               // ops in order with the heuristic's own start/end times
  TimeNs cost = 0;                 // span convention, the heuristic's objective
  std::vector<TimeNs> knob_costs;  // 8 entries, order TTT..FFF; -1 = "cannot fit memory"
};
Expected<Schedule> ZbManualOrder(const CostProfile& costs, int microbatches,
                                 const std::vector<double>& stage_caps, const ZbKnobs& knobs,
                                 TimeNs* cost);
Expected<ZbAutoResult> ZbAuto(const CostProfile& costs, int microbatches,
                              const std::vector<double>& stage_caps);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_FAMILIES_H_
