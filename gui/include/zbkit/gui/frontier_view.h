// SPDX-License-Identifier: Apache-2.0
// FrontierView: a memory-vs-bubble frontier (zb::Frontier, `zb tune --frontier`) as a line plot,
// like the ZB paper's Figure 7. x: the per-rank memory cap, labelled "Nx" with the absolute cap
// under each label; y: the bubble rate in the paper's convention (span), and on request the
// makespan convention as dashed lines. One polyline with markers per method, in the palette's
// series colours; a cap where a method fits nothing breaks its line and gets a cross on the
// x axis. The legend is part of the picture, so an export carries it. Everything is drawn with
// QPainter in one paintEvent: a frontier has tens of points, not millions (docs/zbview.md §5).
#ifndef ZBKIT_GUI_FRONTIER_VIEW_H_
#define ZBKIT_GUI_FRONTIER_VIEW_H_

#include <QPointF>
#include <QRect>
#include <QWidget>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/schemas/frontier.h"

class QPainter;

namespace zb::gui {

class FrontierView : public QWidget {
  Q_OBJECT

 public:
  explicit FrontierView(QWidget* parent = nullptr);

  // The frontier to plot; null clears the view.
  void setFrontier(std::shared_ptr<const Frontier> frontier);
  const std::shared_ptr<const Frontier>& frontier() const { return frontier_; }
  // Also draw the bubble rate of the makespan convention (from t = 0), dashed.
  void setShowMakespanBubble(bool show);
  bool showMakespanBubble() const { return show_makespan_; }

  // The methods in order of first appearance: the series order (colours, markers, legend).
  const std::vector<std::string>& methods() const { return methods_; }
  // What hovering at `pos` shows: the figures of the point under it, "" for none.
  QString tooltipText(QPoint pos) const;

  // Geometry, in widget coordinates (for tests): the plot area, and where point `index` (of
  // frontier()->points) is drawn in the paper convention or, with `makespan`, the other one;
  // nullopt for a point that does not fit (or an index out of range).
  QRect plotRect() const;
  std::optional<QPointF> pointPosition(size_t index, bool makespan = false) const;
  // The point whose marker (or does-not-fit cross) is under `pos`, nullopt for none.
  std::optional<size_t> pointAt(QPoint pos) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  // A double-click on a point that names its stored schedule.
  void scheduleActivated(int64_t schedule_id);

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  void paintAxes(QPainter& painter, const QRect& plot) const;
  void paintSeries(QPainter& painter, const QRect& plot) const;
  void paintLegend(QPainter& painter, const QRect& plot) const;
  void updateScale();
  int seriesOf(size_t index) const;
  double xForFactor(double factor) const;
  double yForRate(double rate) const;

  std::shared_ptr<const Frontier> frontier_;
  bool show_makespan_ = false;
  std::vector<std::string> methods_;
  std::vector<int> series_;      // per point: its index into methods_
  std::vector<double> factors_;  // the distinct cap factors, ascending: the x ticks
  std::vector<double> caps_;     // the absolute cap of each of factors_
  double x_min_ = 0;
  double x_max_ = 1;
  double y_min_ = 0;
  double y_max_ = 0.1;
  double y_step_ = 0.02;
  std::optional<size_t> hovered_;
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_FRONTIER_VIEW_H_
