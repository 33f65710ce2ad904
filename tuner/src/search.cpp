// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "zbkit/schemas/dependencies.h"
#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/fuse.h"
#include "zbkit/tuner/memory_limit.h"
#include "zbkit/tuner/simulator.h"

namespace zb::tuner {
namespace {

using Clock = std::chrono::steady_clock;

// Lexicographic: the objective's figure, then (by span) the makespan, then the sum of the ranks'
// figures, which rewards orders that leave slack on ranks that are not yet critical.
struct Score {
  TimeNs primary = 0;
  TimeNs secondary = 0;
  TimeNs slack = 0;
  bool operator<(const Score& o) const {
    if (primary != o.primary) return primary < o.primary;
    if (secondary != o.secondary) return secondary < o.secondary;
    return slack < o.slack;
  }
  bool operator<=(const Score& o) const { return !(o < *this); }
};

Score ScoreOf(const Schedule& schedule, const Simulator& simulator, Objective objective) {
  const Prediction& predicted = *schedule.predicted;
  Score score;
  for (const RankFigures& rank : simulator.ranks()) {
    score.slack += objective == Objective::kSpan ? rank.end - rank.first_f_start : rank.end;
  }
  score.primary = ObjectiveFigure(predicted, objective);
  score.secondary = objective == Objective::kSpan ? predicted.makespan : 0;
  return score;
}

bool RankFits(const Schedule& schedule, int rank, double cap) {
  if (std::isinf(cap)) return true;
  const RankProgram& program = schedule.programs[rank];
  double memory = 0;
  for (const Op& op : program.ops) {
    memory += schedule.costs.stages[program.stages[op.chunk]].MemoryDelta(op.kind);
    if (!FitsCap(memory, cap)) return false;
  }
  return true;
}

bool Fits(const Schedule& schedule, const std::vector<double>& caps) {
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    if (!RankFits(schedule, rank, caps[rank])) return false;
  }
  return true;
}

// Whether `later` waits for `earlier` directly (dependencies.h), or by the rule of the runtime
// that replays the order (torch_export.h), both on one rank.
bool Waits(const RankProgram& program, const Op& later, const Op& earlier, int num_stages,
           ReplayRuntime runtime) {
  if (runtime == ReplayRuntime::kTorch &&
      TorchRuntimeOrders(num_stages, later.kind, program.stages[later.chunk], later.microbatch,
                         earlier.kind, program.stages[earlier.chunk], earlier.microbatch)) {
    return true;
  }
  const auto dep = WaitsFor(later.kind, program.stages[later.chunk], later.microbatch,
                            DependencyRule{num_stages, 0});
  if (!dep || dep->microbatch != earlier.microbatch ||
      dep->stage != program.stages[earlier.chunk]) {
    return false;
  }
  if (dep->kind == earlier.kind) return true;
  // A BW delivers what its B would (and a W that waits for B cannot follow a BW: none exists).
  return dep->kind == OpKind::kB && earlier.kind == OpKind::kBW;
}

// Replaces every fused backward by B then W at once: never slower (the upstream stage gets its
// gradient when B ends) and no more memory (W frees the rest right after), when fusing saves
// nothing.
void SplitFusedBackwards(Schedule& schedule) {
  for (RankProgram& program : schedule.programs) {
    std::vector<Op> ops;
    ops.reserve(program.ops.size() * 2);
    for (Op op : program.ops) {
      if (op.kind != OpKind::kBW) {
        ops.push_back(op);
        continue;
      }
      op.kind = OpKind::kB;
      ops.push_back(op);
      op.kind = OpKind::kW;
      ops.push_back(op);
    }
    program.ops = std::move(ops);
  }
}

// The knob settings of the heuristic in the order docs/schedules.md §4 lists them (TTT..FFF).
std::string KnobName(const ZbKnobs& knobs) {
  std::string name = "zb-auto[";
  for (bool knob : {knobs.allow_bubble_before_first_b, knobs.prioritize_b, knobs.no_bubble_greedy})
    name += knob ? 'T' : 'F';
  return name + "]";
}

struct Lineage {
  std::string seed_name;
  Schedule current;
  Score current_score;
  Schedule best;
  Score best_score;
  int64_t since_gain = 0;
  int kick = 2;  // random moves of the next restart; doubles while restarts find nothing
};

class Searcher {
 public:
  Searcher(const std::vector<double>& caps, const SearchOptions& options, bool fusing)
      : caps_(caps), options_(options), fusing_(fusing), rng_(options.seed) {}

