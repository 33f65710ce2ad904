// SPDX-License-Identifier: Apache-2.0
// StoreBrowser: what a store holds, as a tree grouped by cluster and job: schedules (family, p, m,
// makespan, both bubble rates, ops) with their timelines (predicted, measured runs) under them,
// cost profiles and memory-vs-bubble frontiers. Selecting one row asks the window to show it;
// selecting two schedules or timelines and pressing "Compare selected" (or "Compare with shown"
// in the context menu) asks for a comparison.
#ifndef ZBKIT_GUI_APP_STORE_BROWSER_H_
#define ZBKIT_GUI_APP_STORE_BROWSER_H_

#include <QWidget>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "loader.h"

class QPushButton;
class QTreeWidget;
class QTreeWidgetItem;

namespace zb::gui {

class StoreBrowser : public QWidget {
  Q_OBJECT

 public:
  enum Column {
    kItemColumn,
    kRanksColumn,
    kMicrobatchesColumn,
    kMakespanColumn,
    kBubbleColumn,
    kPaperBubbleColumn,
    kOpsColumn,
    kCreatedColumn,
    kColumnCount
  };

  explicit StoreBrowser(QWidget* parent = nullptr);

  void setListing(std::shared_ptr<const StoreListing> listing);
  void clear();
  // Marks the item the window shows (bold) and selects it, without emitting itemActivated.
  void setShownItems(const std::vector<ItemRef>& refs);

  QTreeWidget* tree() const { return tree_; }
  QTreeWidgetItem* rowFor(const ItemRef& ref) const;
  std::vector<ItemRef> selectedRefs() const;
  int rowCount(ItemKind kind) const;
  // Selects rows as a user would (signals included); for tests and the command line.
  void selectRefs(const std::vector<ItemRef>& refs);

 public slots:
  // Compares the two selected rows, the older one on top.
  void compareSelected();

 signals:
  void itemActivated(zb::gui::ItemRef ref);
  void compareRequested(zb::gui::ItemRef a, zb::gui::ItemRef b);

 private:
  void registerRow(QTreeWidgetItem* row, const ItemRef& ref);
  void onSelectionChanged();
  void showContextMenu(const QPoint& pos);

  QTreeWidget* tree_ = nullptr;
  QPushButton* compare_button_ = nullptr;
  std::shared_ptr<const StoreListing> listing_;
  std::map<std::pair<int, int64_t>, QTreeWidgetItem*> rows_;
  std::vector<ItemRef> shown_;
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_APP_STORE_BROWSER_H_
