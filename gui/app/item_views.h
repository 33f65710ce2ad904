// SPDX-License-Identifier: Apache-2.0
// How a loaded item is put into views: its full time range, its pane title in a comparison, and
// the one binding of an item to a legend, timeline and memory track that the main window and the
// screenshot report both use, so they show the same thing.
#ifndef ZBKIT_GUI_APP_ITEM_VIEWS_H_
#define ZBKIT_GUI_APP_ITEM_VIEWS_H_

#include <QLabel>
#include <QString>

#include "loader.h"
#include "zbkit/gui/view_state.h"
#include "zbkit/schemas/timeline_index.h"

namespace zb::gui {

class LegendWidget;
class MemoryTrack;
class TimelineView;

// The whole timeline: predicted ones from t = 0 (the makespan convention, so the warm-up bubble
// shows), measured ones from their first op (their clock has an arbitrary origin).
TimeRange FullRange(const TimelineIndex& index);

// A heading: a label in the bold version of its font.
QLabel* BoldLabel(const QString& text, QWidget* parent);

// "A: zb-v": the title of one pane of a comparison.
QString PaneLabel(const LoadedItem& item, char side);

// Shows a loaded item (which must have an index) in a legend, timeline and memory track that
// share `state`, fitted to the whole timeline.
void ShowItemInViews(const LoadedItem& item, LegendWidget* legend, TimelineView* timeline,
                     MemoryTrack* memory, ViewState* state);

}  // namespace zb::gui

#endif  // ZBKIT_GUI_APP_ITEM_VIEWS_H_
