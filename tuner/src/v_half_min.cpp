// SPDX-License-Identifier: Apache-2.0
// V-Half and V-Min: the controllable-memory V schedules (docs/schedules.md §6), ported from the ZB
// repo's scheduler/zbv_greedy.py and generalized to per-stage costs.
//
// Each rank's ops live on an integer "slot" grid. The steady state is a fixed six-slot repeating
// pattern (one F0, F1, B0, B1 per microbatch per six slots, offset per rank) whose shape fixes the
// memory: about half (V-Half) or a third (V-Min) of 1F1B's activations. Warm-up and cool-down are
// then tightened greedily: ops move to the earliest free slot their dependencies allow, provided
// no rank's activation peak rises above the pattern's; W ops fill the empty slots. After each pass
// the grid is re-timed with unit costs ("squeeze"). Only the final evaluation uses real costs, so
// the op orders depend on (setup, p, m) alone.
//
// Slot-grid op types, named by travel direction as in ZB-V: F0 forward of the first model half
// (local chunk 0), F1 forward of the second half (local chunk 1), B0 backward of the second half
// (local chunk 1), B1 backward of the first half (local chunk 0), then the W ops: one combined W
// list while reordering, or W0/W1 (the weight gradients of B0/B1) in the final grid.
#include "zbkit/tuner/v_half_min.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "zbkit/tuner/memory_limit.h"  // FitsCap

