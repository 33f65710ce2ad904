// SPDX-License-Identifier: Apache-2.0
#include "zbkit/schemas/time_text.h"

#include <cstdio>

namespace zb {
namespace {

std::string Fixed3(double value, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3f%s", value, unit);
  return buffer;
}

}  // namespace

std::string FormatMs(TimeNs ns) {
  return Fixed3(static_cast<double>(ns) / 1e6, "");
}

std::string FormatTime(TimeNs ns) {
  const TimeNs magnitude = ns < 0 ? -ns : ns;
  if (magnitude >= kNsPerMs) return Fixed3(NsToMs(ns), " ms");
  if (magnitude >= 1000) return Fixed3(static_cast<double>(ns) / 1e3, " us");
  return std::to_string(ns) + " ns";
}

std::string FormatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", seconds);
  return text;
}

}  // namespace zb
