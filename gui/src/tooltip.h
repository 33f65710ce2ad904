// SPDX-License-Identifier: Apache-2.0
// The QEvent::ToolTip handling the widgets share: tooltips come from each widget's testable
// tooltipText(QPoint), and this only shows or hides them.
#ifndef ZBKIT_GUI_SRC_TOOLTIP_H_
#define ZBKIT_GUI_SRC_TOOLTIP_H_

#include <QEvent>
#include <QHelpEvent>
#include <QToolTip>
#include <QWidget>

namespace zb::gui {

// Call from QWidget::event for QEvent::ToolTip; `text_at` maps the event position to the text.
template <typename TextAt>
bool ShowToolTip(QWidget* widget, QEvent* event, TextAt text_at) {
  auto* help = static_cast<QHelpEvent*>(event);
  const QString text = text_at(help->pos());
  if (text.isEmpty()) {
    QToolTip::hideText();
    event->ignore();
  } else {
    QToolTip::showText(help->globalPos(), text, widget);
  }
  return true;
}

}  // namespace zb::gui

#endif  // ZBKIT_GUI_SRC_TOOLTIP_H_
