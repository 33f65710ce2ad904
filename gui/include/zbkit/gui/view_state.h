// SPDX-License-Identifier: Apache-2.0
// ViewState: the time window that every linked view (timeline, memory track, ruler, both panes of
// a comparison) shows, with zoom history. One ViewState shared by several views keeps them in
// step; views only read it and ask it to change.
#ifndef ZBKIT_GUI_VIEW_STATE_H_
#define ZBKIT_GUI_VIEW_STATE_H_

#include <QObject>
#include <optional>
#include <utility>
#include <vector>

#include "zbkit/schemas/types.h"

namespace zb::gui {

struct TimeRange {
  TimeNs t0 = 0;
  TimeNs t1 = 0;
  TimeNs length() const { return t1 - t0; }  // "span" is the figure of bubbles.md §1
  bool operator==(const TimeRange& other) const { return t0 == other.t0 && t1 == other.t1; }
};

class ViewState : public QObject {
  Q_OBJECT

 public:
  // The smallest visible span: zooming never goes below it (a zero span would hang the LOD
  // arithmetic, Tracy PR #1281).
  static constexpr TimeNs kMinimumSpan = 1000;  // 1 us

  explicit ViewState(QObject* parent = nullptr);

  TimeRange traceRange() const { return trace_; }
  TimeRange visibleRange() const { return visible_; }
  std::optional<TimeRange> selection() const { return selection_; }
  std::optional<TimeNs> hoverTime() const { return hover_; }

  // Sets the whole trace and shows all of it; clears history and selection.
  void setTraceRange(TimeRange range);
  // Shows `range` (clamped to the trace, at least kMinimumSpan); recorded in the zoom history
  // unless `record` is false (continuous panning records once per gesture, not per event).
  void setVisibleRange(TimeRange range, bool record = true);
  // Zooms by `factor` (< 1 zooms in) keeping `anchor` at the same screen position. A burst of
  // wheel steps passes `record` = false after the first, so that one gesture is one history step.
  void zoomAt(TimeNs anchor, double factor, bool record = true);
  // Shifts the visible range; not recorded (continuous panning, see commitGesture).
  void pan(TimeNs delta);
  // Records `before` (the range when a continuous gesture such as a drag began) as one step of
  // the zoom history, if the visible range moved since.
  void commitGesture(TimeRange before);
  void fitAll();
  bool canZoomBack() const;
  bool canZoomForward() const;
  void zoomBack();
  void zoomForward();

  void setSelection(std::optional<TimeRange> selection);
  void setHoverTime(std::optional<TimeNs> time);

 signals:
  void visibleRangeChanged(zb::gui::TimeRange range);
  void selectionChanged();
  void hoverTimeChanged();
  void historyChanged();

 private:
  TimeRange Clamp(TimeRange range) const;

  TimeRange trace_;
  TimeRange visible_;
  std::optional<TimeRange> selection_;
  std::optional<TimeNs> hover_;
  std::vector<TimeRange> back_;
  std::vector<TimeRange> forward_;
};

}  // namespace zb::gui

Q_DECLARE_METATYPE(zb::gui::TimeRange)

#endif  // ZBKIT_GUI_VIEW_STATE_H_
