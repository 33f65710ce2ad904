// SPDX-License-Identifier: Apache-2.0
#include "zbkit/gui/units.h"

#include <cmath>

namespace zb::gui {

QString FormatMemory(double value, MemoryUnit unit) {
  if (!std::isfinite(value)) return QStringLiteral("none");
  const double magnitude = std::fabs(value);
  if (unit == MemoryUnit::kBytes) {
    static const char* const kPrefixes[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (magnitude < 1024) return QStringLiteral("%1 B").arg(std::llround(value));
    double scaled = value / 1024;
    int prefix = 0;
    while (std::fabs(scaled) >= 1024 && prefix < 4) {
      scaled /= 1024;
      ++prefix;
    }
    // Three significant digits: "1.50 GiB", "12.0 MiB", "512 KiB".
    const int decimals = std::fabs(scaled) < 10 ? 2 : (std::fabs(scaled) < 100 ? 1 : 0);
    return QStringLiteral("%1 %2")
        .arg(scaled, 0, 'f', decimals)
        .arg(QLatin1String(kPrefixes[prefix]));
  }
  if (magnitude < 1e6) return QString::number(value, 'f', magnitude < 100 ? 2 : 0);
  return QString::number(value, 'g', 3);
}

QString MemoryUnitName(MemoryUnit unit) {
  return unit == MemoryUnit::kBytes ? QStringLiteral("bytes") : QStringLiteral("units of M_B");
}

}  // namespace zb::gui
