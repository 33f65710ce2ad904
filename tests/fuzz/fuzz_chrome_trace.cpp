// SPDX-License-Identifier: Apache-2.0
// The Chrome-trace / Kineto importer (zb import, zb profile --torch) and the analysis behind it:
// any text either gets an error or traces that attribute and aggregate to an error or a profile.
// A measured timeline that comes out of it goes out again (zb trace): its Perfetto trace must pass
// the structural check (no overlapping or nested slices, every flow closed, counters in order),
// and its Kineto documents must import again to the same number of compute ops.
#include <cstdlib>

#include "fuzz_support.h"
#include "zbkit/profiler/analyze.h"
#include "zbkit/profiler/import.h"
#include "zbkit/traces/trace_export.h"

namespace {

void ExportAgain(const zb::Timeline& timeline) {
  if (timeline.ops.empty()) return;
  const zb::traces::ExportedTimeline exported{&timeline, "measured", 0, 0, std::nullopt, "fuzz"};
  auto perfetto = zb::traces::WritePerfettoTrace({exported});
  if (!perfetto.ok()) std::abort();
  auto check = zb::traces::CheckChromeTrace(*perfetto, "fuzz-perfetto.json");
  if (!check.ok() || !check->ok() || check->nested != 0) std::abort();
  auto kineto = zb::traces::WriteKinetoTraces(exported);
  if (!kineto.ok()) std::abort();
  std::vector<zb::profiler::RawTrace> again;
  for (const auto& [rank, text] : *kineto) {
    auto traces = zb::profiler::ParseChromeTrace(text, "fuzz-kineto.json");
    if (!traces.ok()) std::abort();
    again.insert(again.end(), traces->begin(), traces->end());
  }
  auto analysis = zb::profiler::Analyze(again, "fuzz-kineto", zb::profiler::AnalyzeSettings{});
  if (!analysis.ok()) std::abort();
  size_t compute = 0;
  size_t compute_again = 0;
  for (const zb::TimelineOp& op : timeline.ops)
    compute += op.kind != zb::OpKind::kComm;
  for (const zb::TimelineOp& op : analysis->report.timeline.ops)
    compute_again += op.kind != zb::OpKind::kComm;
  if (compute != compute_again) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto traces = zb::profiler::ParseChromeTrace(zb::fuzz::AsText(data, size), "fuzz.json");
  if (!traces.ok()) return 0;
  auto analysis = zb::profiler::Analyze(*traces, "fuzz.json", zb::profiler::AnalyzeSettings{});
  if (analysis.ok()) ExportAgain(analysis->report.timeline);
  return 0;
}
