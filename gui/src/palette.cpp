// SPDX-License-Identifier: Apache-2.0
#include "zbkit/gui/palette.h"

namespace zb::gui {

// Every data colour differs from the others in at least one channel by a wide margin, so a pixel
// test can tell them apart exactly and a person can tell them apart at a glance; F/B/W also differ
// in lightness (dark blue, mid teal, light green) for the common colour-vision deficiencies.
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

QColor SeparatorColor(OpKind kind) {
  return ColorOf(kind).darker(160);
}

// A quarter of the kind's colour over white: still the kind at a glance, clearly not busy, and
// distinct from the bubble tint and the background.
QColor WaitingColor(OpKind kind) {
  const QColor block = ColorOf(kind);
  auto mix = [](int channel) { return (channel + 3 * 0xFF) / 4; };
  return QColor(mix(block.red()), mix(block.green()), mix(block.blue()));
}

QColor BlockLabelColor(OpKind kind) {
  const QColor block = ColorOf(kind);
  const bool dark = 0.299 * block.red() + 0.587 * block.green() + 0.114 * block.blue() < 150;
  return dark ? QColor(0xFF, 0xFF, 0xFF) : QColor(0x20, 0x20, 0x20);
}

QColor BackgroundColor() {
  return QColor(0xFF, 0xFF, 0xFF);
}
QColor BubbleColor() {
  return QColor(0xFB, 0xE3, 0xC8);  // light warm tint
}
QColor CapColor() {
  return QColor(0xD6, 0x27, 0x28);  // red
}
QColor CheckpointedColor() {
  return QColor(0x1B, 0x1B, 0x1B);  // near black: a stripe over the stage's F/B/W colours
}
QColor HighlightColor() {
  return QColor(0xE0, 0x16, 0xB0);  // magenta
}
QColor MemoryColor() {
  return QColor(0x55, 0x35, 0x9A);  // dark purple
}
QColor MemoryEnvelopeColor() {
  return QColor(0xB7, 0xA2, 0xDC);
}
QColor MemoryFillColor() {
  return QColor(0xEC, 0xE5, 0xF6);
}
QColor IterationLineColor() {
  return QColor(0x6A, 0x3D, 0x9A);  // violet: apart from every op kind and the selection's blue
}

QColor WaitLinkColor() {
  return QColor(0x30, 0x30, 0x30, 190);
}
QColor OverCapTextColor() {
  return QColor(0xC6, 0x28, 0x28);
}

// Blue against orange, as in the ZB paper's frontier figure: they differ in hue and lightness, so
// the two series stay apart with the common colour-vision deficiencies and in greyscale prints.
QColor FrontierSeriesColor(std::string_view method, int series) {
  if (method == "search") return QColor(0x1F, 0x4E, 0x9C);     // deep blue
  if (method == "heuristic") return QColor(0xE5, 0x7A, 0x12);  // orange
  static const QColor kOthers[] = {
      QColor(0x2E, 0x9E, 0x5B),  // green
      QColor(0x8E, 0x44, 0xAD),  // purple
      QColor(0x9C, 0x5B, 0x2E),  // brown
      QColor(0xC2, 0x2E, 0x7A),  // magenta
  };
  constexpr int kNumOthers = static_cast<int>(sizeof(kOthers) / sizeof(kOthers[0]));
  return kOthers[((series % kNumOthers) + kNumOthers) % kNumOthers];
}

QColor TextColor() {
  return QColor(0x20, 0x20, 0x20);
}
QColor SecondaryTextColor() {
  return QColor(0x60, 0x60, 0x66);
}
QColor MemoryLabelColor() {
  return QColor(0x40, 0x40, 0x46);
}
QColor PlaceholderColor() {
  return QColor(0x70, 0x70, 0x70);
}
QColor RulerColor() {
  return QColor(0xF3, 0xF4, 0xF6);
}
QColor LabelColumnColor() {
  return QColor(0xF7, 0xF7, 0xF8);
}
QColor FrameColor() {
  return QColor(0xC8, 0xC8, 0xCC);
}
QColor RankRuleColor() {
  return QColor(0xDD, 0xDD, 0xE0);
}
QColor MemoryRowRuleColor() {
  return QColor(0xE2, 0xE2, 0xE6);
}
QColor HoverLineColor() {
  return QColor(0, 0, 0, 110);
}
QColor SelectionColor(int alpha) {
  return QColor(40, 90, 200, alpha);
}
QColor SelectionTextColor() {
  return QColor(0xFF, 0xFF, 0xFF);
}
QColor PageColor() {
  return QColor(0xFF, 0xFF, 0xFF);
}
QColor BannerColor() {
  return QColor(0xFD, 0xEC, 0xEA);
}
QColor BannerBorderColor() {
  return QColor(0xE0, 0xA8, 0xA3);
}
QColor BannerTextColor() {
  return QColor(0x61, 0x1A, 0x15);
}

}  // namespace zb::gui
