// SPDX-License-Identifier: Apache-2.0
#include "item_views.h"

#include <algorithm>

#include "zbkit/gui/legend.h"
#include "zbkit/gui/memory_track.h"
#include "zbkit/gui/timeline_view.h"

namespace zb::gui {

QLabel* BoldLabel(const QString& text, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  QFont font = label->font();
  font.setBold(true);
  label->setFont(font);
  return label;
}

TimeRange FullRange(const TimelineIndex& index) {
  const TimeNs t0 =
      index.kind() == TimelineKind::kPredicted ? std::min<TimeNs>(0, index.begin()) : index.begin();
  return {t0, std::max(index.end(), t0 + ViewState::kMinimumSpan)};
}

QString PaneLabel(const LoadedItem& item, char side) {
  // The pane title sits in the lane-label corner: short, the full titles are in the header.
  return QStringLiteral("%1: %2")
      .arg(QLatin1Char(side))
      .arg(QString::fromStdString(item.short_label));
}

void ShowItemInViews(const LoadedItem& item, LegendWidget* legend, TimelineView* timeline,
                     MemoryTrack* memory, ViewState* state) {
  legend->setKinds(KindsIn(*item.index));
  legend->setShowDeviceIdle(item.index->has_op_detail());
  legend->setShowMemoryCap(item.index->has_memory() && !item.caps.empty());
  timeline->setTimeline(item.index);
  timeline->setTitle(QString::fromStdString(item.short_label));
  memory->setTimeline(item.index);
  memory->setCaps(item.caps);
  memory->setMemoryUnit(item.memory_unit);
  memory->setLabelWidth(timeline->laneLabelWidth());
  memory->setVisible(item.index->has_memory());
  state->setTraceRange(FullRange(*item.index));
}

}  // namespace zb::gui