namespace zb::tuner {
namespace {

constexpr int kF0 = 0;
constexpr int kF1 = 1;
constexpr int kB0 = 2;
constexpr int kB1 = 3;
constexpr int kW0 = 4;  // the combined W list, or W0 once split
constexpr int kW1 = 5;  // only in the split grid
constexpr int kNumComputeTypes = 4;
constexpr int kNumSplitTypes = 6;

bool IsBackward(int type) {
  return type == kB0 || type == kB1;
}

int LocalChunkOfType(int type) {
  static constexpr int kChunk[kNumSplitTypes] = {0, 1, 1, 0, 1, 0};
  return kChunk[type];
}

OpKind KindOfType(int type) {
  return type < kB0 ? OpKind::kF : (type < kW0 ? OpKind::kB : OpKind::kW);
}

using SlotList = std::vector<int>;         // slot of each microbatch's op of one type
using RankSlots = std::vector<SlotList>;   // per type
using SlotTable = std::vector<RankSlots>;  // per rank

// Microbatch 0's slots [F0, F1, B0, B1] on rank i; microbatch k adds 6k. The gap term shifts the
// backward half so the pattern tiles without collisions for every p.
SlotTable StablePattern(VMemorySetup setup, int p, int m) {
  SlotTable table(p, RankSlots(kNumComputeTypes));
  for (int i = 0; i < p; ++i) {
    int first[kNumComputeTypes];
    if (setup == VMemorySetup::kMin) {
      const int gap = p % 3 == 0 ? 2 : 0;
      first[kF0] = i;
      first[kF1] = 2 * p - i - 1;
      first[kB0] = 2 * p + gap + i;
      first[kB1] = 4 * p + gap - i - 1;
    } else {
      const int gap = p % 2 == 0 ? 3 : 0;
      first[kF0] = 2 * i;
      first[kF1] = 3 * p - i - 2;
      first[kB0] = 3 * p + gap + 2 * i - 1;
      first[kB1] = 6 * p + gap - i - 2;
    }
    for (int type = 0; type < kNumComputeTypes; ++type) {
      for (int k = 0; k < m; ++k)
        table[i][type].push_back(first[type] + 6 * k);
    }
  }
  return table;
}

int LastSlot(const RankSlots& lists) {
  int last = -1;
  for (const SlotList& list : lists) {
    for (int slot : list)
      last = std::max(last, slot);
  }
  return last;
}

// Which type occupies each slot of a rank (-1 = empty). Slots of one rank are distinct by
// construction: ops only ever move into slots no visited op holds.
void FillSlotMap(const RankSlots& lists, int types, std::vector<int>& type_at) {
  type_at.assign(LastSlot(lists) + 1, -1);
  for (int type = 0; type < types; ++type) {
    for (int slot : lists[type])
      type_at[slot] = type;
  }
}

// Gives a rank its W ops: every B leaves one W pending, and each empty slot takes one pending W
// (W0 before W1 when split by chunk); what is left goes to consecutive slots after the end.
void AppendWeightSlots(RankSlots& lists, bool split_by_chunk, std::vector<int>& scratch) {
  FillSlotMap(lists, kNumComputeTypes, scratch);
  lists.resize(kNumComputeTypes);
  lists.resize(kNumComputeTypes + (split_by_chunk ? 2 : 1));
  int pending[2] = {0, 0};
  const int bound = static_cast<int>(scratch.size()) - 1;
  for (int slot = 0; slot <= bound; ++slot) {
    const int type = scratch[slot];
    if (type >= 0) {
      if (IsBackward(type)) ++pending[split_by_chunk ? type - kB0 : 0];
      continue;
    }
    for (int w = 0; w < 2; ++w) {
      if (pending[w] > 0) {
        lists[kW0 + w].push_back(slot);
        --pending[w];
        break;
      }
    }
  }
  int slot = bound;
  for (int w = 0; w < 2; ++w) {
    for (; pending[w] > 0; --pending[w])
      lists[kW0 + w].push_back(++slot);
  }
}

// Chunk activations held by a rank after each of its slots (F +1, W -1), into `levels`. Without
// W ops yet, a W is assumed to run in each empty slot while some B's W is outstanding.
void ActivationLevels(const RankSlots& lists, std::vector<int>& scratch, std::vector<int>& levels) {
  const bool has_w = lists.size() > kNumComputeTypes;
  FillSlotMap(lists, static_cast<int>(lists.size()), scratch);
  levels.resize(scratch.size());
  int current = 0;
  int outstanding_w = 0;
  for (size_t slot = 0; slot < scratch.size(); ++slot) {
    const int type = scratch[slot];
    if (type >= 0) {
      if (type == kF0 || type == kF1) ++current;
      if (type >= kW0) --current;
      if (IsBackward(type)) ++outstanding_w;
    } else if (!has_w && outstanding_w > 0) {
      --current;
      --outstanding_w;
    }
    levels[slot] = current;
  }
}

// The peak of ActivationLevels (0 for a rank without slots).
int PeakActivations(const RankSlots& lists, std::vector<int>& scratch) {
  std::vector<int> levels;
  ActivationLevels(lists, scratch, levels);
  return levels.empty() ? 0 : std::max(0, *std::max_element(levels.begin(), levels.end()));
}

// A rank's activation levels under moves (Reorder with the W ops placed): add to a range of
// slots, and find the last slot of a range above a limit, each O(log slots). A segment tree with
// lazy adds: a node's max includes its own pending add.
class LevelTree {
 public:
  explicit LevelTree(const std::vector<int>& levels)
      : size_(static_cast<int>(levels.size())),
        max_(4 * std::max(size_, 1)),
        add_(4 * std::max(size_, 1), 0) {
    if (size_ > 0) Build(1, 0, size_, levels);
  }
  // Adds `delta` to the levels of slots [lo, hi).
  void Add(int lo, int hi, int delta) {
    if (lo < hi) Add(1, 0, size_, lo, hi, delta);
  }
  // The last slot of [lo, hi) whose level is above `limit`, or -1.
  int LastAbove(int lo, int hi, int limit) const {
    return lo < hi ? LastAbove(1, 0, size_, lo, hi, limit, 0) : -1;
  }

