// SPDX-License-Identifier: Apache-2.0
// The colours of op kinds, shared by every view, the legend and the tests that check pixels.
// PyTorch's schedule visualiser colours (F blue, B teal, W green, fused backward orange), comm
// grey; bubbles are background with a light warm tint. Chosen to stay distinguishable with the
// common colour-vision deficiencies (blue/orange/teal/green differ in lightness too).
#ifndef ZBKIT_GUI_PALETTE_H_
#define ZBKIT_GUI_PALETTE_H_

#include <QColor>

#include "zbkit/schemas/types.h"

namespace zb::gui {

QColor ColorOf(OpKind kind);
QColor BackgroundColor();  // outside any rank's activity
QColor BubbleColor();      // idle time between a rank's first and last op
QColor CapColor();         // the memory cap line
QColor HighlightColor();   // outline of ops that differ in a comparison
QColor MemoryColor();      // the memory curve (its envelope and fill are lighter shades)

}  // namespace zb::gui

#endif  // ZBKIT_GUI_PALETTE_H_
