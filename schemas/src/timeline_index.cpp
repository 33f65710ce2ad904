// SPDX-License-Identifier: Apache-2.0
// TimelineIndex (timeline_index.h): lanes are built once, in O(ops) for input that is already in
// time order per rank (what the simulator and the store produce); every query is then a binary
// search plus one pass over what is visible.
//
// BinCoverage is the hot path: a repaint asks it for every lane at ~1600 columns. It walks the
// visible ops once with a column cursor that only moves forward (ops are sorted by start), adds an
// op that fits in one column directly, and records the whole columns under a longer op in
// difference arrays, so a long op costs O(1) and a call costs O(log n + visible ops + columns)
// even on comm lanes where ops overlap. Column edges are exact integers (ColumnEdge), computed
// incrementally without a division per edge.
#include "zbkit/schemas/timeline_index.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <numeric>
#include <utility>

#include "zbkit/schemas/dependencies.h"

namespace zb {
namespace {

constexpr int kKinds = Coverage::kKinds;
constexpr int kLookupKinds = 4;  // F, B, W, BW: the kinds a dependency can name

// WaitedFor on measured timelines: clocks of different ranks and the hop latency jitter by
// microseconds, so "started exactly when its dependency ended" needs some slack.
constexpr TimeNs kMeasuredMinTolerance = 1000;     // 1 us
constexpr TimeNs kMeasuredToleranceDivisor = 100;  // 1% of the op's duration

bool IsCompute(OpKind kind) {
  return kind != OpKind::kComm;
}

// Walks the column edges edges[c] = t0 + floor(c * span / columns), c = 0..columns. With
// span = q * columns + r this is c*q + floor(c*r / columns); the remainder is carried in `acc_`,
// so no division per edge and no 128-bit product. Unsigned: the span of two int64 times always
// fits in uint64. BinCoverage and BinMemory both step through it, so their columns agree.
class EdgeWalker {
 public:
  EdgeWalker(TimeNs t0, TimeNs t1, int columns)
      : t0_(static_cast<uint64_t>(t0)),
        n_(static_cast<uint64_t>(columns)),
        q_((t1 > t0 ? static_cast<uint64_t>(t1) - t0_ : 0) / n_),
        r_((t1 > t0 ? static_cast<uint64_t>(t1) - t0_ : 0) % n_) {}

  TimeNs edge() const { return static_cast<TimeNs>(t0_ + offset_); }
  void Next() {
    offset_ += q_;
    acc_ += r_;
    if (acc_ >= n_) {
      acc_ -= n_;
      ++offset_;
    }
  }

 private:
  uint64_t t0_;
  uint64_t n_;
  uint64_t q_;
  uint64_t r_;
  uint64_t offset_ = 0;
  uint64_t acc_ = 0;
};

void FillEdges(TimeNs t0, TimeNs t1, int columns, TimeNs* edges) {
  EdgeWalker walker(t0, t1, columns);
  for (int c = 0; c <= columns; ++c, walker.Next())
    edges[c] = walker.edge();
}

// Finds the column holding time x (t0 <= x < t1): a floating-point estimate corrected against the
// exact edges, so the answer is exact and costs O(1) whatever the op's length. Lands on the
// non-empty column containing x.
class ColumnLocator {
 public:
  ColumnLocator(const TimeNs* edges, int columns, TimeNs t0, TimeNs t1)
      : edges_(edges),
        columns_(columns),
        t0_(t0),
        scale_(static_cast<double>(columns) /
               static_cast<double>(static_cast<uint64_t>(t1) - static_cast<uint64_t>(t0))) {}

  int Of(TimeNs x) const {
    const double offset =
        static_cast<double>(static_cast<uint64_t>(x) - static_cast<uint64_t>(t0_));
    int c = static_cast<int>(std::min(offset * scale_, static_cast<double>(columns_ - 1)));
    if (c < 0) c = 0;
    while (edges_[c] > x)
      --c;
    while (edges_[c + 1] <= x)
      ++c;
    return c;
  }

