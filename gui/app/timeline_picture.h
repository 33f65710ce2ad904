// SPDX-License-Identifier: Apache-2.0
// The picture File -> Export writes for a timeline or a comparison: the whole timeline (every
// lane at a readable height, the whole time range), not a grab of the screen, under titles that
// identify each side by id, family and memory cap (docs/zbview.md §9).
#ifndef ZBKIT_GUI_APP_TIMELINE_PICTURE_H_
#define ZBKIT_GUI_APP_TIMELINE_PICTURE_H_

#include <QString>
#include <QWidget>
#include <memory>

#include "loader.h"

namespace zb::gui {

struct PictureOptions {
  int width = 1600;
  int lane_height = 24;  // px of a rank lane (View -> Lane Height, or 24 when fitting the window)
  bool stage_lanes = true;
  bool fold_all = false;
  bool wait_links = true;
};

// "A: schedule 2: zb-h1, p=4 m=8 | cap 800 (units of M_B)": the title of one side (side 0: no
// "A: " prefix). The cap is the largest per-rank cap, in the units of the item's memory figures.
QString SideTitle(const LoadedItem& item, char side);

// A widget, never shown, holding the picture of `a` (and the comparison with `b`, when given) at
// options.width and the height everything needs. Both items must have an index.
std::unique_ptr<QWidget> WholeTimelinePicture(const LoadedItem& a, const LoadedItem* b,
                                              const PictureOptions& options);

}  // namespace zb::gui

#endif  // ZBKIT_GUI_APP_TIMELINE_PICTURE_H_
