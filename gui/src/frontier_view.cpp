// SPDX-License-Identifier: Apache-2.0
#include "zbkit/gui/frontier_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QPolygonF>
#include <algorithm>
#include <cmath>
#include <limits>

#include "tooltip.h"
#include "zbkit/gui/palette.h"

namespace zb::gui {
namespace {

constexpr double kMarkerRadius = 4.5;
constexpr double kPickRadius = 9;
constexpr int kBottomPad = 14;   // between rate 0 and the frame: the does-not-fit crosses sit there
constexpr int kCrossOffset = 6;  // from the frame up to a cross's centre
constexpr double kSidePadFraction = 0.04;  // so the first and last caps' markers are not clipped

// A value in the profile's memory unit, short: "201", "3.2k", "24.0 G".
QString CompactMemory(double value) {
  const double magnitude = std::abs(value);
  if (magnitude >= 1e12) return QStringLiteral("%1T").arg(value / 1e12, 0, 'f', 1);
  if (magnitude >= 1e9) return QStringLiteral("%1G").arg(value / 1e9, 0, 'f', 1);
  if (magnitude >= 1e6) return QStringLiteral("%1M").arg(value / 1e6, 0, 'f', 1);
  if (magnitude >= 1e4) return QStringLiteral("%1k").arg(value / 1e3, 0, 'f', 1);
  return QString::number(value, 'g', 4);
}

QString FactorText(double factor) {
  return QString::number(factor, 'g', 6) + u'x';
}

QString Percent(double rate, int decimals = 2) {
  return QString::number(rate * 100.0, 'f', decimals) + u'%';
}

QString MsLabel(TimeNs ns) {
  return QString::number(static_cast<double>(ns) / 1e6, 'f', 3) + QStringLiteral(" ms");
}

// The decimals that print every multiple of `step` (a rate) exactly as a percentage.
int PercentDecimals(double step) {
  const double percent = step * 100.0;
  for (int decimals = 0; decimals < 4; ++decimals) {
    const double scaled = percent * std::pow(10.0, decimals);
    if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) return decimals;
  }
  return 4;
}

// 1, 2, 2.5 or 5 times a power of ten, the smallest at least `raw`: tick steps a reader can add.
double NiceStep(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double mantissa : {1.0, 2.0, 2.5, 5.0}) {
    if (mantissa * power >= raw * (1 - 1e-9)) return mantissa * power;
  }
  return 10 * power;
}

// Marker shapes by series: shape as well as colour tells the series apart.
void DrawMarker(QPainter& painter, int series, QPointF centre, double radius, const QColor& colour,
                bool filled) {
  painter.setPen(QPen(colour, filled ? 1.0 : 1.6));
  painter.setBrush(filled ? QBrush(colour) : QBrush(PageColor()));
  switch (series % 4) {
    case 0:
      painter.drawEllipse(centre, radius, radius);
      break;
    case 1:
      painter.drawRect(QRectF(centre.x() - radius, centre.y() - radius, 2 * radius, 2 * radius));
      break;
    case 2: {
      const double r = radius * 1.3;
      painter.drawPolygon(QPolygonF({centre + QPointF(0, -r), centre + QPointF(r, 0),
                                     centre + QPointF(0, r), centre + QPointF(-r, 0)}));
      break;
    }
    default: {
      const double r = radius * 1.3;
      painter.drawPolygon(QPolygonF(
          {centre + QPointF(0, -r), centre + QPointF(r, r * 0.8), centre + QPointF(-r, r * 0.8)}));
      break;
    }
  }
}

void DrawCross(QPainter& painter, QPointF centre, const QColor& colour) {
  painter.setPen(QPen(colour, 1.6));
  const double r = 3.5;
  painter.drawLine(centre + QPointF(-r, -r), centre + QPointF(r, r));
  painter.drawLine(centre + QPointF(-r, r), centre + QPointF(r, -r));
}

}  // namespace

FrontierView::FrontierView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void FrontierView::setFrontier(std::shared_ptr<const Frontier> frontier) {
  frontier_ = std::move(frontier);
  hovered_.reset();
  updateScale();
  update();
}

void FrontierView::setShowMakespanBubble(bool show) {
  if (show == show_makespan_) return;
  show_makespan_ = show;
  updateScale();
  update();
}