 private:
  const TimeNs* edges_;
  int columns_;
  TimeNs t0_;
  double scale_;
};

// Scratch for BinCoverage's difference arrays, kept per thread so that repaints do not allocate
// (the GUI may bin on a worker and on the GUI thread at once).
struct CoverageScratch {
  std::vector<int32_t> count_diff;  // columns + 1
  std::vector<int32_t> full_diff;   // (columns + 1) * kKinds
};
CoverageScratch& Scratch() {
  thread_local CoverageScratch scratch;
  return scratch;
}

// Whether op i of a lane intersects [t0, t1), given that Visible() put it in range (start < t1):
// on an overlapping lane it may have ended before t0.
inline bool EndedBefore(TimeNs start, TimeNs end, TimeNs t0) {
  return end <= t0 && start != t0;  // a zero-duration op at t0 does intersect
}

int LookupKind(OpKind kind) {
  return static_cast<int>(kind);  // F 0, B 1, W 2, BW 3 (kComm is never looked up)
}

// Sorts a lane's ops by (start, end), keeping input order among equal ones, and fills
// running_max_end. Input in time order (the usual case) is only checked.
void SortLane(TimelineLane& lane) {
  const size_t n = lane.size();
  bool sorted = true;
  for (size_t i = 1; i < n && sorted; ++i) {
    sorted = lane.start[i - 1] < lane.start[i] ||
             (lane.start[i - 1] == lane.start[i] && lane.end[i - 1] <= lane.end[i]);
  }
  if (!sorted) {
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
      return lane.start[x] < lane.start[y] ||
             (lane.start[x] == lane.start[y] && lane.end[x] < lane.end[y]);
    });
    auto permute = [&](auto& values) {
      std::remove_reference_t<decltype(values)> sorted_values(n);
      for (size_t i = 0; i < n; ++i)
        sorted_values[i] = values[order[i]];
      values = std::move(sorted_values);
    };
    permute(lane.start);
    permute(lane.end);
    permute(lane.kind_of);
    permute(lane.stage_of);
    permute(lane.microbatch);
  }
  lane.running_max_end.resize(n);
  TimeNs max_end = n > 0 ? lane.end[0] : 0;
  for (size_t i = 0; i < n; ++i) {
    max_end = std::max(max_end, lane.end[i]);
    lane.running_max_end[i] = max_end;
  }
}

// Lanes are sized up front and filled by position: no capacity check per op on the 1M-op load.
void SizeLane(TimelineLane& lane, size_t n) {
  lane.start.resize(n);
  lane.end.resize(n);
  lane.kind_of.resize(n);
  lane.stage_of.resize(n);
  lane.microbatch.resize(n);
}

void PutOp(TimelineLane& lane, size_t position, const TimelineOp& op) {
  lane.start[position] = op.start;
  lane.end[position] = op.end;
  lane.kind_of[position] = op.kind;
  lane.stage_of[position] = op.stage;
  lane.microbatch[position] = op.microbatch;
}

// Number of ops of `lane` with start <= t < end (ops covering the instant t).
uint32_t CoveringCount(const TimelineLane& lane, TimeNs t) {
  const auto upper = std::upper_bound(lane.start.begin(), lane.start.end(), t);
  uint32_t n = 0;
  for (auto i = static_cast<size_t>(upper - lane.start.begin()); i > 0; --i) {
    if (lane.running_max_end[i - 1] <= t) break;
    if (lane.end[i - 1] > t) ++n;
  }
  return n;
}

}  // namespace

std::string TimelineLane::Label() const {
  std::string label = "rank " + std::to_string(rank);
  if (kind == LaneKind::kStage) {
    label += " stage " + std::to_string(stage);
  } else if (kind == LaneKind::kComm) {
    label += " comm";
  }
  return label;
}

TimeNs Coverage::BusyTotal(int column) const {
  TimeNs total = 0;
  for (int k = 0; k < kKinds; ++k)
    total += busy[static_cast<size_t>(column) * kKinds + k];
  return total;
}

TimeNs ColumnEdge(TimeNs t0, TimeNs t1, int columns, int column) {
  if (columns <= 0 || t1 <= t0) return t0;
  column = std::clamp(column, 0, columns);
  const uint64_t span = static_cast<uint64_t>(t1) - static_cast<uint64_t>(t0);
  const auto n = static_cast<uint64_t>(columns);
  const auto c = static_cast<uint64_t>(column);
  // c * (span % n) < n^2 < 2^62: no overflow.
  const uint64_t offset = c * (span / n) + c * (span % n) / n;
  return static_cast<TimeNs>(static_cast<uint64_t>(t0) + offset);
}

// ---- Construction ----------------------------------------------------------------------------

