// SPDX-License-Identifier: Apache-2.0
// What a timeline says (timeline_index.h, timeline_analysis.h): range summaries, what an op waited
// for, the comparison of two timelines, and the bubbles (idle stretches) of the rank lanes. The
// one home of these rules: zbview, `zb` and the tests ask them here.
#include "zbkit/schemas/timeline_analysis.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <queue>
#include <utility>

#include "timeline_internal.h"
#include "zbkit/schemas/dependencies.h"
#include "zbkit/schemas/timeline_index.h"

namespace zb {
namespace {

using timeline_internal::BusyInside;
using timeline_internal::EndedBefore;

// WaitedFor on measured timelines: clocks of different ranks and the hop latency jitter by
// microseconds, so "started exactly when its dependency ended" needs some slack.
constexpr TimeNs kMeasuredMinTolerance = 1000;     // 1 us
constexpr TimeNs kMeasuredToleranceDivisor = 100;  // 1% of the op's duration

}  // namespace

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
      summary.busy += BusyInside(lane, i, std::min(lane.end[i], t1) - std::max(lane.start[i], t0));
      ++summary.ops[static_cast<size_t>(lane.kind_of[i])];
    }
  }
  const TimeNs capacity = static_cast<TimeNs>(num_ranks_) * (t1 - t0);
  summary.idle = capacity - summary.busy;
  summary.busy_fraction =
      capacity > 0 ? static_cast<double>(summary.busy) / static_cast<double>(capacity) : 0.0;
  return summary;
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
  std::copy(a.rank_busy().begin(), a.rank_busy().end(), result.busy_a.begin());
  std::copy(b.rank_busy().begin(), b.rank_busy().end(), result.busy_b.begin());
  std::copy(a.rank_end().begin(), a.rank_end().end(), result.end_a.begin());
  std::copy(b.rank_end().begin(), b.rank_end().end(), result.end_b.begin());

  // The k-th op of a key in `a` (rank, then start order) matches the k-th of the same key in `b`,
  // so repeated keys (a trace of several iterations) pair up in time order.
  std::vector<char> matched_b(b.num_rank_lane_ops(), 0);
  for (int32_t r = 0; r < a.num_ranks(); ++r) {
    const int lane_a = a.RankLane(r);
    const TimelineLane& ops = a.lane(lane_a);
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
      const int lane_b = b.RankLane(other.rank);
      const TimelineLane& ops_b = b.lane(lane_b);
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
    const int lane_b = b.RankLane(r);
    for (size_t i = 0; i < b.lane(lane_b).size(); ++i) {
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

// ---- Bubbles ---------------------------------------------------------------------------------

TimeNs TimelineOrigin(const TimelineIndex& index) {
  return index.kind() == TimelineKind::kPredicted ? 0 : index.begin();
}

Bubble IdleBefore(const TimelineIndex& index, int lane_index, size_t next) {
  const TimelineLane& lane = index.lane(lane_index);
  Bubble bubble;
  bubble.lane = lane_index;
  bubble.rank = lane.rank;
  bubble.next = static_cast<int64_t>(next);
  bubble.start = next == 0 ? TimelineOrigin(index) : lane.running_max_end[next - 1];
  bubble.end = std::max(bubble.start, lane.start[next]);
  return bubble;
}

std::vector<Bubble> LongestBubbles(const TimelineIndex& index, TimeNs makespan, int count) {
  if (count <= 0) return {};
  // A min-heap of the `count` longest so far: a 1M-op timeline has up to 1M gaps. Longer first,
  // then lower lane, then earlier.
  auto shorter = [](const Bubble& x, const Bubble& y) {
    if (x.length() != y.length()) return x.length() > y.length();
    if (x.lane != y.lane) return x.lane < y.lane;
    return x.start < y.start;
  };
  std::priority_queue<Bubble, std::vector<Bubble>, decltype(shorter)> longest(shorter);
  auto offer = [&](const Bubble& bubble) {
    if (bubble.length() <= 0) return;
    if (static_cast<int>(longest.size()) < count) {
      longest.push(bubble);
    } else if (shorter(bubble, longest.top())) {
      longest.pop();
      longest.push(bubble);
    }
  };
  const TimeNs origin = TimelineOrigin(index);
  const TimeNs finish = std::max(index.end(), origin + makespan);
  for (int r = 0; r < index.num_ranks(); ++r) {
    const int lane_index = index.RankLane(r);
    if (lane_index < 0) continue;
    const TimelineLane& lane = index.lane(lane_index);
    for (size_t i = 0; i < lane.size(); ++i)
      offer(IdleBefore(index, lane_index, i));
    Bubble tail;
    tail.lane = lane_index;
    tail.rank = lane.rank;
    tail.start = lane.size() > 0 ? lane.running_max_end.back() : origin;
    tail.end = finish;
    offer(tail);
  }
  std::vector<Bubble> bubbles;
  while (!longest.empty()) {
    bubbles.push_back(longest.top());
    longest.pop();
  }
  std::reverse(bubbles.begin(), bubbles.end());
  return bubbles;
}

int32_t MedianIteration(const TimelineIndex& index) {
  std::vector<std::pair<TimeNs, int32_t>> durations;
  const auto& spans = index.iterations();
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].ops > 0) {
      durations.emplace_back(spans[i].end - spans[i].start, static_cast<int32_t>(i));
    }
  }
  if (durations.empty()) return 0;
  std::sort(durations.begin(), durations.end());
  return durations[(durations.size() - 1) / 2].second;
}

Timeline ExtractIteration(const TimelineIndex& index, int32_t iteration) {
  Timeline timeline;
  timeline.kind = index.kind();
  const auto& spans = index.iterations();
  if (iteration < 0 || static_cast<size_t>(iteration) >= spans.size() ||
      spans[static_cast<size_t>(iteration)].ops == 0) {
    return timeline;
  }
  const auto& span = spans[static_cast<size_t>(iteration)];
  TimelineNameTable names(timeline.names);
  for (const TimelineLane& lane : index.lanes()) {
    if (lane.kind == LaneKind::kStage) continue;  // its ops are on the rank lane too
    for (size_t i = 0; i < lane.size(); ++i) {
      if (lane.IterationOf(i) != iteration) continue;
      TimelineOp op{lane.rank,
                    lane.stage_of[i],
                    lane.kind_of[i],
                    lane.microbatch[i],
                    lane.start[i] - span.start,
                    lane.end[i] - span.start,
                    0};
      if (!lane.busy.empty()) {
        op.busy = lane.busy[i];
        op.kernels = lane.kernels[i];
        if (lane.name[i] >= 0) op.name = names.Intern(index.names()[lane.name[i]]);
      }
      timeline.ops.push_back(op);
    }
  }
  std::stable_sort(timeline.ops.begin(), timeline.ops.end(),
                   [](const TimelineOp& a, const TimelineOp& b) {
                     return a.rank < b.rank || (a.rank == b.rank && a.start < b.start);
                   });
  for (int rank = 0; rank < index.num_ranks(); ++rank) {
    const auto& samples = index.MemorySamples(rank);
    if (samples.empty()) continue;
    // The value held when the iteration began, then every change inside it.
    auto it = std::upper_bound(samples.begin(), samples.end(), span.start,
                               [](TimeNs t, const auto& sample) { return t < sample.first; });
    const double held = it == samples.begin() ? 0.0 : std::prev(it)->second;
    timeline.memory.push_back({rank, 0, held});
    for (; it != samples.end() && it->first <= span.end; ++it) {
      timeline.memory.push_back({rank, it->first - span.start, it->second});
    }
  }
  return timeline;
}

}  // namespace zb