  // Simulates `schedule`; false when it deadlocks.
  bool Evaluate(Schedule& schedule, Score& score) {
    ++evaluations_;
    if (!simulator_.Run(schedule).ok()) return false;
    score = ScoreOf(schedule, simulator_, options_.objective);
    return true;
  }

  // One move on `lineage`: kept when it fits, runs and is not worse. Every move that brings no
  // gain, whether refused by the cap, deadlocked or just not better, counts towards a restart:
  // under a tight cap most moves are refused, and those lineages need restarts most.
  void Step(Lineage& lineage) {
    if (TryMove(lineage)) {
      lineage.since_gain = 0;
      lineage.kick = 2;
      ++improvements_;
      return;
    }
    ++lineage.since_gain;
    MaybeRestart(lineage);
  }

  void Invalidate() { critical_valid_ = false; }
  int64_t evaluations() const { return evaluations_; }
  int64_t improvements() const { return improvements_; }

 private:
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  // True when the move improved the lineage's best by the objective (or, by span, the makespan).
  bool TryMove(Lineage& lineage) {
    CopyOrder(lineage.current, trial_);
    int rank = -1;
    if (!Propose(lineage.current, trial_, rank)) return false;
    if (!RankFits(trial_, rank, caps_[rank])) return false;
    Score score;
    if (!Evaluate(trial_, score) || !(score <= lineage.current_score)) return false;
    std::swap(lineage.current, trial_);
    lineage.current_score = score;
    critical_valid_ = false;
    if (!(score < lineage.best_score)) return false;
    const bool gain = score.primary < lineage.best_score.primary ||
                      score.secondary < lineage.best_score.secondary;
    lineage.best = lineage.current;
    lineage.best_score = score;
    return gain;
  }

  // Lineages of one placement and chunking share stages and costs, so only the orders differ.
  static void CopyOrder(const Schedule& from, Schedule& to) {
    if (to.programs.size() != from.programs.size() || to.placement != from.placement ||
        to.chunks != from.chunks) {
      to = from;
      return;
    }
    for (size_t r = 0; r < from.programs.size(); ++r)
      to.programs[r].ops = from.programs[r].ops;
    to.predicted = from.predicted;
  }

  // After a long stretch without gain: back to the lineage's best, kicked by a few random moves
  // that keep it feasible (kept whatever their figure).
  void MaybeRestart(Lineage& lineage) {
    const int64_t ops = lineage.current.num_ops();
    if (lineage.since_gain < std::max<int64_t>(1000, 4 * ops)) return;
    lineage.since_gain = 0;
    lineage.current = lineage.best;
    // Each restart that found nothing kicks twice as hard next time, up to a quarter of the ops:
    // a deep local optimum needs a larger step out of it.
    const int kicks = lineage.kick + static_cast<int>(Below(lineage.kick + 1));
    lineage.kick =
        static_cast<int>(std::min<int64_t>(2 * lineage.kick, std::max<int64_t>(2, ops / 4)));
    for (int k = 0; k < kicks; ++k) {
      CopyOrder(lineage.current, trial_);
      int rank = -1;
      if (!RandomShift(trial_, rank) || !RankFits(trial_, rank, caps_[rank])) continue;
      Score score;
      if (!Evaluate(trial_, score)) continue;
      std::swap(lineage.current, trial_);
      lineage.current_score = score;
    }
    Score score;
    if (!Evaluate(lineage.current, score)) {  // cannot happen: each kick was simulated
      lineage.current = lineage.best;
      score = lineage.best_score;
    }
    lineage.current_score = score;
    critical_valid_ = false;
  }