void FrontierView::updateScale() {
  methods_.clear();
  series_.clear();
  factors_.clear();
  caps_.clear();
  x_min_ = 0;
  x_max_ = 1;
  y_min_ = 0;
  y_max_ = 0.1;
  y_step_ = 0.02;
  if (!frontier_ || frontier_->points.empty()) return;
  double low = std::numeric_limits<double>::infinity();
  double high = -low;
  for (const FrontierPoint& point : frontier_->points) {
    auto it = std::find(methods_.begin(), methods_.end(), point.method);
    if (it == methods_.end()) it = methods_.insert(methods_.end(), point.method);
    series_.push_back(static_cast<int>(it - methods_.begin()));
    if (std::find(factors_.begin(), factors_.end(), point.cap_factor) == factors_.end()) {
      factors_.push_back(point.cap_factor);
    }
    if (!point.fits) continue;
    low = std::min(low, point.paper_bubble_rate);
    high = std::max(high, point.paper_bubble_rate);
    if (show_makespan_) {
      low = std::min(low, point.bubble_rate);
      high = std::max(high, point.bubble_rate);
    }
  }
  std::sort(factors_.begin(), factors_.end());
  for (double factor : factors_) {
    for (const FrontierPoint& point : frontier_->points) {
      if (point.cap_factor == factor) {
        caps_.push_back(point.cap);
        break;
      }
    }
  }
  x_min_ = factors_.front();
  x_max_ = factors_.back();
  if (x_max_ - x_min_ < 1e-9) {
    x_min_ -= 0.5;
    x_max_ += 0.5;
  }
  // From 0 (a bubble rate's floor) to a little above the highest point, in round steps.
  if (!std::isfinite(low)) low = high = 0;
  y_min_ = std::min(0.0, low);
  double top = std::max(high * 1.08, y_min_ + 0.01);
  y_step_ = NiceStep((top - y_min_) / 5);
  y_min_ = std::floor(y_min_ / y_step_) * y_step_;
  y_max_ = std::ceil(top / y_step_ - 1e-9) * y_step_;
}

int FrontierView::seriesOf(size_t index) const {
  return index < series_.size() ? series_[index] : 0;
}

QRect FrontierView::plotRect() const {
  const QFontMetrics metrics = fontMetrics();
  const int line = metrics.height();
  const int left = metrics.horizontalAdvance(QStringLiteral("100.0%")) + line + 16;
  const int top = line + 14;         // the legend
  const int bottom = 3 * line + 18;  // two rows of tick labels and the axis title
  const int right = 24;
  return QRect(left, top, std::max(1, width() - left - right),
               std::max(1, height() - top - bottom));
}

double FrontierView::xForFactor(double factor) const {
  const QRect plot = plotRect();
  const double pad = plot.width() * kSidePadFraction;
  const double span = x_max_ - x_min_;
  return plot.left() + pad + (factor - x_min_) / span * (plot.width() - 1 - 2 * pad);
}

double FrontierView::yForRate(double rate) const {
  const QRect plot = plotRect();
  const double usable = std::max(1, plot.height() - kBottomPad);
  return plot.bottom() - kBottomPad - (rate - y_min_) / (y_max_ - y_min_) * (usable - 1);
}

std::optional<QPointF> FrontierView::pointPosition(size_t index, bool makespan) const {
  if (!frontier_ || index >= frontier_->points.size()) return std::nullopt;
  const FrontierPoint& point = frontier_->points[index];
  if (!point.fits) return std::nullopt;
  return QPointF(xForFactor(point.cap_factor),
                 yForRate(makespan ? point.bubble_rate : point.paper_bubble_rate));
}

std::optional<size_t> FrontierView::pointAt(QPoint pos) const {
  if (!frontier_) return std::nullopt;
  std::optional<size_t> best;
  double best_distance = kPickRadius;
  auto consider = [&](size_t index, QPointF at) {
    const double distance = std::hypot(at.x() - pos.x(), at.y() - pos.y());
    if (distance <= best_distance) {
      best_distance = distance;
      best = index;
    }
  };
  const QRect plot = plotRect();
  for (size_t i = 0; i < frontier_->points.size(); ++i) {
    const FrontierPoint& point = frontier_->points[i];
    if (!point.fits) {
      consider(i, QPointF(xForFactor(point.cap_factor), plot.bottom() - kCrossOffset));
      continue;
    }
    consider(i, *pointPosition(i));
    if (show_makespan_) consider(i, *pointPosition(i, true));
  }
  return best;
}

QString FrontierView::tooltipText(QPoint pos) const {
  const std::optional<size_t> index = pointAt(pos);
  if (!index) return {};
  const FrontierPoint& point = frontier_->points[*index];
  QString text = QStringLiteral("%1 at %2: cap %3 per rank")
                     .arg(QString::fromStdString(point.method), FactorText(point.cap_factor),
                          CompactMemory(point.cap));
  if (!point.fits) return text + QStringLiteral("\nno schedule of this method fits this cap");
  text += QStringLiteral("\npaper bubble %1 (span %2)\nbubble from t = 0 %3 (makespan %4)")
              .arg(Percent(point.paper_bubble_rate), MsLabel(point.span),
                   Percent(point.bubble_rate), MsLabel(point.makespan));
  if (point.schedule_id) {
    text += QStringLiteral("\nschedule %1 (double-click to show it)").arg(*point.schedule_id);
  }
  return text;
}

