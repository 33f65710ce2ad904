// SPDX-License-Identifier: Apache-2.0
#include "store_browser.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QMenu>
#include <QPushButton>
#include <QSignalBlocker>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "summary_panel.h"
#include "zbkit/gui/units.h"

namespace zb::gui {
namespace {

constexpr int kKindRole = Qt::UserRole;
constexpr int kIdRole = Qt::UserRole + 1;

std::pair<int, int64_t> Key(const ItemRef& ref) {
  return {static_cast<int>(ref.kind), ref.id};
}

// Comparisons are pane over pane of two timelines: schedules and timelines only.
bool IsComparable(const ItemRef& ref) {
  return ref.kind == ItemKind::kSchedule || ref.kind == ItemKind::kTimeline;
}

std::optional<ItemRef> RefOf(const QTreeWidgetItem* row) {
  if (row == nullptr || !row->data(0, kKindRole).isValid()) return std::nullopt;
  return ItemRef{static_cast<ItemKind>(row->data(0, kKindRole).toInt()),
                 row->data(0, kIdRole).toLongLong()};
}

QString Created(const std::string& created_at) {
  // "2024-05-01T12:34:56.789Z" -> "2024-05-01 12:34:56": the milliseconds only add noise here.
  QString text = QString::fromStdString(created_at);
  text.replace(u'T', u' ');
  const qsizetype dot = text.indexOf(u'.');
  return dot > 0 ? text.left(dot) : text;
}

QTreeWidgetItem* Group(QTreeWidgetItem* parent, QTreeWidget* tree, const QString& text) {
  auto* row = parent != nullptr ? new QTreeWidgetItem(parent) : new QTreeWidgetItem(tree);
  row->setText(0, text);
  row->setFlags(Qt::ItemIsEnabled);  // a heading, not something to show
  QFont font = row->font(0);
  font.setItalic(true);
  row->setFont(0, font);
  return row;
}

void AlignNumbers(QTreeWidgetItem* row) {
  for (int c = StoreBrowser::kRanksColumn; c < StoreBrowser::kCreatedColumn; ++c) {
    row->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
  }
}

}  // namespace

StoreBrowser::StoreBrowser(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  tree_ = new QTreeWidget(this);
  tree_->setColumnCount(kColumnCount);
  tree_->setHeaderLabels({tr("item"), tr("p"), tr("m"), tr("makespan ms"), tr("bubble"),
                          tr("paper bubble"), tr("ops"), tr("created (UTC)")});
  tree_->headerItem()->setToolTip(kBubbleColumn, BubbleRatesExplanation());
  tree_->headerItem()->setToolTip(kPaperBubbleColumn, BubbleRatesExplanation());
  tree_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  tree_->setUniformRowHeights(true);
  tree_->setContextMenuPolicy(Qt::CustomContextMenu);
  tree_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  layout->addWidget(tree_);

  auto* buttons = new QHBoxLayout;
  compare_button_ = new QPushButton(tr("Compare selected"), this);
  compare_button_->setToolTip(
      tr("Select two rows (Ctrl+click), e.g. a schedule and its measured run, or 1F1B and a "
         "tuned schedule, and compare them pane over pane."));
  compare_button_->setEnabled(false);
  buttons->addWidget(compare_button_);
  buttons->addStretch(1);
  layout->addLayout(buttons);

  connect(tree_, &QTreeWidget::itemSelectionChanged, this, &StoreBrowser::onSelectionChanged);
  connect(tree_, &QTreeWidget::customContextMenuRequested, this, &StoreBrowser::showContextMenu);
  connect(compare_button_, &QPushButton::clicked, this, &StoreBrowser::compareSelected);
}

void StoreBrowser::clear() {
  const QSignalBlocker blocker(tree_);
  tree_->clear();
  rows_.clear();
  shown_.clear();
  listing_.reset();
  compare_button_->setEnabled(false);
}

namespace {

// A frontier's row: its cap range and objective, where it came from, its points.
void FillFrontierRow(QTreeWidgetItem* row, const FrontierInfo& info) {
  const QString caps = QStringLiteral("%1x-%2x").arg(QString::number(info.min_cap_factor, 'g', 6),
                                                     QString::number(info.max_cap_factor, 'g', 6));
  row->setText(StoreBrowser::kItemColumn, StoreBrowser::tr("#%1 frontier %2 by %3")
                                              .arg(info.id)
                                              .arg(caps, QString::fromStdString(info.objective)));
  row->setToolTip(StoreBrowser::kItemColumn,
                  StoreBrowser::tr("frontier %1: bubble rate against the memory cap (%2), %3 "
                                   "placement, from cost profile %4 (%5)")
                      .arg(info.id)
                      .arg(caps, QString::fromStdString(info.placement))
                      .arg(info.cost_profile_id)
                      .arg(QString::fromStdString(info.cost_profile)));
  row->setText(StoreBrowser::kMicrobatchesColumn, QString::number(info.microbatches));
  row->setText(StoreBrowser::kOpsColumn, QString::number(info.num_points));
  row->setToolTip(StoreBrowser::kOpsColumn, StoreBrowser::tr("points: caps x methods"));
  row->setText(StoreBrowser::kCreatedColumn, Created(info.created_at));
}

}  // namespace

// The row's item (for activation), aligned numbers, and the lookup by reference.
void StoreBrowser::registerRow(QTreeWidgetItem* row, const ItemRef& ref) {
  row->setData(0, kKindRole, static_cast<int>(ref.kind));
  row->setData(0, kIdRole, QVariant::fromValue<qlonglong>(ref.id));
  AlignNumbers(row);
  rows_[Key(ref)] = row;
}

void StoreBrowser::setListing(std::shared_ptr<const StoreListing> listing) {
  clear();
  listing_ = std::move(listing);
  if (!listing_) return;
  const QSignalBlocker blocker(tree_);

  std::map<std::string, QTreeWidgetItem*> clusters;
  std::map<std::pair<std::string, std::string>, QTreeWidgetItem*> jobs;
  auto job_row = [&](const std::string& cluster, const std::string& job) {
    auto& row = jobs[{cluster, job}];
    if (row == nullptr) {
      QTreeWidgetItem*& cluster_row = clusters[cluster];
      if (cluster_row == nullptr) {
        cluster_row = Group(nullptr, tree_, QString::fromStdString(cluster));
        cluster_row->setToolTip(0, tr("cluster"));
      }
      row = Group(cluster_row, nullptr, QString::fromStdString(job));
      row->setToolTip(0, tr("job"));
    }
    return row;
  };

  for (const ScheduleInfo& info : listing_->schedules) {
    auto* row = new QTreeWidgetItem(job_row(info.cluster, info.job));
    const QString family =
        info.family.empty() ? tr("schedule") : QString::fromStdString(info.family);
    row->setText(kItemColumn, QStringLiteral("#%1 %2").arg(info.id).arg(family));
    row->setToolTip(
        kItemColumn,
        tr("schedule %1: %2, %3 placement, cap %4")
            .arg(info.id)
            .arg(family, PlacementName(info.placement))
            .arg(info.cap ? FormatMemory(*info.cap, listing_->MemoryUnitOf(info.cluster, info.job))
                          : tr("none")));
    row->setText(kRanksColumn, QString::number(info.ranks));
    row->setText(kMicrobatchesColumn, QString::number(info.microbatches));
    if (info.predicted.makespan > 0) {
      row->setText(kMakespanColumn, FormatMs(info.predicted.makespan));
      row->setText(kBubbleColumn, QString::number(info.predicted.bubble_rate, 'f', 4));
      row->setText(kPaperBubbleColumn, QString::number(info.predicted.paper_bubble_rate, 'f', 4));
    }
    row->setText(kOpsColumn, QString::number(info.num_ops));
    row->setText(kCreatedColumn, Created(info.created_at));
    registerRow(row, {ItemKind::kSchedule, info.id});
  }

  QTreeWidgetItem* unlinked = nullptr;
  for (const TimelineInfo& info : listing_->timelines) {
    QTreeWidgetItem* parent = nullptr;
    if (info.schedule_id) {
      auto it = rows_.find(Key({ItemKind::kSchedule, *info.schedule_id}));
      if (it != rows_.end()) parent = it->second;
    }
    if (parent == nullptr && info.run_id) {
      // A measured run without a schedule (a profiled or imported job) goes under its job.
      const auto run = std::find_if(listing_->runs.begin(), listing_->runs.end(),
                                    [&](const RunInfo& r) { return r.id == *info.run_id; });
      if (run != listing_->runs.end()) parent = job_row(run->cluster, run->job);
    }
    if (parent == nullptr) {
      if (unlinked == nullptr) {
        unlinked = Group(nullptr, tree_, tr("timelines without a schedule"));
      }
      parent = unlinked;
    }
    auto* row = new QTreeWidgetItem(parent);
    const bool measured = info.kind == TimelineKind::kMeasured;
    row->setText(kItemColumn, measured ? tr("#%1 measured run").arg(info.id)
                                       : tr("#%1 predicted timeline").arg(info.id));
    row->setToolTip(kItemColumn,
                    tr("timeline %1 (%2)").arg(info.id).arg(TimelineKindName(info.kind)));
    row->setText(kOpsColumn, QString::number(info.num_ops));
    row->setText(kCreatedColumn, Created(info.created_at));
    registerRow(row, {ItemKind::kTimeline, info.id});
  }

  std::map<std::pair<std::string, std::string>, QTreeWidgetItem*> profile_groups;
  for (const CostProfileInfo& info : listing_->profiles) {
    QTreeWidgetItem*& group = profile_groups[{info.cluster, info.job}];
    if (group == nullptr)
      group = Group(job_row(info.cluster, info.job), nullptr, tr("cost profiles"));
    auto* row = new QTreeWidgetItem(group);
    row->setText(kItemColumn,
                 QStringLiteral("#%1 %2").arg(info.id).arg(QString::fromStdString(info.name)));
    row->setToolTip(kItemColumn, QString::fromStdString(info.name));
    row->setText(kRanksColumn, QString::number(info.num_stages));
    row->setToolTip(kRanksColumn, tr("stages"));
    row->setText(kCreatedColumn, Created(info.created_at));
    registerRow(row, {ItemKind::kCostProfile, info.id});
  }
  // Frontiers sit under the job of the cost profile they were computed from, in a group of their
  // own (a job tuned with several grids or objectives has several).
  std::map<std::pair<std::string, std::string>, QTreeWidgetItem*> frontier_groups;
  for (const FrontierInfo& info : listing_->frontiers) {
    QTreeWidgetItem*& group = frontier_groups[{info.cluster, info.job}];
    if (group == nullptr) group = Group(job_row(info.cluster, info.job), nullptr, tr("frontiers"));
    auto* row = new QTreeWidgetItem(group);
    FillFrontierRow(row, info);
    registerRow(row, {ItemKind::kFrontier, info.id});
  }
  tree_->expandAll();
  // Cost profile groups stay folded: a tuned store holds one per schedule and they are rarely the
  // point.
  for (auto& [key, group] : profile_groups)
    group->setExpanded(false);
}

QTreeWidgetItem* StoreBrowser::rowFor(const ItemRef& ref) const {
  auto it = rows_.find(Key(ref));
  return it == rows_.end() ? nullptr : it->second;
}

int StoreBrowser::rowCount(ItemKind kind) const {
  return static_cast<int>(std::count_if(rows_.begin(), rows_.end(), [kind](const auto& entry) {
    return entry.first.first == static_cast<int>(kind);
  }));
}

std::vector<ItemRef> StoreBrowser::selectedRefs() const {
  std::vector<ItemRef> refs;
  for (const QTreeWidgetItem* row : tree_->selectedItems()) {
    if (auto ref = RefOf(row)) refs.push_back(*ref);
  }
  return refs;
}

void StoreBrowser::setShownItems(const std::vector<ItemRef>& refs) {
  const QSignalBlocker blocker(tree_);
  for (const ItemRef& ref : shown_) {
    if (QTreeWidgetItem* row = rowFor(ref)) {
      QFont font = row->font(0);
      font.setBold(false);
      row->setFont(0, font);
    }
  }
  shown_ = refs;
  tree_->clearSelection();
  for (const ItemRef& ref : shown_) {
    if (QTreeWidgetItem* row = rowFor(ref)) {
      QFont font = row->font(0);
      font.setBold(true);
      row->setFont(0, font);
      row->setSelected(true);
      tree_->scrollToItem(row);
    }
  }
  compare_button_->setEnabled(selectedRefs().size() == 2);
}

void StoreBrowser::selectRefs(const std::vector<ItemRef>& refs) {
  {
    const QSignalBlocker blocker(tree_);
    tree_->clearSelection();
    for (const ItemRef& ref : refs) {
      if (QTreeWidgetItem* row = rowFor(ref)) row->setSelected(true);
    }
  }
  onSelectionChanged();
}

void StoreBrowser::onSelectionChanged() {
  const std::vector<ItemRef> refs = selectedRefs();
  compare_button_->setEnabled(refs.size() == 2 && IsComparable(refs[0]) && IsComparable(refs[1]));
  if (refs.size() == 1) emit itemActivated(refs.front());
}

void StoreBrowser::compareSelected() {
  std::vector<ItemRef> refs = selectedRefs();
  if (refs.size() != 2) return;
  // Older first: a schedule above its later run, a baseline above what was tuned after it.
  // Timelines are newer than the schedules they belong to, so kind breaks the tie.
  std::sort(refs.begin(), refs.end(), [](const ItemRef& x, const ItemRef& y) {
    return std::make_pair(static_cast<int>(x.kind), x.id) <
           std::make_pair(static_cast<int>(y.kind), y.id);
  });
  emit compareRequested(refs[0], refs[1]);
}

void StoreBrowser::showContextMenu(const QPoint& pos) {
  const std::optional<ItemRef> clicked = RefOf(tree_->itemAt(pos));
  if (!clicked) return;
  QMenu menu(this);
  menu.addAction(tr("Show %1").arg(DescribeRef(*clicked)), this,
                 [this, ref = *clicked] { emit itemActivated(ref); });
  if (IsComparable(*clicked)) {
    if (shown_.size() == 1 && shown_.front() != *clicked && IsComparable(shown_.front())) {
      menu.addAction(
          tr("Compare with shown %1").arg(DescribeRef(shown_.front())), this,
          [this, shown = shown_.front(), ref = *clicked] { emit compareRequested(shown, ref); });
    }
    QAction* compare = menu.addAction(tr("Compare selected"), this, &StoreBrowser::compareSelected);
    compare->setEnabled(compare_button_->isEnabled());
  }
  menu.exec(tree_->viewport()->mapToGlobal(pos));
}

}  // namespace zb::gui
