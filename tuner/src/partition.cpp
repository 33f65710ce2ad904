// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/partition.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <utility>

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

// The co-tuning's walk: first-improvement hill climbing from the fastest start, a move taking
// one block from one stage to another (the stages between keep their counts, their blocks shift
// by one), each split judged once by its best family order (the search is kept for the
// finalists); when no move improves, restarts from the best with two random moves. Returns the
// splits it judged, fastest first.
std::vector<LayerSplit> CoTune(const LayerProfile& profile, const std::vector<LayerSplit>& starts,
                               const PartitionOptions& options, int64_t& judged) {
  std::map<LayerSplit, TimeNs> seen;
  auto figure = [&](const LayerSplit& split) -> TimeNs {
    auto it = seen.find(split);
    if (it != seen.end()) return it->second;
    ++judged;
    const SplitEvaluation row = Judge(profile, split, options, /*search=*/false);
    const TimeNs value = row.status.ok() ? row.iteration : std::numeric_limits<TimeNs>::max();
    seen.emplace(split, value);
    return value;
  };
  LayerSplit best;
  TimeNs best_figure = std::numeric_limits<TimeNs>::max();
  for (const LayerSplit& start : starts) {
    const TimeNs value = figure(start);
    if (best.empty() || value < best_figure) {
      best = start;
      best_figure = value;
    }
  }
  // Climbs to a split no single move improves.
  const int stages = static_cast<int>(best.size());
  auto climb = [&](LayerSplit current, TimeNs current_figure) {
    bool improved = true;
    while (improved && judged < options.split_evaluations) {
      improved = false;
      for (int from = 0; from < stages && !improved; ++from) {
        for (int to = 0; to < stages && !improved; ++to) {
          if (from == to || current[from] < 2) continue;
          LayerSplit next = current;
          --next[from];
          ++next[to];
          if (seen.count(next) > 0) continue;
          if (judged >= options.split_evaluations) break;
          const TimeNs value = figure(next);
          if (value < current_figure) {
            current = std::move(next);
            current_figure = value;
            improved = true;
          }
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
    LayerSplit kicked = best;
    for (int kick = 0; kick < 2; ++kick) {
      const int from = static_cast<int>(random() % stages);
      const int to = static_cast<int>(random() % stages);
      if (from == to || kicked[from] < 2) continue;
      --kicked[from];
      ++kicked[to];
    }
    climb(kicked, figure(kicked));
    stalled += judged == before ? 1 : 0;  // every neighbour seen already: the space is exhausted
  }
  std::vector<std::pair<TimeNs, LayerSplit>> ranked;
  for (const auto& [split, value] : seen) {
    if (value != std::numeric_limits<TimeNs>::max()) ranked.emplace_back(value, split);
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<LayerSplit> fastest;
  for (auto& [value, split] : ranked)
    fastest.push_back(std::move(split));
  return fastest;
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
  const ModelShape shape = ShapeOf(profile);
  const bool search = options.order_evaluations > 0;
  PartitionResult result;

  // Each start is judged by the families first (what the co-tuning compares), its row at the end.
  std::vector<std::pair<SplitEvaluation, bool>> starts;  // (row, usable as a start)
  const bool framed = shape.head > 0 || shape.tail > 0;
  starts.push_back(StartRow(profile, TorchtitanSplit(shape, stages, framed ? 1 : 0, framed ? 1 : 0),
                            options, "even",
                            framed ? "torchtitan's default: embedding and head count one layer each"
                                   : "the blocks shared out evenly"));
  {
    SplitEvaluation row = BestTorchtitanSetting(profile, shape, stages, options);
    row.name = "torchtitan";
    const bool usable = !row.split.empty();
    starts.emplace_back(std::move(row), usable);
  }
  std::vector<int> in_flight;  // 1F1B's, with one stage per rank
  if (v == 1) {
    for (int s = 0; s < stages; ++s)
      in_flight.push_back(std::min(options.microbatches, p - s));
  }
  starts.push_back(StartRow(profile, MinMaxSplit(profile, stages, in_flight, options.cap), options,
                            "min-max",
                            v == 1 ? "smallest largest-stage F+B+W, 1F1B's memory within the cap"
                                   : "smallest largest-stage F+B+W"));
  std::vector<LayerSplit> seeds;
  for (const auto& [row, usable] : starts) {
    if (usable) seeds.push_back(row.split);
  }
  std::vector<LayerSplit> walked;
  if (!seeds.empty()) walked = CoTune(profile, seeds, options, result.splits_judged);

  // The rows: each split with its final order (the search where asked), the co-tuned one last,
  // never slower than the others (it takes the fastest split it has seen, starts included).
  for (auto& [row, usable] : starts) {
    if (usable && search) {
      SplitEvaluation final_row = Judge(profile, row.split, options, true);
      final_row.name = row.name;
      final_row.detail = row.detail;
      row = std::move(final_row);
    }
    result.splits.push_back(std::move(row));
  }
  // The few fastest splits of the walk get the full order search; the fastest of them wins.
  constexpr size_t kFinalists = 6;
  SplitEvaluation tuned;
  tuned.status = Infeasible("no split of the walk fits the cap");
  // A finalist that is also a start has its final order in that start's row already.
  auto final_row = [&](const LayerSplit& split) {
    for (const SplitEvaluation& row : result.splits) {
      if (row.split == split && row.status.ok()) return row;
    }
    return Judge(profile, split, options, search);
  };
  for (size_t i = 0; i < walked.size() && i < kFinalists; ++i) {
    SplitEvaluation row = final_row(walked[i]);
    if (Faster(row, tuned)) tuned = std::move(row);
  }
  tuned.detail = "local search over " + std::to_string(result.splits_judged) + " splits";
  for (const SplitEvaluation& row : result.splits) {
    if (Faster(row, tuned)) {
      const std::string detail = "the " + row.name + " split: no faster one found in " +
                                 std::to_string(result.splits_judged) + " splits";
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