TimelineIndex::TimelineIndex(const Timeline& timeline, TimeNs comm, int num_stages)
    : kind_(timeline.kind), comm_(comm) {
  const std::vector<TimelineOp>& ops = timeline.ops;

  // Extents. Ops with a negative rank cannot be placed in a lane and are left out.
  int32_t max_rank = -1;
  int32_t max_compute_stage = -1;
  int32_t max_any_stage = -1;
  for (const TimelineOp& op : ops) {
    if (op.rank < 0) continue;
    if (num_ops_ == 0) {
      begin_ = op.start;
      end_ = op.end;
    } else {
      begin_ = std::min(begin_, op.start);
      end_ = std::max(end_, op.end);
    }
    ++num_ops_;
    max_rank = std::max(max_rank, op.rank);
    max_any_stage = std::max(max_any_stage, op.stage);
    if (IsCompute(op.kind)) max_compute_stage = std::max(max_compute_stage, op.stage);
  }
  for (const MemorySample& sample : timeline.memory) {
    max_rank = std::max(max_rank, sample.rank);
  }
  num_ranks_ = max_rank + 1;
  const int inferred_stages = (max_compute_stage >= 0 ? max_compute_stage : max_any_stage) + 1;
  num_stages_ = num_stages > 0 ? num_stages : inferred_stages;

  // Which stages each rank holds. A rank holds few stages (1, 2, or v for interleaving), so a
  // short list with a cache of the last stage seen beats a map; slot[i] is the position of op i's
  // stage in its rank's list, in order of first appearance.
  struct RankStages {
    std::vector<int32_t> stages;
    std::vector<size_t> counts;  // compute ops per stage slot
    size_t compute = 0;
    size_t comm = 0;
    int32_t last_stage = INT32_MIN;
    int32_t last_slot = -1;
  };
  std::vector<RankStages> per_rank(static_cast<size_t>(num_ranks_));
  std::vector<int32_t> slot(ops.size(), -1);
  for (size_t i = 0; i < ops.size(); ++i) {
    const TimelineOp& op = ops[i];
    if (op.rank < 0) continue;
    RankStages& rank = per_rank[op.rank];
    if (!IsCompute(op.kind)) {
      ++rank.comm;
      continue;
    }
    ++rank.compute;
    if (op.stage < 0) continue;  // kept on the rank lane, but no stage lane can hold it
    if (op.stage != rank.last_stage) {
      const auto found = std::find(rank.stages.begin(), rank.stages.end(), op.stage);
      rank.last_stage = op.stage;
      rank.last_slot = static_cast<int32_t>(found - rank.stages.begin());
      if (found == rank.stages.end()) {
        rank.stages.push_back(op.stage);
        rank.counts.push_back(0);
      }
    }
    slot[i] = rank.last_slot;
    ++rank.counts[rank.last_slot];
  }

  // Lanes in display order: per rank, its rank lane, its stage lanes (by stage) when it holds
  // two or more stages, then its comm lane.
  rank_lane_.assign(static_cast<size_t>(num_ranks_), -1);
  std::vector<std::vector<int32_t>> stage_lane(static_cast<size_t>(num_ranks_));  // by slot
  std::vector<int32_t> comm_lane(static_cast<size_t>(num_ranks_), -1);
  auto add_lane = [&](LaneKind kind, int32_t rank, int32_t stage, size_t size) {
    TimelineLane lane;
    lane.kind = kind;
    lane.rank = rank;
    lane.stage = stage;
    SizeLane(lane, size);
    lanes_.push_back(std::move(lane));
    return static_cast<int32_t>(lanes_.size() - 1);
  };
  for (int32_t r = 0; r < num_ranks_; ++r) {
    const RankStages& rank = per_rank[r];
    rank_lane_[r] = add_lane(LaneKind::kRank, r, -1, rank.compute);
    if (rank.stages.size() >= 2) {
      std::vector<int32_t> by_stage(rank.stages.size());
      std::iota(by_stage.begin(), by_stage.end(), 0);
      std::sort(by_stage.begin(), by_stage.end(),
                [&](int32_t x, int32_t y) { return rank.stages[x] < rank.stages[y]; });
      stage_lane[r].resize(rank.stages.size());
      for (int32_t s : by_stage) {
        stage_lane[r][s] = add_lane(LaneKind::kStage, r, rank.stages[s], rank.counts[s]);
      }
    }
    if (rank.comm > 0) comm_lane[r] = add_lane(LaneKind::kComm, r, -1, rank.comm);
  }
  std::vector<size_t> filled(lanes_.size(), 0);
  auto put = [&](int32_t lane, const TimelineOp& op) { PutOp(lanes_[lane], filled[lane]++, op); };
  for (size_t i = 0; i < ops.size(); ++i) {
    const TimelineOp& op = ops[i];
    if (op.rank < 0) continue;
    if (!IsCompute(op.kind)) {
      put(comm_lane[op.rank], op);
      continue;
    }
    put(rank_lane_[op.rank], op);
    if (slot[i] >= 0 && !stage_lane[op.rank].empty()) put(stage_lane[op.rank][slot[i]], op);
  }
  for (TimelineLane& lane : lanes_)
    SortLane(lane);

  rank_op_offset_.assign(static_cast<size_t>(num_ranks_) + 1, 0);
  for (int32_t r = 0; r < num_ranks_; ++r) {
    rank_op_offset_[r + 1] = rank_op_offset_[r] + lanes_[rank_lane_[r]].size();
  }

  // Memory: per rank, by time; samples at one instant keep their order (the last one holds).
  memory_.assign(static_cast<size_t>(num_ranks_), {});
  {
    std::vector<size_t> samples_per_rank(static_cast<size_t>(num_ranks_), 0);
    for (const MemorySample& sample : timeline.memory) {
      if (sample.rank >= 0) ++samples_per_rank[sample.rank];
    }
    for (int32_t r = 0; r < num_ranks_; ++r)
      memory_[r].reserve(samples_per_rank[r]);
  }
  for (const MemorySample& sample : timeline.memory) {
    if (sample.rank >= 0) memory_[sample.rank].emplace_back(sample.time, sample.memory);
  }
  for (auto& samples : memory_) {
    const bool sorted =
        std::is_sorted(samples.begin(), samples.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
    if (!sorted) {
      std::stable_sort(samples.begin(), samples.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
    }
  }
  // has_memory() means "there is a curve to draw".
  if (timeline.memory.empty()) memory_.clear();

  BuildLookup();
  ComputeFigures();
}

void TimelineIndex::BuildLookup() {
  int64_t max_stage = -1;
  int64_t max_microbatch = -1;
  size_t n = 0;
  for (int32_t r = 0; r < num_ranks_; ++r) {
    const TimelineLane& lane = lanes_[rank_lane_[r]];
    for (size_t i = 0; i < lane.size(); ++i) {
      if (lane.stage_of[i] < 0 || lane.microbatch[i] < 0) continue;
      max_stage = std::max<int64_t>(max_stage, lane.stage_of[i]);
      max_microbatch = std::max<int64_t>(max_microbatch, lane.microbatch[i]);
      ++n;
    }
  }
  lookup_stages_ = std::max<int64_t>(num_stages_, max_stage + 1);
  lookup_microbatches_ = max_microbatch + 1;
  auto eligible = [](const TimelineLane& lane, size_t i) {
    return lane.stage_of[i] >= 0 && lane.microbatch[i] >= 0;
  };

  // Dense when the key space is within a small multiple of the op count: a schedule has about 3
  // ops (F, B, W) or 2 (F, BW) per (stage, microbatch), i.e. a key space of 4/3 to 2 n.
  const uint64_t dense_limit = 4 * static_cast<uint64_t>(n) + 4096;
  const auto stages = static_cast<uint64_t>(lookup_stages_);
  const auto microbatches = static_cast<uint64_t>(lookup_microbatches_);
  // Written as divisions: the product itself may overflow for absurd ids.
  const bool dense =
      stages == 0 || microbatches == 0 ||
      (stages <= dense_limit / kLookupKinds && microbatches <= dense_limit / kLookupKinds / stages);
  if (dense) {
    // Counting sort into lookup_ops_: counts, then starts, then each key's start advanced while
    // filling (ending at the next key's start), then shifted back by one.
    const size_t keys = static_cast<size_t>(kLookupKinds * lookup_stages_ * lookup_microbatches_);
    lookup_offsets_.assign(keys + 1, 0);
    auto key_of = [&](const TimelineLane& lane, size_t i) {
      return (static_cast<size_t>(LookupKind(lane.kind_of[i])) * lookup_stages_ +
              lane.stage_of[i]) *
                 lookup_microbatches_ +
             lane.microbatch[i];
    };
    for (int32_t r = 0; r < num_ranks_; ++r) {
      const TimelineLane& lane = lanes_[rank_lane_[r]];
      for (size_t i = 0; i < lane.size(); ++i) {
        if (eligible(lane, i)) ++lookup_offsets_[key_of(lane, i) + 1];
      }
    }
    std::partial_sum(lookup_offsets_.begin(), lookup_offsets_.end(), lookup_offsets_.begin());
    lookup_ops_.resize(n);
    for (int32_t r = 0; r < num_ranks_; ++r) {
      const TimelineLane& lane = lanes_[rank_lane_[r]];
      for (size_t i = 0; i < lane.size(); ++i) {
        if (eligible(lane, i)) {
          lookup_ops_[lookup_offsets_[key_of(lane, i)]++] = {r, static_cast<uint32_t>(i)};
        }
      }
    }
    for (size_t k = keys; k > 0; --k)
      lookup_offsets_[k] = lookup_offsets_[k - 1];
    lookup_offsets_[0] = 0;
    return;
  }

  // Sparse ids (e.g. a measured trace numbering microbatches globally): sorted keys, binary search.
  std::vector<OpKey> keys;
  std::vector<OpRef> refs;
  keys.reserve(n);
  refs.reserve(n);
  for (int32_t r = 0; r < num_ranks_; ++r) {
    const TimelineLane& lane = lanes_[rank_lane_[r]];
    for (size_t i = 0; i < lane.size(); ++i) {
      if (!eligible(lane, i)) continue;
      keys.push_back({lane.stage_of[i], lane.microbatch[i],
                      static_cast<uint8_t>(LookupKind(lane.kind_of[i]))});
      refs.push_back({r, static_cast<uint32_t>(i)});
    }
  }
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  auto less = [](const OpKey& x, const OpKey& y) {
    if (x.kind != y.kind) return x.kind < y.kind;
    if (x.stage != y.stage) return x.stage < y.stage;
    return x.microbatch < y.microbatch;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t x, uint32_t y) { return less(keys[x], keys[y]); });
  lookup_keys_.resize(n);
  lookup_ops_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    lookup_keys_[i] = keys[order[i]];
    lookup_ops_[i] = refs[order[i]];
  }
}

