// SPDX-License-Identifier: Apache-2.0
// MemoryTrack: per-rank activation memory over time, one small row per rank, drawn under the
// timeline with the same time axis (shared ViewState). Each pixel column shows the min-max
// envelope and the last value of the step function (TimelineIndex::BinMemory); the per-rank cap,
// when known, is a dashed line, and the peak is marked.
#ifndef ZBKIT_GUI_MEMORY_TRACK_H_
#define ZBKIT_GUI_MEMORY_TRACK_H_

#include <QWidget>
#include <memory>
#include <vector>

#include "zbkit/gui/units.h"
#include "zbkit/gui/view_state.h"
#include "zbkit/schemas/timeline_index.h"

class QFont;
class QPainter;

namespace zb::gui {

class MemoryTrack : public QWidget {
  Q_OBJECT

 public:
  explicit MemoryTrack(QWidget* parent = nullptr);
  void setViewState(ViewState* state);
  ViewState* viewState() const { return state_; }
  void setTimeline(std::shared_ptr<const TimelineIndex> index);
  // Per-rank cap (same unit as the memory samples); empty or non-finite entries = none.
  void setCaps(std::vector<double> caps);
  // How figures are written (units.h); profile units until set.
  void setMemoryUnit(MemoryUnit unit);
  // Must match the TimelineView above it so the time axes line up.
  void setLabelWidth(int pixels);

  int labelWidth() const { return label_width_; }

  QString tooltipText(QPoint pos) const;  // rank, time, memory, cap
  QSize sizeHint() const override;

  // Geometry, in widget coordinates (for tests and overlays). All rows share one y scale, from 0
  // to the largest peak or cap, so that ranks compare at a glance.
  QRect rowRect(int rank) const;
  int yForValue(int rank, double value) const;
  double xForTime(TimeNs t) const;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;
  // Hovering sets the shared hover time (the line in every linked view); the wheel zooms at the
  // cursor like the timeline's.
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;

 private:
  void paintLabels(QPainter& painter, const QFont& small_font) const;
  void UpdateScale();
  TimeNs TimeAtX(double x) const;

  ViewState* state_ = nullptr;
  std::shared_ptr<const TimelineIndex> index_;
  std::vector<double> caps_;
  MemoryUnit unit_ = MemoryUnit::kProfileUnits;
  int label_width_ = 90;
  double scale_max_ = 1;     // top of the shared y scale
  MemoryEnvelope envelope_;  // reused between paints
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_MEMORY_TRACK_H_
