// SPDX-License-Identifier: Apache-2.0
// FindBar: Ctrl+F over the timeline. The query (timeline_find.h: "B stage 3 mb 5", "fwd", "rank
// 2 iter 1") is matched as it is typed; Enter, F3 or the arrows go to the next or previous match,
// which the main window reveals and selects in the timeline (TimelineView::revealOp). It says
// "3 of 12", "no match" or why the query is wrong, in one line.
#ifndef ZBKIT_GUI_APP_FIND_BAR_H_
#define ZBKIT_GUI_APP_FIND_BAR_H_

#include <QWidget>
#include <memory>
#include <utility>
#include <vector>

#include "zbkit/schemas/timeline_index.h"

class QLabel;
class QLineEdit;

namespace zb::gui {

class FindBar : public QWidget {
  Q_OBJECT

 public:
  explicit FindBar(QWidget* parent = nullptr);

  void setTimeline(std::shared_ptr<const TimelineIndex> index);
  // Shows the bar with the query field focused and selected.
  void activate();
  void setQuery(const QString& text);  // as if typed
  void next();
  void previous();

  QString statusText() const;
  const std::vector<std::pair<int, size_t>>& matches() const { return matches_; }
  int current() const { return current_; }  // -1 before the first step

 signals:
  void opFound(int lane, qint64 index);

 protected:
  void keyPressEvent(QKeyEvent* event) override;

 private:
  void search();
  void go(int step);
  void showStatus();

  std::shared_ptr<const TimelineIndex> index_;
  QLineEdit* query_ = nullptr;
  QLabel* status_ = nullptr;
  QString error_;
  std::vector<std::pair<int, size_t>> matches_;
  int current_ = -1;
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_APP_FIND_BAR_H_
