// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/partition.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <utility>

#include "memory_plan.h"
#include "zbkit/tuner/memory_limit.h"
#include "zbkit/tuner/tune.h"

namespace zb::tuner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// What one layout makes of a split: the stage costs, each rank's sum of its stages' costs and
// state (through the placement), and the budget each rank's activations have under the cap.
struct LaidOutSplit {
  CostProfile stage_costs;
  CostProfile rank_costs;
  std::vector<double> state;
};

LaidOutSplit LayOut(const LayerProfile& profile, const LayerSplit& split,
                    const PartitionOptions& options) {
  LaidOutSplit laid;
  laid.stage_costs = StageCostsOf(profile, split);
  const int p = options.ranks;
  laid.rank_costs.comm = profile.comm;
  laid.rank_costs.stages.assign(p, StageCost{});
  laid.state.assign(p, 0);
  int first = 0;
  for (int stage = 0; stage < static_cast<int>(split.size()); ++stage) {
    const int rank = RankOfStage(options.layout.placement, p, stage);
    StageCost& sum = laid.rank_costs.stages[rank];
    const StageCost& cost = laid.stage_costs.stages[stage];
    sum.f += cost.f;
    sum.b += cost.b;
    sum.w += cost.w;
    sum.m_b += cost.m_b;
    sum.m_w += cost.m_w;
    laid.state[rank] += StateOfLayers(profile, first, split[stage]);
    first += split[stage];
  }
  return laid;
}

// The best order of `split` that fits (family "best", or "search" with a budget), with the
// figures of its row.
SplitEvaluation Judge(const LayerProfile& profile, const LayerSplit& split,
                      const PartitionOptions& options, bool search) {
  SplitEvaluation row;
  row.split = split;
  const LaidOutSplit laid = LayOut(profile, split, options);
  row.state = laid.state;
  std::vector<double> budgets;
  for (int rank = 0; rank < options.ranks; ++rank) {
    const double left = options.cap - laid.state[rank];
    if (!(left > 0)) {
      std::ostringstream out;
      out << "rank " << rank << "'s weights, gradients and optimizer state (" << laid.state[rank]
          << ") leave nothing of the cap " << options.cap;
      row.status = Infeasible(out.str());
      return row;
    }
    budgets.push_back(left);
  }
  TuneOptions tune;
  tune.family = search ? "search" : "best";
  tune.placement = options.layout.placement;
  tune.layout = options.layout;
  tune.interleave_chunks = std::max(2, options.layout.chunks);
  tune.memory_limit = MemoryLimit::PerRank(std::move(budgets));
  tune.runtime = options.runtime;
  tune.stage_costs = laid.stage_costs;
  tune.search.time_limit_s = 0;
  tune.search.max_evaluations = options.order_evaluations;
  auto tuned = Tune(laid.rank_costs, options.microbatches, tune);
  if (!tuned.ok()) {
    row.status = tuned.status();
    return row;
  }
  if (tuned->best < 0) {
    row.status = Infeasible("no order of this split fits the cap");
    return row;
  }
  row.schedule = std::move(tuned->candidates[tuned->best].schedule);
  row.iteration = row.schedule.predicted->makespan;
  for (int rank = 0; rank < options.ranks; ++rank)
    row.peak.push_back(row.state[rank] + row.schedule.predicted->peak_memory[rank]);
  return row;
}

bool Faster(const SplitEvaluation& a, const SplitEvaluation& b) {
  if (!a.status.ok()) return false;
  return !b.status.ok() || a.iteration < b.iteration;
}

// A start's row: its split judged by the families, or why there is none; and whether the
// co-tuning can start from it.
std::pair<SplitEvaluation, bool> StartRow(const LayerProfile& profile,
                                          const Expected<LayerSplit>& split,
                                          const PartitionOptions& options, std::string name,
                                          std::string detail) {
  SplitEvaluation row;
  if (split.ok()) {
    row = Judge(profile, *split, options, /*search=*/false);
  } else {
    row.status = split.status();
  }
  row.name = std::move(name);
  row.detail = std::move(detail);
  return {std::move(row), split.ok()};
}