  // Moves ops[from] to index `to` of the resulting order, unless that puts it before an op it
  // waits for or after one that waits for it on the same rank (certain deadlocks).
  bool Reinsert(Schedule& schedule, int rank, int from, int to) {
    RankProgram& program = schedule.programs[rank];
    const int n = static_cast<int>(program.ops.size());
    if (from == to || from < 0 || to < 0 || from >= n || to >= n) return false;
    const Op moved = program.ops[from];
    const int stages = schedule.num_stages();
    if (to < from) {
      for (int i = to; i < from; ++i) {
        if (Waits(program, moved, program.ops[i], stages, options_.runtime)) return false;
      }
      std::rotate(program.ops.begin() + to, program.ops.begin() + from,
                  program.ops.begin() + from + 1);
    } else {
      for (int i = from + 1; i <= to; ++i) {
        if (Waits(program, program.ops[i], moved, stages, options_.runtime)) return false;
      }
      std::rotate(program.ops.begin() + from, program.ops.begin() + from + 1,
                  program.ops.begin() + to + 1);
    }
    return true;
  }

  bool RandomShift(Schedule& schedule, int& rank) {
    rank = static_cast<int>(Below(schedule.ranks));
    const int n = static_cast<int>(schedule.programs[rank].ops.size());
    if (n < 2) return false;
    const int from = static_cast<int>(Below(n));
    const int distance = 1 + static_cast<int>(Below(6));
    const int to = Below(2) == 0 ? from - distance : from + distance;
    return Reinsert(schedule, rank, from, std::clamp(to, 0, n - 1));
  }

  // Exchanges two ops of a rank 1..8 places apart (two reinsertions), which keeps the ops
  // between them in place: e.g. an F and a W trade places where moving either alone would raise
  // the memory peak or delay what lies between.
  bool RandomSwap(Schedule& schedule, int& rank) {
    rank = static_cast<int>(Below(schedule.ranks));
    const int n = static_cast<int>(schedule.programs[rank].ops.size());
    if (n < 2) return false;
    const int i = static_cast<int>(Below(n - 1));
    const int j = std::min(n - 1, i + 1 + static_cast<int>(Below(8)));
    return Reinsert(schedule, rank, j, i) && (j == i + 1 || Reinsert(schedule, rank, i + 1, j));
  }

