// SPDX-License-Identifier: Apache-2.0
// A rank's shard (the injection library's SQLite file, zb profile's input): any bytes either get
// an error or a trace that analyzes to an error or a profile.
#include "fuzz_support.h"
#include "zbkit/profiler/analyze.h"
#include "zbkit/profiler/shard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zb::fuzz::InputFile file(data, size, ".zbshard");
  auto trace = zb::profiler::ReadShard(file.path());
  if (!trace.ok()) return 0;
  std::vector<zb::profiler::RawTrace> traces;
  traces.push_back(std::move(*trace));
  (void)zb::profiler::Analyze(traces, file.path(), zb::profiler::AnalyzeSettings{});
  return 0;
}
