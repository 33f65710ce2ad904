// SPDX-License-Identifier: Apache-2.0
// CUPTI activity buffers -> trace.h records.
//
// The decoder walks a completed buffer with the real cuptiActivityGetNextRecord (which needs no
// driver, so tests feed it hand-packed buffers) and converts the CUDA 13.0 record structs
// (CUpti_ActivityKernel10, Memcpy6, MemcpyPtoP4, Memset4, Memory4, Synchronization2, API,
// ExternalCorrelation, Marker2) to DeviceActivity / Launch / MemoryEvent / TraceRange. Only
// fields that every later struct version keeps at the same offset are read (kind, times,
// device/stream, correlation id, name, bytes), so a newer libcupti's longer records still decode.
// It runs on the writer thread, never on CUPTI's.
#ifndef ZBKIT_PROFILER_INJECT_ACTIVITY_DECODE_H_
#define ZBKIT_PROFILER_INJECT_ACTIVITY_DECODE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "zbkit/profiler/trace.h"

namespace zb::profiler::inject {

// A CPU-side wait (cudaStreamSynchronize, cudaEventSynchronize, ...). Decoded but not yet stored:
// the shard has no table for it (see profiler/README.md, "Injection library").
struct SyncEvent {
  int32_t type = 0;  // CUpti_ActivitySynchronizationType
  TimeNs start = 0;
  TimeNs end = 0;
  int64_t correlation = 0;
  int64_t stream = 0;
};

// CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: links a CUPTI correlation id to an id the
// application pushed (PyTorch: CUSTOM0 = ops, CUSTOM1 = annotations).
struct ExternalCorrelation {
  int32_t kind = 0;
  int64_t external_id = 0;
  int64_t correlation = 0;
};

struct DecodedActivities {
  std::vector<DeviceActivity> activities;
  std::vector<Launch> launches;  // from RUNTIME / DRIVER API records
  std::vector<MemoryEvent> memory;
  std::vector<SyncEvent> syncs;
  std::vector<ExternalCorrelation> external;
  std::vector<TraceRange> markers;  // CUPTI MARKER records, START/END paired by id

  int64_t records = 0;          // records walked
  int64_t untimed_kernels = 0;  // kernels with start == end == 0 (no device timestamps): counted,
                                // never stored, so they cannot drag averages to zero
  int64_t skipped = 0;          // kinds this decoder does not store (OVERHEAD, NAME, ...)
  bool incomplete = false;      // cuptiActivityGetNextRecord said INVALID_KIND / an error
  int status = 0;               // the CUptiResult that ended the walk (MAX_LIMIT_REACHED = ok)

  void Clear();
};

// Stateful because MARKER START and END records of one range may arrive in different buffers.
class ActivityDecoder {
 public:
  // Decodes the `valid_size` bytes of `buffer` (8-byte aligned, as CUPTI hands it out) and
  // appends to `out`. Never throws; an unexpected record ends the walk with `incomplete`.
  void Decode(uint8_t* buffer, size_t valid_size, DecodedActivities* out);

 private:
  struct OpenMarker {
    std::string name;
    std::string domain;
    int64_t thread = 0;
    TimeNs start = 0;
  };
  std::unordered_map<uint32_t, OpenMarker> open_markers_;
};

// "memcpy HtoD", "memcpy DtoH", ... for a CUpti_ActivityMemcpyKind.
const char* MemcpyName(int copy_kind);

}  // namespace zb::profiler::inject

#endif  // ZBKIT_PROFILER_INJECT_ACTIVITY_DECODE_H_
