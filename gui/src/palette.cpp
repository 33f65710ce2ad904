// SPDX-License-Identifier: Apache-2.0
#include "zbkit/gui/palette.h"

namespace zb::gui {

// Every colour differs from the others in at least one channel by a wide margin, so a pixel test
// can tell them apart exactly and a person can tell them apart at a glance; F/B/W also differ in
// lightness (dark blue, mid teal, light green) for the common colour-vision deficiencies.
QColor ColorOf(OpKind kind) {
  switch (kind) {
    case OpKind::kF:
      return QColor(0x2B, 0x6C, 0xC4);  // blue
    case OpKind::kB:
      return QColor(0x14, 0xA0, 0x9E);  // teal
    case OpKind::kW:
      return QColor(0x6C, 0xBF, 0x4A);  // green
    case OpKind::kBW:
      return QColor(0xF0, 0x8C, 0x28);  // orange
    case OpKind::kComm:
      return QColor(0x8E, 0x8E, 0x93);  // grey
  }
  return QColor(0x40, 0x40, 0x40);
}

QColor BackgroundColor() {
  return QColor(0xFF, 0xFF, 0xFF);
}
QColor BubbleColor() {
  return QColor(0xFB, 0xE3, 0xC8);
}  // light warm tint
QColor CapColor() {
  return QColor(0xD6, 0x27, 0x28);
}  // red
QColor HighlightColor() {
  return QColor(0xE0, 0x16, 0xB0);
}  // magenta
QColor MemoryColor() {
  return QColor(0x55, 0x35, 0x9A);
}  // dark purple

}  // namespace zb::gui
