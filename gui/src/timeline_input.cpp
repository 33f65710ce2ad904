// SPDX-License-Identifier: Apache-2.0
// TimelineView's input: hit tests, selecting and revealing an op, wheel, mouse and keys.
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

std::optional<std::pair<int, size_t>> TimelineView::opAt(QPoint pos) const {
  if (!index_ || pos.x() < laneLabelWidth() || pos.x() >= lanesRight()) return std::nullopt;
  const int lane = laneAt(pos.y());
  if (lane < 0) return std::nullopt;
  const TimeRange range = state_->visibleRange();
  const double ns_per_px =
      static_cast<double>(range.length()) / std::max(1, lanesRight() - laneLabelWidth());
  const TimeNs t = timeAtX(pos.x() + 0.5);
  if (auto hit = index_->HitTest(lane, t)) return std::make_pair(lane, *hit);
  const auto tolerance = static_cast<TimeNs>(std::ceil(kHoverNearPx * ns_per_px));
  if (auto near = index_->HitTestNear(lane, t, tolerance)) return std::make_pair(lane, *near);
  return std::nullopt;
}

std::optional<std::pair<int, size_t>> TimelineView::selectedOp() const {
  return impl_->selected_op;
}

void TimelineView::selectOp(std::optional<std::pair<int, size_t>> op) {
  if (op && (!index_ || op->first < 0 || op->first >= static_cast<int>(index_->lanes().size()) ||
             op->second >= index_->lane(op->first).size())) {
    op.reset();
  }
  if (op == impl_->selected_op) return;
  impl_->selected_op = op;
  update();
  emit opSelected(op ? op->first : -1, op ? static_cast<qint64>(op->second) : -1);
}

void TimelineView::revealOp(int lane_id, size_t i) {
  if (!index_ || lane_id < 0 || lane_id >= static_cast<int>(index_->lanes().size()) ||
      i >= index_->lane(lane_id).size()) {
    return;
  }
  const TimelineLane& lane = index_->lane(lane_id);
  state_->setVisibleRange(AroundOp(lane, i));
  if (lane.kind != LaneKind::kRank) setRankCollapsed(lane.rank, false);
  scrollToLane(lane_id);
  selectOp(std::make_pair(lane_id, i));
}

