// SPDX-License-Identifier: Apache-2.0
// Painting: the lanes area is one QImage whose pixels LaneRasterizer writes from the per-column
// coverage of each lane (lane_rasterizer.h), blitted with one drawImage; the overlay painters
// (timeline_overlays.h) then add what is sparse by construction: labels and outlines of blocks
// several pixels wide, wait links, selection, hover line, lane labels, ruler and title. The cost
// is O(ops in view) inside BinCoverage plus O(pixels), whatever the zoom, which is what keeps 1M
// ops within a frame (docs/zbview.md §1). The image is kept while only hover or selection
// change.
#include <QApplication>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <cmath>

#include "timeline_view_impl.h"
#include "tooltip.h"
#include "zbkit/gui/palette.h"
#include "zbkit/gui/timeline_view.h"
#include "zbkit/schemas/timeline_analysis.h"

namespace zb::gui {
using namespace timeline_detail;

void TimelineView::Impl::RasterizeLanes(const TimelineIndex& index, const PaintFrame& frame,
                                        qreal dpr, int label_min_height, RenderStats* stats) {
  const int columns = std::max(1, static_cast<int>(std::lround(frame.lanes_width() * dpr)));
  const int image_height = std::max(1, static_cast<int>(std::lround(frame.lanes_height() * dpr)));
  if (image.width() != columns || image.height() != image_height) {
    image = QImage(columns, image_height, QImage::Format_RGB32);
  }
  image.setDevicePixelRatio(dpr);
  image.fill(BackgroundColor());
  labels.clear();
  outlines.clear();
  rasterizer.SetFrame(frame.range.t0, frame.range.t1, columns);
  for (const LaneRow& row : rows) {
    const TimelineLane& lane = index.lane(row.lane);
    LaneRasterizer::Lane options;
    options.lane = row.lane;
    std::tie(options.active0, options.active1) = active[row.lane];
    options.tint_bubbles = lane.kind == LaneKind::kRank;
    if (static_cast<size_t>(row.lane) < highlighted.size()) {
      options.highlighted = &highlighted[row.lane];
    }
    const int y0 = static_cast<int>(std::lround((row.y - kRulerHeight) * dpr));
    const int h = static_cast<int>(std::lround(row.height * dpr));
    rasterizer.Rasterize(index, options, &image, y0, h, &lane_result, stats);
    if (show_labels && row.height >= label_min_height) {
      for (size_t i : lane_result.exact) {
        const double x0 = std::max<double>(frame.label_width, frame.X(lane.start[i]));
        const double x1 = std::min<double>(frame.width, frame.X(lane.end[i]));
        labels.push_back(
            {QRectF(x0, row.y, x1 - x0, row.height), lane.microbatch[i], lane.kind_of[i]});
      }
    }
    for (size_t i : lane_result.outlined) {
      const double x0 = frame.X(lane.start[i]);
      const double x1 = frame.X(lane.end[i]);
      outlines.emplace_back(x0, row.y, x1 - x0, row.height);
    }
  }
}

void TimelineView::paintEvent(QPaintEvent* /*event*/) {
  Impl& d = *impl_;
  stats_ = {};
  const int label_width = laneLabelWidth();
  QPainter painter(this);
  painter.fillRect(rect(), BackgroundColor());
  painter.fillRect(QRect(0, 0, width(), kRulerHeight), RulerColor());
  painter.fillRect(QRect(0, kRulerHeight, label_width, height() - kRulerHeight),
                   LabelColumnColor());
  const QFont base_font = font();
  QFont small_font = base_font;
  small_font.setPointSizeF(std::max(6.0, base_font.pointSizeF() * 0.85));

  if (!index_ || index_->num_ops() == 0) {
    painter.setPen(PlaceholderColor());
    painter.drawText(rect(), Qt::AlignCenter,
                     index_ ? tr("The timeline has no ops") : tr("No timeline loaded"));
    return;
  }

  PaintFrame frame;
  frame.range = state_->visibleRange();
  frame.width = lanesRight();
  frame.height = height();
  frame.label_width = label_width;
  if (frame.lanes_width() <= 0 || frame.lanes_height() <= 0) return;
  frame.x_per_ns =
      static_cast<double>(frame.lanes_width()) / static_cast<double>(frame.range.length());

  // The lanes image depends only on what is shown where: hover and selection changes (every
  // mouse move) reuse it and redraw the overlays only.
  const qreal dpr = devicePixelRatioF();
  const Impl::ImageKey key{frame.range, size(), dpr, index_.get(), d.content_version};
  if (key == d.image_key && !d.image.isNull()) {
    stats_ = d.image_stats;
  } else {
    d.image_key = key;
    d.RasterizeLanes(*index_, frame, dpr, QFontMetrics(small_font).height(), &stats_);
    d.image_stats = stats_;
  }

  painter.drawImage(QPointF(label_width, kRulerHeight), d.image);
  painter.setClipRect(QRect(label_width, kRulerHeight, frame.lanes_width(), frame.lanes_height()));
  d.label_painter.Paint(painter, d.labels, small_font, &stats_);
  PaintOutlines(painter, d.outlines, &stats_);
  PaintIterationBoundaries(painter, *index_, small_font, frame, &stats_);
  if (d.show_wait_links && stats_.ops_in_view <= kMaxWaitLinkOps) {
    PaintWaitLinks(painter, *index_, d.rows, d.row_of_lane, frame, &stats_);
  }
  const auto selection = state_->selection();
  PaintSelectionBand(painter, selection, frame);
  PaintHoverLine(painter, state_->hoverTime(), frame);
  if (d.selected_op && d.row_of_lane[d.selected_op->first] >= 0) {
    const LaneRow& row = d.rows[d.row_of_lane[d.selected_op->first]];
    const TimelineLane& lane = index_->lane(d.selected_op->first);
    PaintSelectedOp(painter, frame.X(lane.start[d.selected_op->second]),
                    frame.X(lane.end[d.selected_op->second]), row, &stats_);
  }
  painter.setClipping(false);

  d.label_boxes = PaintLaneLabels(painter, *index_, d.rows, d.folds, base_font, small_font, frame);
  PaintRuler(painter, d.origin, small_font, frame);
  PaintTitle(painter, d.title, base_font, frame);
  if (selection) PaintSelectionTag(painter, *index_, *selection, small_font, frame);
}

}  // namespace zb::gui
