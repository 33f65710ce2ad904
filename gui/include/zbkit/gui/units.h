// SPDX-License-Identifier: Apache-2.0
// How zbview writes memory: one rule for every view (docs/zbview.md §10). A profile measured or
// estimated from a real job counts bytes, shown with binary prefixes; a profile written by hand
// or taken from the paper counts in its own units, those of its M_B, shown as bare numbers with
// the unit named where the figures are introduced. Both sides of a comparison use one unit.
#ifndef ZBKIT_GUI_UNITS_H_
#define ZBKIT_GUI_UNITS_H_

#include <QString>

#include "zbkit/gui/memory_unit.h"

namespace zb::gui {

// Bytes: "512 B", "1.50 KiB", "12.0 MiB", "1.50 GiB", "2.00 TiB". Profile units: "800", "0.25",
// "1.25e+07". "none" for a value that is not finite (no cap).
QString FormatMemory(double value, MemoryUnit unit);
// "bytes" or "units of M_B": what the bare figures of a table or caption count.
QString MemoryUnitName(MemoryUnit unit);

}  // namespace zb::gui

#endif  // ZBKIT_GUI_UNITS_H_
