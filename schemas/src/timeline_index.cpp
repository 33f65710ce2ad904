// SPDX-License-Identifier: Apache-2.0
// TimelineIndex (timeline_index.h): lanes are built once, in O(ops) for input that is already in
// time order per rank (what the simulator and the store produce); every query is then a binary
// search plus one pass over what is visible.
//
// Binning is in timeline_binning.cpp, the analysis (summaries, waits, comparison, bubbles) in
// timeline_analysis.cpp.
#include "zbkit/schemas/timeline_index.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <numeric>
#include <utility>

#include "zbkit/schemas/dependencies.h"

namespace zb {
namespace {

constexpr int kLookupKinds = 4;  // F, B, W, BW: the kinds a dependency can name

bool IsCompute(OpKind kind) {
  return kind != OpKind::kComm;
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
    if (!lane.busy.empty()) permute(lane.busy);
    if (!lane.kernels.empty()) permute(lane.kernels);
    if (!lane.name.empty()) permute(lane.name);
    if (!lane.iteration.empty()) permute(lane.iteration);
  }
  lane.running_max_end.resize(n);
  TimeNs max_end = n > 0 ? lane.end[0] : 0;
  for (size_t i = 0; i < n; ++i) {
    max_end = std::max(max_end, lane.end[i]);
    lane.running_max_end[i] = max_end;
  }
}

// Lanes are sized up front and filled by position: no capacity check per op on the 1M-op load.
// The measured detail vectors are sized only when the timeline has them (TimelineLane::busy).
void SizeLane(TimelineLane& lane, size_t n, bool detail, bool iterations) {
  lane.start.resize(n);
  lane.end.resize(n);
  lane.kind_of.resize(n);
  lane.stage_of.resize(n);
  lane.microbatch.resize(n);
  if (detail) {
    lane.busy.resize(n);
    lane.kernels.resize(n);
    lane.name.resize(n);
  }
  if (iterations) lane.iteration.resize(n);
}

void PutOp(TimelineLane& lane, size_t position, const TimelineOp& op, size_t names) {
  lane.start[position] = op.start;
  lane.end[position] = op.end;
  lane.kind_of[position] = op.kind;
  lane.stage_of[position] = op.stage;
  lane.microbatch[position] = op.microbatch;
  if (!lane.busy.empty()) {
    lane.busy[position] = op.BusyTime();
    lane.kernels[position] = op.kernels;
    lane.name[position] = op.name >= 0 && static_cast<size_t>(op.name) < names ? op.name : -1;
  }
  if (!lane.iteration.empty()) lane.iteration[position] = op.iteration;
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

// ---- Construction ----------------------------------------------------------------------------

TimelineIndex::TimelineIndex(const Timeline& timeline, TimeNs comm, int num_stages)
    : kind_(timeline.kind), comm_(comm) {
  ScanExtents(timeline, num_stages);
  BuildLanes(timeline.ops);
  IndexMemory(timeline.memory);
  BuildLookup();
  ComputeFigures();
}

void TimelineIndex::ScanExtents(const Timeline& timeline, int num_stages) {
  const std::vector<TimelineOp>& ops = timeline.ops;
  // Extents. Ops with a negative rank cannot be placed in a lane and are left out.
  int32_t max_rank = -1;
  int32_t max_compute_stage = -1;
  int32_t max_any_stage = -1;
  int32_t max_iteration = 0;
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
    has_op_detail_ = has_op_detail_ || op.busy >= 0 || op.kernels > 0 || op.name >= 0;
    max_iteration = std::max(max_iteration, op.iteration);
    max_rank = std::max(max_rank, op.rank);
    max_any_stage = std::max(max_any_stage, op.stage);
    if (IsCompute(op.kind)) max_compute_stage = std::max(max_compute_stage, op.stage);
  }
  for (const MemorySample& sample : timeline.memory) {
    max_rank = std::max(max_rank, sample.rank);
  }
  num_ranks_ = max_rank + 1;
  if (has_op_detail_) names_ = timeline.names;
  // Iteration spans; a negative iteration (never written by zbkit) counts as iteration 0.
  iterations_.assign(static_cast<size_t>(max_iteration) + 1, {});
  for (const TimelineOp& op : ops) {
    if (op.rank < 0) continue;
    IterationSpan& span = iterations_[static_cast<size_t>(std::max(op.iteration, 0))];
    span.start = span.ops == 0 ? op.start : std::min(span.start, op.start);
    span.end = span.ops == 0 ? op.end : std::max(span.end, op.end);
    ++span.ops;
  }
  const int inferred_stages = (max_compute_stage >= 0 ? max_compute_stage : max_any_stage) + 1;
  num_stages_ = num_stages > 0 ? num_stages : inferred_stages;
}

void TimelineIndex::BuildLanes(const std::vector<TimelineOp>& ops) {
  const bool several_iterations = iterations_.size() > 1;
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
    SizeLane(lane, size, has_op_detail_, several_iterations);
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
  auto put = [&](int32_t lane, const TimelineOp& op) {
    PutOp(lanes_[lane], filled[lane]++, op, names_.size());
  };
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
}

void TimelineIndex::IndexMemory(const std::vector<MemorySample>& memory) {
  // Memory: per rank, by time; samples at one instant keep their order (the last one holds).
  memory_.assign(static_cast<size_t>(num_ranks_), {});
  {
    std::vector<size_t> samples_per_rank(static_cast<size_t>(num_ranks_), 0);
    for (const MemorySample& sample : memory) {
      if (sample.rank >= 0) ++samples_per_rank[sample.rank];
    }
    for (int32_t r = 0; r < num_ranks_; ++r)
      memory_[r].reserve(samples_per_rank[r]);
  }
  for (const MemorySample& sample : memory) {
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
  if (memory.empty()) memory_.clear();
}

const std::vector<std::pair<TimeNs, double>>& TimelineIndex::MemorySamples(int rank) const {
  static const std::vector<std::pair<TimeNs, double>> kNone;
  if (rank < 0 || rank >= static_cast<int>(memory_.size())) return kNone;
  return memory_[rank];
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
  // The bubble rates count op spans, as the simulator does (types.h Prediction); rank_busy_ the
  // device busy time.
  TimeNs max_busy = 0;
  for (size_t r = 0; r < ranks; ++r) {
    const TimelineLane& lane = lanes_[rank_lane_[r]];
    TimeNs busy = 0;
    TimeNs device_busy = 0;
    TimeNs first_f_start = 0;
    bool seen_f = false;
    for (size_t i = 0; i < lane.size(); ++i) {
      busy += lane.end[i] - lane.start[i];
      device_busy += lane.BusyOf(i);
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
    rank_busy_[r] = device_busy;
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

double TimelineIndex::PeakMemory(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(peak_memory_.size())) return 0;
  return peak_memory_[rank];
}

Prediction TimelineIndex::Figures() const {
  return figures_;
}

}  // namespace zb