  // The ops on the critical path of `schedule` (simulated) that waited for their own rank, not
  // for a dependency: moving such an op earlier, or what ran before it later, can shorten the
  // path. Walks back from the op that ends the objective's figure.
  void FindCritical(const Schedule& schedule) {
    critical_.clear();
    const int p = schedule.ranks;
    const int stages = schedule.num_stages();
    const int m = schedule.microbatches;
    // (kind F/B/W, stage, microbatch) -> (rank, index); a BW fills its B and its W slot.
    slot_.assign(static_cast<size_t>(3) * stages * m, {-1, -1});
    auto slot = [&](int kind, int stage, int mb) {
      return (static_cast<size_t>(kind) * stages + stage) * m + mb;
    };
    for (int r = 0; r < p; ++r) {
      const RankProgram& program = schedule.programs[r];
      for (int i = 0; i < static_cast<int>(program.ops.size()); ++i) {
        const Op& op = program.ops[i];
        const int stage = program.stages[op.chunk];
        if (op.kind == OpKind::kBW) {
          slot_[slot(1, stage, op.microbatch)] = {r, i};
          slot_[slot(2, stage, op.microbatch)] = {r, i};
        } else {
          slot_[slot(static_cast<int>(op.kind), stage, op.microbatch)] = {r, i};
        }
      }
    }
    // The rank that sets the figure, and its last op.
    int rank = 0;
    TimeNs worst = -1;
    for (int r = 0; r < p; ++r) {
      const RankProgram& program = schedule.programs[r];
      if (program.ops.empty()) continue;
      TimeNs first_f = program.ops.front().start;
      for (const Op& op : program.ops) {
        if (op.kind == OpKind::kF) {
          first_f = op.start;
          break;
        }
      }
      const TimeNs figure =
          program.ops.back().end - (options_.objective == Objective::kSpan ? first_f : TimeNs{0});
      if (figure > worst) {
        worst = figure;
        rank = r;
      }
    }
    int index = static_cast<int>(schedule.programs[rank].ops.size()) - 1;
    const DependencyRule rule{stages, 0};
    while (index >= 0) {
      const RankProgram& program = schedule.programs[rank];
      const Op& op = program.ops[index];
      const auto dep = WaitsFor(op.kind, program.stages[op.chunk], op.microbatch, rule);
      if (dep) {
        const auto [dep_rank, dep_index] =
            slot_[slot(static_cast<int>(dep->kind), dep->stage, dep->microbatch)];
        if (dep_rank >= 0) {
          const TimeNs ready = schedule.programs[dep_rank].ops[dep_index].end +
                               (dep_rank == rank ? 0 : schedule.costs.comm);
          if (ready == op.start) {
            rank = dep_rank;
            index = dep_index;
            continue;
          }
        }
      }
      if (index > 0 && program.ops[index - 1].end == op.start) {
        critical_.push_back({rank, index});
        --index;
        continue;
      }
      break;  // started at 0: the path begins here
    }
    critical_valid_ = true;
  }

  bool Propose(const Schedule& current, Schedule& trial, int& rank) {
    const uint64_t roll = Below(100);
    if (fusing_ && roll < 8) return FuseOrSplit(trial, rank);
    if (roll < 75) {
      if (!critical_valid_) FindCritical(current);
      if (!critical_.empty()) {
        const auto [r, i] = critical_[Below(critical_.size())];
        rank = r;
        const int n = static_cast<int>(trial.programs[r].ops.size());
        const int distance = 1 + static_cast<int>(Below(std::min(i, 8)));
        if (roll < 45) return Reinsert(trial, r, i, i - distance);  // the waiting op earlier
        // Or something that ran before it later, past it: a W first when there is one.
        int from = i - distance;
        for (int k = i - 1; k >= std::max(0, i - 8); --k) {
          if (trial.programs[r].ops[k].kind == OpKind::kW && Below(2) == 0) {
            from = k;
            break;
          }
        }
        return Reinsert(trial, r, from, std::min(n - 1, i + static_cast<int>(Below(4))));
      }
    }
    if (Below(2) == 0) return RandomSwap(trial, rank);
    return RandomShift(trial, rank);
  }

  // Fuses a split backward at B's place, or splits a fused one with W right after B.
  bool FuseOrSplit(Schedule& schedule, int& rank) {
    rank = static_cast<int>(Below(schedule.ranks));
    RankProgram& program = schedule.programs[rank];
    const int n = static_cast<int>(program.ops.size());
    if (n == 0) return false;
    const int i = static_cast<int>(Below(n));
    Op& op = program.ops[i];
    if (op.kind == OpKind::kBW) {
      op.kind = OpKind::kB;
      Op w = op;
      w.kind = OpKind::kW;
      program.ops.insert(program.ops.begin() + i + 1, w);
      return true;
    }
    if (op.kind != OpKind::kB) return false;
    const StageCost& cost = schedule.costs.stages[program.stages[op.chunk]];
    if (cost.bw <= 0 || cost.bw >= cost.b + cost.w) return false;
    for (int k = i + 1; k < n; ++k) {
      const Op& w = program.ops[k];
      if (w.kind == OpKind::kW && w.chunk == op.chunk && w.microbatch == op.microbatch) {
        op.kind = OpKind::kBW;
        program.ops.erase(program.ops.begin() + k);
        return true;
      }
    }
    return false;
  }

