// SPDX-License-Identifier: Apache-2.0
// TimelineIndex's level-of-detail binning (timeline_index.h: Coverage, MemoryEnvelope).
//
// BinCoverage is the hot path: a repaint asks it for every lane at ~1600 columns. It walks the
// visible ops once with a column cursor that only moves forward (ops are sorted by start), adds an
// op that fits in one column directly, and records the whole columns under a longer op in
// difference arrays, so a long op costs O(1) and a call costs O(log n + visible ops + columns)
// even on comm lanes where ops overlap. Column edges are exact integers (ColumnEdge), computed
// incrementally without a division per edge.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "timeline_internal.h"
#include "zbkit/schemas/timeline_index.h"

namespace zb {
namespace {

using timeline_internal::EndedBefore;

constexpr int kKinds = Coverage::kKinds;

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
  // Measured ops busy for part of their span: the busy share per kind and the waiting share of
  // the whole columns under them (Coverage::waiting).
  std::vector<double> share_diff;    // (columns + 1) * kKinds
  std::vector<double> waiting_diff;  // (columns + 1) * kKinds
};
CoverageScratch& Scratch() {
  thread_local CoverageScratch scratch;
  return scratch;
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

// The whole columns under ops busy for only part of their span: running sums of the share and
// waiting difference arrays, each fraction of a column's width (the rounding residue of a closed
// sum clamped at 0).
void AddSharedColumns(const CoverageScratch& scratch, const TimeNs* edges, int n, TimeNs* busy,
                      TimeNs* waiting) {
  double share[kKinds] = {};
  double wait[kKinds] = {};
  for (int col = 0; col < n; ++col) {
    const auto width = static_cast<double>(edges[col + 1] - edges[col]);
    for (int k = 0; k < kKinds; ++k) {
      share[k] += scratch.share_diff[col * kKinds + k];
      wait[k] += scratch.waiting_diff[col * kKinds + k];
      busy[col * kKinds + k] += std::max<TimeNs>(0, std::llround(share[k] * width));
      waiting[col * kKinds + k] += std::max<TimeNs>(0, std::llround(wait[k] * width));
    }
  }
}

// The counts of every column an op spans and the busy time of the whole columns under fully busy
// ops: running sums of the count and full difference arrays.
void AddSpannedColumns(const CoverageScratch& scratch, const TimeNs* edges, int n, TimeNs* busy,
                       uint32_t* count) {
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

}  // namespace

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
  const bool measured = lane_index >= 0 && lane_index < static_cast<int>(lanes_.size()) &&
                        !lanes_[lane_index].busy.empty();
  if (measured) {
    out->waiting.assign(static_cast<size_t>(n) * kKinds, 0);
  } else {
    out->waiting.clear();
  }
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
  bool shared = false;  // some whole column is under an op busy for part of its span
  TimeNs* waiting = measured ? out->waiting.data() : nullptr;
  // Adds `part` ns of op i to column `col`: busy in proportion `share`, the rest waiting.
  auto add_part = [&](int col, int k, TimeNs part, double share) {
    if (share >= 1.0) {
      busy[col * kKinds + k] += part;
      return;
    }
    const auto busy_part = static_cast<TimeNs>(static_cast<double>(part) * share);
    busy[col * kKinds + k] += busy_part;
    waiting[col * kKinds + k] += part - busy_part;
  };

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
    double share = 1.0;  // the busy share of the op's span (TimelineLane::busy)
    if (measured && lane.busy[i] < end[i] - start[i]) {
      share = static_cast<double>(lane.busy[i]) / static_cast<double>(end[i] - start[i]);
    }
    if (e <= next_edge) {  // within column c (a zero-duration op too)
      add_part(c, k, e - s, share);
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
    add_part(c, k, next_edge - s, share);
    add_part(d, k, e - edges[d], share);
    ++scratch.count_diff[c];
    --scratch.count_diff[d + 1];
    if (d > c + 1 && share >= 1.0) {
      ++scratch.full_diff[(c + 1) * kKinds + k];
      --scratch.full_diff[d * kKinds + k];
    } else if (d > c + 1) {
      if (!shared) {
        shared = true;
        scratch.share_diff.assign((static_cast<size_t>(n) + 1) * kKinds, 0.0);
        scratch.waiting_diff.assign((static_cast<size_t>(n) + 1) * kKinds, 0.0);
      }
      scratch.share_diff[(c + 1) * kKinds + k] += share;
      scratch.share_diff[d * kKinds + k] -= share;
      scratch.waiting_diff[(c + 1) * kKinds + k] += 1.0 - share;
      scratch.waiting_diff[d * kKinds + k] -= 1.0 - share;
    }
  }
  if (shared) AddSharedColumns(scratch, edges, n, busy, waiting);
  if (spanning) AddSpannedColumns(scratch, edges, n, busy, count);
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

}  // namespace zb