// The best integer setting of torchtitan's two knobs, each from 0 to the layers per stage.
SplitEvaluation BestTorchtitanSetting(const LayerProfile& profile, const ModelShape& shape,
                                      int stages, const PartitionOptions& options) {
  SplitEvaluation best;
  best.status = Infeasible("no setting of torchtitan's knobs splits this model");
  for (int first = 0; first <= shape.body; ++first) {
    for (int last = 0; last <= shape.body; ++last) {
      auto split = TorchtitanSplit(shape, stages, first, last);
      if (!split.ok()) continue;
      SplitEvaluation row = Judge(profile, *split, options, /*search=*/false);
      row.detail = "first_stage_less_layers=" + std::to_string(first) +
                   ", last_stage_less_layers=" + std::to_string(last);
      if (best.split.empty() || Faster(row, best)) best = std::move(row);
    }
  }
  return best;
}

// How the walk ranks candidates: by the iteration time of their best order, then, between equal
// times (a move that lightens a rank off the critical path changes nothing in the makespan), by
// how evenly the ranks' work is spread (the sum of squares of each rank's F + B + W): the walk
// can then cross the plateau to a split where a later move shortens the critical path.
struct WalkFigure {
  TimeNs iteration = std::numeric_limits<TimeNs>::max();
  double spread = 0;
  auto operator<=>(const WalkFigure&) const = default;
};

// A row for `candidate`: its split judged on the profile under its plan; `figure` its rank.
SplitEvaluation JudgeCandidate(const LayerProfile& profile, const SplitAndPlan& candidate,
                               const PartitionOptions& options, bool search,
                               WalkFigure* figure = nullptr) {
  auto planned = WithCheckpointing(profile, candidate.plan);
  SplitEvaluation row;
  if (planned.ok()) {
    row = Judge(*planned, candidate.split, options, search);
    if (figure != nullptr && row.status.ok()) {
      figure->iteration = row.iteration;
      for (const StageCost& rank : LayOut(*planned, candidate.split, options).rank_costs.stages) {
        const double work = NsToMs(rank.f + rank.b + rank.w);
        figure->spread += work * work;
      }
    }
  } else {
    row.split = candidate.split;
    row.status = planned.status();
  }
  row.checkpointing = candidate.plan;
  return row;
}