 private:
  void Build(int node, int l, int r, const std::vector<int>& levels) {
    if (r - l == 1) {
      max_[node] = levels[l];
      return;
    }
    const int mid = (l + r) / 2;
    Build(2 * node, l, mid, levels);
    Build(2 * node + 1, mid, r, levels);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]);
  }
  void Add(int node, int l, int r, int lo, int hi, int delta) {
    if (hi <= l || r <= lo) return;
    if (lo <= l && r <= hi) {
      max_[node] += delta;
      add_[node] += delta;
      return;
    }
    const int mid = (l + r) / 2;
    Add(2 * node, l, mid, lo, hi, delta);
    Add(2 * node + 1, mid, r, lo, hi, delta);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + add_[node];
  }
  // `above`: the pending adds of the node's ancestors.
  int LastAbove(int node, int l, int r, int lo, int hi, int limit, int above) const {
    if (hi <= l || r <= lo || max_[node] + above <= limit) return -1;
    if (r - l == 1) return l;
    const int mid = (l + r) / 2;
    const int inner = above + add_[node];
    const int right = LastAbove(2 * node + 1, mid, r, lo, hi, limit, inner);
    return right >= 0 ? right : LastAbove(2 * node, l, mid, lo, hi, limit, inner);
  }

  int size_;
  std::vector<int> max_;
  std::vector<int> add_;
};

// A rank's slots that no visited op holds: the first free slot at or after a given one, in
// near-constant amortized time (union-find with path halving; slots are only ever taken).
class FreeSlots {
 public:
  explicit FreeSlots(int slots) : next_(slots + 1) {
    for (int i = 0; i <= slots; ++i)
      next_[i] = i;
  }
  bool IsFree(int slot) const { return next_[slot] == slot; }
  void Take(int slot) { next_[slot] = slot + 1; }
  // The first free slot >= `slot`; the number of slots when none is.
  int FirstFreeFrom(int slot) {
    while (next_[slot] != slot) {
      next_[slot] = next_[next_[slot]];
      slot = next_[slot];
    }
    return slot;
  }

 private:
  std::vector<int> next_;  // next_[i] == i: free (or the end); else a later slot to look at
};

struct SlotOp {
  int slot;
  int rank;
  int type;
  int microbatch;
};

// Visits a slot table's ops in increasing (slot, rank, type, microbatch) order by merging the
// heads of all lists through a min-heap: O(log(p * types)) per op, where scanning every head made
// V-Half and V-Min quadratic in p (34 s at p = 1024, m = 128). A head's slot is read when it
// enters the heap, after the op before it on its list was handed out; callers rewrite only the
// slot of the op they were handed (Reorder), never one still waiting, so the order is the
// same as reading every head at every step.
class SlotSweep {
 public:
  explicit SlotSweep(const SlotTable& table)
      : table_(table), next_(table.size(), std::vector<int>(table[0].size(), 0)) {
    for (int r = 0; r < static_cast<int>(table_.size()); ++r) {
      for (int t = 0; t < static_cast<int>(table_[r].size()); ++t)
        Push(r, t);
    }
  }

  bool Next(SlotOp& op) {
    if (heads_.empty()) return false;
    const auto [slot, rank, type] = heads_.top();
    heads_.pop();
    op = {slot, rank, type, next_[rank][type]++};
    Push(rank, type);
    return true;
  }

 private:
  using Head = std::tuple<int, int, int>;  // (slot, rank, type): ties go to the lower rank, type

  void Push(int rank, int type) {
    const SlotList& list = table_[rank][type];
    if (next_[rank][type] < static_cast<int>(list.size())) {
      heads_.emplace(list[next_[rank][type]], rank, type);
    }
  }

  const SlotTable& table_;
  std::vector<std::vector<int>> next_;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads_;
};

struct EagerResult {
  TimeNs objective = 0;
  std::vector<std::vector<std::vector<TimeNs>>> end;    // [rank][type][microbatch]
  std::vector<std::vector<std::pair<int, int>>> order;  // [rank] (type, microbatch)
};

