// SPDX-License-Identifier: Apache-2.0
// ReportView: the composed picture of the headless `zbview --screenshot`: a title line, the
// legend, the timeline with its bubbles and wait links, the memory track with the cap, and the
// summary figures, laid out to be read by a person who does not want to read numbers; for a
// frontier, the plot (with its own legend) over the per-method summary.
#ifndef ZBKIT_GUI_APP_REPORT_VIEW_H_
#define ZBKIT_GUI_APP_REPORT_VIEW_H_

#include <QImage>
#include <QSize>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <memory>

#include "loader.h"

class QLabel;

namespace zb::gui {

class CompareView;
class FrontierView;
class LegendWidget;
class MemoryTrack;
class TimelineView;
class ViewState;

// The composed picture of the headless screenshot. Never shown on screen; renderImage() lays it
// out at the requested size and paints it.
class ReportView : public QWidget {
  Q_OBJECT

 public:
  explicit ReportView(QWidget* parent = nullptr);

  void setItem(std::shared_ptr<const LoadedItem> item);
  void setComparison(std::shared_ptr<const LoadedItem> a, std::shared_ptr<const LoadedItem> b);
  // The whole report at exactly `size` pixels.
  QImage renderImage(QSize size);

  TimelineView* timelineView() const { return timeline_; }
  MemoryTrack* memoryTrack() const { return memory_; }
  CompareView* compareView() const { return compare_; }
  FrontierView* frontierView() const { return frontier_; }
  QString titleText() const;
  QString summaryText() const;

 private:
  void setHeader(const LoadedItem& item, const QString& title);
  void fitMemoryTrack(QSize size);

  std::shared_ptr<const LoadedItem> item_;  // the single item shown, null for a comparison
  QStringList summary_lines_;

  ViewState* state_ = nullptr;
  QLabel* title_ = nullptr;
  QLabel* subtitle_ = nullptr;
  LegendWidget* legend_ = nullptr;
  TimelineView* timeline_ = nullptr;
  MemoryTrack* memory_ = nullptr;
  CompareView* compare_ = nullptr;
  FrontierView* frontier_ = nullptr;
  QLabel* summary_ = nullptr;
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_APP_REPORT_VIEW_H_