std::pair<const TimelineIndex::OpRef*, const TimelineIndex::OpRef*> TimelineIndex::Find(
    OpKind kind, int32_t stage, int32_t microbatch) const {
  const OpRef* none = nullptr;
  if (!IsCompute(kind) || stage < 0 || microbatch < 0) return {none, none};
  if (!lookup_offsets_.empty()) {
    if (stage >= lookup_stages_ || microbatch >= lookup_microbatches_) return {none, none};
    const size_t key =
        (static_cast<size_t>(LookupKind(kind)) * lookup_stages_ + stage) * lookup_microbatches_ +
        microbatch;
    return {lookup_ops_.data() + lookup_offsets_[key],
            lookup_ops_.data() + lookup_offsets_[key + 1]};
  }
  const OpKey key{stage, microbatch, static_cast<uint8_t>(LookupKind(kind))};
  const auto range = std::equal_range(lookup_keys_.begin(), lookup_keys_.end(), key,
                                      [](const OpKey& x, const OpKey& y) {
                                        if (x.kind != y.kind) return x.kind < y.kind;
                                        if (x.stage != y.stage) return x.stage < y.stage;
                                        return x.microbatch < y.microbatch;
                                      });
  if (range.first == range.second) return {none, none};
  return {lookup_ops_.data() + (range.first - lookup_keys_.begin()),
          lookup_ops_.data() + (range.second - lookup_keys_.begin())};
}

