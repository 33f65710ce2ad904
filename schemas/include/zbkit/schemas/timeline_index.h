// SPDX-License-Identifier: Apache-2.0
// TimelineIndex: the read-only, query-friendly form of a Timeline that viewers draw from.
//
// Qt-free on purpose (docs/zbview.md §3): the GUI, the CLI and tests all ask the same questions
// of the same code, so a figure on screen and a figure printed by `zb` cannot disagree.
//
// Lanes. One lane per rank holding every compute op of the rank (F, B, W, BW), sorted by start;
// compute ops of one rank never overlap. When a rank holds several stages, one extra lane per
// (rank, stage) holds that stage's ops only. Communication ops (OpKind::kComm, measured timelines)
// go to one comm lane per rank, where overlap is allowed.
//
// Level of detail. BinCoverage() reports, for each of N equal pixel columns, the exact busy time
// of each op kind inside the column and how many ops touch it. A renderer stacks the kinds in
// proportion to busy time and leaves the rest as background, so idle time stays visible at every
// zoom, and an op never vanishes: every op touching a column is counted in it (docs/zbview.md §2).
// Cost: O(log n + ops in range + columns) per lane.
#ifndef ZBKIT_SCHEMAS_TIMELINE_INDEX_H_
#define ZBKIT_SCHEMAS_TIMELINE_INDEX_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/schemas/types.h"

namespace zb {

enum class LaneKind { kRank, kStage, kComm };

struct TimelineLane {
  LaneKind kind = LaneKind::kRank;
  int32_t rank = 0;
  int32_t stage = -1;  // the stage of a kStage lane, -1 otherwise
  // Struct of arrays, sorted by start (ties by end). Index i is one op.
  std::vector<TimeNs> start;
  std::vector<TimeNs> end;
  std::vector<OpKind> kind_of;
  std::vector<int32_t> stage_of;
  std::vector<int32_t> microbatch;
  // Max end over ops [0, i], so that a range query can still binary-search where ops may
  // overlap (comm lanes; a measured rank lane with clock jitter): an op ending after t0 may start
  // long before it. Filled for every lane; on a lane without overlap it equals `end`.
  std::vector<TimeNs> running_max_end;
  // What a measured op did inside its span (docs/zbview.md §6). Filled only when
  // the timeline carries it (TimelineIndex::has_op_detail()), else empty: use BusyOf().
  std::vector<TimeNs> busy;      // device busy time inside [start, end) (TimelineOp::BusyTime)
  std::vector<int32_t> kernels;  // kernels attributed to the op
  std::vector<int32_t> name;     // index into TimelineIndex::names(), -1 none
  // The op's iteration; filled only when the timeline has several (TimelineIndex::iterations()).
  std::vector<int32_t> iteration;

  size_t size() const { return start.size(); }
  TimeNs BusyOf(size_t i) const { return busy.empty() ? end[i] - start[i] : busy[i]; }
  int32_t IterationOf(size_t i) const { return iteration.empty() ? 0 : iteration[i]; }
  std::string Label() const;  // "rank 3", "rank 3 stage 4", "rank 3 comm"
};

// Per column: busy time per op kind (ns, exact overlap with the column) and how many ops touch
// the column. busy[column * kKinds + kind].
//
// Columns. Column c is [edges[c], edges[c+1]) with edges[c] = t0 + floor(c * (t1 - t0) / columns)
// (exact integer arithmetic, ColumnEdge), so the columns tile [t0, t1) with no gap or overlap
// whatever the span. When t1 - t0 < columns some columns are empty (edges[c] == edges[c+1]):
// their busy time is 0 and their count is the number of ops covering the instant edges[c]; zoomed
// in that far every op is at least one column wide and a renderer draws ops exactly anyway.
// Touching: an op [s, e) with s < e touches every non-empty column it overlaps; a zero-duration op
// touches the column containing its start. Every op intersecting [t0, t1) is counted in at least
// one column, so no op vanishes at any zoom.
//
// Measured ops whose device was busy for only part of their span (TimelineLane::busy) count in
// `busy` in proportion (busy / span of the overlap), and the rest of their span in `waiting`, so
// a renderer can shade the part of an op's span in which its device did nothing.
struct Coverage {
  static constexpr int kKinds = 5;  // indexed by OpKind: F, B, W, BW, COMM
  int columns = 0;
  TimeNs t0 = 0;
  TimeNs t1 = 0;
  std::vector<TimeNs> busy;
  // Inside an op's span but not busy, per kind like `busy`; empty for a lane without measured
  // busy times.
  std::vector<TimeNs> waiting;

