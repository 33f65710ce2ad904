// SPDX-License-Identifier: Apache-2.0
// How zbkit writes a time for people, in one place: the CLI's tables and messages, zbview's
// panels, tooltips and ruler. Times are TimeNs (nanoseconds, types.h) everywhere inside zbkit.
#ifndef ZBKIT_SCHEMAS_TIME_TEXT_H_
#define ZBKIT_SCHEMAS_TIME_TEXT_H_

#include <string>

#include "zbkit/schemas/types.h"

namespace zb {

// Milliseconds with three decimals, without the unit: "1456.749" (tables, where the column
// header says "ms", and sentences that add it).
std::string FormatMs(TimeNs ns);

// With the unit that keeps it readable at any zoom: "12.345 ms" from a millisecond up, "4.500 us"
// from a microsecond up, else "800 ns".
std::string FormatTime(TimeNs ns);

// Seconds with one decimal and the unit, for waits and ages a person reads ("31.0 s").
std::string FormatSeconds(double seconds);

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_TIME_TEXT_H_