// The co-tuning's walk: first-improvement hill climbing from the fastest start, a move taking
// one block from one stage to another (the stages between keep their counts, their blocks shift
// by one; every block keeps its mode, or a fitted plan is fitted again) or, with `plan_modes`,
// a fitted plan with the next headroom, or stepping one block of a stage to the next mode down or
// up in memory (StageModeStep, docs/memory-plan.md §3); each candidate judged once by its best
// family order (the search is kept for the finalists); when no move improves, restarts from the
// best with two random moves. Returns the candidates it judged, fastest first.
std::vector<SplitAndPlan> CoTune(const LayerProfile& profile,
                                 const std::vector<SplitAndPlan>& starts,
                                 const PartitionOptions& options, int64_t& judged) {
  std::map<SplitAndPlan, WalkFigure> seen;
  auto figure = [&](const SplitAndPlan& candidate) -> WalkFigure {
    auto it = seen.find(candidate);
    if (it != seen.end()) return it->second;
    ++judged;
    WalkFigure value;
    JudgeCandidate(profile, candidate, options, /*search=*/false, &value);
    seen.emplace(candidate, value);
    return value;
  };
  SplitAndPlan best;
  WalkFigure best_figure;
  for (const SplitAndPlan& start : starts) {
    const WalkFigure value = figure(start);
    if (best.split.empty() || value < best_figure) {
      best = start;
      best_figure = value;
    }
  }
  const int stages = static_cast<int>(best.split.size());
  const bool plan_moves = !options.plan_modes.empty();
  // Every move from `current`: the mode steps of each stage, then the block moves.
  auto refit = [&](SplitAndPlan& candidate) {
    if (candidate.fit >= 0)
      candidate.plan = FitPlan(profile, candidate.split, options, kFitHeadrooms[candidate.fit]);
  };
  auto moves = [&](const SplitAndPlan& current) {
    std::vector<SplitAndPlan> next;
    if (plan_moves && current.fit >= 0) {  // a fitted plan with more or less headroom
      for (int level : {current.fit - 1, current.fit + 1}) {
        if (level < 0 || level >= kFitLevels) continue;
        SplitAndPlan other = current;
        other.fit = level;
        refit(other);
        next.push_back(std::move(other));
      }
    }
    if (plan_moves) {  // one block's mode stepped: the plan is then the walk's own
      int first = 0;
      for (int stage = 0; stage < stages; ++stage) {
        for (bool save : {true, false}) {
          const auto step = StageModeStep(profile, current.plan, first, current.split[stage], save,
                                          options.plan_modes);
          if (!step) continue;
          next.push_back({current.split, current.plan, -1});
          next.back().plan[step->block] = step->mode;
        }
        first += current.split[stage];
      }
    }
    for (int from = 0; from < stages && options.fixed_split.empty(); ++from) {
      for (int to = 0; to < stages; ++to) {
        if (from == to || current.split[from] < 2) continue;
        SplitAndPlan moved = current;
        --moved.split[from];
        ++moved.split[to];
        refit(moved);
        next.push_back(std::move(moved));
      }
    }
    return next;
  };
  // Climbs to a candidate no single move improves.
  auto climb = [&](SplitAndPlan current, WalkFigure current_figure) {
    bool improved = true;
    while (improved && judged < options.split_evaluations) {
      improved = false;
      for (SplitAndPlan& next : moves(current)) {
        if (seen.count(next) > 0) continue;
        if (judged >= options.split_evaluations) break;
        const WalkFigure value = figure(next);
        if (value < current_figure) {
          current = std::move(next);
          current_figure = value;
          improved = true;
          break;
        }
      }
    }
    if (current_figure < best_figure) {
      best = std::move(current);
      best_figure = current_figure;
    }
  };
  climb(best, best_figure);
  // Then, while the budget lasts, restarts from the best with a few random moves (deterministic).
  std::mt19937 random(1);
  int64_t stalled = 0;
  while (judged < options.split_evaluations && stalled < options.split_evaluations) {
    const int64_t before = judged;
    SplitAndPlan kicked = best;
    for (int kick = 0; kick < 2 && options.fixed_split.empty(); ++kick) {
      const int from = static_cast<int>(random() % stages);
      const int to = static_cast<int>(random() % stages);
      if (from == to || kicked.split[from] < 2) continue;
      --kicked.split[from];
      ++kicked.split[to];
    }
    refit(kicked);
    if (plan_moves && kicked.fit < 0) {  // and one random mode step
      std::vector<SplitAndPlan> next = moves(kicked);
      if (!next.empty()) kicked = std::move(next[random() % next.size()]);
    }
    climb(kicked, figure(kicked));
    stalled += judged == before ? 1 : 0;  // every neighbour seen already: the space is exhausted
  }
  std::vector<std::pair<WalkFigure, SplitAndPlan>> ranked;
  for (const auto& [candidate, value] : seen) {
    if (value.iteration != std::numeric_limits<TimeNs>::max())
      ranked.emplace_back(value, candidate);
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<SplitAndPlan> fastest;
  for (auto& [value, candidate] : ranked)
    fastest.push_back(std::move(candidate));
  return fastest;
}

// The few fastest candidates of a walk get the full order search (where asked); the fastest of
// them wins. A finalist that is one of `rows` already has its final order there.
SplitEvaluation BestOfWalk(const LayerProfile& profile, const std::vector<SplitAndPlan>& walked,
                           const PartitionOptions& options,
                           const std::vector<SplitEvaluation>& rows) {
  constexpr size_t kFinalists = 6;
  SplitEvaluation tuned;
  tuned.status = Infeasible("no split of the walk fits the cap");
  for (size_t i = 0; i < walked.size() && i < kFinalists; ++i) {
    auto known = std::find_if(rows.begin(), rows.end(), [&](const SplitEvaluation& row) {
      return row.split == walked[i].split && row.checkpointing == walked[i].plan && row.status.ok();
    });
    SplitEvaluation row = known != rows.end() ? *known
                                              : JudgeCandidate(profile, walked[i], options,
                                                               options.order_evaluations > 0);
    if (Faster(row, tuned)) tuned = std::move(row);
  }
  return tuned;
}

// The uniform-<mode> row: `mode` on every block that has it, the others as they ran, the split
// co-tuned under it from the starts' splits and its own min-max split.
Expected<SplitEvaluation> UniformRow(const LayerProfile& profile, const std::string& mode,
                                     const std::vector<SplitAndPlan>& seeds,
                                     const std::vector<int>& in_flight,
                                     const PartitionOptions& options, PartitionResult& result) {
  CheckpointingPlan uniform = AsRunPlan(profile);
  for (size_t i = 0; i < uniform.size(); ++i) {
    if (profile.layers[i].has_mode(mode)) uniform[i] = mode;
  }
  ZB_ASSIGN_OR_RETURN(LayerProfile planned, WithCheckpointing(profile, uniform));
  std::vector<SplitAndPlan> starts;
  for (const SplitAndPlan& seed : seeds)
    starts.push_back({seed.split, uniform});
  const int stages = static_cast<int>(seeds.front().split.size());
  auto min_max = MinMaxSplit(planned, stages, in_flight, options.cap);
  if (min_max.ok() && options.fixed_split.empty()) starts.push_back({*min_max, uniform});
  PartitionOptions split_only = options;
  split_only.plan_modes.clear();
  int64_t judged = 0;
  const std::vector<SplitAndPlan> walked = CoTune(profile, starts, split_only, judged);
  result.splits_judged += judged;
  SplitEvaluation row = BestOfWalk(profile, walked, options, result.splits);
  row.name = "uniform-" + mode;
  row.detail =
      "checkpointing " + mode + " on every block that has it" +
      (options.fixed_split.empty() ? ", the split co-tuned (" + std::to_string(judged) + " splits)"
                                   : std::string());
  return row;
}

// The compared splits the co-tuning starts from, each with its row judged by the families, and
// whether it can be a start: even, torchtitan and min-max, or the one split given.
Expected<std::vector<std::pair<SplitEvaluation, bool>>> SplitStarts(
    const LayerProfile& profile, int stages, const std::vector<int>& in_flight,
    const PartitionOptions& options) {
  std::vector<std::pair<SplitEvaluation, bool>> starts;
  if (!options.fixed_split.empty()) {
    int blocks = 0;
    for (int count : options.fixed_split) {
      if (count < 1) return UsageError("--split: every stage needs at least 1 block");
      blocks += count;
    }
    if (static_cast<int>(options.fixed_split.size()) != stages || blocks != profile.num_layers()) {
      return UsageError("--split: " + std::to_string(options.fixed_split.size()) + " stages of " +
                        std::to_string(blocks) + " blocks, the layout has " +
                        std::to_string(stages) + " stages and the profile " +
                        std::to_string(profile.num_layers()) + " blocks");
    }
    starts.push_back(StartRow(profile, options.fixed_split, options, "given",
                              "the split given (--split): only the checkpointing and the order "
                              "are chosen"));
    return starts;
  }
  const ModelShape shape = ShapeOf(profile);
  const bool framed = shape.head > 0 || shape.tail > 0;
  starts.push_back(StartRow(profile, TorchtitanSplit(shape, stages, framed ? 1 : 0, framed ? 1 : 0),
                            options, "even",
                            framed ? "torchtitan's default: embedding and head count one layer each"
                                   : "the blocks shared out evenly"));
  SplitEvaluation row = BestTorchtitanSetting(profile, shape, stages, options);
  row.name = "torchtitan";
  const bool usable = !row.split.empty();
  starts.emplace_back(std::move(row), usable);
  starts.push_back(StartRow(
      profile, MinMaxSplit(profile, stages, in_flight, options.cap), options, "min-max",
      options.layout.chunks == 1 ? "smallest largest-stage F+B+W, 1F1B's memory within the cap"
                                 : "smallest largest-stage F+B+W"));
  return starts;
}

}  // namespace