  TimeNs Waiting(int column, OpKind kind) const {
    return waiting.empty()
               ? 0
               : waiting[static_cast<size_t>(column) * kKinds + static_cast<size_t>(kind)];
  }
  std::vector<uint32_t> count;
  std::vector<TimeNs> edges;  // columns + 1 column boundaries (see above)

  TimeNs Busy(int column, OpKind kind) const {
    return busy[static_cast<size_t>(column) * kKinds + static_cast<size_t>(kind)];
  }
  TimeNs BusyTotal(int column) const;
  TimeNs Width(int column) const { return edges[column + 1] - edges[column]; }
};

// Boundary `column` (0..columns) of [t0, t1) cut into `columns` equal columns:
// t0 + floor(column * (t1 - t0) / columns), computed without overflow or rounding. The edges that
// BinCoverage and BinMemory use, for renderers that need the same pixel <-> time mapping.
TimeNs ColumnEdge(TimeNs t0, TimeNs t1, int columns, int column);

// Per column of a memory curve: the minimum, maximum and last value of the step function inside
// the column (Perfetto's counter envelope). Columns are those of Coverage (ColumnEdge). min and
// max include the value carried in from before the column and every sample inside it (several
// samples at one instant all count, so the envelope's maximum over the whole timeline equals
// PeakMemory); `last` is the value at the column's end. Columns before the first sample hold 0.
struct MemoryEnvelope {
  int columns = 0;
  std::vector<double> min;
  std::vector<double> max;
  std::vector<double> last;
};

// What a drag-selected range contains, over every rank lane.
struct RangeSummary {
  TimeNs t0 = 0;
  TimeNs t1 = 0;
  // Compute busy time inside [t0, t1), summed over ranks: a measured op counts its device busy
  // time in proportion to the part of its span inside the range (TimelineLane::BusyOf).
  TimeNs busy = 0;
  TimeNs idle = 0;                              // ranks x (t1 - t0) - busy
  double busy_fraction = 0;                     // busy / (ranks x (t1 - t0))
  std::array<int64_t, Coverage::kKinds> ops{};  // ops intersecting the range, per kind
};

// An op that waited: it started exactly when an op it depends on (on another rank, plus the hop
// latency, or on its own rank) ended, after its rank had been idle. The answer to "why is there a
// bubble here": the rank waited for that op.
struct WaitCause {
  int lane = 0;  // rank lane of the op that was waited for
  size_t index = 0;
};

struct TimelineComparison;

class TimelineIndex {
 public:
  TimelineIndex() = default;
  // `comm` is the hop latency used to explain waits (0 if unknown); `num_stages` the number of
  // stages (0 = infer from the ops).
  explicit TimelineIndex(const Timeline& timeline, TimeNs comm = 0, int num_stages = 0);

  TimelineKind kind() const { return kind_; }
  int num_ranks() const { return num_ranks_; }
  int num_stages() const { return num_stages_; }
  int64_t num_ops() const { return num_ops_; }
  TimeNs begin() const { return begin_; }  // earliest op start (0 for an empty timeline)
  TimeNs end() const { return end_; }      // latest op end
  TimeNs makespan() const { return figures_.makespan; }  // Figures().makespan, without a copy

  const std::vector<TimelineLane>& lanes() const { return lanes_; }
  const TimelineLane& lane(int i) const { return lanes_[i]; }
  int RankLane(int rank) const;  // index of the rank's kRank lane, -1 if none