// Runs every op as early as possible in slot order on its rank ("squeeze"). Dependencies: the
// same type on the neighbouring rank its data comes from (+comm), the previous type of the same
// microbatch on the same rank (F0 -> F1 -> B0 -> B1; on the V these are implied by the cross-rank
// chains), the same type's previous microbatch, and the rank's previous op. The objective is the
// reference's: per rank, end of the last op of the last type list minus the start of F0 of
// microbatch 0, maximized over ranks.
Expected<EagerResult> EagerTimes(const SlotTable& table,
                                 const std::vector<std::vector<TimeNs>>& cost, TimeNs comm) {
  const int p = static_cast<int>(table.size());
  const int types = static_cast<int>(table[0].size());
  EagerResult result;
  result.end.resize(p);
  result.order.resize(p);
  for (int r = 0; r < p; ++r) {
    result.end[r].resize(types);
    for (int t = 0; t < types; ++t)
      result.end[r][t].assign(table[r][t].size(), -1);
  }
  bool missing = false;
  auto end_of = [&](int rank, int type, int microbatch) -> TimeNs {
    const std::vector<TimeNs>& ends = result.end[rank][type];
    if (microbatch >= static_cast<int>(ends.size()) || ends[microbatch] < 0) {
      missing = true;
      return 0;
    }
    return ends[microbatch];
  };
  SlotSweep sweep(table);
  SlotOp op{};
  while (sweep.Next(op)) {
    const int r = op.rank;
    const int t = op.type;
    const int mb = op.microbatch;
    TimeNs ready = 0;
    if ((t == kF0 || t == kB0) && r > 0) ready = std::max(ready, end_of(r - 1, t, mb) + comm);
    if ((t == kF1 || t == kB1) && r + 1 < p) ready = std::max(ready, end_of(r + 1, t, mb) + comm);
    if (t > kF0 && t < kW0) ready = std::max(ready, end_of(r, t - 1, mb));
    if (mb > 0) ready = std::max(ready, end_of(r, t, mb - 1));
    if (!result.order[r].empty()) {
      const auto& [prev_type, prev_mb] = result.order[r].back();
      ready = std::max(ready, end_of(r, prev_type, prev_mb));
    }
    if (missing) {
      return InternalError("v-half/v-min: slot grid runs an op before its dependency (rank " +
                           std::to_string(r) + ", slot " + std::to_string(op.slot) + ")");
    }
    result.end[r][t][mb] = ready + cost[r][t];
    result.order[r].emplace_back(t, mb);
  }
  result.objective = 0;
  for (int r = 0; r < p; ++r) {
    const TimeNs span = result.end[r][types - 1].back() - result.end[r][kF0][0] + cost[r][kF0];
    result.objective = std::max(result.objective, span);
  }
  return result;
}

