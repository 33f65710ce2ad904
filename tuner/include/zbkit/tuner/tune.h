// SPDX-License-Identifier: Apache-2.0
// Tuning: generate the candidate families for an instance, simulate each, bound it, check it
// against the per-rank memory cap, and pick the best that fits (by makespan or by span).
#ifndef ZBKIT_TUNER_TUNE_H_
#define ZBKIT_TUNER_TUNE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/lower_bound.h"
#include "zbkit/tuner/memory_limit.h"
#include "zbkit/tuner/objective.h"
#include "zbkit/tuner/search.h"

namespace zb::tuner {

// The largest instance zbkit tunes, refused before anything is allocated: far beyond any real
// pipeline, and what keeps a schedule's sums on the nanosecond clock (kMaxOpTime, validate.h)
// and each family's work bounded.
inline constexpr int kMaxRanks = 1024;
inline constexpr int64_t kMaxScheduleOps = int64_t{1} << 20;  // p * v * m * 3 (F, B, W)
// UsageError naming what is too large: more than kMaxRanks ranks (the profile's stages), or an
// instance of more than kMaxScheduleOps ops with up to `chunks` stages per rank.
Status CheckTuneSize(int ranks, int microbatches, int chunks);

// Which torch class runs a job of `layout`, for the advice zb tune prints:
// "ScheduleInterleaved1F1B".
std::string TorchClassFor(const JobLayout& layout);

struct TuneOptions {
  // A family name; "best" = every applicable family; "search" = every applicable family plus
  // the search (search.h) seeded by them, as one more candidate named "search".
  std::string family = "best";
  std::optional<Placement> placement;  // restricts "best" to one placement; nullopt = any
  int interleave_chunks = 2;           // v for 1f1b-i
  MemoryLimit memory_limit;
  // The job's layout: candidates of another layout are judged and shown, never chosen, and the
  // search keeps to it. nullopt: any layout.
  std::optional<JobLayout> layout;
  Objective objective = Objective::kMakespan;  // what picks "best" among those that fit
  // The runtime that replays the result: for PyTorch's, a family or search order that breaks its
  // rule (torch_export.h) is not a candidate.
  ReplayRuntime runtime = ReplayRuntime::kTorch;
  // Orders to show beside the candidates, never chosen: torch's built-in schedules
  // (torch_orders.h), each (row name, schedule over these costs, not yet simulated, or why there
  // is none).
  std::vector<std::pair<std::string, Expected<Schedule>>> reference_orders;
  // The cost of each stage in model order where a layer split fixed them (partition.h): the
  // families and search seeds of that many stages per rank schedule them as they are; `rank_costs`
  // then holds each rank's sum of them under the layout's placement (FamilyRequest::stage_costs).
  std::optional<CostProfile> stage_costs = std::nullopt;
  // With family "search": its budget, seed and progress report. Its objective, placement,
  // chunks and runtime are the ones above.
  SearchOptions search;
  // Where the costs have data-parallel work (stage reductions, FSDP's all-gathers): also tune as
  // if they had none and show that order, judged with the work, as the reference row
  // "dp-oblivious:<its family>" (docs/data-parallel.md §5): what knowing the reductions gains.
  // The tuning then runs twice (the search too).
  bool dp_oblivious_row = true;
};

// The most stages per rank any candidate of `options` uses (V's 2, 1f1b-i's chunks, the job's
// layout): what CheckTuneSize and the "below one microbatch" message count with.
int MostChunks(const TuneOptions& options);

struct Candidate {
  std::string family;
  Status status;             // why the family produced no schedule (then nothing below is set)
  Schedule schedule;         // simulated: ops carry start/end, predicted is set
  std::vector<double> caps;  // per-rank cap this candidate is judged against (+inf = none)
  std::vector<double> peak_over_1f1b;  // per rank: peak / the 1x cap (memory_limit.h)
  LowerBounds bounds;
  int fused_backwards = 0;  // split backwards the tuner fused where that was shorter (fuse.h)
  bool fits = false;        // every rank's peak <= its cap
  double t_over_lb = 0;     // makespan / makespan lower bound
  std::optional<SearchResult> search;  // on the "search" candidate: its figures (best moved out)
  // One of TuneOptions::reference_orders, or the DP-oblivious order: shown, never chosen.
  bool reference = false;
  bool other_layout = false;  // not the job's layout (TuneOptions::layout): shown, never chosen
};

struct TuneResult {
  std::vector<Candidate> candidates;  // in Families() order, then search, then the references
  // Index of the candidate that fits with the smallest figure options.objective names (ties: the
  // smaller makespan, then the earlier in Families() order), -1 if none fits.
  int best = -1;
};

// `rank_costs` holds one stage per rank (the p-stage profile a profiler measures). Errors:
// kUsage for an unknown family or an instance the requested family cannot schedule (only when a
// single family is requested; with "best" such families are listed with their reason).
Expected<TuneResult> Tune(const CostProfile& rank_costs, int microbatches,
                          const TuneOptions& options);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_TUNE_H_
