// SPDX-License-Identifier: Apache-2.0
// TimelineView: construction, settings, geometry (rows, scrolling, folding) and the layout of
// the lane labels. Painting is in timeline_paint.cpp, op text in timeline_text.cpp, input in
// timeline_input.cpp; what they share in timeline_view_impl.h.
#include "zbkit/gui/timeline_view.h"

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
#include "zbkit/schemas/timeline_analysis.h"

namespace zb::gui {
using namespace timeline_detail;

TimelineView::TimelineView(QWidget* parent) : QWidget(parent), impl_(std::make_shared<Impl>()) {
  impl_->scrollbar = new QScrollBar(Qt::Vertical, this);
  impl_->scrollbar->hide();
  connect(impl_->scrollbar, &QScrollBar::valueChanged, this, &TimelineView::scrollToRow);
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  // A standalone view works without a caller-provided state; setViewState replaces it.
  setViewState(new ViewState(this));
}

void TimelineView::setViewState(ViewState* state) {
  if (state == state_ || state == nullptr) return;
  if (state_ != nullptr) disconnect(state_, nullptr, this, nullptr);
  state_ = state;
  connect(state_, &ViewState::visibleRangeChanged, this, [this] { update(); });
  connect(state_, &ViewState::selectionChanged, this, [this] { update(); });
  connect(state_, &ViewState::hoverTimeChanged, this, [this] { update(); });
  update();
}

void TimelineView::setTimeline(std::shared_ptr<const TimelineIndex> index) {
  ++impl_->content_version;
  index_ = std::move(index);
  impl_->active.clear();
  impl_->highlighted.clear();
  impl_->hover_lane = -1;
  impl_->hover_index = -1;
  impl_->selected_op.reset();
  if (index_) {
    for (const TimelineLane& lane : index_->lanes()) {
      TimeNs end = 0;
      for (size_t i = 0; i < lane.size(); ++i)
        end = std::max(end, lane.end[i]);
      impl_->active.emplace_back(lane.size() ? lane.start.front() : 0, end);
    }
    impl_->highlighted.resize(index_->lanes().size());
    impl_->origin = TimelineOrigin(*index_);
    // A small margin keeps the first and last blocks off the edges when everything is shown.
    const TimeNs pad = std::max<TimeNs>((index_->end() - index_->begin()) / 100, 1);
    state_->setTraceRange({index_->begin() - pad, index_->end() + pad});
  }
  impl_->layout_dirty = true;
  update();
}

void TimelineView::setTimeOrigin(TimeNs origin) {
  impl_->origin = origin;
  update();
}

TimeNs TimelineView::timeOrigin() const {
  return impl_->origin;
}

void TimelineView::setTitle(const QString& title) {
  impl_->title = title;
  update();
}

void TimelineView::setShowStageLanes(bool show) {
  ++impl_->content_version;
  impl_->show_stage_lanes = show;
  impl_->layout_dirty = true;
  update();
}

void TimelineView::setShowWaitLinks(bool show) {
  impl_->show_wait_links = show;
  update();
}

void TimelineView::setShowLabels(bool show) {
  ++impl_->content_version;
  impl_->show_labels = show;
  update();
}

void TimelineView::setMinimumLaneLabelWidth(int pixels) {
  ++impl_->content_version;
  impl_->min_label_width = std::max(0, pixels);
  impl_->layout_dirty = true;
  update();
}

void TimelineView::setHighlighted(std::set<std::pair<int, size_t>> ops) {
  ++impl_->content_version;
  const size_t lanes = index_ ? index_->lanes().size() : 0;
  impl_->highlighted.assign(lanes, {});
  for (const auto& [lane, index] : ops) {
    if (lane >= 0 && static_cast<size_t>(lane) < lanes) impl_->highlighted[lane].push_back(index);
  }
  // std::set iterates in order, so each lane's list is already sorted.
  update();
}

// ---- Geometry -------------------------------------------------------------------------------

int TimelineView::laneLabelWidth() const {
  Impl& d = *impl_;
  if (d.layout_dirty || d.layout_size != size()) {
    d.layout_dirty = false;
    ++d.content_version;
    d.layout_size = size();
    d.rows.clear();
    d.all_rows.clear();
    const size_t num_lanes = index_ ? index_->lanes().size() : 0;
    d.row_of_lane.assign(num_lanes, -1);
    d.folds.assign(num_lanes, LaneFold::kNone);
    const QFontMetrics metrics(font());
    int widest = 0;
    double weights = 0;
    int gaps = 0;
    std::vector<int> shown;
    if (index_) {
      for (int lane = 0; lane < static_cast<int>(num_lanes); ++lane) {
        const TimelineLane& l = index_->lane(lane);
        // A rank label folds when the rank has a lane it could show.
        const int rank_lane = index_->RankLane(l.rank);
        if (l.kind != LaneKind::kRank && (l.kind != LaneKind::kStage || d.show_stage_lanes) &&
            rank_lane >= 0) {
          d.folds[rank_lane] = d.Folded(l.rank) ? LaneFold::kCollapsed : LaneFold::kExpanded;
        }
        if (!d.Shows(l)) continue;
        shown.push_back(lane);
        widest = std::max(widest, metrics.horizontalAdvance(LaneText(l)));
        weights += LaneWeight(l.kind);
        gaps += kLaneGap + (l.kind == LaneKind::kRank ? kRankGroupGap : 0);
      }
    }
    // Room for the fold marker in front of rank labels.
    d.label_width = std::max(d.min_label_width, widest + 16 + metrics.horizontalAdvance(u'\u25BE'));
    const int available = height() - kRulerHeight;
    // A set lane height is kept (the lanes scroll); fitting shares the height, at least 8 px a
    // rank lane (and scrolls past that).
    const double unit = d.lane_height > 0 ? d.lane_height
                        : weights > 0
                            ? std::clamp((available - gaps) / weights, 8.0, double(kMaxLaneHeight))
                            : 0;
    int y = 0;  // content coordinates, from the top of the lanes
    for (int lane : shown) {
      const TimelineLane& l = index_->lane(lane);
      y += kLaneGap + (l.kind == LaneKind::kRank ? kRankGroupGap : 0);
      // Fitting rounds down, so that rows that fit stay within the height.
      const double exact = unit * LaneWeight(l.kind);
      const int h = std::max(5, static_cast<int>(d.lane_height > 0 ? std::lround(exact) : exact));
      d.all_rows.push_back({lane, y, h});
      y += h;
    }
    d.content_height = y;
    // Scrolling by whole rows: the last first row is the one from which the rest fits.
    int last_first = static_cast<int>(d.all_rows.size());
    while (last_first > 0 &&
           d.content_height - d.all_rows[last_first - 1].y + kLaneGap + kRankGroupGap <=
               available) {
      --last_first;
    }
    d.max_first_row = last_first;
    d.first_row = std::clamp(d.first_row, 0, d.max_first_row);
    const bool scrolls = d.max_first_row > 0;
    if (d.scrollbar != nullptr) {
      const QSignalBlocker blocker(d.scrollbar);
      d.scrollbar->setRange(0, d.max_first_row);
      d.scrollbar->setPageStep(std::max(1, static_cast<int>(d.all_rows.size()) - d.max_first_row));
      d.scrollbar->setValue(d.first_row);
      d.scrollbar->setGeometry(width() - d.scrollbar->sizeHint().width(), kRulerHeight,
                               d.scrollbar->sizeHint().width(), std::max(0, available));
      d.scrollbar->setVisible(scrolls);
    }
    d.scrollbar_width = scrolls && d.scrollbar ? d.scrollbar->sizeHint().width() : 0;
    const int offset = d.all_rows.empty() || d.first_row == 0
                           ? 0
                           : d.all_rows[d.first_row].y - kLaneGap - kRankGroupGap;
    for (size_t r = static_cast<size_t>(d.first_row); r < d.all_rows.size(); ++r) {
      LaneRow row = d.all_rows[r];
      row.y += kRulerHeight - offset;
      if (row.y >= height()) break;
      d.row_of_lane[row.lane] = static_cast<int>(d.rows.size());
      d.rows.push_back(row);
    }
  }
  return d.label_width;
}

std::vector<std::pair<double, double>> TimelineView::laneLabelBoxes() const {
  return impl_->label_boxes;
}

int TimelineView::lanesRight() const {
  laneLabelWidth();  // refreshes the layout, which decides whether the lanes scroll
  return width() - impl_->scrollbar_width;
}

void TimelineView::setLaneHeight(int pixels) {
  ++impl_->content_version;
  impl_->lane_height = std::max(0, pixels);
  impl_->layout_dirty = true;
  update();
}

int TimelineView::laneHeight() const {
  return impl_->lane_height;
}

int TimelineView::firstShownRow() const {
  laneLabelWidth();
  return impl_->first_row;
}

int TimelineView::maxFirstShownRow() const {
  laneLabelWidth();
  return impl_->max_first_row;
}

void TimelineView::scrollToRow(int row) {
  laneLabelWidth();
  const int clamped = std::clamp(row, 0, impl_->max_first_row);
  if (clamped == impl_->first_row) return;
  impl_->first_row = clamped;
  impl_->layout_dirty = true;
  ++impl_->content_version;
  update();
}

void TimelineView::scrollToLane(int lane) {
  laneLabelWidth();
  Impl& d = *impl_;
  if (lane >= 0 && lane < static_cast<int>(d.row_of_lane.size()) && d.row_of_lane[lane] >= 0) {
    const LaneRow& row = d.rows[d.row_of_lane[lane]];
    if (row.y + row.height <= height()) return;  // wholly shown already
  }
  for (int r = 0; r < static_cast<int>(d.all_rows.size()); ++r) {
    if (d.all_rows[r].lane == lane) {
      scrollToRow(r);
      return;
    }
  }
}

void TimelineView::setRankCollapsed(int rank, bool collapsed) {
  if (impl_->Folded(rank) == collapsed) return;
  if (collapsed != impl_->fold_all) {
    impl_->fold_toggled.insert(rank);
  } else {
    impl_->fold_toggled.erase(rank);
  }
  ++impl_->content_version;
  impl_->layout_dirty = true;
  update();
}

bool TimelineView::isRankCollapsed(int rank) const {
  return impl_->Folded(rank);
}

void TimelineView::setAllRanksCollapsed(bool collapsed) {
  impl_->fold_all = collapsed;
  impl_->fold_toggled.clear();
  ++impl_->content_version;
  impl_->layout_dirty = true;
  update();
}

int TimelineView::rulerHeight() const {
  return kRulerHeight;
}

int TimelineView::laneAt(int y) const {
  laneLabelWidth();  // refreshes the layout
  for (const LaneRow& row : impl_->rows) {
    if (y >= row.y && y < row.y + row.height) return row.lane;
  }
  return -1;
}

QRect TimelineView::laneRect(int lane) const {
  laneLabelWidth();
  if (lane < 0 || lane >= static_cast<int>(impl_->row_of_lane.size())) return {};
  const int row = impl_->row_of_lane[lane];
  if (row < 0) return {};
  return QRect(0, impl_->rows[row].y, lanesRight(), impl_->rows[row].height);
}

TimeNs TimelineView::timeAtX(double x) const {
  const TimeRange range = state_->visibleRange();
  const double w = std::max(1, lanesRight() - laneLabelWidth());
  return range.t0 + static_cast<TimeNs>(std::floor((x - laneLabelWidth()) *
                                                   static_cast<double>(range.length()) / w));
}

double TimelineView::xForTime(TimeNs t) const {
  const TimeRange range = state_->visibleRange();
  const double w = std::max(1, lanesRight() - laneLabelWidth());
  return laneLabelWidth() +
         static_cast<double>(t - range.t0) * w / static_cast<double>(range.length());
}

QSize TimelineView::sizeHint() const {
  if (impl_->lane_height > 0 && index_) {
    laneLabelWidth();
    return QSize(1000, kRulerHeight + impl_->content_height + 8);
  }
  int height = kRulerHeight + 8;
  if (index_) {
    for (const TimelineLane& lane : index_->lanes()) {
      if (!impl_->Shows(lane)) continue;
      height += kLaneGap + (lane.kind == LaneKind::kRank ? kRankGroupGap : 0) +
                static_cast<int>(std::lround(28 * LaneWeight(lane.kind)));
    }
  } else {
    height += 200;
  }
  return QSize(1000, height);
}

}  // namespace zb::gui