  const std::vector<double>& caps_;
  const SearchOptions& options_;
  const bool fusing_;
  std::mt19937_64 rng_;
  Simulator simulator_;
  Schedule trial_;
  std::vector<std::pair<int, int>> slot_;
  std::vector<std::pair<int, int>> critical_;
  bool critical_valid_ = false;
  int64_t evaluations_ = 0;
  int64_t improvements_ = 0;
};

struct SeededSchedule {
  SearchSeed seed;
  Schedule schedule;
  Score score;
};

// Every family, and every knob setting of the heuristic, under the caps; each simulated.
std::vector<SeededSchedule> MakeSeeds(const CostProfile& rank_costs, int m,
                                      const std::vector<double>& caps, const SearchOptions& options,
                                      Simulator& simulator) {
  std::vector<SeededSchedule> seeds;
  const bool fusing = FusingCanPay(rank_costs);
  auto add = [&](std::string name, Expected<Schedule> generated) {
    SeededSchedule seeded;
    seeded.seed.name = std::move(name);
    if (!generated.ok()) {
      seeded.seed.status = generated.status();
      seeds.push_back(std::move(seeded));
      return;
    }
    seeded.schedule = std::move(generated).value();
    if (options.torch_runtime_costs) {
      seeded.schedule.costs = TorchRuntimeCosts(std::move(seeded.schedule.costs));
    }
    if (!fusing) SplitFusedBackwards(seeded.schedule);
    Status status = ValidateSchedule(seeded.schedule);
    if (status.ok() && options.chunks && seeded.schedule.chunks != *options.chunks) {
      status = Infeasible(std::to_string(seeded.schedule.chunks) +
                          " stages per rank, not the job's " + std::to_string(*options.chunks));
    }
    if (status.ok() && options.runtime == ReplayRuntime::kTorch) {
      status = CheckTorchRuntimeRules(seeded.schedule);
    }
    if (status.ok()) status = simulator.Run(seeded.schedule);
    if (status.ok() && fusing)
      status = FuseBackwards(seeded.schedule, simulator, options.objective).status();
    if (status.ok() && !Fits(seeded.schedule, caps)) {
      status = Infeasible("over the cap");
    }
    seeded.seed.status = status;
    if (status.ok()) {
      seeded.score = ScoreOf(seeded.schedule, simulator, options.objective);
      seeded.seed.figure = seeded.score.primary;
    }
    seeds.push_back(std::move(seeded));
  };
  for (const FamilyInfo& info : Families()) {
    if (options.placement && info.placement != *options.placement) continue;
    add(std::string(info.name),
        GenerateFamily(info.name, FamilyRequest{rank_costs, m, options.interleave_chunks, caps,
                                                options.torch_runtime_costs, options.stage_costs}));
  }
  for (const Schedule& warm : options.warm_starts) {
    if (options.placement && warm.placement != *options.placement) continue;
    add("warm start (" + warm.family + ")", warm);
  }
  if (!options.placement || *options.placement == Placement::kLoop) {
    // The heuristic's settings plan with the costs the runtime spends, as GenerateFamily does.
    const CostProfile knob_costs =
        options.torch_runtime_costs ? TorchRuntimeCosts(rank_costs) : rank_costs;
    for (int k = 0; k < 8; ++k) {
      const ZbKnobs knobs{(k & 4) == 0, (k & 2) == 0, (k & 1) == 0};
      TimeNs cost = 0;
      add(KnobName(knobs), ZbManualOrder(knob_costs, m, caps, knobs, &cost));
    }
  }
  return seeds;
}

}  // namespace

