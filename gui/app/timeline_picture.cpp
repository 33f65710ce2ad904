// SPDX-License-Identifier: Apache-2.0
#include "timeline_picture.h"

#include <QLabel>
#include <QVBoxLayout>
#include <algorithm>

#include "item_views.h"
#include "summary_panel.h"
#include "zbkit/gui/compare_view.h"
#include "zbkit/gui/legend.h"
#include "zbkit/gui/memory_track.h"
#include "zbkit/gui/palette.h"
#include "zbkit/gui/timeline_view.h"
#include "zbkit/gui/units.h"
#include "zbkit/gui/view_state.h"

namespace zb::gui {
namespace {

QLabel* TitleLabel(const QString& text, QWidget* parent) {
  QLabel* label = BoldLabel(text, parent);
  label->setContentsMargins(6, 4, 6, 2);
  return label;
}

void Configure(TimelineView* view, const PictureOptions& options) {
  view->setLaneHeight(options.lane_height);
  view->setShowStageLanes(options.stage_lanes);
  view->setAllRanksCollapsed(options.fold_all);
  view->setShowWaitLinks(options.wait_links);
}

}  // namespace

QString SideTitle(const LoadedItem& item, char side) {
  QString title = QString::fromStdString(item.title);
  if (side != 0) title = QStringLiteral("%1: %2").arg(QChar::fromLatin1(side)).arg(title);
  if (item.caps.empty()) return title + QStringLiteral("  |  no memory cap");
  const double cap = *std::max_element(item.caps.begin(), item.caps.end());
  QString cap_text = FormatMemory(cap, item.memory_unit);
  if (item.memory_unit == MemoryUnit::kProfileUnits) {
    cap_text += QStringLiteral(" (%1)").arg(MemoryUnitName(item.memory_unit));
  }
  return title + QStringLiteral("  |  cap %1").arg(cap_text);
}

std::unique_ptr<QWidget> WholeTimelinePicture(const LoadedItem& a, const LoadedItem* b,
                                              const PictureOptions& options) {
  auto page = std::make_unique<QWidget>();
  QPalette palette = page->palette();
  palette.setColor(QPalette::Window, PageColor());
  page->setPalette(palette);
  page->setAutoFillBackground(true);
  auto* layout = new QVBoxLayout(page.get());
  layout->setContentsMargins(6, 6, 6, 6);
  layout->setSpacing(2);
  auto* legend = new LegendWidget(page.get());
  layout->addWidget(legend);
  int height = 12 + legend->sizeHint().height() + 2;
  if (b == nullptr) {
    QLabel* title = TitleLabel(SideTitle(a, 0), page.get());
    layout->addWidget(title);
    auto* state = new ViewState(page.get());
    auto* timeline = new TimelineView(page.get());
    auto* memory = new MemoryTrack(page.get());
    ShowItemInViews(a, legend, timeline, memory, state);
    Configure(timeline, options);
    timeline->setFixedHeight(timeline->sizeHint().height());
    layout->addWidget(timeline);
    height += title->sizeHint().height() + 2 + timeline->height() + 2;
    if (a.index->has_memory()) {
      // MemoryTrack draws each rank at least 18 px (+3 px gap).
      memory->setFixedHeight(2 + a.index->num_ranks() * 21);
      layout->addWidget(memory);
      height += memory->height() + 2;
    } else {
      memory->hide();
    }
  } else {
    legend->setKinds(KindsIn(*a.index) | KindsIn(*b->index));
    legend->setShowDeviceIdle(a.index->has_op_detail() || b->index->has_op_detail());
    legend->setShowMemoryCap(false);
    // The titles in full above the panes (a pane's own title is cut to its label column).
    for (const QString& text : {SideTitle(a, 'A'), SideTitle(*b, 'B')}) {
      QLabel* title = TitleLabel(text, page.get());
      layout->addWidget(title);
      height += title->sizeHint().height() + 2;
    }
    auto* compare = new CompareView(page.get());
    compare->setTimelines(a.index, QStringLiteral("A"), b->index, QStringLiteral("B"));
    const TimeRange ra = FullRange(*a.index);
    const TimeRange rb = FullRange(*b->index);
    compare->viewState()->setTraceRange({std::min(ra.t0, rb.t0), std::max(ra.t1, rb.t1)});
    int panes = 0;
    for (TimelineView* view : {compare->top(), compare->bottom()}) {
      Configure(view, options);
      view->setFixedHeight(view->sizeHint().height());
      panes += view->height();
    }
    // The per-rank table under the panes: its rows at their natural height.
    const int compare_height = compare->minimumSizeHint().height() + 40 +
                               24 * std::max(a.index->num_ranks(), b->index->num_ranks());
    compare->setFixedHeight(std::max(compare_height, panes + 120));
    layout->addWidget(compare);
    height += compare->height() + 2;
  }
  page->resize(options.width, height);
  return page;
}

}  // namespace zb::gui
