// SPDX-License-Identifier: Apache-2.0
// The Chrome-trace / Kineto importer (zb import, zb profile --torch) and the analysis behind it:
// any text either gets an error or traces that attribute and aggregate to an error or a profile.
#include "fuzz_support.h"
#include "zbkit/profiler/analyze.h"
#include "zbkit/profiler/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto traces = zb::profiler::ParseChromeTrace(zb::fuzz::AsText(data, size), "fuzz.json");
  if (!traces.ok()) return 0;
  (void)zb::profiler::Analyze(*traces, "fuzz.json", zb::profiler::AnalyzeSettings{});
  return 0;
}
