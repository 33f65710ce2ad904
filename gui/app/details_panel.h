// SPDX-License-Identifier: Apache-2.0
// DetailsPanel: beside the timeline, what is selected in it: the clicked op (OpDetailsText: kind,
// stage, microbatch, rank, iteration, range name, times, busy time and kernels, what it waited
// for) and the drag-selected time range's statistics (FormatRangeSummary: busy, idle, op counts).
// Text, selectable, so that figures can be copied.
#ifndef ZBKIT_GUI_APP_DETAILS_PANEL_H_
#define ZBKIT_GUI_APP_DETAILS_PANEL_H_

#include <QWidget>

class QLabel;

namespace zb::gui {

class DetailsPanel : public QWidget {
  Q_OBJECT

 public:
  explicit DetailsPanel(QWidget* parent = nullptr);

  // Empty text shows the hint of how to select.
  void setOpText(const QString& text);
  void setRangeText(const QString& text);
  QString opText() const;  // what is shown, hint included
  QString rangeText() const;

 private:
  QLabel* op_ = nullptr;
  QLabel* range_ = nullptr;
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_APP_DETAILS_PANEL_H_
