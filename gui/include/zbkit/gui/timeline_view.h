// SPDX-License-Identifier: Apache-2.0
// TimelineView: one widget that paints every lane of a timeline (docs/zbview.md §1): a time
// ruler on top, lane labels on the left, one row per lane with F/B/W/BW/comm blocks, idle time
// as background (tinted between a rank's first and last op), microbatch labels where they fit.
//
// Level of detail (LaneRasterizer, lane_rasterizer.h): each pixel column of a lane stacks the busy
// time of each op kind in proportion (TimelineIndex::BinCoverage); a kind present in a column gets
// at least one pixel, so no op ever vanishes, and the rest of the column stays background, so idle
// time is visible at every zoom. Blocks wider than a few pixels are drawn exactly, separated so
// neighbours never fuse. The key to the colours is LegendWidget (legend.h), beside the view.
//
// Interaction: wheel zooms at the cursor; left drag pans; shift+drag (or right drag) selects a
// range and reports its summary; W/S zoom, A/D and arrows pan, Home or F fits all, Backspace
// goes back in the zoom history, Esc clears the selection; hovering shows a tooltip; a click
// selects the op under the cursor (opSelected), for the details panel.
#ifndef ZBKIT_GUI_TIMELINE_VIEW_H_
#define ZBKIT_GUI_TIMELINE_VIEW_H_

#include <QWidget>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "zbkit/gui/lane_rasterizer.h"  // RenderStats
#include "zbkit/gui/view_state.h"
#include "zbkit/schemas/timeline_index.h"

namespace zb::gui {

// "12.345 ms", "3.250 us", "850 ns": the unit follows the magnitude.
QString FormatTime(TimeNs t);
// The text of a range summary, e.g. "12.000 ms .. 24.000 ms (12.000 ms)\nbusy 78.3%, idle
// 41.600 ms over 16 ranks\nops: F 120, B 118, W 117"; `ranks` only names the denominator.
QString FormatRangeSummary(const RangeSummary& summary, int ranks);

// Everything known of op `index` of `lane`, one fact per line, for the tooltip and the details
// panel: kind, stage, microbatch, rank (and iteration when the timeline has several); the range
// name; start, end and duration from `origin`; for a measured op its device busy time, the busy
// share of its span and its kernel count (docs/zbview.md §6); and what it waited for, if anything.
QString OpDetailsText(const TimelineIndex& index, int lane, size_t op, TimeNs origin);

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);

  // The view does not own the ViewState (a comparison shares one between two views). Until one
  // is set, the view uses a ViewState of its own.
  void setViewState(ViewState* state);
  ViewState* viewState() const { return state_; }
  // Also sets the ViewState's trace range to the timeline's extent plus a 1 % margin (so the
  // view shows all of it); a comparison then widens it to the union of both timelines.
  void setTimeline(std::shared_ptr<const TimelineIndex> index);
  const std::shared_ptr<const TimelineIndex>& timeline() const { return index_; }
  void setTitle(const QString& title);  // drawn in the ruler's corner, e.g. "predicted"
  // Time zero of the ruler, tooltips and selection summary. setTimeline sets it to 0 for a
  // predicted timeline and to the first op's start for a measured one (its clock may be an
  // epoch); panes compared on one axis share one origin.
  void setTimeOrigin(TimeNs origin);
  TimeNs timeOrigin() const;

  // Show the extra per-stage lanes of ranks that hold several stages (default on).
  void setShowStageLanes(bool show);
  // Draw, for each op that waited, a thin line from the op it waited for (default on).
  void setShowWaitLinks(bool show);
  // Ops outlined as differing from a compared timeline: (lane, index) pairs.
  void setHighlighted(std::set<std::pair<int, size_t>> ops);
  // Microbatch numbers inside blocks wide enough for them (default on). Pixel tests that sample
  // block centres turn them off, since text pixels are antialiased.
  void setShowLabels(bool show);
  // The lane label column is at least this wide (default 90); a comparison gives both panes the
  // same width so that their time axes line up.
  void setMinimumLaneLabelWidth(int pixels);

  // Big pipelines (docs/zbview.md §9). The height of a rank lane in pixels (stage and comm lanes
  // are about half); 0, the default, shares the widget's height (at least 8 px a rank lane). When
  // the lanes do not fit, they scroll by whole rows: a scroll bar at the right, the wheel over the
  // lane labels (or with Alt), PageUp/PageDown.
  void setLaneHeight(int pixels);
  int laneHeight() const;
  int firstShownRow() const;     // the first row shown (0 = the top)
  int maxFirstShownRow() const;  // 0 when everything fits
  void scrollToRow(int row);
  void scrollToLane(int lane);  // scrolls so that the lane shows, if it is not wholly shown
  // A click on a rank's label folds its stage and comm lanes away (the rank lane stays), and
  // unfolds them again; labels of ranks with such lanes carry a marker.
  void setRankCollapsed(int rank, bool collapsed);
  bool isRankCollapsed(int rank) const;
  void setAllRanksCollapsed(bool collapsed);
  // [top, bottom) of each lane label of the last paint, by top: they never overlap.
  std::vector<std::pair<double, double>> laneLabelBoxes() const;

  // Geometry, in widget coordinates: the lanes area starts at x = laneLabelWidth() and ends at
  // lanesRight() (before the scroll bar, when there is one).
  int laneLabelWidth() const;
  int lanesRight() const;
  int rulerHeight() const;
  int laneAt(int y) const;         // index into timeline()->lanes(), -1 outside any lane
  QRect laneRect(int lane) const;  // the lane's row over the whole width; empty if not shown
  TimeNs timeAtX(double x) const;
  double xForTime(TimeNs t) const;

  // The tooltip for a point: kind, stage, microbatch, start, duration of the op under it, or the
  // binned summary (ops in the column) when ops are sub-pixel; empty if nothing is there.
  QString tooltipText(QPoint pos) const;
  // The op under `pos` (or within 2 px of it): (lane, index).
  std::optional<std::pair<int, size_t>> opAt(QPoint pos) const;
  // The summary of the selected range (FormatRangeSummary), empty without a selection.
  QString selectionSummaryText() const;

  // The selected op (a click on it selects it, a click on nothing clears it), outlined in the
  // selection colour. selectOp with nullopt clears; both emit opSelected when it changes.
  std::optional<std::pair<int, size_t>> selectedOp() const;
  void selectOp(std::optional<std::pair<int, size_t>> op);
  // Shows `op` (its lane scrolled into view, the time range zoomed around it, as a double click
  // does) and selects it.
  void revealOp(int lane, size_t index);
  const RenderStats& lastRenderStats() const { return stats_; }

  QSize sizeHint() const override;

 signals:
  void opHovered(int lane, qint64 index);  // index -1 when leaving ops
  void rangeSelected(zb::gui::TimeRange range);
  void opSelected(int lane, qint64 index);  // (-1, -1) when the selection is cleared

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void leaveEvent(QEvent* event) override;
  bool event(QEvent* event) override;  // QEvent::ToolTip

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // layout, drag state, cached coverage buffers
  ViewState* state_ = nullptr;
  std::shared_ptr<const TimelineIndex> index_;
  RenderStats stats_;
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_TIMELINE_VIEW_H_
