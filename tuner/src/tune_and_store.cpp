// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/tune_and_store.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "zbkit/schemas/store.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/objective.h"

namespace zb::tuner {
namespace {

double MaxOf(const std::vector<double>& values) {
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

ComparisonRow RowFor(const Candidate& candidate) {
  ComparisonRow row;
  row.family = candidate.family;
  if (const FamilyInfo* info = FindFamily(candidate.family)) row.placement = info->placement;
  row.status = candidate.status;
  row.caps = candidate.caps;
  if (!candidate.status.ok()) return row;
  row.placement = candidate.schedule.placement;  // the search's is the one it found best
  if (candidate.search) {
    row.search = SearchFigures{candidate.search->seeded_by,    candidate.search->best_seed,
                               candidate.search->seed_figure,  candidate.search->evaluations,
                               candidate.search->improvements, candidate.search->seconds};
  }
  const Prediction& predicted = *candidate.schedule.predicted;
  row.makespan = predicted.makespan;
  row.span = predicted.span;
  row.bubble_rate = predicted.bubble_rate;
  row.paper_bubble_rate = predicted.paper_bubble_rate;
  row.peak_memory = predicted.peak_memory;
  row.peak_over_1f1b = candidate.peak_over_1f1b;
  row.lower_bound = candidate.bounds.makespan;
  row.t_over_lb = candidate.t_over_lb;
  row.fused_backwards = candidate.fused_backwards;
  row.fits = candidate.fits;
  row.reference = candidate.reference;
  row.other_layout = candidate.other_layout;
  row.chunks = candidate.schedule.chunks;
  return row;
}

}  // namespace

Expected<TuneOutcome> TuneAndCompare(const TuneRequest& request) {
  ZB_ASSIGN_OR_RETURN(TuneResult result,
                      Tune(request.costs, request.microbatches, request.options));
  TuneOutcome outcome;
  outcome.ranks = request.costs.num_stages();
  outcome.microbatches = request.microbatches;
  outcome.memory_limit = request.options.memory_limit.ToString();
  outcome.objective = request.options.objective;
  for (const Candidate& candidate : result.candidates)
    outcome.rows.push_back(RowFor(candidate));
  outcome.best = result.best;
  if (result.best >= 0) {
    Candidate& best = result.candidates[result.best];
    if (!std::isinf(MaxOf(best.caps))) outcome.chosen_cap = MaxOf(best.caps);
    outcome.chosen = std::move(best.schedule);
  }
  return outcome;
}

Status StoreTuneOutcome(const TuneRequest& request, const StoreTarget& target,
                        TuneOutcome& outcome) {
  if (!outcome.chosen) return Status::Ok();
  ZB_ASSIGN_OR_RETURN(Store store, Store::Open(target.path));
  // One write: a cost profile is never left without the schedule tuned from it. The ids reach
  // the outcome only once committed.
  int64_t cost_profile_id = 0;
  int64_t schedule_id = 0;
  ZB_RETURN_IF_ERROR(store.WriteAtomically("store tuned schedule", [&](Store& writing) -> Status {
    ZB_ASSIGN_OR_RETURN(int64_t cluster_id,
                        writing.EnsureCluster({target.cluster, "", "", "", ""}));
    ZB_ASSIGN_OR_RETURN(int64_t job_id, writing.EnsureJob(cluster_id, target.job));
    ZB_ASSIGN_OR_RETURN(cost_profile_id,
                        writing.InsertCostProfile(job_id, request.costs_name, request.costs));
    // Each rank's own cap when every rank has one (docs/store.md); else none is kept.
    const std::vector<double>& caps = outcome.rows[static_cast<size_t>(outcome.best)].caps;
    ZB_ASSIGN_OR_RETURN(schedule_id, outcome.chosen_cap
                                         ? writing.InsertSchedule(job_id, *outcome.chosen, caps)
                                         : writing.InsertSchedule(job_id, *outcome.chosen));
    return Status::Ok();
  }));
  outcome.cost_profile_id = cost_profile_id;
  outcome.schedule_id = schedule_id;
  return Status::Ok();
}

Status CertifyAndStore(const TuneRequest& request, TuneOutcome& outcome) {
  if (!outcome.chosen) return Status::Ok();
  if (request.exact) {
    ExactOptions options = *request.exact;
    options.objective = outcome.objective;
    ZB_ASSIGN_OR_RETURN(ExactResult exact,
                        SolveExact(*outcome.chosen, outcome.rows[outcome.best].caps, options));
    if (exact.upper < ObjectiveFigure(*outcome.chosen->predicted, outcome.objective)) {
      exact.best.family = outcome.chosen->family;
      outcome.chosen = exact.best;
    }
    outcome.exact = std::move(exact);
  }
  if (request.store) ZB_RETURN_IF_ERROR(StoreTuneOutcome(request, *request.store, outcome));
  return Status::Ok();
}

Expected<TuneOutcome> TuneAndStore(const TuneRequest& request) {
  ZB_ASSIGN_OR_RETURN(TuneOutcome outcome, TuneAndCompare(request));
  ZB_RETURN_IF_ERROR(CertifyAndStore(request, outcome));
  return outcome;
}

TimeNs RowFigure(const TuneOutcome& outcome, const ComparisonRow& row) {
  return outcome.objective == Objective::kSpan ? row.span : row.makespan;
}

std::vector<LayoutGain> LayoutGains(const TuneOutcome& outcome) {
  std::vector<LayoutGain> gains;
  if (outcome.best < 0) return gains;
  const ComparisonRow& best = outcome.rows[outcome.best];
  std::map<std::pair<int, int>, const ComparisonRow*> others;  // (placement, chunks) -> best row
  for (const ComparisonRow& row : outcome.rows) {
    if (!row.other_layout || !row.status.ok() || !row.fits || row.reference || !row.placement) {
      continue;
    }
    const std::pair<int, int> key{static_cast<int>(*row.placement), row.chunks};
    if (others.count(key) == 0 || RowFigure(outcome, row) < RowFigure(outcome, *others[key])) {
      others[key] = &row;
    }
  }
  for (const auto& [key, row] : others) {
    const double gain = 1 - static_cast<double>(RowFigure(outcome, *row)) /
                                static_cast<double>(RowFigure(outcome, best));
    if (gain > 0) gains.push_back({{static_cast<Placement>(key.first), key.second}, row, gain});
  }
  return gains;
}

}  // namespace zb::tuner
