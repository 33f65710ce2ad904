// SPDX-License-Identifier: Apache-2.0
// Pictures out of zbview: the central view to PNG, SVG or PDF (by file extension), and the
// composed report of the headless `zbview --screenshot`: a title line, a legend, the timeline with
// its bubbles and wait links, the memory track with the cap, and the summary figures, laid out to
// be read by a person who does not want to read numbers.
#ifndef ZBKIT_GUI_APP_EXPORT_H_
#define ZBKIT_GUI_APP_EXPORT_H_

#include <QImage>
#include <QSize>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <memory>
#include <optional>

#include "loader.h"
#include "zbkit/gui/view_state.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/timeline_index.h"

class QLabel;

namespace zb::gui {

class CompareView;
class MemoryTrack;
class TimelineView;

// The whole timeline: predicted ones from t = 0 (the makespan convention, so the warm-up bubble
// shows), measured ones from their first op (their clock has an arbitrary origin).
TimeRange FullRange(const TimelineIndex& index);

// "A: zb-v": the title of one pane of a comparison.
QString PaneLabel(const LoadedItem& item, char side);
// The op kinds present in a timeline, bit (1 << OpKind) each, for LegendWidget::setKinds.
unsigned KindsIn(const TimelineIndex& index);

class LegendWidget;
// Shows a loaded item (which must have an index) in a legend, timeline and memory track that
// share `state`, fitted to the whole timeline: the one binding the window and the screenshot
// report both use, so they show the same thing.
void ShowItemInViews(const LoadedItem& item, LegendWidget* legend, TimelineView* timeline,
                     MemoryTrack* memory, ViewState* state);

enum class ExportFormat { kPng, kSvg, kPdf };

// By extension, case-insensitive: .png, .svg, .pdf. nullopt for anything else.
std::optional<ExportFormat> ExportFormatForPath(const QString& path);
// Renders `widget` as it is laid out now into `path`. Errors: kUsage for an unknown extension,
// kIo when the file cannot be written (the message names the path and why).
Status ExportWidget(QWidget* widget, const QString& path);
// Writes `image` as PNG (whatever the extension says, the caller chose the name).
Status SavePng(const QImage& image, const QString& path);

// A one-line key to the colours: F, B, W, BW (and comm when shown), the bubble tint, the wait
// link, the memory cap.
class LegendWidget : public QWidget {
  Q_OBJECT

 public:
  explicit LegendWidget(QWidget* parent = nullptr);
  // Which op kinds to list, bit (1 << OpKind) each; default F, B, W and BW.
  void setKinds(unsigned mask);
  // The dashed cap line of the memory track; off where no memory track or no cap is shown.
  void setShowMemoryCap(bool show);
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  unsigned kinds_ = 0xF;
  bool show_cap_ = true;
};

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
  QLabel* summary_ = nullptr;
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_APP_EXPORT_H_
