// SPDX-License-Identifier: Apache-2.0
// Every colour zbview draws with, in one place: the op kinds shared by every view, the legend and
// the tests that check pixels, and the chrome around them (rulers, labels, selection, banners).
// No other file in gui/ names a colour, so a change of palette is a change of this file.
// PyTorch's schedule visualiser colours (F blue, B teal, W green, fused backward orange), comm
// grey; bubbles are background with a light warm tint. Chosen to stay distinguishable with the
// common colour-vision deficiencies (blue/orange/teal/green differ in lightness too).
#ifndef ZBKIT_GUI_PALETTE_H_
#define ZBKIT_GUI_PALETTE_H_

#include <QColor>
#include <string_view>

#include "zbkit/schemas/types.h"

namespace zb::gui {

// Data.
QColor ColorOf(OpKind kind);
QColor SeparatorColor(OpKind kind);   // first column of a wide block abutting another one
QColor WaitingColor(OpKind kind);     // a measured op's span while its device did nothing
QColor BlockLabelColor(OpKind kind);  // microbatch numbers inside a block: legible on its colour
QColor BackgroundColor();             // outside any rank's activity
QColor BubbleColor();                 // idle time between a rank's first and last op
QColor CapColor();                    // the memory cap line
QColor CheckpointedColor();           // the share of a stage's blocks a memory plan checkpoints
QColor HighlightColor();              // outline of ops that differ in a comparison
QColor MemoryColor();          // the memory curve: its last value per column, the peak marker
QColor MemoryEnvelopeColor();  // min..max of the curve inside a column
QColor MemoryFillColor();      // under the curve
QColor WaitLinkColor();        // the line from an op that waited to the op it waited for
QColor IterationLineColor();   // where an iteration of a measured run begins, and its label
QColor OverCapTextColor();     // table cells of a peak above its cap
// One series of a memory-vs-bubble frontier plot: "search" and "heuristic" have colours of their
// own, any other method the `series`-th of a few more (series = its position among the methods).
QColor FrontierSeriesColor(std::string_view method, int series);

// Chrome.
QColor TextColor();           // rank labels, titles, the text of exported pictures
QColor SecondaryTextColor();  // stage and comm lane labels, ruler ticks
QColor MemoryLabelColor();    // the rank labels of the memory track
QColor PlaceholderColor();    // "No timeline loaded" and the like
QColor RulerColor();          // background of the time ruler
QColor LabelColumnColor();    // background of the lane label column
QColor FrameColor();          // the lines that frame the label column and the ruler
QColor RankRuleColor();       // the faint rule between ranks in the label column
QColor MemoryRowRuleColor();  // the line under each rank of the memory track
QColor HoverLineColor();      // the vertical line at the hovered time
// The selection's blue at opacity `alpha`: its band over lanes (40; 30 over the memory curves),
// its edges (200), the tag with its summary (220), whose text is SelectionTextColor.
QColor SelectionColor(int alpha);
QColor SelectionTextColor();
QColor PageColor();  // background of exported pictures and of the screenshot report
// The error banner of the main window.
QColor BannerColor();
QColor BannerBorderColor();
QColor BannerTextColor();

}  // namespace zb::gui

#endif  // ZBKIT_GUI_PALETTE_H_