void TimelineView::wheelEvent(QWheelEvent* event) {
  if (!index_) return;
  const QPoint delta = event->angleDelta();
  // Over the lane labels, or with Alt, the wheel scrolls the lanes: 3 rows a notch.
  if ((event->position().x() < laneLabelWidth() || (event->modifiers() & Qt::AltModifier)) &&
      impl_->max_first_row > 0) {
    const int notches = (delta.y() != 0 ? delta.y() : delta.x()) / 120;
    scrollToRow(impl_->first_row - 3 * notches);
    event->accept();
    return;
  }
  const TimeRange range = state_->visibleRange();
  if (delta.x() != 0 && std::abs(delta.x()) > std::abs(delta.y())) {
    // Horizontal scrolling (touchpads) pans.
    state_->pan(
        static_cast<TimeNs>(-delta.x() / 120.0 * 0.1 * static_cast<double>(range.length())));
    event->accept();
    return;
  }
  if (delta.y() == 0) return;
  double base = 0.8;  // one notch zooms in by 20 %
  if (event->modifiers() & Qt::ControlModifier) base = 0.95;
  if (event->modifiers() & Qt::ShiftModifier) base = 0.5;
  const double factor = std::pow(base, delta.y() / 120.0);
  const double x = std::clamp<double>(event->position().x(), laneLabelWidth(), lanesRight());
  // One burst of wheel steps is one zoom-history step.
  const bool record = !impl_->last_wheel.isValid() || impl_->last_wheel.elapsed() > 500;
  impl_->last_wheel.start();
  state_->zoomAt(timeAtX(x), factor, record);
  event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  Impl& d = *impl_;
  if (!index_) return;
  d.press_pos = event->position().toPoint();
  d.moved = false;
  const bool select =
      event->button() == Qt::RightButton ||
      (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ShiftModifier));
  if (event->button() == Qt::LeftButton && d.press_pos.x() < laneLabelWidth()) {
    // A rank's label folds or unfolds its stage and comm lanes.
    const int lane = laneAt(d.press_pos.y());
    if (lane >= 0 && index_->lane(lane).kind == LaneKind::kRank &&
        d.folds[lane] != LaneFold::kNone) {
      const int rank = index_->lane(lane).rank;
      setRankCollapsed(rank, !isRankCollapsed(rank));
    }
    event->accept();
    return;
  }
  if (select && d.press_pos.x() >= laneLabelWidth()) {
    d.drag = Impl::Drag::kSelect;
    d.select_anchor = timeAtX(d.press_pos.x());
  } else if (event->button() == Qt::LeftButton) {
    d.drag = Impl::Drag::kPan;
    d.press_range = state_->visibleRange();
  }
  event->accept();
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  Impl& d = *impl_;
  if (!index_) return;
  const QPoint pos = event->position().toPoint();
  const int lanes_width = std::max(1, lanesRight() - laneLabelWidth());
  if (d.drag == Impl::Drag::kPan) {
    const int dx = pos.x() - d.press_pos.x();
    if (dx != 0) d.moved = true;
    const auto delta = static_cast<TimeNs>(
        std::llround(-dx * static_cast<double>(d.press_range.length()) / lanes_width));
    state_->setVisibleRange({d.press_range.t0 + delta, d.press_range.t1 + delta}, false);
  } else if (d.drag == Impl::Drag::kSelect) {
    if (std::abs(pos.x() - d.press_pos.x()) >= 2) d.moved = true;
    if (d.moved) {
      const TimeNs t = timeAtX(std::clamp(pos.x(), laneLabelWidth(), lanesRight()));
      state_->setSelection(TimeRange{std::min(t, d.select_anchor), std::max(t, d.select_anchor)});
    }
  }
  if (pos.x() >= laneLabelWidth()) {
    state_->setHoverTime(timeAtX(pos.x()));
  } else {
    state_->setHoverTime(std::nullopt);
  }
  const auto op = opAt(pos);
  const int lane = op ? op->first : -1;
  const qint64 index = op ? static_cast<qint64>(op->second) : -1;
  if (lane != d.hover_lane || index != d.hover_index) {
    d.hover_lane = lane;
    d.hover_index = index;
    emit opHovered(lane, index);
  }
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event) {
  Impl& d = *impl_;
  if (d.drag == Impl::Drag::kPan && d.moved) state_->commitGesture(d.press_range);
  if (d.drag == Impl::Drag::kPan && !d.moved && event->button() == Qt::LeftButton) {
    selectOp(opAt(event->position().toPoint()));  // a click: the op under it, or none
  }
  if (d.drag == Impl::Drag::kSelect && d.moved) {
    if (const auto selection = state_->selection()) emit rangeSelected(*selection);
  }
  d.drag = Impl::Drag::kNone;
  event->accept();
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* event) {
  if (!index_) return;
  const QPoint pos = event->position().toPoint();
  if (const auto op = opAt(pos)) {
    state_->setVisibleRange(AroundOp(index_->lane(op->first), op->second));
  } else if (pos.x() >= laneLabelWidth()) {
    state_->zoomAt(timeAtX(pos.x()), 0.5);
  }
  event->accept();
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
  const TimeRange range = state_->visibleRange();
  const auto hover = state_->hoverTime();
  const TimeNs anchor =
      hover && *hover >= range.t0 && *hover <= range.t1 ? *hover : range.t0 + range.length() / 2;
  const auto pan_step = static_cast<TimeNs>(static_cast<double>(range.length()) * 0.15);
  switch (event->key()) {
    case Qt::Key_W:
    case Qt::Key_Plus:
    case Qt::Key_Equal:
      state_->zoomAt(anchor, 0.7);
      break;
    case Qt::Key_S:
    case Qt::Key_Minus:
      state_->zoomAt(anchor, 1 / 0.7);
      break;
    case Qt::Key_A:
    case Qt::Key_Left:
      state_->pan(-pan_step);
      break;
    case Qt::Key_D:
    case Qt::Key_Right:
      state_->pan(pan_step);
      break;
    case Qt::Key_Home:
    case Qt::Key_F:
      state_->fitAll();
      break;
    case Qt::Key_Backspace:
      if (event->modifiers() & Qt::ShiftModifier) {
        state_->zoomForward();
      } else {
        state_->zoomBack();
      }
      break;
    case Qt::Key_Escape:
      state_->setSelection(std::nullopt);
      break;
    case Qt::Key_PageDown:
      scrollToRow(impl_->first_row + std::max(1, impl_->scrollbar->pageStep()));
      break;
    case Qt::Key_PageUp:
      scrollToRow(impl_->first_row - std::max(1, impl_->scrollbar->pageStep()));
      break;
    default:
      QWidget::keyPressEvent(event);
      return;
  }
  event->accept();
}

void TimelineView::leaveEvent(QEvent* event) {
  state_->setHoverTime(std::nullopt);
  if (impl_->hover_lane != -1) {
    impl_->hover_lane = -1;
    impl_->hover_index = -1;
    emit opHovered(-1, -1);
  }
  QWidget::leaveEvent(event);
}

bool TimelineView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    return ShowToolTip(this, event, [this](QPoint pos) { return tooltipText(pos); });
  }
  return QWidget::event(event);
}

}  // namespace zb::gui