  // Ops of `lane` intersecting [t0, t1): indices [first, last). An op [s, e) intersects when
  // s < t1 and e > t0; a zero-duration op when t0 <= s < t1. Exact on lanes without overlap; on a
  // comm lane the range may also hold overlapping ops that ended before t0 (check `end`).
  // An invalid lane or t1 <= t0 gives an empty range.
  std::pair<size_t, size_t> Visible(int lane, TimeNs t0, TimeNs t1) const;
  // The op of `lane` covering time t (start <= t < end), or nullopt. On a comm lane, the latest
  // starting one.
  std::optional<size_t> HitTest(int lane, TimeNs t) const;
  // The op of `lane` nearest to t within `tolerance` (for hovering sub-pixel ops): HitTest(t) if
  // any, else the op whose [start, end] is closest to t (distance <= tolerance; a tie goes to the
  // op before t).
  std::optional<size_t> HitTestNear(int lane, TimeNs t, TimeNs tolerance) const;

  // Level-of-detail binning of [t0, t1) into `columns` equal columns; see the file comment and
  // Coverage. `out` is resized, not reallocated, when reused. An invalid lane, t1 <= t0 or
  // columns <= 0 gives all-zero columns.
  void BinCoverage(int lane, TimeNs t0, TimeNs t1, int columns, Coverage* out) const;

  // Memory of `rank` over [t0, t1) in `columns` columns, from the timeline's samples.
  void BinMemory(int rank, TimeNs t0, TimeNs t1, int columns, MemoryEnvelope* out) const;
  // Maximum of the rank's memory step function: the largest sample, or 0 (the value before the
  // first sample) if that is larger or there is none, as the simulator counts its peak.
  double PeakMemory(int rank) const;
  bool has_memory() const { return !memory_.empty(); }
  // The rank's memory samples (time, value), by time; empty without memory.
  const std::vector<std::pair<TimeNs, double>>& MemorySamples(int rank) const;

  // Measured detail: whether any op carries a busy time, kernel count or range name, and the
  // names ops refer to (TimelineLane::name).
  bool has_op_detail() const { return has_op_detail_; }
  const std::vector<std::string>& names() const { return names_; }
  // Iterations of a measured timeline: per iteration id 0..n-1, [earliest start, latest end) of
  // its ops ({0, 0} for an id without ops). One entry for a prediction.
  struct IterationSpan {
    TimeNs start = 0;
    TimeNs end = 0;
    int64_t ops = 0;
  };
  const std::vector<IterationSpan>& iterations() const { return iterations_; }

  RangeSummary Summarize(TimeNs t0, TimeNs t1) const;

  // Makespan, both bubble conventions and per-rank peak memory, as the simulator defines them
  // (types.h Prediction), so the GUI and `zb show` agree.
  Prediction Figures() const;

  // Why op `index` of rank lane `lane` started when it did, if it waited (see WaitCause). Only for
  // an op preceded by idle time on its rank (it starts after the previous op's end, or a first op
  // starting after 0). Its dependency is the one the simulator times it by: WaitsFor in
  // zbkit/schemas/dependencies.h (F(s,j) <- F(s-1,j); B/BW(s,j) <- B or BW(s+1,j), on the last
  // stage <- F(s,j); W(s,j) <- B(s,j)). Predicted timelines: the dependency must end exactly at
  // op.start minus the hop latency (0 on the same rank). Measured timelines, whose clocks and
  // latencies jitter: op.start must lie within
  // [dep.end - tol, dep.end + hop + tol], tol = max(1 us, 1% of the op's duration); of several
  // candidates the closest wins. A kStage lane is accepted too (its op is looked up on the rank
  // lane); the cause is always on a rank lane. nullopt for comm lanes and ops that did not wait.
  std::optional<WaitCause> WaitedFor(int lane, size_t index) const;

  // Per rank: the sum of its compute ops' busy times (durations, or the device busy time of
  // measured ops), and its latest compute op end.
  const std::vector<TimeNs>& rank_busy() const { return rank_busy_; }
  const std::vector<TimeNs>& rank_end() const { return rank_end_; }

