// SPDX-License-Identifier: Apache-2.0
// Schedule families: generators that turn per-stage costs into per-rank op orders.
//
//   1f1b     one forward one backward (fused BW), loop placement
//   1f1b-i   interleaved 1F1B with v chunks per rank (fused BW), loop placement, m % p == 0
//   zb-h1    handcrafted zero-bubble, 1F1B's memory
//   zb-h2    handcrafted zero-bubble, about twice 1F1B's memory, m >= 2p - 1
//   zb-auto  the ZB paper's automatic heuristic (docs/schedules.md §4) over its 8-setting knob
//   grid,
//            under a per-rank memory cap (zb_auto.h)
//   zb-v     the ZB-V heuristic, V placement (zb_v.h)
//   v-half   V-Half, half of 1F1B's activation memory, V placement (v_half_min.h)
//   v-min    V-Min, a third of 1F1B's activation memory, V placement (v_half_min.h)
//
// The four handcrafted generators (1f1b, 1f1b-i, zb-h1, zb-h2) are declared here and live in
// families.cpp; each heuristic family has its own header and source named after it.
//
// Every generator takes the per-rank cost profile (p stages, one per rank, as a profiler
// measures a p-stage pipeline) and splits it into finer model chunks itself where the family
// needs them (CostProfile::SplitStages), so all families are compared on the same model.
#ifndef ZBKIT_TUNER_FAMILIES_H_
#define ZBKIT_TUNER_FAMILIES_H_

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/zb_auto.h"  // ZbAuto, for callers that reach it through the family list

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
  // Build for PyTorch's runtime: the generator sees the costs that runtime spends
  // (TorchRuntimeCosts: the first stage's whole backward in its W, its activations held until
  // then), so that a cap-driven family plans for the memory the job will really hold.
  bool torch_runtime_costs = false;
  // The cost of each scheduled stage in model order where they are known apart (a layer split,
  // partition.h): a family that schedules that many stages (p * chunks) uses them as they are;
  // otherwise it splits each rank's share evenly (CostProfile::SplitStages).
  std::optional<CostProfile> stage_costs = std::nullopt;
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

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_FAMILIES_H_
