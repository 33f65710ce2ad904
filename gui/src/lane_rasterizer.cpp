// SPDX-License-Identifier: Apache-2.0
// LaneRasterizer (lane_rasterizer.h). A lane is drawn in four passes: the stacked segments of
// every column from the coverage, the rows (a row equal to the one above is a memcpy), separators
// between wide blocks, and the marks of highlighted sub-pixel ops.
#include "zbkit/gui/lane_rasterizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "zbkit/gui/palette.h"

namespace zb::gui {
namespace {

// Top to bottom inside a column: idle first, then the kinds so that F sits at the bottom.
constexpr std::array<int, Coverage::kKinds> kTopDownKinds = {4, 3, 2, 1, 0};

QRgb* Line(QImage* image, int y) {
  return reinterpret_cast<QRgb*>(image->scanLine(y));
}

}  // namespace

void LaneRasterizer::SetFrame(TimeNs t0, TimeNs t1, int columns) {
  t0_ = t0;
  t1_ = t1;
  columns_ = std::max(1, columns);
  ns_per_column_ = static_cast<double>(t1 - t0) / columns_;
  exact_min_ns_ = static_cast<TimeNs>(std::ceil(kExactBlockMinPx * ns_per_column_));
  edges_.resize(static_cast<size_t>(columns_) + 1);
  for (int c = 0; c <= columns_; ++c)
    edges_[c] = ColumnEdge(t0, t1, columns_, c);
  for (int k = 0; k < kKinds; ++k) {
    kind_rgb_[k] = ColorOf(static_cast<OpKind>(k)).rgb();
    separator_rgb_[k] = SeparatorColor(static_cast<OpKind>(k)).rgb();
    waiting_rgb_[k] = WaitingColor(static_cast<OpKind>(k)).rgb();
  }
  background_rgb_ = BackgroundColor().rgb();
  bubble_rgb_ = BubbleColor().rgb();
  highlight_rgb_ = HighlightColor().rgb();
  seg_end_.resize(static_cast<size_t>(columns_) * kMaxSegments);
  seg_color_.resize(static_cast<size_t>(columns_) * kMaxSegments);
  seg_count_.resize(columns_);
  seg_pos_.resize(columns_);
}

int LaneRasterizer::ColumnOf(TimeNs t) const {
  return static_cast<int>(std::upper_bound(edges_.begin(), edges_.end(), t) - edges_.begin()) - 1;
}

void LaneRasterizer::Rasterize(const TimelineIndex& index, const Lane& options, QImage* image,
                               int y0, int height, LaneResult* result, RenderStats* stats) {
  *result = LaneResult{};
  if (y0 < 0 || image->width() != columns_) return;
  const int h = std::min(height, image->height() - y0);
  if (h <= 0) return;
  const TimelineLane& lane = index.lane(options.lane);
  const auto [first, last] = index.Visible(options.lane, t0_, t1_);
  result->first = first;
  result->last = last;
  stats->ops_in_view += static_cast<int64_t>(last - first);
  if (first == last) {
    FillBubble(options, image, y0, h);
    return;
  }
  index.BinCoverage(options.lane, t0_, t1_, columns_, &coverage_);
  StackColumns(options, h, stats);
  FillRows(image, y0, h);
  SeparateExactBlocks(lane, image, y0, h, result, stats);
  MarkHighlighted(lane, options, image, y0, h, result, stats);
}

// Nothing in view: the lane is idle, so background, and a bubble inside the rank's activity.
void LaneRasterizer::FillBubble(const Lane& lane, QImage* image, int y0, int height) const {
  for (int r = 0; r < height; ++r)
    std::fill(Line(image, y0 + r), Line(image, y0 + r) + columns_, background_rgb_);
  if (!lane.tint_bubbles || lane.active0 >= t1_ || lane.active1 <= t0_) return;
  const int c0 = std::clamp(ColumnOf(lane.active0), 0, columns_);
  const int c1 = std::clamp(ColumnOf(lane.active1 - 1) + 1, c0, columns_);
  for (int r = 0; r < height; ++r)
    std::fill(Line(image, y0 + r) + c0, Line(image, y0 + r) + c1, bubble_rgb_);
}

// Pass 1. Per column, the stacked segments: idle on top, then each kind present in proportion to
// its busy time, at least one pixel each, so no op vanishes and idle stays visible.
void LaneRasterizer::StackColumns(const Lane& lane, int height, RenderStats* stats) {
  boundary_.assign(height + 1, 0);
  previous_count_ = -1;
  bool any_empty = false;
  for (int c = 0; c < columns_; ++c) {
    if (edges_[c + 1] == edges_[c]) {
      // Fewer nanoseconds than columns (deepest zoom): an empty column shows the instant it
      // stands for, i.e. the same as the next column, filled in below.
      seg_count_[c] = 0;
      any_empty = true;
      previous_count_ = -1;
      continue;
    }
    const bool bubble =
        lane.tint_bubbles && edges_[c + 1] > lane.active0 && edges_[c] < lane.active1;
    previous_count_ = StackColumn(c, height, bubble, stats);
  }
  if (!any_empty) return;
  for (int c = columns_ - 2; c >= 0; --c) {
    if (seg_count_[c] != 0) continue;
    const size_t from = static_cast<size_t>(c + 1) * kMaxSegments;
    const size_t to = static_cast<size_t>(c) * kMaxSegments;
    std::copy_n(&seg_end_[from], kMaxSegments, &seg_end_[to]);
    std::copy_n(&seg_color_[from], kMaxSegments, &seg_color_[to]);
    seg_count_[c] = seg_count_[c + 1];
  }
}

// The segments of one non-empty column; returns how many. Amount j < kKinds is kind j's busy
// time, j >= kKinds the waiting time inside kind (j - kKinds)'s spans (measured ops whose device
// was busy for part of their span, Coverage::waiting), drawn in the kind's pale colour just above
// its busy part, so a block reads as a fill level.
int LaneRasterizer::StackColumn(int c, int h, bool bubble, RenderStats* stats) {
  constexpr int kAmounts = 2 * kKinds;
  std::array<TimeNs, kAmounts> amount{};
  // Lanes without measured busy times (every prediction) have no waiting amounts to look at.
  const int amounts = coverage_.waiting.empty() ? kKinds : kAmounts;
  for (int k = 0; k < kKinds; ++k) {
    amount[k] = coverage_.Busy(c, static_cast<OpKind>(k));
    if (amounts == kAmounts) amount[kKinds + k] = coverage_.Waiting(c, static_cast<OpKind>(k));
  }
  const double span = static_cast<double>(edges_[c + 1] - edges_[c]);
  std::array<int, kAmounts> px{};
  double total = 0;
  int present = 0;
  for (int j = 0; j < amounts; ++j) {
    total += static_cast<double>(amount[j]);
    present += amount[j] > 0 ? 1 : 0;
  }
  // Overlapping comm ops can be busier than the column; scale so that the stack fits.
  const double scale = h / std::max(span, total);
  // The busy pixels are the busy time rounded once, so the idle share of the column is right to
  // half a pixel; they are shared by largest remainder, at least one per amount present.
  const int busy_px = std::min(h, std::max(present, static_cast<int>(std::lround(total * scale))));
  int sum = 0;
  std::array<double, kAmounts> remainder{};
  for (int j = 0; j < amounts; ++j) {
    if (amount[j] <= 0) continue;
    const double exact = static_cast<double>(amount[j]) * scale;
    px[j] = std::max(1, static_cast<int>(exact));
    remainder[j] = exact - px[j];
    sum += px[j];
  }
  while (sum < busy_px) {
    int best = -1;
    for (int j = 0; j < amounts; ++j) {
      if (amount[j] > 0 && (best < 0 || remainder[j] > remainder[best])) best = j;
    }
    ++px[best];
    remainder[best] -= 1;
    ++sum;
  }
  while (sum > busy_px) {  // the one-pixel minimum overflowed: take it from the largest
    int largest = 0;
    for (int j = 1; j < amounts; ++j) {
      if (px[j] > px[largest]) largest = j;
    }
    if (px[largest] <= 1) break;
    --px[largest];
    --sum;
  }
  if (present > 0 && (coverage_.count[c] > 1 || total < span)) ++stats->binned_columns;
  uint16_t* ends = &seg_end_[static_cast<size_t>(c) * kMaxSegments];
  QRgb* colors = &seg_color_[static_cast<size_t>(c) * kMaxSegments];
  int n = 0;
  int row_end = 0;
  if (sum < h) {
    row_end = h - sum;
    ends[n] = static_cast<uint16_t>(row_end);
    colors[n++] = bubble ? bubble_rgb_ : background_rgb_;
  }
  for (int k : kTopDownKinds) {
    for (const int j : {kKinds + k, k}) {
      if (px[j] == 0) continue;
      row_end = std::min(h, row_end + px[j]);
      ends[n] = static_cast<uint16_t>(row_end);
      colors[n++] = j < kKinds ? kind_rgb_[k] : waiting_rgb_[k];
    }
  }
  ends[n - 1] = static_cast<uint16_t>(h);  // the last segment always reaches the bottom
  seg_count_[c] = static_cast<uint8_t>(n);
  seg_pos_[c] = 0;
  for (int s = 0; s < n; ++s)
    boundary_[ends[s]] = 1;
  // A primitive is a rectangle: columns repeating the previous column's stack extend it.
  const bool same = c > 0 && n == previous_count_ &&
                    std::equal(ends, ends + n, ends - kMaxSegments) &&
                    std::equal(colors, colors + n, colors - kMaxSegments);
  if (!same) stats->primitives += present;
  return n;
}

// Pass 2. Rows, top to bottom; a row whose colours equal the previous one is a memcpy.
void LaneRasterizer::FillRows(QImage* image, int y0, int height) {
  for (int r = 0; r < height; ++r) {
    QRgb* line = Line(image, y0 + r);
    if (r > 0 && !boundary_[r]) {
      std::memcpy(line, image->scanLine(y0 + r - 1), sizeof(QRgb) * columns_);
      continue;
    }
    for (int c = 0; c < columns_; ++c) {
      const size_t base = static_cast<size_t>(c) * kMaxSegments;
      uint8_t& pos = seg_pos_[c];
      while (seg_end_[base + pos] <= r)
        ++pos;
      line[c] = seg_color_[base + pos];
    }
  }
}

// Pass 3. Blocks several pixels wide: a darker first column where one abuts another wide block
// (so that neighbours never fuse). Only columns holding nothing but the two blocks get a
// separator, so no sub-pixel op is painted over.
void LaneRasterizer::SeparateExactBlocks(const TimelineLane& lane, QImage* image, int y0,
                                         int height, LaneResult* result, RenderStats* stats) const {
  for (size_t i = result->first; i < result->last; ++i) {
    if (lane.end[i] - lane.start[i] < exact_min_ns_) continue;
    ++stats->exact_blocks;
    result->exact.push_back(i);
    if (i == 0 || lane.end[i - 1] - lane.start[i - 1] < exact_min_ns_ ||
        static_cast<double>(lane.start[i] - lane.end[i - 1]) >= ns_per_column_) {
      continue;
    }
    const int s = ColumnOf(lane.start[i]);
    const int previous_first = ColumnOf(std::max(lane.start[i - 1], t0_));
    const int own_last = ColumnOf(std::min(lane.end[i], t1_) - 1);
    if (s >= 0 && s < columns_ && previous_first < s && own_last > s && coverage_.count[s] <= 2) {
      const QRgb separator = separator_rgb_[static_cast<int>(lane.kind_of[i])];
      for (int r = 0; r < height; ++r)
        Line(image, y0 + r)[s] = separator;
      ++stats->primitives;
    }
  }
}

// Pass 4. Ops differing from a compared timeline: wide ones are left to the outline overlay,
// sub-pixel ones marked by a strip along the lane's top, merged per column so the count stays
// bounded.
void LaneRasterizer::MarkHighlighted(const TimelineLane& lane, const Lane& options, QImage* image,
                                     int y0, int height, LaneResult* result, RenderStats* stats) {
  if (options.highlighted == nullptr || options.highlighted->empty()) return;
  const std::vector<size_t>& list = *options.highlighted;
  marked_.assign(columns_, 0);
  bool any_marked = false;
  for (auto it = std::lower_bound(list.begin(), list.end(), result->first);
       it != list.end() && *it < result->last; ++it) {
    const size_t i = *it;
    ++stats->highlighted;
    if (lane.end[i] - lane.start[i] >= exact_min_ns_) {
      result->outlined.push_back(i);
      continue;
    }
    const int c0 = std::clamp(ColumnOf(lane.start[i]), 0, columns_ - 1);
    const int c1 = std::clamp(ColumnOf(lane.end[i] - 1), c0, columns_ - 1);
    std::fill(marked_.begin() + c0, marked_.begin() + c1 + 1, 1);
    any_marked = true;
  }
  if (!any_marked) return;
  const int strip = std::max(2, height / 6);
  for (int c = 0; c < columns_; ++c) {
    if (!marked_[c]) continue;
    if (c == 0 || !marked_[c - 1]) ++stats->primitives;
    for (int r = 0; r < strip; ++r)
      Line(image, y0 + r)[c] = highlight_rgb_;
  }
}

}  // namespace zb::gui
