// SPDX-License-Identifier: Apache-2.0
// TimelineIndex: the read-only, query-friendly form of a Timeline that viewers draw from.
//
// Qt-free on purpose (gui-and-style.md §5): the GUI, the CLI and tests all ask the same questions
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
// zoom, and an op never vanishes: every op touching a column is counted in it (gui-and-style §4).
// Cost: O(log n + ops in range + columns) per lane.
#ifndef ZBKIT_MODEL_TIMELINE_INDEX_H_
#define ZBKIT_MODEL_TIMELINE_INDEX_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/model/types.h"

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
  // For comm lanes, where ops may overlap: max end over ops [0, i], so that a range query can
  // still binary-search (an op ending after t0 may start long before it).
  std::vector<TimeNs> running_max_end;

  size_t size() const { return start.size(); }
  std::string Label() const;  // "rank 3", "rank 3 stage 4", "rank 3 comm"
};

// Per column: busy time per op kind (ns, exact overlap with the column) and how many ops touch
// the column. busy[column * kKinds + kind].
struct Coverage {
  static constexpr int kKinds = 5;  // indexed by OpKind: F, B, W, BW, COMM
  int columns = 0;
  TimeNs t0 = 0;
  TimeNs t1 = 0;
  std::vector<TimeNs> busy;
  std::vector<uint32_t> count;

  TimeNs Busy(int column, OpKind kind) const {
    return busy[static_cast<size_t>(column) * kKinds + static_cast<size_t>(kind)];
  }
  TimeNs BusyTotal(int column) const;
};

// Per column of a memory curve: the minimum, maximum and last value of the step function inside
// the column (Perfetto's counter envelope). Columns before the first sample hold 0.
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
  TimeNs busy = 0;         // compute busy time inside [t0, t1), summed over ranks
  TimeNs idle = 0;         // ranks x (t1 - t0) - busy
  double busy_fraction = 0;  // busy / (ranks x (t1 - t0))
  std::array<int64_t, Coverage::kKinds> ops{};  // ops intersecting the range, per kind
};

// An op that waited: it started exactly when an op it depends on (on another rank, plus the hop
// latency, or on its own rank) ended, after its rank had been idle. The answer to "why is there a
// bubble here": the rank waited for that op.
struct WaitCause {
  int lane = 0;  // rank lane of the op that was waited for
  size_t index = 0;
};

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

  const std::vector<TimelineLane>& lanes() const { return lanes_; }
  const TimelineLane& lane(int i) const { return lanes_[i]; }
  int RankLane(int rank) const;  // index of the rank's kRank lane, -1 if none

  // Ops of `lane` intersecting [t0, t1): indices [first, last).
  std::pair<size_t, size_t> Visible(int lane, TimeNs t0, TimeNs t1) const;
  // The op of `lane` covering time t (start <= t < end), or nullopt. On a comm lane, the latest
  // starting one.
  std::optional<size_t> HitTest(int lane, TimeNs t) const;
  // The op of `lane` nearest to t within `tolerance` (for hovering sub-pixel ops).
  std::optional<size_t> HitTestNear(int lane, TimeNs t, TimeNs tolerance) const;

  // Level-of-detail binning of [t0, t1) into `columns` equal columns; see the file comment.
  void BinCoverage(int lane, TimeNs t0, TimeNs t1, int columns, Coverage* out) const;

  // Memory of `rank` over [t0, t1) in `columns` columns, from the timeline's samples.
  void BinMemory(int rank, TimeNs t0, TimeNs t1, int columns, MemoryEnvelope* out) const;
  double PeakMemory(int rank) const;
  bool has_memory() const { return !memory_.empty(); }

  RangeSummary Summarize(TimeNs t0, TimeNs t1) const;

  // Makespan, both bubble conventions and per-rank peak memory, as the simulator defines them
  // (types.h Prediction), so the GUI and `zb show` agree.
  Prediction Figures() const;

  // Why op `index` of rank lane `lane` started when it did, if it waited (see WaitCause).
  std::optional<WaitCause> WaitedFor(int lane, size_t index) const;

 private:
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
  // one, or its start moved by more than that fraction of the makespan.
  int64_t differing = 0;
};

TimelineComparison CompareTimelines(const TimelineIndex& a, const TimelineIndex& b,
                                    double relative_tolerance = 0.01);
bool OpsDiffer(const OpMatch& match, const TimelineIndex& a, const TimelineIndex& b,
               double relative_tolerance);

}  // namespace zb

#endif  // ZBKIT_MODEL_TIMELINE_INDEX_H_
