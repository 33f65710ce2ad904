// SPDX-License-Identifier: Apache-2.0
// What the Perfetto and Kineto writers (trace_export.h) share: exact microsecond text, JSON
// strings, torch's action labels, and the tracks that keep slices from overlapping.
#ifndef ZBKIT_PROFILER_SRC_TRACE_EXPORT_INTERNAL_H_
#define ZBKIT_PROFILER_SRC_TRACE_EXPORT_INTERNAL_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zbkit/schemas/types.h"

namespace zb::traces::trace_export_detail {

// Nanoseconds as decimal microseconds, exactly ("1234.567", "-0.250").
void AppendMicros(std::string& out, TimeNs ns);
// A JSON string literal (quotes, escapes; invalid UTF-8 replaced).
std::string JsonString(std::string_view text);

// Tracks of one process: each logical track (a stage lane, comm) gets as many numbered threads as
// its slices need so that no two slices of one thread overlap. Slices must be placed in start order
// per logical track.
class TrackAllocator {
 public:
  // The thread id for a slice [start, end) of logical track `base` (a tid whose low digits are
  // free for overflow numbers: base + k, k < kOverflow).
  static constexpr int64_t kOverflow = 1000;
  int64_t Place(int32_t pid, int64_t base, TimeNs start, TimeNs end);
  // Every (pid, tid) used, with the overflow number of the tid within its logical track.
  struct Used {
    int32_t pid = 0;
    int64_t base = 0;
    int64_t overflow = 0;
  };
  std::vector<Used> used() const;

 private:
  std::map<std::pair<int32_t, int64_t>, std::vector<TimeNs>> last_end_;  // per sub-track
};

// A complete ("X") event: `args` is the inside of its args object ("" for none).
std::string CompleteEvent(std::string_view category, std::string_view name, int64_t pid,
                          int64_t tid, TimeNs start, TimeNs end, const std::string& args);
// A metadata ("M") event, e.g. ("thread_name", pid, tid, R"("name":"stage 3")").
std::string MetadataEvent(std::string_view what, int64_t pid, int64_t tid, const std::string& args);

// The logical tracks (TrackAllocator bases) of a rank's ops, in both formats: one per stage lane
// and one for communication; the Perfetto trace adds its iteration and bubble tracks.
inline constexpr int64_t kIterationTrack = 1000;
inline constexpr int64_t kBubbleTrack = 2000;
inline constexpr int64_t kCommTrack = 3000;
inline constexpr int64_t kStageTrack = 1000000;  // + stage * TrackAllocator::kOverflow
int64_t TrackOf(const TimelineOp& op);
// "stage 3", "comm", ..., with " (overlap k)" for an overflow thread.
std::string TrackName(const TrackAllocator::Used& used);

// [earliest start, latest end] of each (rank, iteration)'s ops: the iteration markers.
std::map<std::pair<int32_t, int32_t>, std::pair<TimeNs, TimeNs>> IterationSpans(
    const Timeline& timeline);

}  // namespace zb::traces::trace_export_detail

#endif  // ZBKIT_PROFILER_SRC_TRACE_EXPORT_INTERNAL_H_