QSize FrontierView::sizeHint() const {
  return {900, 520};
}

QSize FrontierView::minimumSizeHint() const {
  return {320, 200};
}

void FrontierView::paintEvent(QPaintEvent* /*event*/) {
  QPainter painter(this);
  painter.fillRect(rect(), PageColor());
  if (!frontier_ || frontier_->points.empty()) {
    painter.setPen(PlaceholderColor());
    painter.drawText(rect(), Qt::AlignCenter, tr("No frontier loaded"));
    return;
  }
  const QRect plot = plotRect();
  painter.fillRect(plot, BackgroundColor());

  paintAxes(painter, plot);
  paintSeries(painter, plot);
  paintLegend(painter, plot);
}

// The grid, the rate labels, the caps under the plot and the axis titles.
void FrontierView::paintAxes(QPainter& painter, const QRect& plot) const {
  const QFontMetrics metrics = fontMetrics();
  const int line = metrics.height();
  // Horizontal grid and the rate labels.
  const int decimals = PercentDecimals(y_step_);
  const int num_ticks = static_cast<int>(std::lround((y_max_ - y_min_) / y_step_));
  for (int k = 0; k <= num_ticks; ++k) {
    double v = y_min_ + k * y_step_;
    if (std::abs(v) < y_step_ * 1e-6) v = 0;  // no "-0.0%"
    const int y = static_cast<int>(std::lround(yForRate(v)));
    painter.setPen(RankRuleColor());
    painter.drawLine(plot.left() + 1, y, plot.right() - 1, y);
    painter.setPen(SecondaryTextColor());
    painter.drawText(QRect(0, y - line / 2, plot.left() - 6, line),
                     Qt::AlignRight | Qt::AlignVCenter, Percent(v, decimals));
  }

  // The caps of the grid, as many as fit side by side: "Nx" over the absolute cap.
  int label_width = 0;
  for (size_t i = 0; i < factors_.size(); ++i) {
    label_width = std::max({label_width, metrics.horizontalAdvance(FactorText(factors_[i])),
                            metrics.horizontalAdvance(CompactMemory(caps_[i]))});
  }
  double spacing = std::numeric_limits<double>::infinity();
  for (size_t i = 1; i < factors_.size(); ++i) {
    spacing = std::min(spacing, xForFactor(factors_[i]) - xForFactor(factors_[i - 1]));
  }
  const size_t stride =
      std::isfinite(spacing) && spacing > 0
          ? std::max<size_t>(1, static_cast<size_t>(std::ceil((label_width + 10) / spacing)))
          : 1;
  for (size_t i = 0; i < factors_.size(); i += stride) {
    const int x = static_cast<int>(std::lround(xForFactor(factors_[i])));
    painter.setPen(MemoryRowRuleColor());
    painter.drawLine(x, plot.top() + 1, x, plot.bottom() - 1);
    painter.setPen(FrameColor());
    painter.drawLine(x, plot.bottom(), x, plot.bottom() + 4);
    const QRect first(x - label_width, plot.bottom() + 6, 2 * label_width, line);
    painter.setPen(TextColor());
    painter.drawText(first, Qt::AlignCenter, FactorText(factors_[i]));
    painter.setPen(SecondaryTextColor());
    painter.drawText(first.translated(0, line), Qt::AlignCenter, CompactMemory(caps_[i]));
  }
  painter.setPen(TextColor());
  painter.drawText(QRect(plot.left(), plot.bottom() + 8 + 2 * line, plot.width(), line),
                   Qt::AlignCenter,
                   tr("memory cap per rank: N x 1F1B's peak (below: the cap in the profile's "
                      "memory unit)"));
  painter.save();
  painter.translate(4 + line / 2.0, plot.center().y());
  painter.rotate(-90);
  painter.drawText(QRect(-plot.height() / 2, -line / 2, plot.height(), line), Qt::AlignCenter,
                   show_makespan_ ? tr("bubble rate (solid: paper, dashed: from t = 0)")
                                  : tr("bubble rate (paper: over the span)"));
  painter.restore();
  painter.setPen(FrameColor());
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(plot.adjusted(0, 0, -1, -1));
}

