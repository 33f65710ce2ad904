// SPDX-License-Identifier: Apache-2.0
// TimelineView's private parts, shared by its sources: timeline_view.cpp (construction, settings,
// geometry and lane-label layout), timeline_text.cpp (op text, tooltips, summaries),
// timeline_paint.cpp (painting) and timeline_input.cpp (hit tests, selection, mouse and keys).
#ifndef ZBKIT_GUI_SRC_TIMELINE_VIEW_IMPL_H_
#define ZBKIT_GUI_SRC_TIMELINE_VIEW_IMPL_H_

#include <QElapsedTimer>
#include <QImage>
#include <QScrollBar>
#include <algorithm>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "timeline_overlays.h"
#include "zbkit/gui/lane_rasterizer.h"
#include "zbkit/gui/timeline_view.h"
#include "zbkit/gui/view_state.h"
#include "zbkit/schemas/op_text.h"

namespace zb::gui {
namespace timeline_detail {

inline constexpr int kDefaultLabelWidth = 90;
inline constexpr int kMaxLaneHeight = 40;
inline constexpr double kHoverNearPx = 2;  // hovering this close to a sub-pixel op still finds it
// Wait links are drawn when this few ops are in view; more would be a hairball, and WaitedFor is
// asked once per op preceded by idle.
inline constexpr int64_t kMaxWaitLinkOps = 2000;
inline constexpr int kNumKinds = Coverage::kKinds;

// How much of the widget's height a lane of this kind takes, relative to a rank lane.
inline double LaneWeight(LaneKind kind) {
  switch (kind) {
    case LaneKind::kRank:
      return 1.0;
    case LaneKind::kStage:
      return 0.55;
    case LaneKind::kComm:
      return 0.5;
  }
  return 1.0;
}

// An op as zbview writes it: FormatOp's "F stage 3 mb 5" (op_text.h).
inline QString OpText(const TimelineLane& lane, size_t i) {
  return QString::fromStdString(FormatOp(lane.kind_of[i], lane.stage_of[i], lane.microbatch[i]));
}

// Op i of `lane` with a margin of half its duration on each side, so that its neighbours show:
// what a double click on it, or revealing it, zooms to.
inline TimeRange AroundOp(const TimelineLane& lane, size_t i) {
  const TimeNs margin =
      std::max<TimeNs>((lane.end[i] - lane.start[i]) / 2, ViewState::kMinimumSpan);
  return {lane.start[i] - margin, lane.end[i] + margin};
}

}  // namespace timeline_detail

struct TimelineView::Impl {
  enum class Drag { kNone, kPan, kSelect };

  // Layout, recomputed lazily when the size, font, timeline or lane filter change.
  bool layout_dirty = true;
  QSize layout_size;
  std::vector<LaneRow> rows;      // the rows shown, in widget coordinates
  std::vector<int> row_of_lane;   // lane -> index into rows, -1 when hidden or scrolled away
  std::vector<LaneRow> all_rows;  // every row of the content, y from the top of the lanes
  std::vector<LaneFold> folds;    // per lane: the fold marker of rank labels
  // Folding: every rank is folded when `fold_all`, and the ranks in `fold_toggled` are the
  // other way, so a fold of all survives a new timeline.
  bool fold_all = false;
  std::set<int> fold_toggled;
  bool Folded(int rank) const { return fold_all != (fold_toggled.count(rank) > 0); }
  // Whether a lane gets a row: rank lanes always; stage lanes when shown; both stage and comm
  // lanes only while their rank is unfolded.
  bool Shows(const TimelineLane& lane) const {
    if (lane.kind == LaneKind::kRank) return true;
    return (lane.kind != LaneKind::kStage || show_stage_lanes) && !Folded(lane.rank);
  }
  int content_height = 0;
  int lane_height = 0;  // px of a rank lane; 0 = share the widget's height
  int first_row = 0;    // vertical scrolling, by whole rows: the first row shown
  int max_first_row = 0;
  QScrollBar* scrollbar = nullptr;
  int scrollbar_width = 0;                             // when shown: the lanes end before it
  std::vector<std::pair<double, double>> label_boxes;  // lane labels of the last paint
  int label_width = timeline_detail::kDefaultLabelWidth;
  int min_label_width = timeline_detail::kDefaultLabelWidth;

  bool show_stage_lanes = true;
  bool show_wait_links = true;
  bool show_labels = true;
  QString title;
  // Time zero of the ruler and tooltips: 0 for predictions, the first op of a measured timeline
  // (whose clock may be an epoch).
  TimeNs origin = 0;
  // Per lane: [first start, last end) of its ops; idle inside it is a bubble.
  std::vector<std::pair<TimeNs, TimeNs>> active;
  std::vector<std::vector<size_t>> highlighted;  // per lane, sorted op indices

  Drag drag = Drag::kNone;
  QPoint press_pos;
  TimeRange press_range;
  TimeNs select_anchor = 0;
  bool moved = false;
  QElapsedTimer last_wheel;
  int hover_lane = -1;
  qint64 hover_index = -1;
  std::optional<std::pair<int, size_t>> selected_op;

  // What the cached lanes image shows; any change redraws it.
  struct ImageKey {
    TimeRange range;
    QSize size;
    qreal dpr = 0;
    const TimelineIndex* index = nullptr;
    uint64_t version = 0;
    bool operator==(const ImageKey& o) const {
      return range == o.range && size == o.size && dpr == o.dpr && index == o.index &&
             version == o.version;
    }
  };
  ImageKey image_key;
  uint64_t content_version = 0;  // bumped by every setter that changes the lanes image
  // The lanes image and what the overlays draw over it, kept between paints that reuse it.
  QImage image;
  RenderStats image_stats;  // the image part of the stats
  std::vector<BlockLabel> labels;
  std::vector<QRectF> outlines;  // highlighted wide blocks
  LaneRasterizer rasterizer;
  LaneRasterizer::LaneResult lane_result;  // reused between lanes
  BlockLabelPainter label_painter;

  // Draws every shown lane into `image` at `dpr` and collects labels and outlines.
  void RasterizeLanes(const TimelineIndex& index, const PaintFrame& frame, qreal dpr,
                      int label_min_height, RenderStats* stats);
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_SRC_TIMELINE_VIEW_IMPL_H_