// One greedy tightening pass. Ops are visited in slot order and moved to the earliest free slot
// after their dependencies' slots, unless that raises the rank's activation peak above the
// current worst rank's (a global cap, as in the reference). With consider_w the W ops take part
// and only the warm-up (before rank 0's first B1) and the cool-down (after the last F0) move;
// without it, only the cool-down moves and W ops are laid out afterwards. The result is re-timed
// with unit costs, whose start times become the new slots.
Expected<SlotTable> Reorder(SlotTable table, bool consider_w, int microbatches) {
  std::vector<int> scratch;
  if (consider_w) {
    for (RankSlots& lists : table)
      AppendWeightSlots(lists, /*split_by_chunk=*/false, scratch);
  }
  const int p = static_cast<int>(table.size());
  int cap = 0;
  for (const RankSlots& lists : table)
    cap = std::max(cap, PeakActivations(lists, scratch));
  std::vector<FreeSlots> free_slots;
  for (int r = 0; r < p; ++r)
    free_slots.emplace_back(LastSlot(table[r]) + 1);
  // With the W ops placed: each rank's levels, kept up to date as ops move.
  std::vector<LevelTree> levels;
  for (int r = 0; consider_w && r < p; ++r) {
    std::vector<int> rank_levels;
    ActivationLevels(table[r], scratch, rank_levels);
    levels.emplace_back(rank_levels);
  }

  enum class Phase { kWarmUp, kSteady, kCoolDown };
  Phase phase = Phase::kWarmUp;
  SlotSweep sweep(table);
  SlotOp op{};
  std::vector<int> backward_slots;
  while (sweep.Next(op)) {
    const int r = op.rank;
    const int t = op.type;
    const int mb = op.microbatch;
    if (t == kB1 && r == 0 && phase == Phase::kWarmUp) phase = Phase::kSteady;
    const bool keep = phase == Phase::kSteady || (phase == Phase::kWarmUp && !consider_w);
    if (phase == Phase::kSteady && t == kF0 && mb == microbatches - 1) phase = Phase::kCoolDown;
    if (keep) {
      free_slots[r].Take(op.slot);
      continue;
    }
    int after = -1;  // latest slot this op must follow
    if ((t == kF0 || t == kB0) && r > 0) after = std::max(after, table[r - 1][t][mb]);
    if ((t == kF1 || t == kB1) && r + 1 < p) after = std::max(after, table[r + 1][t][mb]);
    if (t > kF0 && t < kW0) after = std::max(after, table[r][t - 1][mb]);
    if (t == kW0) {
      // The mb-th W of the rank follows the mb-th B of either chunk.
      backward_slots = table[r][kB0];
      backward_slots.insert(backward_slots.end(), table[r][kB1].begin(), table[r][kB1].end());
      std::nth_element(backward_slots.begin(), backward_slots.begin() + mb, backward_slots.end());
      after = std::max(after, backward_slots[mb]);
    }
    if (mb > 0) after = std::max(after, table[r][t][mb - 1]);
    if (after + 1 > op.slot) {
      return InternalError("v-half/v-min: slot grid has an op before its dependency (rank " +
                           std::to_string(r) + ", slot " + std::to_string(op.slot) + ")");
    }
    int& slot = table[r][t][mb];
    if (consider_w) {
      // With the W ops placed, moving this op from its slot s to an earlier c changes the levels
      // of slots c .. s-1 only, by +1 for an F, -1 for a W, 0 for a B; every other level stays
      // within the cap. So the earliest allowed c follows the last slot before s whose level
      // leaves no room for the +1, and the op takes the first free slot from there: O(log) per
      // op, where trying each candidate with a full recount was O(window x the rank's slots).
      const int delta = (t == kF0 || t == kF1) ? 1 : t >= kW0 ? -1 : 0;
      int lowest = after + 1;  // the lowest c whose move keeps every level within the cap
      if (delta > 0)
        lowest = std::max(lowest, levels[r].LastAbove(after + 1, op.slot, cap - delta) + 1);
      const int chosen = std::min(free_slots[r].FirstFreeFrom(lowest), op.slot);
      levels[r].Add(chosen, op.slot, delta);
      slot = chosen;
    } else {
      // Without W ops the empty slots stand for them (ActivationLevels), and a move changes the
      // levels beyond its window: each candidate is counted in full (the cool-down only).
      bool moved = false;
      for (int candidate = after + 1; candidate < op.slot; ++candidate) {
        if (!free_slots[r].IsFree(candidate)) continue;
        slot = candidate;
        if (FitsCap(PeakActivations(table[r], scratch), cap)) {
          moved = true;
          break;
        }
      }
      if (!moved) slot = op.slot;
    }
    free_slots[r].Take(slot);
  }
  if (!consider_w) {
    for (RankSlots& lists : table)
      AppendWeightSlots(lists, /*split_by_chunk=*/false, scratch);
  }
  const std::vector<std::vector<TimeNs>> unit_cost(p, std::vector<TimeNs>(kW0 + 1, 1));
  ZB_ASSIGN_OR_RETURN(EagerResult squeezed, EagerTimes(table, unit_cost, /*comm=*/0));
  for (int r = 0; r < p; ++r) {
    for (int type = 0; type <= kW0; ++type) {
      for (size_t k = 0; k < table[r][type].size(); ++k) {
        table[r][type][k] = static_cast<int>(squeezed.end[r][type][k] - 1);
      }
    }
  }
  return table;
}

