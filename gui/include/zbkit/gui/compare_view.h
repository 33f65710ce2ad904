// SPDX-License-Identifier: Apache-2.0
// CompareView: two timelines one above the other (e.g. predicted vs measured, 1F1B vs tuned)
// sharing one ViewState, so zoom and scroll stay in sync. Ops are matched by (stage, kind,
// microbatch) (CompareTimelines); ops that differ are outlined in both panes, and a summary line
// and a per-rank table give the makespan, busy and end-time deltas.
#ifndef ZBKIT_GUI_COMPARE_VIEW_H_
#define ZBKIT_GUI_COMPARE_VIEW_H_

#include <QWidget>
#include <memory>

#include "zbkit/gui/timeline_view.h"
#include "zbkit/gui/view_state.h"
#include "zbkit/schemas/timeline_index.h"

class QLabel;
class QTableWidget;

namespace zb::gui {

class CompareView : public QWidget {
  Q_OBJECT

 public:
  explicit CompareView(QWidget* parent = nullptr);

  void setTimelines(std::shared_ptr<const TimelineIndex> a, const QString& label_a,
                    std::shared_ptr<const TimelineIndex> b, const QString& label_b);

  ViewState* viewState() const { return state_; }
  TimelineView* top() const { return top_; }
  TimelineView* bottom() const { return bottom_; }
  const TimelineComparison& comparison() const { return comparison_; }
  QTableWidget* table() const { return table_; }  // per rank: busy and end of each, deltas
  // e.g. "makespan 1236.6 -> 1180.0 ms (-4.6%), 812 of 1152 ops differ"
  QString summaryText() const;

 private:
  // Both timelines cut the model into the same stages on the same ranks.
  bool SameStageLayout() const;
  ViewState* state_ = nullptr;
  TimelineView* top_ = nullptr;
  TimelineView* bottom_ = nullptr;
  QLabel* summary_ = nullptr;
  QTableWidget* table_ = nullptr;
  TimelineComparison comparison_;
  QString label_a_;
  QString label_b_;
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_COMPARE_VIEW_H_