Expected<SearchResult> Search(const CostProfile& rank_costs, int microbatches,
                              const std::vector<double>& rank_caps, const SearchOptions& options) {
  ZB_RETURN_IF_ERROR(ValidateCostProfile(rank_costs).WithContext("costs"));
  if (microbatches < 1) {
    return UsageError("--microbatches must be >= 1, got " + std::to_string(microbatches));
  }
  if (static_cast<int>(rank_caps.size()) != rank_costs.num_stages()) {
    return UsageError("search: " + std::to_string(rank_caps.size()) + " caps for " +
                      std::to_string(rank_costs.num_stages()) + " ranks");
  }
  const Clock::time_point started = Clock::now();
  Simulator simulator;
  std::vector<SeededSchedule> seeds =
      MakeSeeds(rank_costs, microbatches, rank_caps, options, simulator);

  SearchResult result;
  std::vector<Lineage> lineages;
  // The best seed of each family starts a lineage (knob settings count as one family).
  std::vector<const SeededSchedule*> ranked;
  for (const SeededSchedule& seeded : seeds) {
    result.seeds.push_back(seeded.seed);
    if (seeded.seed.status.ok()) ranked.push_back(&seeded);
  }
  if (ranked.empty()) {
    std::string reasons;
    for (const SearchSeed& seed : result.seeds) {
      if (seed.name.rfind("zb-auto[", 0) == 0) continue;  // zb-auto says it once for all
      reasons += (reasons.empty() ? "" : "; ") + seed.name + ": " + seed.status.message();
    }
    return Infeasible("search: no seed fits the cap (" + reasons + ")");
  }
  std::stable_sort(
      ranked.begin(), ranked.end(),
      [](const SeededSchedule* a, const SeededSchedule* b) { return a->score < b->score; });
  result.seed_figure = ranked.front()->score.primary;
  result.best_seed = ranked.front()->seed.name;
  const size_t kMaxLineages = 4;
  std::vector<std::string> families;
  for (const SeededSchedule* seeded : ranked) {
    const std::string family = seeded->schedule.family;
    if (std::find(families.begin(), families.end(), family) != families.end()) continue;
    families.push_back(family);
    lineages.push_back(
        {seeded->seed.name, seeded->schedule, seeded->score, seeded->schedule, seeded->score, 0});
    if (lineages.size() == kMaxLineages) break;
  }

  Searcher searcher(rank_caps, options, FusingCanPay(rank_costs));
  const double limit = options.time_limit_s;
  const int64_t budget = options.max_evaluations;
  auto used = [&](double seconds) {
    double share = 0;
    if (limit > 0) share = std::max(share, seconds / limit);
    if (budget > 0) share = std::max(share, static_cast<double>(searcher.evaluations()) / budget);
    return share;
  };
  auto best_lineage = [&]() {
    size_t best = 0;
    for (size_t i = 1; i < lineages.size(); ++i) {
      if (lineages[i].best_score < lineages[best].best_score) best = i;
    }
    return best;
  };
  Clock::time_point last_progress = started;
  if (limit > 0 || budget > 0) {
    const int64_t kTurn = 64;  // moves per lineage turn
    bool done = false;
    for (int64_t turn = 0; !done; ++turn) {
      Lineage& lineage = lineages[turn % lineages.size()];
      searcher.Invalidate();
      for (int64_t k = 0; k < kTurn && !done; ++k) {
        searcher.Step(lineage);
        if ((k & 15) == 0 || budget > 0) {
          const Clock::time_point now = Clock::now();
          const double seconds = std::chrono::duration<double>(now - started).count();
          done = used(seconds) >= 1;
          if (options.progress && now - last_progress > std::chrono::milliseconds(100)) {
            last_progress = now;
            options.progress(std::min(0.999, used(seconds)),
                             lineages[best_lineage()].best_score.primary);
          }
        }
      }
    }
  }
  const Lineage& best = lineages[best_lineage()];
  result.best = best.best;
  ZB_RETURN_IF_ERROR(simulator.Run(result.best));
  result.best.family = "search";
  result.seeded_by = best.seed_name;
  result.figure = ObjectiveFigure(*result.best.predicted, options.objective);
  result.evaluations = searcher.evaluations();
  result.improvements = searcher.improvements();
  result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (options.progress) options.progress(1.0, result.figure);
  return result;
}

}  // namespace zb::tuner
