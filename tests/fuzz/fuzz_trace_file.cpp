// SPDX-License-Identifier: Apache-2.0
// A trace file as `zb import FILE` reads it: the format told from the bytes (SQLite for an
// Nsight Systems export, gzip or plain JSON for a Chrome trace), then imported and analyzed.
// Mutating a bundled nsys export or a gzip trace lands here.
#include "fuzz_support.h"
#include "zbkit/profiler/analyze.h"
#include "zbkit/profiler/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zb::fuzz::InputFile file(data, size, ".trace");
  auto traces = zb::profiler::ImportTrace(file.path());
  if (!traces.ok()) return 0;
  (void)zb::profiler::Analyze(*traces, file.path(), zb::profiler::AnalyzeSettings{});
  return 0;
}
