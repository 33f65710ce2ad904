// SPDX-License-Identifier: Apache-2.0
// LegendWidget: the one key to zbview's colours, shown beside the timeline in the main window,
// the comparison and the exported report: F, B, W, BW (and comm when present), the bubble tint,
// the wait link, the memory cap. Its colours are the palette's (palette.h), so it always matches
// what the views draw.
#ifndef ZBKIT_GUI_LEGEND_H_
#define ZBKIT_GUI_LEGEND_H_

#include <QWidget>

#include "zbkit/schemas/timeline_index.h"

namespace zb::gui {

// The op kinds present in a timeline, bit (1 << OpKind) each, for LegendWidget::setKinds.
unsigned KindsIn(const TimelineIndex& index);

class LegendWidget : public QWidget {
  Q_OBJECT

 public:
  explicit LegendWidget(QWidget* parent = nullptr);
  // Which op kinds to list, bit (1 << OpKind) each; default F, B, W and BW.
  void setKinds(unsigned mask);
  // The dashed cap line of the memory track; off where no memory track or no cap is shown.
  void setShowMemoryCap(bool show);
  // The pale part of measured ops whose device was idle for part of their span (TimelineIndex::
  // has_op_detail()); off by default.
  void setShowDeviceIdle(bool show);
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  unsigned kinds_ = 0xF;
  bool show_cap_ = true;
  bool show_waiting_ = false;
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_LEGEND_H_
