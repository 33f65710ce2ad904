// SPDX-License-Identifier: Apache-2.0
// What TimelineView paints over and around its rasterised lanes (lane_rasterizer.h), one painter
// function or class per layer: block labels, outlines of differing ops, wait links, the
// selection band and hover line over the lanes; lane labels, the time ruler, the title and the
// selection's summary tag around them. Each draws from what it is given (no widget), in the
// order TimelineView calls them. Private to zbkit::gui_widgets.
#ifndef ZBKIT_GUI_SRC_TIMELINE_OVERLAYS_H_
#define ZBKIT_GUI_SRC_TIMELINE_OVERLAYS_H_

#include <QFont>
#include <QPainter>
#include <QRectF>
#include <QStaticText>
#include <QString>
#include <optional>
#include <unordered_map>
#include <vector>

#include "zbkit/gui/lane_rasterizer.h"
#include "zbkit/gui/view_state.h"
#include "zbkit/schemas/timeline_index.h"

namespace zb::gui {

inline constexpr int kRulerHeight = 40;
inline constexpr int kRulerTopRowHeight = 17;  // the ruler's top row: title, selection summary
inline constexpr int kLaneGap = 2;       // background between lanes, so that lanes never touch
inline constexpr int kRankGroupGap = 4;  // extra gap before each rank's first lane

// One shown lane, in widget coordinates.
struct LaneRow {
  int lane = 0;  // index into TimelineIndex::lanes()
  int y = 0;
  int height = 0;
};

// The geometry of one paint: the widget's size, the label column, and time -> x over the lanes.
struct PaintFrame {
  TimeRange range;
  int width = 0;  // the widget's
  int height = 0;
  int label_width = 0;
  double x_per_ns = 0;

  int lanes_width() const { return width - label_width; }
  int lanes_height() const { return height - kRulerHeight; }
  double X(TimeNs t) const { return label_width + static_cast<double>(t - range.t0) * x_per_ns; }
};

// "rank 3", "rank 3 s4", "rank 3 comm": the label of a lane.
QString LaneText(const TimelineLane& lane);

// A microbatch number to centre in the visible part of a wide block.
struct BlockLabel {
  QRectF rect;
  int32_t microbatch = 0;
  OpKind kind = OpKind::kF;
};

// Paints block labels where they fit, keeping each number's prepared text between paints.
class BlockLabelPainter {
 public:
  void Paint(QPainter& painter, const std::vector<BlockLabel>& labels, const QFont& font,
             RenderStats* stats);

 private:
  std::unordered_map<int32_t, QStaticText> text_;
};

// Outlines of wide ops that differ from a compared timeline.
void PaintOutlines(QPainter& painter, const std::vector<QRectF>& outlines, RenderStats* stats);

// The selected op: a frame in the selection colour around [x0, x1) of its row, at least a few
// pixels wide so that a sub-pixel op still shows where it is.
void PaintSelectedOp(QPainter& painter, double x0, double x1, const LaneRow& row,
                     RenderStats* stats);

// Why the bubbles are there: for ops in view preceded by idle on a rank lane, a line with an
// arrow head from the end of the op it waited for (TimelineIndex::WaitedFor) to its start. Thinned
// by level of detail: waits shorter than a pixel are left out, and of the rest only the
// kMaxWaitLinks longest are drawn (RenderStats::wait_links_thinned counts the others).
inline constexpr int kMaxWaitLinks = 300;
void PaintWaitLinks(QPainter& painter, const TimelineIndex& index, const std::vector<LaneRow>& rows,
                    const std::vector<int>& row_of_lane, const PaintFrame& frame,
                    RenderStats* stats);

// The selection as a translucent band with edges over the lanes, and the hover time as a line.
void PaintSelectionBand(QPainter& painter, const std::optional<TimeRange>& selection,
                        const PaintFrame& frame);
void PaintHoverLine(QPainter& painter, const std::optional<TimeNs>& hover, const PaintFrame& frame);

// Where each iteration of a measured run of several begins: a dashed line over the lanes and
// "iter N" at its top, labels thinned so that they never overlap (docs/zbview.md §8).
void PaintIterationBoundaries(QPainter& painter, const TimelineIndex& index, const QFont& font,
                              const PaintFrame& frame, RenderStats* stats);

// Whether a rank lane's label folds its rank's other lanes (stage and comm lanes): a click on it
// collapses or expands them. Per lane; kNone for lanes without any.
enum class LaneFold : uint8_t { kNone, kExpanded, kCollapsed };

// Lane labels in the label column (never overlapping: see the definition), with a fold marker on
// ranks that have other lanes, a faint rule between ranks and the column's frame.
// Returns the label boxes placed ([top, bottom) of each, by top).
std::vector<std::pair<double, double>> PaintLaneLabels(
    QPainter& painter, const TimelineIndex& index, const std::vector<LaneRow>& rows,
    const std::vector<LaneFold>& folds, const QFont& rank_font, const QFont& other_font,
    const PaintFrame& frame);

// The time ruler: ticks at a 1-2-5 step with labels in the unit of the times shown, from
// `origin`, half steps as minor ticks.
void PaintRuler(QPainter& painter, TimeNs origin, const QFont& font, const PaintFrame& frame);

// The title, bold and elided, in the ruler's corner above the lane labels.
void PaintTitle(QPainter& painter, const QString& title, const QFont& font,
                const PaintFrame& frame);

// The selection's span and busy share, in a tag in the ruler's top row above the selection.
void PaintSelectionTag(QPainter& painter, const TimelineIndex& index, const TimeRange& selection,
                       const QFont& font, const PaintFrame& frame);

}  // namespace zb::gui

#endif  // ZBKIT_GUI_SRC_TIMELINE_OVERLAYS_H_
