// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/tune.h"

#include <algorithm>

#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/fuse.h"
#include "zbkit/tuner/reduce_aware.h"
#include "zbkit/tuner/simulator.h"

namespace zb::tuner {
namespace {

// Fills the figures of a candidate whose schedule is simulated: fits, peak/1F1B, bounds, T/LB.
void Judge(const CostProfile& rank_costs, int microbatches, Candidate& candidate) {
  const int p = rank_costs.num_stages();
  const CostProfile& scheduled = candidate.schedule.costs;
  const Placement placement = candidate.schedule.placement;
  const Prediction& predicted = *candidate.schedule.predicted;
  const MemoryLimit one_x{MemoryLimit::Kind::kRelative, 1};
  const std::vector<double> one_f_one_b = one_x.RankCaps(rank_costs);
  candidate.fits = true;
  for (int rank = 0; rank < p; ++rank) {
    // A relative tolerance: split costs carry memory as fractions that may not add up exactly.
    const double cap = candidate.caps[rank];
    candidate.fits = candidate.fits && FitsCap(predicted.peak_memory[rank], cap);
    candidate.peak_over_1f1b.push_back(
        one_f_one_b[rank] > 0 ? predicted.peak_memory[rank] / one_f_one_b[rank] : 0);
  }
  candidate.bounds = ComputeLowerBounds(scheduled, p, microbatches, placement, candidate.caps);
  candidate.t_over_lb =
      candidate.bounds.makespan > 0
          ? static_cast<double>(predicted.makespan) / static_cast<double>(candidate.bounds.makespan)
          : 0;
}

Candidate Evaluate(std::string_view family, const CostProfile& rank_costs, int microbatches,
                   const TuneOptions& options, Simulator& simulator) {
  Candidate candidate;
  candidate.family = std::string(family);
  // One cap per rank whatever the placement (memory_limit.h); the bounds (Judge) see the model
  // as this family lays it out.
  candidate.caps = options.memory_limit.RankCaps(rank_costs);

  FamilyRequest request{rank_costs,
                        microbatches,
                        options.interleave_chunks,
                        candidate.caps,
                        options.runtime == ReplayRuntime::kTorch,
                        options.stage_costs};
  auto schedule = GenerateFamily(family, request);
  if (!schedule.ok()) {
    candidate.status = schedule.status();
    return candidate;
  }
  candidate.schedule = std::move(schedule).value();
  if (options.runtime == ReplayRuntime::kTorch) {
    candidate.schedule.costs = TorchRuntimeCosts(std::move(candidate.schedule.costs));
  }
  Status valid = ValidateSchedule(candidate.schedule);
  if (valid.ok()) valid = simulator.Run(candidate.schedule);
  if (valid.ok() && FusingCanPay(candidate.schedule.costs)) {
    auto fused = FuseBackwards(candidate.schedule, simulator, options.objective);
    if (fused.ok()) candidate.fused_backwards = *fused;
    valid = fused.status();
  }
  if (valid.ok())
    valid = BringWeightPassesForward(candidate.schedule, simulator, options.objective).status();
  if (!valid.ok()) {
    // A generator produced an incomplete or deadlocking order: a bug, reported, not hidden.
    candidate.status =
        InternalError(std::string(family) + " produced an invalid schedule: " + valid.message());
    return candidate;
  }
  if (options.runtime == ReplayRuntime::kTorch) {
    candidate.status = CheckTorchRuntimeRules(candidate.schedule);
    if (!candidate.status.ok()) return candidate;
  }
  Judge(rank_costs, microbatches, candidate);
  return candidate;
}

bool OtherLayout(const Candidate& candidate, const TuneOptions& options) {
  if (!options.layout || !candidate.status.ok()) return false;
  return !(JobLayout{candidate.schedule.placement, candidate.schedule.chunks} == *options.layout);
}

Candidate RunSearch(const CostProfile& rank_costs, int microbatches, const TuneOptions& options,
                    const std::vector<Schedule>& more_seeds) {
  Candidate candidate;
  candidate.family = "search";
  candidate.caps = options.memory_limit.RankCaps(rank_costs);
  SearchOptions search = options.search;
  search.objective = options.objective;
  search.placement = options.placement;
  search.interleave_chunks = options.interleave_chunks;
  search.runtime = options.runtime;
  search.torch_runtime_costs = options.runtime == ReplayRuntime::kTorch;
  search.stage_costs = options.stage_costs;
  if (options.layout) {
    search.placement = options.layout->placement;
    search.chunks = options.layout->chunks;
    if (options.layout->chunks > 1) search.interleave_chunks = options.layout->chunks;
  }
  // torch's own orders (--torch-orders) seed the search too, so that what it returns is never
  // slower than a built-in schedule that fits the cap and the runtime's rule: on a profile with
  // heavy first and last stages, torch's InterleavedZeroBubble beat every family's seed
  // (docs/search.md). The seed filters (placement, layout, rule, cap) apply to them as to any.
  for (const auto& [name, order] : options.reference_orders) {
    if (!order.ok()) continue;
    search.warm_starts.push_back(*order);
    search.warm_starts.back().family = name;
  }
  for (const Schedule& seed : more_seeds)
    search.warm_starts.push_back(seed);
  auto found = Search(rank_costs, microbatches, candidate.caps, search);
  if (!found.ok()) {
    candidate.status = found.status();
    return candidate;
  }
  candidate.schedule = std::move(found->best);  // the search figures keep the rest
  candidate.search = std::move(found).value();
  Simulator simulator;
  if (Status simulated = simulator.Run(candidate.schedule); simulated.ok()) {
    candidate.status =
        BringWeightPassesForward(candidate.schedule, simulator, options.objective).status();
  } else {
    candidate.status = simulated;
  }
  if (!candidate.status.ok()) return candidate;
  Judge(rank_costs, microbatches, candidate);
  return candidate;
}

// An order given as it is (torch's own schedule): simulated and judged like a family, never fused
// (it is what that runtime runs), never chosen.
Candidate EvaluateReference(const std::string& name, const Expected<Schedule>& order,
                            const CostProfile& rank_costs, int microbatches,
                            const TuneOptions& options) {
  Candidate candidate;
  candidate.family = name;
  candidate.reference = true;
  candidate.caps = options.memory_limit.RankCaps(rank_costs);
  if (!order.ok()) {
    candidate.status = order.status();
    return candidate;
  }
  candidate.schedule = *order;
  // torch's own classes run on torch's runtime, whatever the tuned order is for.
  candidate.schedule.costs = TorchRuntimeCosts(std::move(candidate.schedule.costs));
  candidate.status = Simulate(candidate.schedule);
  if (candidate.status.ok()) Judge(rank_costs, microbatches, candidate);
  return candidate;
}

// The best order of a tuning that ignored the data-parallel work (TuneOptions::dp_oblivious_row),
// given back the work of its stages and judged with it.
Candidate EvaluateDataParallelOblivious(const CostProfile& profile, int microbatches,
                                        const TuneOptions& options) {
  Candidate candidate;
  candidate.family = "dp-oblivious";
  candidate.reference = true;
  const CostProfile rank_costs = profile.CostsOnly();
  candidate.caps = options.memory_limit.RankCaps(rank_costs);
  TuneOptions oblivious = options;
  oblivious.dp_oblivious_row = false;
  auto tuned = Tune(profile.WithoutDataParallelWork(), microbatches, oblivious);
  if (!tuned.ok() || tuned->best < 0) {
    candidate.status =
        tuned.ok() ? Infeasible("nothing fits the cap without data parallelism") : tuned.status();
    return candidate;
  }
  Candidate& best = tuned->candidates[tuned->best];
  candidate.family += ":" + best.family;
  candidate.schedule = std::move(best.schedule);
  candidate.fused_backwards = best.fused_backwards;
  // Its stages are the profile's split as the families split it (SplitStages); a layer split's
  // stages (stage_costs) carry no data-parallel work to give back.
  const CostProfile work = rank_costs.SplitStages(candidate.schedule.chunks);
  std::vector<StageCost>& stages = candidate.schedule.costs.stages;
  if (!options.stage_costs && work.stages.size() == stages.size()) {
    for (size_t s = 0; s < stages.size(); ++s) {
      stages[s].reduce = work.stages[s].reduce;
      stages[s].unshard = work.stages[s].unshard;
      stages[s].unsharded = work.stages[s].unsharded;
    }
  }
  candidate.schedule.costs.reduce_wait = rank_costs.reduce_wait;
  candidate.status = Simulate(candidate.schedule);
  if (candidate.status.ok()) Judge(rank_costs, microbatches, candidate);
  return candidate;
}

}  // namespace

std::string TorchClassFor(const JobLayout& layout) {
  if (layout.placement == Placement::kV) return "ScheduleZBVZeroBubble";
  return layout.chunks == 1 ? "Schedule1F1B" : "ScheduleInterleaved1F1B";
}

int MostChunks(const TuneOptions& options) {
  return std::max({2, options.interleave_chunks, options.layout ? options.layout->chunks : 1});
}

Status CheckTuneSize(int ranks, int microbatches, int chunks) {
  if (ranks > kMaxRanks) {
    return UsageError("costs: " + std::to_string(ranks) + " stages, one per rank: more than the " +
                      std::to_string(kMaxRanks) + " ranks zbkit tunes");
  }
  const int64_t ops = int64_t{ranks} * chunks * microbatches * 3;
  if (ops > kMaxScheduleOps) {
    return UsageError("-m " + std::to_string(microbatches) + " on " + std::to_string(ranks) +
                      " ranks with " + std::to_string(chunks) + " stages per rank makes " +
                      std::to_string(ops) + " ops, more than the " +
                      std::to_string(kMaxScheduleOps) + " zbkit tunes in one schedule");
  }
  return Status::Ok();
}

Expected<TuneResult> Tune(const CostProfile& profile, int microbatches,
                          const TuneOptions& options) {
  // The schedules carry the costs alone: what job was profiled (its layout) is in options.layout.
  const CostProfile rank_costs = profile.CostsOnly();
  ZB_RETURN_IF_ERROR(ValidateProfileToTune(profile).WithContext("costs"));
  if (microbatches < 1) {
    return UsageError("--microbatches must be >= 1, got " + std::to_string(microbatches));
  }
  ZB_RETURN_IF_ERROR(CheckTuneSize(rank_costs.num_stages(), microbatches, MostChunks(options)));
  std::vector<std::string_view> families;
  const bool search = options.family == "search";
  if (options.family == "best" || search) {
    for (const FamilyInfo& info : Families()) {
      if (!options.placement || info.placement == *options.placement) families.push_back(info.name);
    }
  } else {
    const FamilyInfo* info = FindFamily(options.family);
    if (info == nullptr) {
      return GenerateFamily(options.family, {}).status();  // the unknown-family message
    }
    if (options.placement && info->placement != *options.placement) {
      return UsageError("--family " + options.family + " uses placement " +
                        PlacementName(info->placement) + ", not " +
                        PlacementName(*options.placement));
    }
    families.push_back(info->name);
  }

  TuneResult result;
  Simulator simulator;
  for (std::string_view family : families) {
    Candidate candidate = Evaluate(family, rank_costs, microbatches, options, simulator);
    if (families.size() == 1 && !candidate.status.ok() &&
        candidate.status.code() == ErrorCode::kUsage) {
      return candidate.status;
    }
    result.candidates.push_back(std::move(candidate));
  }
  // Tuned without the data-parallel work first, so that its order seeds the search: what is
  // chosen is then never slower than the DP-oblivious order (the search keeps its best seed).
  std::optional<Candidate> oblivious;
  if (options.dp_oblivious_row && rank_costs.HasDataParallelWork()) {
    oblivious = EvaluateDataParallelOblivious(profile, microbatches, options);
  }
  if (search) {
    std::vector<Schedule> seeds;
    if (oblivious && oblivious->status.ok()) {
      seeds.push_back(oblivious->schedule);
      seeds.back().family = oblivious->family;
    }
    result.candidates.push_back(RunSearch(rank_costs, microbatches, options, seeds));
  }
  for (Candidate& candidate : result.candidates)
    candidate.other_layout = OtherLayout(candidate, options);
  for (const auto& [name, order] : options.reference_orders)
    result.candidates.push_back(EvaluateReference(name, order, rank_costs, microbatches, options));
  if (oblivious) result.candidates.push_back(std::move(*oblivious));
  for (int i = 0; i < static_cast<int>(result.candidates.size()); ++i) {
    const Candidate& candidate = result.candidates[i];
    if (!candidate.status.ok() || !candidate.fits || candidate.reference) continue;
    if (candidate.other_layout) continue;
    if (result.best < 0 ||
        Better(*candidate.schedule.predicted, *result.candidates[result.best].schedule.predicted,
               options.objective)) {
      result.best = i;
    }
  }
  return result;
}

}  // namespace zb::tuner