// The simulator's definitions (tuner/src/simulator.cpp), so that the figures of a predicted
// timeline equal the schedule's prediction bit for bit.
void TimelineIndex::ComputeFigures() {
  const auto ranks = static_cast<size_t>(num_ranks_);
  rank_busy_.assign(ranks, 0);
  rank_end_.assign(ranks, 0);
  peak_memory_.assign(ranks, 0.0);
  Prediction figures;
  TimeNs max_busy = 0;
  for (size_t r = 0; r < ranks; ++r) {
    const TimelineLane& lane = lanes_[rank_lane_[r]];
    TimeNs busy = 0;
    TimeNs first_f_start = 0;
    bool seen_f = false;
    for (size_t i = 0; i < lane.size(); ++i) {
      busy += lane.end[i] - lane.start[i];
      if (!seen_f && lane.kind_of[i] == OpKind::kF) {
        first_f_start = lane.start[i];
        seen_f = true;
      }
    }
    TimeNs end = 0;
    if (lane.size() > 0) {
      end = lane.running_max_end.back();
      if (!seen_f) first_f_start = lane.start.front();
    }
    rank_busy_[r] = busy;
    rank_end_[r] = end;
    max_busy = std::max(max_busy, busy);
    figures.makespan = std::max(figures.makespan, end);
    figures.span = std::max(figures.span, end - first_f_start);
  }
  for (size_t r = 0; r < memory_.size(); ++r) {
    double peak = 0;
    for (const auto& sample : memory_[r])
      peak = std::max(peak, sample.second);
    peak_memory_[r] = peak;
  }
  auto rate = [max_busy](TimeNs span) {
    return span > 0 ? static_cast<double>(span - max_busy) / static_cast<double>(span) : 0.0;
  };
  figures.bubble_rate = rate(figures.makespan);
  figures.paper_bubble_rate = rate(figures.span);
  figures.peak_memory = peak_memory_;
  figures_ = std::move(figures);
}

// ---- Queries ---------------------------------------------------------------------------------

int TimelineIndex::RankLane(int rank) const {
  if (rank < 0 || rank >= num_ranks_) return -1;
  return rank_lane_[rank];
}

std::pair<size_t, size_t> TimelineIndex::Visible(int lane_index, TimeNs t0, TimeNs t1) const {
  if (lane_index < 0 || lane_index >= static_cast<int>(lanes_.size()) || t1 <= t0) return {0, 0};
  const TimelineLane& lane = lanes_[lane_index];
  // First op whose running max end passes t0: every op before it ended by t0.
  auto first = static_cast<size_t>(
      std::upper_bound(lane.running_max_end.begin(), lane.running_max_end.end(), t0) -
      lane.running_max_end.begin());
  // Zero-duration ops at exactly t0 intersect [t0, t1) but end at t0; they sit right before.
  while (first > 0 && lane.start[first - 1] == t0)
    --first;
  const auto last = static_cast<size_t>(std::lower_bound(lane.start.begin(), lane.start.end(), t1) -
                                        lane.start.begin());
  return {first, std::max(first, last)};
}

std::optional<size_t> TimelineIndex::HitTest(int lane_index, TimeNs t) const {
  if (lane_index < 0 || lane_index >= static_cast<int>(lanes_.size())) return std::nullopt;
  const TimelineLane& lane = lanes_[lane_index];
  const auto upper = static_cast<size_t>(std::upper_bound(lane.start.begin(), lane.start.end(), t) -
                                         lane.start.begin());
  // Walk back over ops starting at or before t; stop once none of them can reach past t.
  for (size_t i = upper; i > 0; --i) {
    if (lane.running_max_end[i - 1] <= t) break;
    if (lane.end[i - 1] > t) return i - 1;
  }
  return std::nullopt;
}

