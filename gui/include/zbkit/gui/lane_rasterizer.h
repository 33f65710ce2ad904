// SPDX-License-Identifier: Apache-2.0
// LaneRasterizer: one lane of a timeline turned into pixels, without a widget.
//
// Each pixel column of the lane stacks the busy time of each op kind in proportion
// (TimelineIndex::BinCoverage): idle on top, then comm, BW, W, B and F at the bottom, so that
// zoomed out a lane reads as a stacked utilisation chart. A measured op whose device was busy for
// only part of its span shows the rest of its span in its kind's pale colour above its busy part
// (WaitingColor), at every zoom: a 97 ms F with 12.9 ms of kernels is a pale block filled to 13 %.
// A kind present in a column gets at least one pixel, so no op ever vanishes; the rest of the
// column stays background (or the bubble tint inside the rank's activity), so idle time is visible
// at every zoom. Blocks at least kExactBlockMinPx columns wide get a darker first column where they
// abut another wide block, so neighbours never fuse; ops differing from a compared timeline that
// are narrower than that are marked by a strip along the lane's top. Pixels are written straight
// into the image's scan lines: O(ops in view) inside BinCoverage plus O(pixels), whatever the zoom,
// which is what keeps 1M ops within a frame. What is sparse by construction (labels, outlines, wait
// links) is left to QPainter overlays; Rasterize reports which ops they concern.
#ifndef ZBKIT_GUI_LANE_RASTERIZER_H_
#define ZBKIT_GUI_LANE_RASTERIZER_H_

#include <QImage>
#include <array>
#include <cstdint>
#include <vector>

#include "zbkit/schemas/timeline_index.h"

namespace zb::gui {

// What the last paint drew, for level-of-detail tests (count primitives, not time).
struct RenderStats {
  int64_t ops_in_view = 0;     // ops intersecting the visible range, all lanes
  int64_t exact_blocks = 0;    // ops drawn as individual rectangles
  int64_t binned_columns = 0;  // lane columns drawn from binned busy fractions
  int64_t primitives = 0;      // rectangles/lines issued to the painter (or pixels spans)
  int64_t labels = 0;
  int64_t wait_links = 0;          // "waited for" lines drawn
  int64_t wait_links_thinned = 0;  // waits of a pixel or more left out by the level of detail
  int64_t highlighted = 0;         // differing ops outlined or marked
  int64_t iteration_lines = 0;     // iteration boundaries drawn
};

// Blocks at least this many pixel columns wide are drawn exactly (separated, labelled, outlined).
inline constexpr double kExactBlockMinPx = 3;

class LaneRasterizer {
 public:
  // One lane to draw and how.
  struct Lane {
    int lane = 0;  // index into TimelineIndex::lanes()
    // [first start, last end) of the lane's ops: idle inside it is a bubble, tinted when
    // `tint_bubbles` (rank lanes).
    TimeNs active0 = 0;
    TimeNs active1 = 0;
    bool tint_bubbles = false;
    // Sorted op indices of the lane that differ from a compared timeline, or null.
    const std::vector<size_t>* highlighted = nullptr;
  };
  // What the overlays need from a rasterised lane.
  struct LaneResult {
    size_t first = 0;  // the lane's ops in view: [first, last)
    size_t last = 0;
    std::vector<size_t> exact;     // ops drawn as exact blocks, in order (labels go there)
    std::vector<size_t> outlined;  // highlighted exact blocks, in order (to outline)
  };

  // Starts a frame: [t0, t1) cut into `columns` pixel columns at the index's column edges
  // (ColumnEdge), so that what is tinted, separated and marked lines up with what BinCoverage
  // counted. t1 > t0 and columns > 0.
  void SetFrame(TimeNs t0, TimeNs t1, int columns);
  int columns() const { return columns_; }
  const std::vector<TimeNs>& edges() const { return edges_; }
  // The column holding t: -1 before the frame, columns() after it.
  int ColumnOf(TimeNs t) const;

  // Draws `lane` into rows [y0, y0 + height) of `image`, a 32-bit image (Format_RGB32 or
  // Format_ARGB32) columns() wide, overwriting every pixel of those rows. Rows outside the image
  // are not drawn. Adds to `stats`; `result` is overwritten.
  void Rasterize(const TimelineIndex& index, const Lane& lane, QImage* image, int y0, int height,
                 LaneResult* result, RenderStats* stats);

 private:
  static constexpr int kKinds = Coverage::kKinds;
  static constexpr int kMaxSegments = 2 * kKinds + 1;  // idle, then per kind waiting and busy

  void FillBubble(const Lane& lane, QImage* image, int y0, int height) const;
  void StackColumns(const Lane& lane, int height, RenderStats* stats);
  int StackColumn(int column, int height, bool bubble, RenderStats* stats);
  void FillRows(QImage* image, int y0, int height);
  void SeparateExactBlocks(const TimelineLane& lane, QImage* image, int y0, int height,
                           LaneResult* result, RenderStats* stats) const;
  void MarkHighlighted(const TimelineLane& lane, const Lane& options, QImage* image, int y0,
                       int height, LaneResult* result, RenderStats* stats);

  TimeNs t0_ = 0;
  TimeNs t1_ = 0;
  int columns_ = 0;
  double ns_per_column_ = 0;
  TimeNs exact_min_ns_ = 0;
  std::vector<TimeNs> edges_;
  std::array<QRgb, kKinds> kind_rgb_{};
  std::array<QRgb, kKinds> separator_rgb_{};
  std::array<QRgb, kKinds> waiting_rgb_{};
  QRgb background_rgb_ = 0;
  QRgb bubble_rgb_ = 0;
  QRgb highlight_rgb_ = 0;

  // Reused between lanes and frames so that a repaint does not allocate.
  Coverage coverage_;
  std::vector<uint16_t> seg_end_;   // per column, kMaxSegments cumulative row ends
  std::vector<QRgb> seg_color_;     // per column, kMaxSegments colours
  std::vector<uint8_t> seg_count_;  // segments per column
  std::vector<uint8_t> seg_pos_;    // row sweep cursor per column
  std::vector<uint8_t> boundary_;   // rows where some column changes colour
  std::vector<uint8_t> marked_;     // columns holding a sub-pixel highlighted op
  int previous_count_ = -1;         // segments of the previous column, for primitive counting
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_LANE_RASTERIZER_H_
