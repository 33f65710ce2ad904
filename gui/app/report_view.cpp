// SPDX-License-Identifier: Apache-2.0
#include "report_view.h"

#include <QFileInfo>
#include <QLabel>
#include <QVBoxLayout>
#include <algorithm>
#include <tuple>

#include "item_views.h"
#include "summary_panel.h"
#include "zbkit/gui/compare_view.h"
#include "zbkit/gui/frontier_view.h"
#include "zbkit/gui/legend.h"
#include "zbkit/gui/memory_track.h"
#include "zbkit/gui/palette.h"
#include "zbkit/gui/timeline_view.h"
#include "zbkit/gui/view_state.h"

namespace zb::gui {

ReportView::ReportView(QWidget* parent) : QWidget(parent) {
  setAttribute(Qt::WA_DontShowOnScreen);
  setAutoFillBackground(true);
  QPalette colours = palette();
  colours.setColor(QPalette::Window, PageColor());
  colours.setColor(QPalette::WindowText, TextColor());
  setPalette(colours);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(12, 8, 12, 8);
  layout->setSpacing(4);
  title_ = new QLabel(this);
  QFont title_font = title_->font();
  title_font.setBold(true);
  title_font.setPointSizeF(title_font.pointSizeF() * 1.3);
  title_->setFont(title_font);
  subtitle_ = new QLabel(this);
  legend_ = new LegendWidget(this);
  layout->addWidget(title_);
  layout->addWidget(subtitle_);
  layout->addWidget(legend_);

  state_ = new ViewState(this);
  timeline_ = new TimelineView(this);
  timeline_->setViewState(state_);
  memory_ = new MemoryTrack(this);
  memory_->setViewState(state_);
  memory_->setLabelWidth(timeline_->laneLabelWidth());
  compare_ = new CompareView(this);
  compare_->hide();
  frontier_ = new FrontierView(this);
  frontier_->hide();
  // The timeline grows first; what it and the memory rows cannot use collects under the summary
  // (the spacer's small stretch), so the picture never shows half-empty lanes areas.
  layout->addWidget(timeline_, 100);
  layout->addWidget(memory_, 30);
  layout->addWidget(compare_, 100);
  layout->addWidget(frontier_, 100);

  summary_ = new QLabel(this);
  summary_->setTextFormat(Qt::PlainText);
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  layout->addStretch(1);
}

void ReportView::setHeader(const LoadedItem& item, const QString& title) {
  title_->setText(title);
  QString subtitle = QFileInfo(QString::fromStdString(item.store_path)).fileName();
  if (!item.context.empty())
    subtitle += QStringLiteral("  |  ") + QString::fromStdString(item.context);
  if (item.schedule) {
    const ScheduleInfo& info = *item.schedule;
    subtitle += QStringLiteral("  |  %1, p=%2 m=%3")
                    .arg(info.family.empty() ? QStringLiteral("schedule")
                                             : QString::fromStdString(info.family))
                    .arg(info.ranks)
                    .arg(info.microbatches);
    if (info.chunks > 1) subtitle += QStringLiteral(" v=%1").arg(info.chunks);
    subtitle += QStringLiteral(", %1 placement").arg(PlacementName(info.placement));
  }
  subtitle_->setText(subtitle);
}

void ReportView::setItem(std::shared_ptr<const LoadedItem> item) {
  compare_->hide();
  const bool frontier = item && item->frontier;
  timeline_->setVisible(!frontier);
  memory_->setVisible(!frontier);
  legend_->setVisible(!frontier);  // the plot draws its own
  frontier_->setVisible(frontier);
  if (!item) return;
  setHeader(*item, QString::fromStdString(item->title));
  if (frontier) frontier_->setFrontier(item->frontier);
  if (item->index) {
    ShowItemInViews(*item, legend_, timeline_, memory_, state_);
    // Per-stage lanes explain V and interleaved schedules, but past a few dozen lanes they leave
    // each lane too thin to read.
    timeline_->setShowStageLanes(item->index->lanes().size() <= 40);
  }
  summary_lines_ = SummaryLines(*item);
  summary_->setText(summary_lines_.join(u'\n'));
  item_ = std::move(item);
}

void ReportView::setComparison(std::shared_ptr<const LoadedItem> a,
                               std::shared_ptr<const LoadedItem> b) {
  if (!a || !b || !a->index || !b->index) return;
  std::tie(a, b) = ComparedSides(std::move(a), std::move(b));  // the median iteration
  item_.reset();
  timeline_->hide();
  memory_->hide();
  frontier_->hide();
  legend_->show();
  compare_->show();
  setHeader(*a, QStringLiteral("%1  vs  %2")
                    .arg(QString::fromStdString(a->title), QString::fromStdString(b->title)));
  legend_->setKinds(KindsIn(*a->index) | KindsIn(*b->index));
  legend_->setShowDeviceIdle(a->index->has_op_detail() || b->index->has_op_detail());
  legend_->setShowMemoryCap(false);
  compare_->setTimelines(a->index, PaneLabel(*a, 'A'), b->index, PaneLabel(*b, 'B'));
  const TimeRange ra = FullRange(*a->index);
  const TimeRange rb = FullRange(*b->index);
  compare_->viewState()->setTraceRange({std::min(ra.t0, rb.t0), std::max(ra.t1, rb.t1)});
  // CompareView prints its own line (ops that differ); these are the figures beside it.
  summary_lines_ = ComparisonLines(*a, *b);
  summary_->setText(summary_lines_.join(u'\n'));
}

void ReportView::fitMemoryTrack(QSize size) {
  if (!item_ || !item_->index || !item_->index->has_memory()) return;
  // MemoryTrack keeps its rows at least 18 px (+3 px gap) and clips the ranks that do not fit, so
  // it gets that much or nothing: a clipped track would silently drop ranks. Up to 40% of what
  // the header and summary leave; the timeline takes the rest.
  const int ranks = item_->index->num_ranks();
  const int needed = 2 + ranks * 21;
  const int room = size.height() - 220;
  const bool fits = needed <= room * 2 / 5;
  memory_->setVisible(fits);
  legend_->setShowMemoryCap(fits && !item_->caps.empty());
  memory_->setMinimumHeight(fits ? needed : 0);
  memory_->setMaximumHeight(fits ? std::max(needed, memory_->sizeHint().height())
                                 : QWIDGETSIZE_MAX);
  // TimelineView's lanes stop growing at 40 px (its size hint counts 28 px a lane, plus 48 px of
  // ruler and margin); beyond that the extra height would only be blank.
  const int hint = timeline_->sizeHint().height();
  timeline_->setMaximumHeight(48 + (hint - 48) * 10 / 7 + 8);
  QStringList lines = summary_lines_;
  if (!fits) {
    lines << tr("memory track left out: %1 ranks need %2 px of it; a taller --size (e.g. "
                "--size %3x%4) shows it")
                 .arg(ranks)
                 .arg(needed)
                 .arg(size.width())
                 .arg(needed * 5 / 2 + 220);
  }
  summary_->setText(lines.join(u'\n'));
}

QImage ReportView::renderImage(QSize size) {
  resize(size);
  fitMemoryTrack(size);
  // Never shown: QWidget::render() polishes and lays out a hidden widget itself, and painting
  // into an image of exactly `size` ignores the screen's pixel ratio.
  QImage image(size, QImage::Format_ARGB32_Premultiplied);
  image.setDevicePixelRatio(1.0);
  image.fill(PageColor());
  render(&image);
  return image;
}

QString ReportView::titleText() const {
  return title_->text();
}
QString ReportView::summaryText() const {
  return summary_->text();
}

}  // namespace zb::gui
