// SPDX-License-Identifier: Apache-2.0
// Timelines out (docs/trace-export.md): a predicted schedule or a measured run as
//
//  - a Perfetto-ready Chrome trace (JSON): one process per rank (and per timeline, so a prediction
//    and a measurement of the same schedule sit side by side, rank by rank), one track per stage
//    lane and one for communication, split into numbered overflow tracks wherever two slices
//    would overlap (Perfetto's JSON importer drops overlapping complete events), send -> receive
//    flows for every cross-rank dependency, the activation memory held as a counter beside the cap,
//    each idle stretch of a rank as a slice named by the op it waited for, and iteration markers;
//  - one Kineto-style JSON per rank that Holistic Trace Analysis loads as a distributed trace:
//    `distributedInfo` with the rank, `ProfilerStep#N` per iteration, each op a `PP:<action>`
//    annotation (torch's labels: F, I for B, W, B for BW) around a runtime launch and its kernels
//    on the device, communication as NCCL kernels. `zb import` of these files gives back the
//    timeline (ops, iterations, busy times) to the nanosecond.
//
// CUDA-free and Qt-free; times are the timeline's nanoseconds written as exact decimal
// microseconds.
#ifndef ZBKIT_TRACES_TRACE_EXPORT_H_
#define ZBKIT_TRACES_TRACE_EXPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::traces {

// One timeline to write, with what the reader is told about it.
struct ExportedTimeline {
  const Timeline* timeline = nullptr;
  std::string label;          // "measured", "predicted": part of each process name
  int num_stages = 0;         // 0: from the ops
  TimeNs comm = 0;            // the hop latency, to tell which op a bubble waited for
  std::optional<double> cap;  // the per-rank memory cap, drawn beside the memory held
  std::string source;         // where it came from ("zb.db timeline 3"), in the metadata
};

// The ops of iteration `iteration` only (renumbered 0, shifted to start at 0), or the timeline
// unchanged for nullopt. NotFound when the timeline has no op in that iteration.
Expected<Timeline> SelectIteration(const Timeline& timeline, std::optional<int32_t> iteration);

// The Perfetto trace of one or more timelines (side by side: process k*kPidStride + rank + 1).
// InvalidInput for a timeline without ops.
inline constexpr int32_t kPidStride = 100000;
Expected<std::string> WritePerfettoTrace(const std::vector<ExportedTimeline>& timelines);

// One Kineto-style document per rank that has ops: (rank, JSON text), by rank. InvalidInput for
// a timeline without ops.
Expected<std::vector<std::pair<int32_t, std::string>>> WriteKinetoTraces(
    const ExportedTimeline& timeline);

// What a structural check of a Chrome trace found (CheckChromeTrace).
struct TraceCheck {
  int64_t slices = 0;  // complete (X) events
  int64_t tracks = 0;  // distinct (pid, tid) with slices
  // Slices that start inside another of their track and end after it: what Perfetto's JSON
  // importer drops. (Slices properly inside another are `nested`, which Perfetto draws as a
  // stack; zbkit's own exports have none of either.)
  int64_t overlapping = 0;
  int64_t nested = 0;
  int64_t flows = 0;           // flow starts (s)
  int64_t unclosed_flows = 0;  // an s without its f, an f without its s, or either outside a slice
  int64_t counters = 0;        // counter (C) events
  int64_t counters_out_of_order = 0;  // a counter series sample earlier than the one before it
  std::vector<std::string> problems;  // the first few, one line each

  bool ok() const { return overlapping == 0 && unclosed_flows == 0 && counters_out_of_order == 0; }
};

// The rules Perfetto's JSON importer needs (no overlapping slices per track, every flow closed
// inside slices, counters in time order) checked on any Chrome trace text.
Expected<TraceCheck> CheckChromeTrace(const std::string& text, const std::string& source);

}  // namespace zb::traces

#endif  // ZBKIT_TRACES_TRACE_EXPORT_H_
