// SPDX-License-Identifier: Apache-2.0
// The unit of zbview's memory figures (docs/zbview.md §10): bytes for a profile measured or
// estimated from a real job, else the profile's own units (those of its M_B). Which one an item
// uses is the model's question (StoreListing::MemoryUnitOf); how it is written, the widgets'
// (zbkit/gui/units.h).
#ifndef ZBKIT_GUI_MEMORY_UNIT_H_
#define ZBKIT_GUI_MEMORY_UNIT_H_

namespace zb::gui {

enum class MemoryUnit {
  kProfileUnits,  // the units of the profile's M_B
  kBytes,
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_MEMORY_UNIT_H_
