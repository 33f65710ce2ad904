// SPDX-License-Identifier: Apache-2.0
// RawTrace: what one process of a profiled job recorded, before any interpretation. The
// injection library writes it (per-rank shards), the nsys and Chrome-trace importers produce it,
// and attribution (attribution.h) turns it into pipeline ops. CUDA-free and Qt-free.
//
// Clock: every time is int64 nanoseconds on one clock per process (the injection library uses
// cuptiGetTimestamp() when CUPTI is available, CLOCK_REALTIME otherwise; importers keep the
// source's clock). Comparisons across processes need the shards' clocks to agree, which they do
// on one host and roughly (NTP) across hosts.
#ifndef ZBKIT_PROFILER_TRACE_H_
#define ZBKIT_PROFILER_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "zbkit/schemas/types.h"

namespace zb::profiler {

struct TraceProcess {
  int32_t rank = -1;        // RANK, else -1 (then the process id identifies the shard)
  int32_t local_rank = -1;  // LOCAL_RANK
  int32_t world_size = -1;  // WORLD_SIZE
  int64_t pid = 0;
  std::string host;
  std::string command;  // argv[0] or the job's name
};

// A CPU-side range: an NVTX push/pop or start/end range, or a trace annotation.
struct TraceRange {
  std::string name;    // the message; for registered strings, the registered text
  std::string domain;  // "" for the default domain, e.g. "NCCL"
  int64_t thread = 0;  // OS thread id that opened it
  TimeNs start = 0;
  TimeNs end = 0;
  int32_t depth = 0;  // nesting depth on its thread's stack (push/pop ranges), 0 for start/end
};

enum class ActivityKind : uint8_t { kKernel = 0, kMemcpy = 1, kMemset = 2 };

// A device-side activity (kernel, memcpy, memset) with the correlation id of the API call that
// launched it.
struct DeviceActivity {
  ActivityKind kind = ActivityKind::kKernel;
  std::string name;  // kernel name (possibly mangled); "memcpy HtoD" etc. for copies
  int32_t device = 0;
  int64_t stream = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  int64_t correlation = 0;
  int64_t bytes = 0;  // copies and sets
};

// The CPU-side launch of a device activity: which thread, when.
struct Launch {
  int64_t correlation = 0;
  int64_t thread = 0;
  TimeNs time = 0;  // API entry
};

// Device memory allocated (bytes > 0) or released (bytes < 0) at `time`.
struct MemoryEvent {
  TimeNs time = 0;
  int64_t bytes = 0;
  int32_t device = 0;
};

struct RawTrace {
  TraceProcess process;
  std::vector<TraceRange> ranges;
  std::vector<DeviceActivity> activities;
  std::vector<Launch> launches;
  std::vector<MemoryEvent> memory;
  // Records lost: NVTX events of a full ring, CUPTI buffers declined or overflowed.
  int64_t dropped_records = 0;
  std::string source;  // "inject", "nsys:<file>", "chrome:<file>"
  // The torch schedule class the process ran, where the trace says ("" unknown): zbkit's shim
  // adds it to the torch.profiler traces it writes as the top-level key kScheduleClassKey.
  std::string schedule_class;
  // How the process's stages checkpoint their activations (zb::IsCheckpointingMode; "" unknown),
  // where the trace says: the shim adds it as the top-level key kCheckpointingKey.
  std::string checkpointing;
  // The pipeline the process's stages were built on, where the trace says (the shim adds it as
  // the top-level key kPipelineKey, "<rank>/<size>/<first>"): its rank in the stages' process
  // group, the group's size and the group's lowest global rank, which tells data-parallel
  // replicas of one pipeline apart whatever the order of the job's mesh. size 0: not known.
  struct PipelineGroup {
    int32_t rank = -1;
    int32_t size = 0;
    int32_t first = -1;
  } pipeline;
  // The bytes FSDP's all-gathers add on the process while its stages are unsharded, where the
  // trace says (the shim adds them as the top-level key kUnshardedKey); -1: not known.
  int64_t unsharded_bytes = -1;
  // The bytes of gradients the process's data-parallel reductions take in per step (kReducedKey);
  // -1: not known.
  int64_t reduced_bytes = -1;
};

inline constexpr const char* kScheduleClassKey = "zbkit_schedule_class";
inline constexpr const char* kCheckpointingKey = "zbkit_checkpointing";
inline constexpr const char* kPipelineKey = "zbkit_pipeline";
inline constexpr const char* kUnshardedKey = "zbkit_unsharded";
inline constexpr const char* kReducedKey = "zbkit_reduced";

}  // namespace zb::profiler

#endif  // ZBKIT_PROFILER_TRACE_H_