std::optional<RepeatedBlockName> ParseRepeatedBlockName(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == name.size()) return std::nullopt;
  const std::string digits = name.substr(dot + 1);
  if (digits.size() > 9) return std::nullopt;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  return RepeatedBlockName{name.substr(0, dot), std::stoi(digits)};
}

ModelShape ShapeOf(const LayerProfile& profile) {
  const int n = profile.num_layers();
  int best_start = 0;
  int best_length = 0;
  for (int start = 0; start < n;) {
    const auto first = ParseRepeatedBlockName(profile.layers[start].name);
    int end = start + 1;
    if (first) {
      for (; end < n; ++end) {
        const auto next = ParseRepeatedBlockName(profile.layers[end].name);
        if (!next || next->prefix != first->prefix) break;
      }
    }
    if (first && end - start > best_length) {
      best_start = start;
      best_length = end - start;
    }
    start = end;
  }
  if (best_length < 2) return {0, n, 0};
  return {best_start, best_length, n - best_start - best_length};
}

Expected<LayerSplit> TorchtitanSplit(const ModelShape& shape, int stages, int input_weight,
                                     int output_weight) {
  if (stages < 1) return UsageError("a split needs at least 1 stage");
  if (stages == 1) return LayerSplit{shape.head + shape.body + shape.tail};
  const int effective = shape.body + input_weight + output_weight;
  if (stages > effective) {
    return UsageError(std::to_string(stages) + " stages for " + std::to_string(effective) +
                      " effective layers");
  }
  const int per_stage = effective / stages;
  const int extra = effective % stages;
  if (input_weight > per_stage || output_weight > per_stage) {
    return UsageError("a weight exceeds the " + std::to_string(per_stage) + " layers per stage");
  }
  LayerSplit split(stages, 0);
  int body_left = shape.body;
  for (int stage = 0; stage < stages; ++stage) {
    int layers = per_stage + (stage < extra ? 1 : 0);
    if (stage == 0) layers -= input_weight;
    if (stage == stages - 1) layers -= output_weight;
    layers = std::min(layers, body_left);
    body_left -= layers;
    split[stage] = layers;
  }
  split.front() += shape.head;
  split.back() += shape.tail + body_left;  // torchtitan would drop them; never happens when valid
  if (body_left != 0) return UsageError("the effective layers do not add up");
  for (int count : split) {
    if (count < 1) return UsageError("a stage would hold no block");
  }
  return split;
}

