// SPDX-License-Identifier: Apache-2.0
// SplitView: the layer splits `zb partition` compares (its zb-partition/1 JSON, docs/formats.md
// §3), side by side, one column per split of one layout: the split's name, its best order and
// iteration time; per stage a bar of its blocks' F, B and W (the stage's rank beside it); per
// rank a bar of what it holds at its peak, the state (weights, gradients, optimizer state) and the
// activations its order keeps in flight, against the cap. Every column shares one time scale and
// one memory scale, so the bars compare across splits (docs/partition.md §3, docs/zbview.md).
#ifndef ZBKIT_GUI_SPLIT_VIEW_H_
#define ZBKIT_GUI_SPLIT_VIEW_H_

#include <QRect>
#include <QString>
#include <QWidget>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/schemas/status.h"

class QPainter;

namespace zb::gui {

// One compared split that has an order (zb-partition/1 "rows" with "ok": true).
struct SplitColumn {
  struct Stage {
    int rank = 0;
    double f_ms = 0, b_ms = 0, w_ms = 0;
    // The memory plan (docs/memory-plan.md): how many of its blocks the row checkpoints, of all.
    int blocks = 0;
    int checkpointed = 0;
  };
  std::string layout;  // "loop:1", "loop:2", "v"
  std::string split;   // "even", "torchtitan", "min-max", "co-tuned"
  std::string family;  // its best order's family
  double iteration_ms = 0;
  std::vector<Stage> stages;  // by global stage id
  std::vector<double> state;  // per rank
  std::vector<double> peak;   // per rank: state + activations at the order's peak
  bool best = false;          // the split `zb partition` chose
  // Blocks per checkpointing mode ("full" -> 12), from the row's "checkpointing"; empty: none said.
  std::map<std::string, int> modes;
};

struct SplitComparison {
  int ranks = 0;
  int microbatches = 0;
  std::optional<double> cap;         // per rank, in the costs' memory unit; nullopt = none
  std::vector<SplitColumn> columns;  // every ok row, every layout, in the file's order
  std::vector<std::string> layouts;  // in order of first appearance
  // The layout of the chosen split (or the first), what the view shows first.
  std::string best_layout;
};

// Reads zb-partition/1 text; kInvalidInput naming `source` and the field when it is not one, or
// when no split has an order.
Expected<SplitComparison> ParseSplitComparison(const QByteArray& text, const std::string& source);
Expected<SplitComparison> ReadSplitComparison(const QString& path);

class SplitView : public QWidget {
  Q_OBJECT

 public:
  explicit SplitView(QWidget* parent = nullptr);

  void setComparison(std::shared_ptr<const SplitComparison> comparison);
  const std::shared_ptr<const SplitComparison>& comparison() const { return comparison_; }
  // Which layout's splits to show; an unknown one shows nothing.
  void setLayout(const std::string& layout);
  const std::string& layout() const { return layout_; }
  // The columns shown (of the current layout), in order.
  std::vector<const SplitColumn*> shownColumns() const;

  // Geometry, for tests: the bar of `stage` in shown column `column` (its F+B+W extent), the
  // memory bar of `rank` (its peak), the state part of it, and the cap line's x in that column;
  // empty / nullopt when out of range.
  QRect stageBar(int column, int stage) const;
  QRect memoryBar(int column, int rank) const;
  QRect stateBar(int column, int rank) const;
  std::optional<int> capX(int column) const;
  QString titleText() const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  struct Layout;  // where everything goes at the current size
  Layout Place() const;
  void PaintColumn(QPainter& painter, const Layout& layout, int column) const;
  void PaintLegend(QPainter& painter, const QRect& area) const;

  std::shared_ptr<const SplitComparison> comparison_;
  std::string layout_;
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_SPLIT_VIEW_H_
