// SPDX-License-Identifier: Apache-2.0
// The tuning use case as one library call, what `zb tune` does, for it and for in-process callers
// (the runtime shim, the Python adapters): a cost profile, the microbatch count, the cap and the
// family or placement to consider in; every candidate's figures as a comparison table, the chosen
// schedule (certified by the exact solver, which may replace it, when asked), and, when a store is
// named, the ids it was recorded under out. Nothing is printed.
#ifndef ZBKIT_TUNER_TUNE_AND_STORE_H_
#define ZBKIT_TUNER_TUNE_AND_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/exact.h"
#include "zbkit/tuner/tune.h"

namespace zb::tuner {

// Where the chosen schedule is recorded: the store file, and the cluster and job it belongs to.
struct StoreTarget {
  std::string path;
  std::string cluster = "local";
  std::string job;
};

struct TuneRequest {
  CostProfile costs;       // one stage per rank (the p-stage profile a profiler measures)
  std::string costs_name;  // the cost profile's name in the store, e.g. the file it was read from
  int microbatches = 0;
  TuneOptions options;  // family or "best", placement, 1f1b-i chunks, memory cap, objective
  bool layout_from_profile = false;  // options.layout is the one costs.layout recorded
  std::optional<StoreTarget> store;  // nullopt: nothing is stored
  // Set: the chosen order's op set is certified by SolveExact (`zb tune --exact`) before it is
  // kept, and replaced by a better order of it when the solver finds one.
  std::optional<ExactOptions> exact;
};

// What the "search" row adds: where it started and what it took.
struct SearchFigures {
  std::string seeded_by;   // the seed whose lineage gave the result
  std::string best_seed;   // the seed with the best figure
  TimeNs seed_figure = 0;  // its figure by the objective
  int64_t evaluations = 0;
  int64_t improvements = 0;
  double seconds = 0;
};

// One candidate family, one row of the comparison `zb tune` prints.
struct ComparisonRow {
  std::string family;
  std::optional<Placement> placement;  // the family's placement
  Status status;                       // why the family produced no schedule; then only caps set
  std::vector<double> caps;            // per-rank cap the candidate is judged against (+inf none)
  TimeNs makespan = 0;
  TimeNs span = 0;
  double bubble_rate = 0;
  double paper_bubble_rate = 0;
  std::vector<double> peak_memory;     // per rank
  std::vector<double> peak_over_1f1b;  // per rank: peak / the 1x cap (memory_limit.h)
  TimeNs lower_bound = 0;              // makespan lower bound under the same cap
  double t_over_lb = 0;
  int fused_backwards = 0;              // split backwards the tuner fused (fuse.h)
  bool fits = false;                    // every rank's peak <= its cap
  std::optional<SearchFigures> search;  // on the "search" row
  bool reference = false;               // torch's own schedule: shown, never chosen
  bool other_layout = false;            // not the job's layout (--layout): shown, never chosen
  int chunks = 1;                       // stages per rank of the candidate's schedule
};

struct TuneOutcome {
  int ranks = 0;
  int microbatches = 0;
  std::string memory_limit;                    // the cap as MemoryLimit::ToString() spells it
  Objective objective = Objective::kMakespan;  // what `best` minimises (request.options.objective)
  std::vector<ComparisonRow> rows;             // in Families() order
  // Index into rows of the one that fits with the smallest makespan, or span (ties: makespan)
  // as `objective` says; -1 = none fits.
  int best = -1;
  std::optional<Schedule> chosen;    // rows[best]'s schedule, simulated; nullopt when none fits
  std::optional<double> chosen_cap;  // the largest per-rank cap it was judged against, if finite
  std::optional<int64_t> cost_profile_id;  // set by storing
  std::optional<int64_t> schedule_id;      // set by storing
  std::optional<ExactResult> exact;        // set by certifying (request.exact)
};

// Another layout than the job's that would be faster (docs/schedules.md §7): its best candidate
// that fits, and its gain over the job's best by the objective (1 - theirs / ours, > 0).
struct LayoutGain {
  JobLayout layout;
  const ComparisonRow* row = nullptr;  // into the outcome's rows
  double gain = 0;
};
// Per other layout among `outcome.rows` (other_layout, fits, not a reference), the best; only
// those faster than rows[best], in (placement, chunks) order. Empty when nothing was chosen.
std::vector<LayoutGain> LayoutGains(const TuneOutcome& outcome);
// The objective's figure of a row: its span or its makespan.
TimeNs RowFigure(const TuneOutcome& outcome, const ComparisonRow& row);

// Tunes; when a schedule fits, certifies it (`request.exact`) and, when `request.store` is set,
// records the input profile and the chosen schedule (with its predicted timeline). Nothing
// fitting the cap is not an error here: the outcome has best == -1 and the rows say what each
// family needs; nothing is certified or stored then. Errors: those of Tune (kUsage,
// kInvalidInput), of SolveExact and of the store.
Expected<TuneOutcome> TuneAndStore(const TuneRequest& request);

// The two halves of TuneAndStore, for a caller that reports the comparison before the rest (as
// `zb tune` does, so that its table is printed even when the store cannot be written).
Expected<TuneOutcome> TuneAndCompare(const TuneRequest& request);
// Certifies `outcome.chosen` (when `request.exact`), which may replace it by a better order of
// the same op set, then records it (when `request.store`) and sets the ids; a no-op when nothing
// was chosen.
Status CertifyAndStore(const TuneRequest& request, TuneOutcome& outcome);
// Records `outcome.chosen` in `target` and sets the ids; a no-op when nothing was chosen.
Status StoreTuneOutcome(const TuneRequest& request, const StoreTarget& target,
                        TuneOutcome& outcome);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_TUNE_AND_STORE_H_