  // An op of a rank lane, for the (kind, stage, microbatch) lookup.
  struct OpRef {
    int32_t rank = 0;
    uint32_t index = 0;
  };
  // Ops of the rank lanes with this (kind, stage, microbatch), in rank then start order.
  std::pair<const OpRef*, const OpRef*> Find(OpKind kind, int32_t stage, int32_t microbatch) const;
  // A dense id of op `index` of rank `rank`'s rank lane, 0 .. num_rank_lane_ops() - 1 (bitmaps).
  size_t RankOpId(int32_t rank, uint32_t index) const { return rank_op_offset_[rank] + index; }
  size_t num_rank_lane_ops() const { return rank_op_offset_.empty() ? 0 : rank_op_offset_.back(); }

 private:
  struct OpKey {
    int32_t stage = 0;
    int32_t microbatch = 0;
    uint8_t kind = 0;
  };

  // The constructor's steps, in order: extents, counts and iteration spans; the lanes and their
  // ops; memory by rank; the dependency lookup; the figures.
  void ScanExtents(const Timeline& timeline, int num_stages);
  void BuildLanes(const std::vector<TimelineOp>& ops);
  void IndexMemory(const std::vector<MemorySample>& memory);
  void BuildLookup();
  void ComputeFigures();

  TimelineKind kind_ = TimelineKind::kPredicted;
  int num_ranks_ = 0;
  int num_stages_ = 0;
  int64_t num_ops_ = 0;
  TimeNs begin_ = 0;
  TimeNs end_ = 0;
  TimeNs comm_ = 0;
  std::vector<TimelineLane> lanes_;
  std::vector<int> rank_lane_;
  // Per rank, memory samples sorted by time (time, value).
  std::vector<std::vector<std::pair<TimeNs, double>>> memory_;
  std::vector<double> peak_memory_;  // per rank, PeakMemory()
  std::vector<TimeNs> rank_busy_;    // per rank: sum of compute op busy times
  bool has_op_detail_ = false;
  std::vector<std::string> names_;
  std::vector<IterationSpan> iterations_;
  std::vector<TimeNs> rank_end_;  // per rank: latest compute op end
  Prediction figures_;
  std::vector<size_t> rank_op_offset_;  // per rank: id of its rank lane's first op, for bitmaps

  // (kind, stage, microbatch) -> ops, over rank lanes, for WaitedFor and CompareTimelines. Dense
  // when the key space is small (the normal case): lookup_offsets_[key] .. [key + 1] index
  // lookup_ops_, key = (kind * lookup_stages_ + stage) * lookup_microbatches_ + microbatch.
  // Otherwise (sparse microbatch or stage ids in a measured trace) lookup_keys_ holds each op's
  // key, sorted, beside lookup_ops_, and Find binary-searches it.
  std::vector<uint32_t> lookup_offsets_;
  std::vector<OpKey> lookup_keys_;
  std::vector<OpRef> lookup_ops_;
  int64_t lookup_stages_ = 0;
  int64_t lookup_microbatches_ = 0;
};

// Ops of two timelines matched by (stage, kind, microbatch), for the compare view.
struct OpMatch {
  int lane_a = 0;
  size_t index_a = 0;
  int lane_b = 0;
  size_t index_b = 0;
  TimeNs start_delta = 0;     // b - a
  TimeNs duration_delta = 0;  // b - a
};

struct TimelineComparison {
  std::vector<OpMatch> matches;
  std::vector<std::pair<int, size_t>> only_in_a;  // (rank lane, index)
  std::vector<std::pair<int, size_t>> only_in_b;
  TimeNs makespan_a = 0;
  TimeNs makespan_b = 0;
  // Per rank (by rank id, max of both): busy and end time of each side.
  std::vector<TimeNs> busy_a, busy_b, end_a, end_b;
  // An op "differs" when its duration changed by more than `relative_tolerance` of the longer
  // one, or its start moved by more than that fraction of the makespan (the larger of the two).
  // Matching: the k-th op of a (stage, kind, microbatch) in a, by rank then start, pairs with the
  // k-th in b; a fused BW never matches a split B or W (they are only_in_a / only_in_b).
  int64_t differing = 0;
};

TimelineComparison CompareTimelines(const TimelineIndex& a, const TimelineIndex& b,
                                    double relative_tolerance = 0.01);
bool OpsDiffer(const OpMatch& match, const TimelineIndex& a, const TimelineIndex& b,
               double relative_tolerance);

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_TIMELINE_INDEX_H_
