// SPDX-License-Identifier: Apache-2.0
// The schedule search behind `zb tune --family search` (docs/search.md): seeds from every family
// and every setting of the paper's heuristic that fit the cap, improved by a local search over
// each rank's op order aimed at the critical path, judged by the simulator.
//
// A move takes one op out of a rank's order and puts it back elsewhere on that rank (which covers
// swapping an F and a B, shifting a W into a bubble and changing how many forwards a rank runs
// before its first B), or fuses a split backward into a BW or splits one where the profile has a
// fused backward worth having. A move is kept when the order stays within every rank's cap, does
// not deadlock, and is not worse by the objective; sideways moves are kept too, and ties are
// broken by the sum of the ranks' figures, so the search walks across plateaus towards orders that
// leave slack. After a long run without gain it restarts from its best with a few random moves.
// The best seed of each family starts a lineage; the lineages share the budget in turns.
//
// The result is never worse than the best seed, so never worse than any family that fits the
// cap (the heuristic included). It is deterministic for a given seed and evaluation budget; a
// time limit alone stops it where the machine's speed says, along the same trajectory.
#ifndef ZBKIT_TUNER_SEARCH_H_
#define ZBKIT_TUNER_SEARCH_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/objective.h"
#include "zbkit/tuner/torch_export.h"

namespace zb::tuner {

struct SearchOptions {
  Objective objective = Objective::kMakespan;
  std::optional<Placement> placement;  // nullopt: seeds of every placement
  int interleave_chunks = 2;           // v of the 1f1b-i seed
  std::optional<int> chunks;           // only seeds with this many stages per rank (the job's)
  double time_limit_s = 3;             // wall clock; <= 0: no limit (then max_evaluations bounds)
  int64_t max_evaluations = 0;         // simulations; 0: no limit (then time_limit_s bounds)
  uint64_t seed = 1;
  // The runtime that will replay the result: for PyTorch's, moves keep its rule (torch_export.h,
  // TorchRuntimeOrders) and seeds that break it are not used.
  ReplayRuntime runtime = ReplayRuntime::kTorch;
  // Simulate every seed with the costs PyTorch's runtime spends (TorchRuntimeCosts: the first
  // stage's backward all in its W). zb tune sets it with --runtime torch; off, the search works
  // in the paper's model (zb bench search compares with the paper's heuristic there).
  bool torch_runtime_costs = false;
  // The cost of each stage in model order where a layer split fixed them (FamilyRequest).
  std::optional<CostProfile> stage_costs = std::nullopt;
  // Orders of this instance to start from as well (valid, any placement; those over the cap or
  // of another placement than `placement` are ignored), e.g. the result at a smaller cap, so that
  // a larger cap never gives a worse result (zb tune --frontier).
  std::vector<Schedule> warm_starts;
  // Called about ten times a second and once at the end with the share of the budget used
  // (below 1 until the end, exactly 1 once at the end) and the best figure by the objective.
  std::function<void(double done, TimeNs best)> progress;
};

// One starting point: a family's schedule, or one knob setting of the heuristic.
struct SearchSeed {
  std::string name;   // "zb-h1", "zb-auto[TFT]" (knobs allow, prioritize, greedy), ...
  Status status;      // why it gave no schedule, or does not fit (then figure is 0)
  TimeNs figure = 0;  // by the objective
};

struct SearchResult {
  Schedule best;           // simulated; family "search"
  std::string seeded_by;   // the seed whose lineage found `best`
  std::string best_seed;   // the seed with the best figure
  TimeNs seed_figure = 0;  // its figure by the objective
  TimeNs figure = 0;       // best's figure by the objective
  std::vector<SearchSeed> seeds;
  int64_t evaluations = 0;  // simulations run
  int64_t improvements = 0;
  double seconds = 0;
};

// `rank_costs` holds one stage per rank; `rank_caps` one cap per rank (memory_limit.h, +inf =
// none). kInfeasible when no seed fits the caps (each seed's reason in the message);
// kUsage for an empty profile, m < 1 or a cap list of the wrong size.
Expected<SearchResult> Search(const CostProfile& rank_costs, int microbatches,
                              const std::vector<double>& rank_caps, const SearchOptions& options);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_SEARCH_H_
