// SPDX-License-Identifier: Apache-2.0
// Like the timeline, the curves are written as pixels into one image from a per-column envelope
// (TimelineIndex::BinMemory), so the cost is O(samples in view + pixels) at any zoom; only the
// cap lines, peak markers and text go through QPainter.
#include "zbkit/gui/memory_track.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "tooltip.h"
#include "zbkit/gui/palette.h"
#include "zbkit/gui/timeline_view.h"

namespace zb::gui {
namespace {

constexpr int kTopMargin = 2;
constexpr int kRowGap = 3;
constexpr int kMinRowHeight = 18;
constexpr int kMaxRowHeight = 48;
constexpr int kRowPadding = 3;  // room above the scale's top, for the peak marker

}  // namespace

void MemoryTrack::setMemoryUnit(MemoryUnit unit) {
  unit_ = unit;
  update();
}

MemoryTrack::MemoryTrack(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setViewState(new ViewState(this));
}

void MemoryTrack::setViewState(ViewState* state) {
  if (state == state_ || state == nullptr) return;
  if (state_ != nullptr) disconnect(state_, nullptr, this, nullptr);
  state_ = state;
  connect(state_, &ViewState::visibleRangeChanged, this, [this] { update(); });
  connect(state_, &ViewState::hoverTimeChanged, this, [this] { update(); });
  connect(state_, &ViewState::selectionChanged, this, [this] { update(); });
  update();
}

void MemoryTrack::setTimeline(std::shared_ptr<const TimelineIndex> index) {
  index_ = std::move(index);
  UpdateScale();
  updateGeometry();
  update();
}

void MemoryTrack::setCaps(std::vector<double> caps) {
  caps_ = std::move(caps);
  UpdateScale();
  update();
}

void MemoryTrack::setLabelWidth(int pixels) {
  label_width_ = std::max(0, pixels);
  update();
}

void MemoryTrack::UpdateScale() {
  scale_max_ = 0;
  if (index_) {
    for (int rank = 0; rank < index_->num_ranks(); ++rank) {
      scale_max_ = std::max(scale_max_, index_->PeakMemory(rank));
    }
  }
  for (double cap : caps_) {
    if (std::isfinite(cap)) scale_max_ = std::max(scale_max_, cap);
  }
  if (!(scale_max_ > 0)) scale_max_ = 1;
}

QRect MemoryTrack::rowRect(int rank) const {
  const int ranks = index_ ? index_->num_ranks() : 0;
  if (rank < 0 || rank >= ranks) return {};
  const int available = height() - kTopMargin - ranks * kRowGap;
  const int row_height = std::clamp(available / std::max(1, ranks), kMinRowHeight, kMaxRowHeight);
  return QRect(0, kTopMargin + rank * (row_height + kRowGap), width(), row_height);
}

int MemoryTrack::yForValue(int rank, double value) const {
  const QRect row = rowRect(rank);
  if (row.isEmpty()) return -1;
  const int plot_height = row.height() - kRowPadding;
  const double fraction = std::clamp(value / scale_max_, 0.0, 1.0);
  // Bottom row of pixels is 0, the top of the plot (kRowPadding below the row top) the maximum.
  return row.bottom() - static_cast<int>(std::lround(fraction * (plot_height - 1)));
}

double MemoryTrack::xForTime(TimeNs t) const {
  const TimeRange range = state_->visibleRange();
  const double w = std::max(1, width() - label_width_);
  return label_width_ + static_cast<double>(t - range.t0) * w / static_cast<double>(range.length());
}

QSize MemoryTrack::sizeHint() const {
  const int ranks = index_ ? std::max(1, index_->num_ranks()) : 1;
  return QSize(1000, kTopMargin + ranks * (30 + kRowGap));
}

QString MemoryTrack::tooltipText(QPoint pos) const {
  if (!index_ || !index_->has_memory() || pos.x() < label_width_) return {};
  for (int rank = 0; rank < index_->num_ranks(); ++rank) {
    if (!rowRect(rank).contains(pos)) continue;
    const TimeRange range = state_->visibleRange();
    const double ns_per_px =
        static_cast<double>(range.length()) / std::max(1, width() - label_width_);
    const TimeNs c0 =
        range.t0 + static_cast<TimeNs>(std::floor((pos.x() - label_width_) * ns_per_px));
    const TimeNs c1 = std::max(c0 + 1, c0 + static_cast<TimeNs>(std::ceil(ns_per_px)));
    MemoryEnvelope column;
    index_->BinMemory(rank, c0, c1, 1, &column);
    QString text = QStringLiteral("rank %1  at %2\nmemory %3")
                       .arg(rank)
                       .arg(FormatTime(c0), FormatMemory(column.last[0], unit_));
    if (column.max[0] != column.min[0]) {
      text += QStringLiteral(" (%1 .. %2 in this column)")
                  .arg(FormatMemory(column.min[0], unit_), FormatMemory(column.max[0], unit_));
    }
    text += QStringLiteral("\npeak %1").arg(FormatMemory(index_->PeakMemory(rank), unit_));
    if (static_cast<size_t>(rank) < caps_.size() && std::isfinite(caps_[rank])) {
      text += QStringLiteral(", cap %1").arg(FormatMemory(caps_[rank], unit_));
    }
    return text;
  }
  return {};
}

void MemoryTrack::paintEvent(QPaintEvent* /*event*/) {
  QPainter painter(this);
  painter.fillRect(rect(), BackgroundColor());
  painter.fillRect(QRect(0, 0, label_width_, height()), LabelColumnColor());
  QFont small_font = font();
  small_font.setPointSizeF(std::max(6.0, font().pointSizeF() * 0.85));
  if (!index_ || !index_->has_memory()) {
    painter.setPen(PlaceholderColor());
    painter.drawText(rect().adjusted(label_width_, 0, 0, 0), Qt::AlignCenter,
                     tr("No memory samples"));
    return;
  }
  const TimeRange range = state_->visibleRange();
  const int plot_width = width() - label_width_;
  if (plot_width <= 0 || height() <= 0) return;
  const int columns = plot_width;

  const QRgb fill_rgb = MemoryFillColor().rgb();          // under the curve
  const QRgb envelope_rgb = MemoryEnvelopeColor().rgb();  // min..max inside a column
  const QRgb line_rgb = MemoryColor().rgb();              // the last value
  QImage image(columns, height(), QImage::Format_RGB32);
  image.fill(BackgroundColor());
  const auto put = [&](int x, int y, QRgb rgb) {
    if (y >= 0 && y < image.height()) reinterpret_cast<QRgb*>(image.scanLine(y))[x] = rgb;
  };

  struct Peak {
    int rank;
    double x;
    int y;
    double value;
  };
  std::vector<Peak> peaks;
  for (int rank = 0; rank < index_->num_ranks(); ++rank) {
    const QRect row = rowRect(rank);
    if (row.isEmpty() || row.top() >= height()) break;
    index_->BinMemory(rank, range.t0, range.t1, columns, &envelope_);
    const int bottom = yForValue(rank, 0);
    int previous_last = bottom;
    int peak_column = -1;
    double peak_seen = -1;
    for (int c = 0; c < columns && c < envelope_.columns; ++c) {
      const int y_min = yForValue(rank, envelope_.min[c]);
      const int y_max = yForValue(rank, envelope_.max[c]);
      const int y_last = yForValue(rank, envelope_.last[c]);
      for (int y = y_min + 1; y <= bottom; ++y)
        put(c, y, fill_rgb);
      for (int y = y_max; y <= y_min; ++y)
        put(c, y, envelope_rgb);
      // The step from the previous column's value to this one's, then the value itself.
      for (int y = std::min(previous_last, y_last); y <= std::max(previous_last, y_last); ++y) {
        put(c, y, line_rgb);
      }
      previous_last = y_last;
      if (envelope_.max[c] > peak_seen) {
        peak_seen = envelope_.max[c];
        peak_column = c;
      }
    }
    const double peak = index_->PeakMemory(rank);
    // The peak is marked only where it is in view.
    if (peak_column >= 0 && peak > 0 && peak_seen >= peak * (1 - 1e-9)) {
      peaks.push_back({rank, label_width_ + peak_column + 0.5, yForValue(rank, peak), peak});
    }
  }
  painter.drawImage(label_width_, 0, image);

  painter.setClipRect(QRect(label_width_, 0, plot_width, height()));
  // Caps: dashed, on top of the curves so that they are never hidden.
  QPen cap_pen(CapColor(), 1, Qt::DashLine);
  painter.setPen(cap_pen);
  for (int rank = 0; rank < index_->num_ranks(); ++rank) {
    if (static_cast<size_t>(rank) >= caps_.size() || !std::isfinite(caps_[rank])) continue;
    const QRect row = rowRect(rank);
    if (row.isEmpty()) continue;
    const int y = yForValue(rank, caps_[rank]);
    painter.drawLine(label_width_, y, width(), y);
  }
  painter.setRenderHint(QPainter::Antialiasing, true);
  for (const Peak& peak : peaks) {
    const QPointF tip(peak.x, peak.y - 1);
    const QPolygonF marker({tip, tip + QPointF(-4, -5), tip + QPointF(4, -5)});
    painter.setPen(Qt::NoPen);
    painter.setBrush(MemoryColor());
    painter.drawPolygon(marker);
  }
  painter.setRenderHint(QPainter::Antialiasing, false);
  const auto hover = state_->hoverTime();
  if (hover && *hover >= range.t0 && *hover < range.t1) {
    painter.setPen(QPen(HoverLineColor(), 1));
    const double x = xForTime(*hover);
    painter.drawLine(QPointF(x, 0), QPointF(x, height()));
  }
  const auto selection = state_->selection();
  if (selection && selection->length() > 0) {
    const double x0 = xForTime(selection->t0);
    const double x1 = xForTime(selection->t1);
    painter.fillRect(QRectF(x0, 0, x1 - x0, height()), SelectionColor(30));
  }
  painter.setClipping(false);

  paintLabels(painter, small_font);
}

// Per rank its label and peak (against its cap), the row rules and the label column's edge.
void MemoryTrack::paintLabels(QPainter& painter, const QFont& small_font) const {
  painter.setFont(small_font);
  for (int rank = 0; rank < index_->num_ranks(); ++rank) {
    const QRect row = rowRect(rank);
    if (row.isEmpty() || row.top() >= height()) break;
    painter.setPen(MemoryRowRuleColor());
    painter.drawLine(label_width_, row.bottom() + 1, width(), row.bottom() + 1);
    QString text = QStringLiteral("rank %1").arg(rank);
    if (row.height() >= 2 * QFontMetrics(small_font).height()) {
      text += QStringLiteral("\npeak %1").arg(FormatMemory(index_->PeakMemory(rank), unit_));
    } else {
      text += QStringLiteral("  %1").arg(FormatMemory(index_->PeakMemory(rank), unit_));
    }
    painter.setPen(MemoryLabelColor());
    painter.drawText(row.adjusted(6, 0, -(row.width() - label_width_) - 4, 0),
                     Qt::AlignVCenter | Qt::AlignLeft, text);
  }
  painter.setPen(FrameColor());
  painter.drawLine(label_width_ - 1, 0, label_width_ - 1, height());
}

TimeNs MemoryTrack::TimeAtX(double x) const {
  const TimeRange range = state_->visibleRange();
  const double w = std::max(1, width() - label_width_);
  return range.t0 + static_cast<TimeNs>(
                        std::floor((x - label_width_) * static_cast<double>(range.length()) / w));
}

void MemoryTrack::mouseMoveEvent(QMouseEvent* event) {
  const double x = event->position().x();
  if (index_ && x >= label_width_) {
    state_->setHoverTime(TimeAtX(x));
  } else {
    state_->setHoverTime(std::nullopt);
  }
  QWidget::mouseMoveEvent(event);
}

void MemoryTrack::leaveEvent(QEvent* event) {
  state_->setHoverTime(std::nullopt);
  QWidget::leaveEvent(event);
}

void MemoryTrack::wheelEvent(QWheelEvent* event) {
  const int delta = event->angleDelta().y();
  if (!index_ || delta == 0) {
    QWidget::wheelEvent(event);
    return;
  }
  const double x = std::clamp<double>(event->position().x(), label_width_, width());
  state_->zoomAt(TimeAtX(x), std::pow(0.8, delta / 120.0));
  event->accept();
}

bool MemoryTrack::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    return ShowToolTip(this, event, [this](QPoint pos) { return tooltipText(pos); });
  }
  return QWidget::event(event);
}

}  // namespace zb::gui