void DropWeightSlots(SlotTable& table) {
  for (RankSlots& lists : table)
    lists.resize(kNumComputeTypes);
}

}  // namespace

Expected<VGreedyResult> VGreedy(VMemorySetup setup, const CostProfile& chunk_costs,
                                int microbatches) {
  const char* family = setup == VMemorySetup::kHalf ? "v-half" : "v-min";
  const int stages = chunk_costs.num_stages();
  if (stages < 2 || stages % 2 != 0) {
    return UsageError(std::string(family) + " needs an even number (>= 2) of chunk costs, got " +
                      std::to_string(stages));
  }
  if (microbatches < 1) return UsageError(std::string(family) + " needs at least one microbatch");
  if (chunk_costs.comm < 0) return InvalidInput(std::string(family) + ": negative comm latency");
  const int p = stages / 2;
  std::vector<std::vector<TimeNs>> cost(p, std::vector<TimeNs>(kNumSplitTypes));
  for (int r = 0; r < p; ++r) {
    for (int type = 0; type < kNumSplitTypes; ++type) {
      const int stage = StageOfChunk(Placement::kV, p, r, LocalChunkOfType(type));
      cost[r][type] = chunk_costs.stages[stage].Duration(KindOfType(type));
      if (cost[r][type] < 0) {
        return InvalidInput(std::string(family) + ": negative cost on stage " +
                            std::to_string(stage));
      }
    }
  }

  // Two tightening passes: the first moves W ops too, the second re-places the cool-down
  // without them; W ops are then laid out per chunk and everything is timed with real costs.
  SlotTable table = StablePattern(setup, p, microbatches);
  ZB_ASSIGN_OR_RETURN(table, Reorder(std::move(table), /*consider_w=*/true, microbatches));
  DropWeightSlots(table);
  ZB_ASSIGN_OR_RETURN(table, Reorder(std::move(table), /*consider_w=*/false, microbatches));
  DropWeightSlots(table);
  std::vector<int> scratch;
  for (RankSlots& lists : table)
    AppendWeightSlots(lists, /*split_by_chunk=*/true, scratch);
  ZB_ASSIGN_OR_RETURN(EagerResult timed, EagerTimes(table, cost, chunk_costs.comm));

  VGreedyResult result;
  result.cost = timed.objective;
  Schedule& schedule = result.schedule;
  schedule.ranks = p;
  schedule.microbatches = microbatches;
  schedule.chunks = 2;
  schedule.placement = Placement::kV;
  schedule.family = family;
  schedule.costs = chunk_costs;
  schedule.programs.resize(p);
  for (int r = 0; r < p; ++r) {
    RankProgram& program = schedule.programs[r];
    program.stages = {StageOfChunk(Placement::kV, p, r, 0), StageOfChunk(Placement::kV, p, r, 1)};
    int activations = 0;
    for (const auto& [type, mb] : timed.order[r]) {
      Op op;
      op.kind = KindOfType(type);
      op.chunk = LocalChunkOfType(type);
      op.microbatch = mb;
      op.end = timed.end[r][type][mb];
      op.start = op.end - cost[r][type];
      program.ops.push_back(op);
      if (op.kind == OpKind::kF) ++activations;
      if (op.kind == OpKind::kW) --activations;
      result.peak_chunk_activations = std::max(result.peak_chunk_activations, activations);
    }
  }
  return result;
}

}  // namespace zb::tuner