Expected<LayerSplit> MinMaxSplit(const LayerProfile& profile, int stages,
                                 const std::vector<int>& in_flight, double cap) {
  const int n = profile.num_layers();
  if (stages < 1 || stages > n) {
    return UsageError(std::to_string(n) + " blocks cannot make " + std::to_string(stages) +
                      " stages of at least one block each");
  }
  std::vector<TimeNs> time(n + 1, 0);
  std::vector<double> activations(n + 1, 0);
  std::vector<double> state(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    const LayerCost& layer = profile.layers[i];
    time[i + 1] = time[i] + layer.f + layer.b + layer.w;
    activations[i + 1] = activations[i] + layer.m_b;
    state[i + 1] = state[i] + layer.state;
  }
  auto fits = [&](int stage, int from, int to) {
    if (in_flight.empty() || std::isinf(cap)) return true;
    const double held =
        state[to] - state[from] + in_flight[stage] * (activations[to] - activations[from]);
    return FitsCap(held, cap);
  };
  constexpr TimeNs kNone = std::numeric_limits<TimeNs>::max();
  // best[s][j]: the smallest largest-stage time of blocks [0, j) in s + 1 stages; cut[s][j]: where
  // its last stage starts.
  std::vector<std::vector<TimeNs>> best(stages, std::vector<TimeNs>(n + 1, kNone));
  std::vector<std::vector<int>> cut(stages, std::vector<int>(n + 1, -1));
  for (int j = 1; j <= n; ++j) {
    if (fits(0, 0, j)) best[0][j] = time[j];
  }
  for (int s = 1; s < stages; ++s) {
    for (int j = s + 1; j <= n; ++j) {
      for (int i = s; i < j; ++i) {
        if (best[s - 1][i] == kNone || !fits(s, i, j)) continue;
        const TimeNs value = std::max(best[s - 1][i], time[j] - time[i]);
        if (value < best[s][j]) {
          best[s][j] = value;
          cut[s][j] = i;
        }
      }
    }
  }
  if (best[stages - 1][n] == kNone) {
    return Infeasible("no split into " + std::to_string(stages) +
                      " stages holds its weights and 1F1B's activations within the cap");
  }
  LayerSplit split(stages, 0);
  int end = n;
  for (int s = stages - 1; s > 0; --s) {
    const int start = cut[s][end];
    split[s] = end - start;
    end = start;
  }
  split[0] = end;
  return split;
}

CostProfile StageCostsOf(const LayerProfile& profile, const LayerSplit& split) {
  CostProfile costs;
  costs.comm = profile.comm;
  int first = 0;
  for (int count : split) {
    costs.stages.push_back(StageCostOfLayers(profile, first, count));
    first += count;
  }
  return costs;
}