// Per method, its points by cap (a cap where it fits nothing breaks the line), and the hovered
// point.
void FrontierView::paintSeries(QPainter& painter, const QRect& plot) const {
  // The series: per method, its points by cap; a cap where it fits nothing breaks the line.
  painter.setRenderHint(QPainter::Antialiasing, true);
  for (int s = 0; s < static_cast<int>(methods_.size()); ++s) {
    const QColor colour = FrontierSeriesColor(methods_[static_cast<size_t>(s)], s);
    std::vector<size_t> order;
    for (size_t i = 0; i < frontier_->points.size(); ++i) {
      if (series_[i] == s) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [this](size_t a, size_t b) {
      return frontier_->points[a].cap_factor < frontier_->points[b].cap_factor;
    });
    for (const bool makespan : {true, false}) {
      if (makespan && !show_makespan_) continue;
      QPen pen(colour, makespan ? 1.5 : 2.2);
      if (makespan) pen.setStyle(Qt::DashLine);
      painter.setPen(pen);
      painter.setBrush(Qt::NoBrush);
      QPolygonF run;
      auto flush = [&] {
        if (run.size() >= 2) painter.drawPolyline(run);
        run.clear();
      };
      for (size_t i : order) {
        if (!frontier_->points[i].fits) {
          flush();
          continue;
        }
        run << *pointPosition(i, makespan);
      }
      flush();
      for (size_t i : order) {
        if (!frontier_->points[i].fits) continue;
        DrawMarker(painter, s, *pointPosition(i, makespan),
                   makespan ? kMarkerRadius - 1 : kMarkerRadius, colour, !makespan);
      }
    }
    for (size_t i : order) {
      if (frontier_->points[i].fits) continue;
      DrawCross(painter,
                QPointF(xForFactor(frontier_->points[i].cap_factor), plot.bottom() - kCrossOffset),
                colour);
    }
  }
  if (hovered_ && *hovered_ < frontier_->points.size()) {
    const FrontierPoint& point = frontier_->points[*hovered_];
    const QPointF at = point.fits
                           ? *pointPosition(*hovered_)
                           : QPointF(xForFactor(point.cap_factor), plot.bottom() - kCrossOffset);
    painter.setPen(QPen(HoverLineColor(), 1.5));
    painter.setBrush(Qt::NoBrush);
    painter.drawEllipse(at, kMarkerRadius + 4, kMarkerRadius + 4);
  }
}

void FrontierView::paintLegend(QPainter& painter, const QRect& plot) const {
  const QFontMetrics metrics = fontMetrics();
  const int line = metrics.height();
  // The legend, above the plot.
  double x = plot.left();
  const double y = (plot.top() - 2) / 2.0;
  auto text = [&](const QString& label) {
    painter.setPen(TextColor());
    const int w = metrics.horizontalAdvance(label);
    painter.drawText(QRectF(x, y - line / 2.0, w + 2, line), Qt::AlignLeft | Qt::AlignVCenter,
                     label);
    x += w + 18;
  };
  for (int s = 0; s < static_cast<int>(methods_.size()); ++s) {
    const QColor colour = FrontierSeriesColor(methods_[static_cast<size_t>(s)], s);
    painter.setPen(QPen(colour, 2.2));
    painter.drawLine(QPointF(x, y), QPointF(x + 24, y));
    DrawMarker(painter, s, QPointF(x + 12, y), kMarkerRadius, colour, true);
    x += 30;
    text(QString::fromStdString(methods_[static_cast<size_t>(s)]));
  }
  if (show_makespan_) {
    QPen dashed(SecondaryTextColor(), 1.5);
    dashed.setStyle(Qt::DashLine);
    painter.setPen(dashed);
    painter.drawLine(QPointF(x, y), QPointF(x + 24, y));
    x += 30;
    text(tr("from t = 0 (makespan)"));
  }
  DrawCross(painter, QPointF(x + 4, y), SecondaryTextColor());
  x += 14;
  text(tr("no schedule fits the cap"));
}

bool FrontierView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    return ShowToolTip(this, event, [this](QPoint pos) { return tooltipText(pos); });
  }
  return QWidget::event(event);
}

void FrontierView::mouseMoveEvent(QMouseEvent* event) {
  const std::optional<size_t> hovered = pointAt(event->position().toPoint());
  if (hovered != hovered_) {
    hovered_ = hovered;
    update();
  }
  QWidget::mouseMoveEvent(event);
}

void FrontierView::mouseDoubleClickEvent(QMouseEvent* event) {
  const std::optional<size_t> index = pointAt(event->position().toPoint());
  if (index && frontier_->points[*index].schedule_id) {
    emit scheduleActivated(*frontier_->points[*index].schedule_id);
    return;
  }
  QWidget::mouseDoubleClickEvent(event);
}

void FrontierView::leaveEvent(QEvent* event) {
  if (hovered_) {
    hovered_.reset();
    update();
  }
  QWidget::leaveEvent(event);
}

}  // namespace zb::gui