std::optional<size_t> TimelineIndex::HitTestNear(int lane_index, TimeNs t, TimeNs tolerance) const {
  if (auto hit = HitTest(lane_index, t)) return hit;
  if (lane_index < 0 || lane_index >= static_cast<int>(lanes_.size())) return std::nullopt;
  const TimelineLane& lane = lanes_[lane_index];
  tolerance = std::max<TimeNs>(tolerance, 0);
  const auto upper = static_cast<size_t>(std::upper_bound(lane.start.begin(), lane.start.end(), t) -
                                         lane.start.begin());
  std::optional<size_t> best;
  TimeNs best_distance = 0;
  if (upper > 0) {
    // Of the ops starting at or before t, the one ending last is the nearest (none covers t).
    const TimeNs latest_end = lane.running_max_end[upper - 1];
    size_t i = upper - 1;
    while (lane.end[i] != latest_end)
      --i;
    const TimeNs distance = t - latest_end;
    if (distance <= tolerance) {
      best = i;
      best_distance = distance;
    }
  }
  if (upper < lane.size()) {
    const TimeNs distance = lane.start[upper] - t;
    if (distance <= tolerance && (!best || distance < best_distance)) best = upper;
  }
  return best;
}

void TimelineIndex::BinCoverage(int lane_index, TimeNs t0, TimeNs t1, int columns,
                                Coverage* out) const {
  const int n = std::max(columns, 0);
  out->columns = n;
  out->t0 = t0;
  out->t1 = t1;
  // assign() keeps the capacity of a reused Coverage: no allocation per repaint.
  out->busy.assign(static_cast<size_t>(n) * kKinds, 0);
  out->count.assign(static_cast<size_t>(n), 0);
  out->edges.resize(static_cast<size_t>(n) + 1);
  if (n == 0) {
    out->edges[0] = t0;
    return;
  }
  FillEdges(t0, t1, n, out->edges.data());
  const auto [first, last] = Visible(lane_index, t0, t1);
  if (first == last) return;  // also an invalid lane or an empty range

  const TimelineLane& lane = lanes_[lane_index];
  const TimeNs* start = lane.start.data();
  const TimeNs* end = lane.end.data();
  const OpKind* kind = lane.kind_of.data();
  const TimeNs* edges = out->edges.data();
  TimeNs* busy = out->busy.data();
  uint32_t* count = out->count.data();
  const ColumnLocator locate(edges, n, t0, t1);
  CoverageScratch& scratch = Scratch();
  bool spanning = false;

  int c = locate.Of(std::max(start[first], t0));
  TimeNs next_edge = edges[c + 1];
  for (size_t i = first; i < last; ++i) {
    TimeNs s = start[i];
    TimeNs e = end[i];
    if (EndedBefore(s, e, t0)) continue;
    if (s < t0) s = t0;
    if (e > t1) e = t1;
    // Starts never decrease, so the column cursor only moves forward.
    while (next_edge <= s)
      next_edge = edges[++c + 1];
    const int k = static_cast<int>(kind[i]);
    if (e <= next_edge) {  // within column c (a zero-duration op too)
      busy[c * kKinds + k] += e - s;
      ++count[c];
      continue;
    }
    // Spans columns c..d: the partial first and last columns here, the whole columns between them
    // (and the counts of all of them) through difference arrays, so a long op costs O(1).
    if (!spanning) {
      spanning = true;
      scratch.count_diff.assign(static_cast<size_t>(n) + 1, 0);
      scratch.full_diff.assign((static_cast<size_t>(n) + 1) * kKinds, 0);
    }
    const int d = locate.Of(e - 1);  // the column holding the op's last nanosecond
    busy[c * kKinds + k] += next_edge - s;
    busy[d * kKinds + k] += e - edges[d];
    ++scratch.count_diff[c];
    --scratch.count_diff[d + 1];
    if (d > c + 1) {
      ++scratch.full_diff[(c + 1) * kKinds + k];
      --scratch.full_diff[d * kKinds + k];
    }
  }
  if (spanning) {
    int32_t running = 0;
    int64_t full[kKinds] = {};
    for (int col = 0; col < n; ++col) {
      running += scratch.count_diff[col];
      count[col] += static_cast<uint32_t>(running);
      const TimeNs width = edges[col + 1] - edges[col];
      for (int k = 0; k < kKinds; ++k) {
        full[k] += scratch.full_diff[col * kKinds + k];
        busy[col * kKinds + k] += full[k] * width;
      }
    }
  }
  // Fewer nanoseconds than columns leaves empty columns; each counts the ops covering its instant
  // (see Coverage). Rare (extreme zoom) and bounded by the column count.
  if (static_cast<uint64_t>(t1) - static_cast<uint64_t>(t0) < static_cast<uint64_t>(n)) {
    for (int col = 0; col < n; ++col) {
      if (edges[col] == edges[col + 1]) count[col] = CoveringCount(lane, edges[col]);
    }
  }
}

