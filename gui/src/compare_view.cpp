// SPDX-License-Identifier: Apache-2.0
#include "zbkit/gui/compare_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <set>

#include "zbkit/gui/palette.h"

namespace zb::gui {
namespace {

// Same tolerance as CompareTimelines' default, so that the outlines and the count agree.
constexpr double kRelativeTolerance = 0.01;

QString Ms(TimeNs t) {
  return QString::number(NsToMs(t), 'f', 3);
}

QString SignedMs(TimeNs t) {
  return (t > 0 ? QStringLiteral("+") : QString()) + QString::number(NsToMs(t), 'f', 3);
}

}  // namespace

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  state_ = new ViewState(this);
  top_ = new TimelineView(this);
  bottom_ = new TimelineView(this);
  top_->setViewState(state_);
  bottom_->setViewState(state_);
  summary_ = new QLabel(this);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setWordWrap(true);
  summary_->setContentsMargins(6, 4, 6, 4);
  table_ = new QTableWidget(this);
  table_->setColumnCount(7);
  table_->setHorizontalHeaderLabels({tr("rank"), tr("busy A (ms)"), tr("busy B (ms)"),
                                     tr("busy delta"), tr("end A (ms)"), tr("end B (ms)"),
                                     tr("end delta")});
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);

  auto* splitter = new QSplitter(Qt::Vertical, this);
  splitter->addWidget(top_);
  splitter->addWidget(bottom_);
  splitter->addWidget(table_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 3);
  splitter->setStretchFactor(2, 1);
  splitter->setChildrenCollapsible(false);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(summary_);
  layout->addWidget(splitter, 1);
}

void CompareView::setTimelines(std::shared_ptr<const TimelineIndex> a, const QString& label_a,
                               std::shared_ptr<const TimelineIndex> b, const QString& label_b) {
  label_a_ = label_a;
  label_b_ = label_b;
  top_->setTitle(label_a);
  bottom_->setTitle(label_b);
  top_->setTimeline(a);
  bottom_->setTimeline(b);
  comparison_ = {};
  if (!a || !b) {
    top_->setHighlighted({});
    bottom_->setHighlighted({});
    summary_->setText(summaryText());
    table_->setRowCount(0);
    return;
  }
  // Both panes share one window over the union of the two traces (setTimeline set each's own).
  const TimeNs begin = std::min(a->begin(), b->begin());
  const TimeNs end = std::max(a->end(), b->end());
  const TimeNs pad = std::max<TimeNs>((end - begin) / 100, 1);
  state_->setTraceRange({begin - pad, end + pad});
  // One origin, so that both rulers label the same x with the same time.
  const TimeNs origin = std::min(top_->timeOrigin(), bottom_->timeOrigin());
  top_->setTimeOrigin(origin);
  bottom_->setTimeOrigin(origin);
  // The same label column width in both panes, so that equal times are at equal x.
  top_->setMinimumLaneLabelWidth(0);
  bottom_->setMinimumLaneLabelWidth(0);
  const int label_width = std::max({top_->laneLabelWidth(), bottom_->laneLabelWidth(), 90});
  top_->setMinimumLaneLabelWidth(label_width);
  bottom_->setMinimumLaneLabelWidth(label_width);

  comparison_ = CompareTimelines(*a, *b, kRelativeTolerance);
  // Ops present on one side only are differences worth outlining when both timelines cut the
  // model into the same stages (1F1B's BW against ZB-H1's B and W). When the cuts differ (a V
  // schedule's 2p chunks against 1F1B's p stages) almost nothing matches by construction, and
  // outlining every block would hide the real differences: then only the per-rank figures
  // compare, and the summary says so.
  std::set<std::pair<int, size_t>> in_a;
  std::set<std::pair<int, size_t>> in_b;
  if (SameStageLayout()) {
    in_a.insert(comparison_.only_in_a.begin(), comparison_.only_in_a.end());
    in_b.insert(comparison_.only_in_b.begin(), comparison_.only_in_b.end());
  }
  for (const OpMatch& match : comparison_.matches) {
    if (!OpsDiffer(match, *a, *b, kRelativeTolerance)) continue;
    in_a.emplace(match.lane_a, match.index_a);
    in_b.emplace(match.lane_b, match.index_b);
  }
  top_->setHighlighted(std::move(in_a));
  bottom_->setHighlighted(std::move(in_b));
  summary_->setText(summaryText());

  const size_t ranks = std::max({comparison_.busy_a.size(), comparison_.busy_b.size(),
                                 comparison_.end_a.size(), comparison_.end_b.size()});
  const auto at = [](const std::vector<TimeNs>& v, size_t i) { return i < v.size() ? v[i] : 0; };
  table_->setRowCount(static_cast<int>(ranks));
  for (size_t r = 0; r < ranks; ++r) {
    const TimeNs busy_a = at(comparison_.busy_a, r);
    const TimeNs busy_b = at(comparison_.busy_b, r);
    const TimeNs end_a = at(comparison_.end_a, r);
    const TimeNs end_b = at(comparison_.end_b, r);
    const QStringList cells = {QString::number(r),        Ms(busy_a), Ms(busy_b),
                               SignedMs(busy_b - busy_a), Ms(end_a),  Ms(end_b),
                               SignedMs(end_b - end_a)};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      table_->setItem(static_cast<int>(r), c, item);
    }
  }
  table_->setHorizontalHeaderLabels({tr("rank"), tr("busy %1 (ms)").arg(label_a),
                                     tr("busy %1 (ms)").arg(label_b), tr("busy delta"),
                                     tr("end %1 (ms)").arg(label_a), tr("end %1 (ms)").arg(label_b),
                                     tr("end delta")});
}

bool CompareView::SameStageLayout() const {
  return top_->timeline() && bottom_->timeline() &&
         top_->timeline()->num_stages() == bottom_->timeline()->num_stages() &&
         top_->timeline()->num_ranks() == bottom_->timeline()->num_ranks();
}

QString CompareView::summaryText() const {
  if (!top_->timeline() || !bottom_->timeline()) return tr("Nothing to compare");
  const TimelineComparison& c = comparison_;
  const double a = NsToMs(c.makespan_a);
  const double b = NsToMs(c.makespan_b);
  const double change = c.makespan_a > 0 ? (b - a) / a * 100.0 : 0.0;
  const int64_t total =
      static_cast<int64_t>(c.matches.size() + c.only_in_a.size() + c.only_in_b.size());
  QString text = QStringLiteral("makespan %1 -> %2 ms (%3%4%), %5 of %6 ops differ")
                     .arg(a, 0, 'f', 1)
                     .arg(b, 0, 'f', 1)
                     .arg(change > 0 ? QStringLiteral("+") : QString())
                     .arg(change, 0, 'f', 1)
                     .arg(c.differing)
                     .arg(total);
  if (!SameStageLayout()) {
    return text + QStringLiteral(
                      "; stage layouts differ (%1 vs %2 stages): ops match only where "
                      "(stage, kind, microbatch) coincide, compare per-rank figures")
                      .arg(top_->timeline()->num_stages())
                      .arg(bottom_->timeline()->num_stages());
  }
  if (!c.only_in_a.empty()) {
    text += QStringLiteral(", %1 only in %2").arg(c.only_in_a.size()).arg(label_a_);
  }
  if (!c.only_in_b.empty()) {
    text += QStringLiteral(", %1 only in %2").arg(c.only_in_b.size()).arg(label_b_);
  }
  return text;
}

}  // namespace zb::gui
