// SPDX-License-Identifier: Apache-2.0
// SummaryPanel: the figures of what the window shows (makespan, both bubble rates, T/LB, peak
// memory per rank against the cap, the largest bubbles and what they waited for, the cost
// profile; for a frontier, each method's reach) and the summary of the range selected in the
// timeline. The same figures, as text
// lines, go into the headless screenshot (SummaryLines), so both say the same thing.
#ifndef ZBKIT_GUI_APP_SUMMARY_PANEL_H_
#define ZBKIT_GUI_APP_SUMMARY_PANEL_H_

#include <QStringList>
#include <QWidget>
#include <memory>
#include <optional>

#include "loader.h"
#include "zbkit/schemas/timeline_index.h"

class QLabel;
class QTableWidget;

namespace zb::gui {

// "1180.022" (milliseconds, 3 decimals, as `zb list` prints them).
QString FormatMs(TimeNs ns);
// A memory figure in the profile's own unit, compact: "201216", "3.22M", "24.0G".
// "6.55%".
QString FormatRate(double rate);
// The unit both sides of a comparison are written in: theirs when they agree, else bare numbers
// (and the comparison line says the figures are not comparable).
MemoryUnit SharedMemoryUnit(const LoadedItem& a, const LoadedItem& b);
// The two bubble conventions, for tooltips and the legend.
QString BubbleRatesExplanation();
QString LowerBoundExplanation();

// The figures of one item as a few lines of plain text: figures, memory, largest bubbles (for a
// frontier: FrontierLines).
QStringList SummaryLines(const LoadedItem& item);
// A frontier per method: at how many caps it fits, its paper bubble rate at the smallest and the
// largest cap it fits; then, for two methods, the largest gap between them at a common cap.
QStringList FrontierLines(const Frontier& frontier);
// Figures of a comparison, side by side: "makespan 1456.749 -> 1180.022 ms (-19.0%)", ...
QStringList ComparisonLines(const LoadedItem& a, const LoadedItem& b);
QString RangeSummaryText(const RangeSummary& range, int ranks);

class SummaryPanel : public QWidget {
  Q_OBJECT

 public:
  explicit SummaryPanel(QWidget* parent = nullptr);

  void clear();
  void setMessage(const QString& message);  // shown instead of figures (nothing loaded)
  void setItem(std::shared_ptr<const LoadedItem> item);
  void setComparison(std::shared_ptr<const LoadedItem> a, std::shared_ptr<const LoadedItem> b);
  // The summary of the range selected in the timeline; nullopt clears it.
  void setRangeSummary(const std::optional<RangeSummary>& range, int ranks);

  // What is shown, for tests and the status bar.
  QString titleText() const;
  QString makespanText() const;
  QString bubbleText() const;
  QString paperBubbleText() const;
  QString lowerBoundText() const;
  QString selectionText() const;
  QString frontierText() const;
  QTableWidget* memoryTable() const { return memory_table_; }
  QTableWidget* costTable() const { return cost_table_; }

 private:
  void showCosts(const LoadedItem& item);
  void showMemory(const LoadedItem* a, const LoadedItem* b);

  QLabel* title_ = nullptr;
  QLabel* context_ = nullptr;
  QWidget* figures_ = nullptr;
  QLabel* makespan_ = nullptr;
  QLabel* bubble_ = nullptr;
  QLabel* paper_bubble_ = nullptr;
  QLabel* lower_bound_ = nullptr;
  QLabel* ops_ = nullptr;
  QLabel* memory_caption_ = nullptr;
  QTableWidget* memory_table_ = nullptr;
  QLabel* bubbles_ = nullptr;
  QLabel* costs_caption_ = nullptr;
  QTableWidget* cost_table_ = nullptr;
  QLabel* selection_ = nullptr;
  QLabel* frontier_ = nullptr;
  std::shared_ptr<const LoadedItem> item_;
  std::shared_ptr<const LoadedItem> other_;
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_APP_SUMMARY_PANEL_H_