void TimelineIndex::BinMemory(int rank, TimeNs t0, TimeNs t1, int columns,
                              MemoryEnvelope* out) const {
  const int n = std::max(columns, 0);
  out->columns = n;
  out->min.assign(static_cast<size_t>(n), 0.0);
  out->max.assign(static_cast<size_t>(n), 0.0);
  out->last.assign(static_cast<size_t>(n), 0.0);
  if (n == 0 || rank < 0 || rank >= static_cast<int>(memory_.size())) return;
  const auto& samples = memory_[rank];
  if (samples.empty()) return;

  EdgeWalker walker(t0, t1, n);  // the same columns as BinCoverage

  size_t j = static_cast<size_t>(
      std::lower_bound(samples.begin(), samples.end(), t0,
                       [](const auto& sample, TimeNs t) { return sample.first < t; }) -
      samples.begin());
  double value = j > 0 ? samples[j - 1].second : 0.0;  // carried in from before t0
  for (int c = 0; c < n; ++c) {
    walker.Next();
    const TimeNs column_end = walker.edge();
    double low = value;
    double high = value;
    while (j < samples.size() && samples[j].first < column_end) {
      value = samples[j].second;
      low = std::min(low, value);
      high = std::max(high, value);
      ++j;
    }
    out->min[c] = low;
    out->max[c] = high;
    out->last[c] = value;
  }
}

double TimelineIndex::PeakMemory(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(peak_memory_.size())) return 0;
  return peak_memory_[rank];
}

RangeSummary TimelineIndex::Summarize(TimeNs t0, TimeNs t1) const {
  RangeSummary summary;
  summary.t0 = t0;
  summary.t1 = t1;
  if (t1 <= t0) return summary;
  for (int r = 0; r < num_ranks_; ++r) {
    const int lane_index = rank_lane_[r];
    const TimelineLane& lane = lanes_[lane_index];
    const auto [first, last] = Visible(lane_index, t0, t1);
    for (size_t i = first; i < last; ++i) {
      if (EndedBefore(lane.start[i], lane.end[i], t0)) continue;
      summary.busy += std::min(lane.end[i], t1) - std::max(lane.start[i], t0);
      ++summary.ops[static_cast<size_t>(lane.kind_of[i])];
    }
  }
  const TimeNs capacity = static_cast<TimeNs>(num_ranks_) * (t1 - t0);
  summary.idle = capacity - summary.busy;
  summary.busy_fraction =
      capacity > 0 ? static_cast<double>(summary.busy) / static_cast<double>(capacity) : 0.0;
  return summary;
}

Prediction TimelineIndex::Figures() const {
  return figures_;
}

std::optional<WaitCause> TimelineIndex::WaitedFor(int lane_index, size_t index) const {
  if (lane_index < 0 || lane_index >= static_cast<int>(lanes_.size())) return std::nullopt;
  const TimelineLane* lane = &lanes_[lane_index];
  if (index >= lane->size() || lane->kind == LaneKind::kComm) return std::nullopt;
  if (lane->kind == LaneKind::kStage) {
    // The same op on its rank lane: same start, end, kind, stage and microbatch.
    const int rank_lane = rank_lane_[lane->rank];
    const TimelineLane& ranks = lanes_[rank_lane];
    auto i = static_cast<size_t>(
        std::lower_bound(ranks.start.begin(), ranks.start.end(), lane->start[index]) -
        ranks.start.begin());
    for (; i < ranks.size() && ranks.start[i] == lane->start[index]; ++i) {
      if (ranks.end[i] == lane->end[index] && ranks.kind_of[i] == lane->kind_of[index] &&
          ranks.stage_of[i] == lane->stage_of[index] &&
          ranks.microbatch[i] == lane->microbatch[index]) {
        break;
      }
    }
    if (i >= ranks.size() || ranks.start[i] != lane->start[index]) return std::nullopt;
    lane_index = rank_lane;
    lane = &ranks;
    index = i;
  }

  const TimeNs start = lane->start[index];
  const TimeNs previous_end = index == 0 ? 0 : lane->running_max_end[index - 1];
  if (start <= previous_end) return std::nullopt;  // the rank was not idle before it

  const OpKind kind = lane->kind_of[index];
  const int32_t stage = lane->stage_of[index];
  const int32_t microbatch = lane->microbatch[index];
  // The rule the simulator times ops with (dependencies.h); a fused BW of the next stage delivers
  // a B's gradient as well as a B does, so both are candidates.
  const std::optional<Dependency> dependency =
      WaitsFor(kind, stage, microbatch, DependencyRule{num_stages_, 0});
  if (!dependency) return std::nullopt;
  std::pair<const OpRef*, const OpRef*> candidates[2] = {};
  candidates[0] = Find(dependency->kind, dependency->stage, dependency->microbatch);
  if (dependency->or_fused_backward) {
    candidates[1] = Find(OpKind::kBW, dependency->stage, dependency->microbatch);
  }

  const bool measured = kind_ == TimelineKind::kMeasured;
  const TimeNs tolerance =
      measured
          ? std::max(kMeasuredMinTolerance, (lane->end[index] - start) / kMeasuredToleranceDivisor)
          : 0;
  std::optional<WaitCause> best;
  TimeNs best_distance = 0;
  for (const auto& [begin, end] : candidates) {
    for (const OpRef* ref = begin; ref != end; ++ref) {
      const int dep_lane = rank_lane_[ref->rank];
      const TimeNs dep_end = lanes_[dep_lane].end[ref->index];
      const TimeNs hop = ref->rank != lane->rank ? comm_ : 0;
      // Distance of the op's start from [dep_end, dep_end + hop]: the window in which the
      // dependency's result arrived (a single instant for a predicted timeline, hop being exact).
      TimeNs distance = 0;
      if (measured) {
        if (start < dep_end) {
          distance = dep_end - start;
        } else if (start > dep_end + hop) {
          distance = start - (dep_end + hop);
        }
      } else {
        distance = std::abs(start - (dep_end + hop));
      }
      if (distance > tolerance) continue;
      if (!best || distance < best_distance) {
        best = WaitCause{dep_lane, ref->index};
        best_distance = distance;
      }
    }
  }
  return best;
}

