// SPDX-License-Identifier: Apache-2.0
#include "zbkit/gui/legend.h"

#include <QPainter>
#include <utility>

#include "zbkit/gui/palette.h"

namespace zb::gui {

unsigned KindsIn(const TimelineIndex& index) {
  unsigned mask = 0;
  for (const TimelineLane& lane : index.lanes()) {
    if (lane.kind == LaneKind::kStage) continue;  // the same ops as their rank lane
    for (OpKind kind : lane.kind_of)
      mask |= 1U << static_cast<unsigned>(kind);
  }
  return mask;
}

LegendWidget::LegendWidget(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
  setToolTip(
      tr("F forward, B gradient w.r.t. the stage input, W gradient w.r.t. the weights, BW "
         "fused backward. Tinted background: a bubble (the rank idles between its first "
         "and last op). A thin line joins an op that waited to the op it waited for."));
}

void LegendWidget::setShowMemoryCap(bool show) {
  show_cap_ = show;
  update();
}

void LegendWidget::setShowDeviceIdle(bool show) {
  show_waiting_ = show;
  update();
}

void LegendWidget::setKinds(unsigned mask) {
  kinds_ = mask;
  update();
}

QSize LegendWidget::sizeHint() const {
  return {760, fontMetrics().height() + 10};
}

QSize LegendWidget::minimumSizeHint() const {
  return {100, fontMetrics().height() + 10};
}

void LegendWidget::paintEvent(QPaintEvent* /*event*/) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing, false);
  const QFontMetrics metrics = fontMetrics();
  const int box = metrics.height() - 2;
  const int y = (height() - box) / 2;
  int x = 4;
  auto label = [&](const QString& text) {
    painter.setPen(palette().color(QPalette::WindowText));
    painter.drawText(QRect(x, 0, metrics.horizontalAdvance(text) + 2, height()),
                     Qt::AlignVCenter | Qt::AlignLeft, text);
    x += metrics.horizontalAdvance(text) + 16;
  };
  auto swatch = [&](const QColor& fill, const QString& text) {
    painter.fillRect(QRect(x, y, box * 2, box), fill);
    painter.setPen(fill.darker(140));
    painter.drawRect(QRect(x, y, box * 2 - 1, box - 1));
    x += box * 2 + 5;
    label(text);
  };
  const std::pair<OpKind, QString> kinds[] = {{OpKind::kF, tr("F forward")},
                                              {OpKind::kB, tr("B input grad")},
                                              {OpKind::kW, tr("W weight grad")},
                                              {OpKind::kBW, tr("BW fused backward")},
                                              {OpKind::kComm, tr("comm")}};
  for (const auto& [kind, text] : kinds) {
    if ((kinds_ >> static_cast<unsigned>(kind)) & 1U) swatch(ColorOf(kind), text);
  }
  if (show_waiting_) {
    // A measured op's span without kernels: the kind's pale colour (docs/zbview.md §6).
    const OpKind first = (kinds_ & 1U) ? OpKind::kF : OpKind::kB;
    swatch(WaitingColor(first), tr("in an op, device idle"));
  }
  swatch(BubbleColor(), tr("bubble (idle)"));
  // The wait link: an op that started the moment another one ended, after idling.
  painter.setRenderHint(QPainter::Antialiasing, true);
  painter.setPen(QPen(WaitLinkColor(), 1.2));
  painter.drawLine(QPointF(x, y + box - 1), QPointF(x + box * 2, y + 1));
  painter.setRenderHint(QPainter::Antialiasing, false);
  x += box * 2 + 5;
  label(tr("waited for"));
  if (show_cap_) {
    painter.setPen(QPen(CapColor(), 2, Qt::DashLine));
    painter.drawLine(x, y + box / 2, x + box * 2, y + box / 2);
    x += box * 2 + 5;
    label(tr("memory cap"));
  }
}

}  // namespace zb::gui