Expected<PartitionResult> Partition(const LayerProfile& profile, const PartitionOptions& options) {
  const int p = options.ranks;
  const int v = options.layout.chunks;
  if (p < 1) return UsageError("--ranks must be >= 1, got " + std::to_string(p));
  if (options.microbatches < 1) {
    return UsageError("--microbatches must be >= 1, got " + std::to_string(options.microbatches));
  }
  if (v < 1 || (options.layout.placement == Placement::kV && v != 2)) {
    return UsageError("layout " + JobLayoutName(options.layout) + " cannot be built");
  }
  const int stages = p * v;
  if (stages > profile.num_layers()) {
    return UsageError(std::to_string(profile.num_layers()) + " blocks cannot make " +
                      std::to_string(stages) + " stages (" + std::to_string(p) + " ranks x " +
                      std::to_string(v) + " per rank) of at least one block each");
  }
  ZB_RETURN_IF_ERROR(CheckTuneSize(p, options.microbatches, v));
  for (const std::string& mode : options.plan_modes) {
    if (!IsPlannableCheckpointingMode(mode)) {
      return UsageError("a memory plan's modes are none, full and op, got \"" + mode + "\"");
    }
  }
  const bool search = options.order_evaluations > 0;
  PartitionResult result;

  std::vector<int> in_flight;  // 1F1B's, with one stage per rank
  if (v == 1) {
    for (int s = 0; s < stages; ++s)
      in_flight.push_back(std::min(options.microbatches, p - s));
  }
  // Each start is judged by the families first (what the co-tuning compares), its row at the end.
  ZB_ASSIGN_OR_RETURN(auto starts, SplitStarts(profile, stages, in_flight, options));
  const CheckpointingPlan as_run = AsRunPlan(profile);
  std::vector<SplitAndPlan> seeds;
  for (auto& [row, usable] : starts) {
    row.checkpointing = as_run;
    if (usable) seeds.push_back({row.split, as_run});
  }

  // The rows: each split with its final order (the search where asked), the co-tuned one last,
  // never slower than the others (it takes the fastest candidate it has seen, starts included).
  for (auto& [row, usable] : starts) {
    if (usable && search) {
      SplitEvaluation final_row = Judge(profile, row.split, options, true);
      final_row.name = row.name;
      final_row.detail = row.detail;
      final_row.checkpointing = as_run;
      row = std::move(final_row);
    }
    result.splits.push_back(std::move(row));
  }
  if (seeds.empty()) {
    SplitEvaluation none;
    none.name = "co-tuned";
    none.status = Infeasible("no split of the walk fits the cap");
    result.splits.push_back(std::move(none));
    return result;
  }

  // With a memory plan: each mode on every block that has it, the split co-tuned under it; then
  // the plan walk starts from the fastest of those and the job's own modes.
  std::vector<SplitAndPlan> plan_starts = seeds;
  for (const std::string& mode : options.plan_modes) {
    ZB_ASSIGN_OR_RETURN(SplitEvaluation row,
                        UniformRow(profile, mode, seeds, in_flight, options, result));
    if (row.status.ok()) plan_starts.push_back({row.split, row.checkpointing});
    result.splits.push_back(std::move(row));
  }
  if (!options.plan_modes.empty()) {  // and every start's split with each fitted plan
    const size_t unfitted = plan_starts.size();
    for (size_t k = 0; k < unfitted; ++k) {
      for (int level = 0; level < kFitLevels; ++level) {
        const LayerSplit& split = plan_starts[k].split;
        plan_starts.push_back(
            {split, FitPlan(profile, split, options, kFitHeadrooms[level]), level});
      }
    }
  }
  int64_t judged = 0;
  const std::vector<SplitAndPlan> walked = CoTune(profile, plan_starts, options, judged);
  result.splits_judged += judged;
  SplitEvaluation tuned = BestOfWalk(profile, walked, options, result.splits);
  const std::string what = options.plan_modes.empty()    ? " splits"
                           : options.fixed_split.empty() ? " splits and plans"
                                                         : " plans";
  tuned.detail = "local search over " + std::to_string(judged) + what;
  for (const SplitEvaluation& row : result.splits) {
    if (Faster(row, tuned)) {
      const std::string detail =
          "the " + row.name + " split: no faster one found in " + std::to_string(judged) + what;
      tuned = row;
      tuned.detail = detail;
    }
  }
  tuned.name = "co-tuned";
  result.splits.push_back(std::move(tuned));
  if (result.splits.back().status.ok()) result.best = static_cast<int>(result.splits.size()) - 1;
  return result;
}

}  // namespace zb::tuner