// ---- Compare ---------------------------------------------------------------------------------

TimelineComparison CompareTimelines(const TimelineIndex& a, const TimelineIndex& b,
                                    double relative_tolerance) {
  TimelineComparison result;
  result.makespan_a = a.makespan();
  result.makespan_b = b.makespan();
  const auto ranks = static_cast<size_t>(std::max(a.num_ranks(), b.num_ranks()));
  result.busy_a.assign(ranks, 0);
  result.busy_b.assign(ranks, 0);
  result.end_a.assign(ranks, 0);
  result.end_b.assign(ranks, 0);
  std::copy(a.rank_busy_.begin(), a.rank_busy_.end(), result.busy_a.begin());
  std::copy(b.rank_busy_.begin(), b.rank_busy_.end(), result.busy_b.begin());
  std::copy(a.rank_end_.begin(), a.rank_end_.end(), result.end_a.begin());
  std::copy(b.rank_end_.begin(), b.rank_end_.end(), result.end_b.begin());

  // The k-th op of a key in `a` (rank, then start order) matches the k-th of the same key in `b`,
  // so repeated keys (a trace of several iterations) pair up in time order.
  std::vector<char> matched_b(b.rank_op_offset_.empty() ? 0 : b.rank_op_offset_.back(), 0);
  for (int32_t r = 0; r < a.num_ranks(); ++r) {
    const int lane_a = a.rank_lane_[r];
    const TimelineLane& ops = a.lanes_[lane_a];
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto [a_first, a_last] = a.Find(ops.kind_of[i], ops.stage_of[i], ops.microbatch[i]);
      size_t ordinal = 0;
      const TimelineIndex::OpRef* self = a_first;
      while (self != a_last && !(self->rank == r && self->index == i)) {
        ++self;
        ++ordinal;
      }
      const auto [b_first, b_last] = b.Find(ops.kind_of[i], ops.stage_of[i], ops.microbatch[i]);
      if (self == a_last || ordinal >= static_cast<size_t>(b_last - b_first)) {
        result.only_in_a.emplace_back(lane_a, i);
        continue;
      }
      const TimelineIndex::OpRef& other = b_first[ordinal];
      const int lane_b = b.rank_lane_[other.rank];
      const TimelineLane& ops_b = b.lanes_[lane_b];
      OpMatch match;
      match.lane_a = lane_a;
      match.index_a = i;
      match.lane_b = lane_b;
      match.index_b = other.index;
      match.start_delta = ops_b.start[other.index] - ops.start[i];
      match.duration_delta =
          (ops_b.end[other.index] - ops_b.start[other.index]) - (ops.end[i] - ops.start[i]);
      matched_b[b.RankOpId(other.rank, other.index)] = 1;
      if (OpsDiffer(match, a, b, relative_tolerance)) ++result.differing;
      result.matches.push_back(match);
    }
  }
  for (int32_t r = 0; r < b.num_ranks(); ++r) {
    const int lane_b = b.rank_lane_[r];
    for (size_t i = 0; i < b.lanes_[lane_b].size(); ++i) {
      if (!matched_b[b.RankOpId(r, static_cast<uint32_t>(i))])
        result.only_in_b.emplace_back(lane_b, i);
    }
  }
  return result;
}

bool OpsDiffer(const OpMatch& match, const TimelineIndex& a, const TimelineIndex& b,
               double relative_tolerance) {
  const TimelineLane& lane_a = a.lane(match.lane_a);
  const TimelineLane& lane_b = b.lane(match.lane_b);
  const TimeNs duration_a = lane_a.end[match.index_a] - lane_a.start[match.index_a];
  const TimeNs duration_b = lane_b.end[match.index_b] - lane_b.start[match.index_b];
  const TimeNs start_delta = lane_b.start[match.index_b] - lane_a.start[match.index_a];
  const double longer = static_cast<double>(std::max(duration_a, duration_b));
  const double makespan = static_cast<double>(std::max(a.makespan(), b.makespan()));
  return static_cast<double>(std::abs(duration_b - duration_a)) > relative_tolerance * longer ||
         static_cast<double>(std::abs(start_delta)) > relative_tolerance * makespan;
}

}  // namespace zb
