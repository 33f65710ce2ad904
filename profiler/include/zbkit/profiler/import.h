// SPDX-License-Identifier: Apache-2.0
// Importers: traces recorded by other tools, turned into the same RawTrace the injection library
// writes, so that `zb import` derives the cost profile exactly as `zb profile` does.
//
//  - Nsight Systems SQLite export (`nsys export --type sqlite`): NVTX_EVENTS push/pop and
//    start/end ranges that end on their own thread, CUPTI kernel / memcpy / memset activities,
//    runtime (and driver) API calls as launches, CUDA_GPU_MEMORY_USAGE_EVENTS as allocations; one
//    RawTrace per process (pid from globalTid / globalPid).
//  - Chrome trace / Kineto JSON (PyTorch profiler, torchtitan), plain or gzip, an object with
//    traceEvents or a bare array: X events and B/E pairs; cpu_op / user_annotation /
//    python_function ranges (domain = the category), gpu_user_annotation ranges (domain
//    "gpu_user_annotation", used only by user rules naming that domain), kernel / gpu_memcpy /
//    gpu_memset activities (device = args.device or pid, stream = args.stream or tid,
//    args.correlation), cuda_runtime / cuda_driver calls as launches, "[memory]" instant events
//    as allocations (host ones, "Device Id" -1, only in a trace without device activity: the
//    memory of a CPU-only job), distributedInfo.rank / world_size as the process's rank. Times are
//    exact: the microsecond decimals are parsed as text, and Kineto's baseTimeNanoseconds is added.
#ifndef ZBKIT_PROFILER_IMPORT_H_
#define ZBKIT_PROFILER_IMPORT_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zbkit/profiler/trace.h"
#include "zbkit/schemas/status.h"

namespace zb::profiler {

enum class TraceFormat { kAuto, kNsys, kChrome };

// "nsys", "chrome", "auto"; UsageError otherwise.
Expected<TraceFormat> ParseTraceFormat(std::string_view name);

// kNsys for a SQLite file, kChrome otherwise (JSON, gzip or not).
Expected<TraceFormat> DetectTraceFormat(const std::string& path);

Expected<std::vector<RawTrace>> ImportNsysSqlite(const std::string& path);
Expected<std::vector<RawTrace>> ImportChromeTrace(const std::string& path);
// `source` names the input in errors and in RawTrace::source ("chrome:<source>").
Expected<std::vector<RawTrace>> ParseChromeTrace(const std::string& text,
                                                 const std::string& source);
// A file name ImportChromeTraceDirectory reads: *.json or *.json.gz.
bool IsChromeTraceFileName(const std::string& name);

// Every Chrome trace in a directory (*.json, *.json.gz; one per rank, as PyTorch's profiler or
// zbkit's torch hook writes them), in name order. A trace without distributedInfo takes its rank
// from a "rank<N>" in its file name. A file that cannot be read or parsed is skipped and its error
// added to `skipped`; fails when the directory cannot be listed or no trace in it could be read.
Expected<std::vector<RawTrace>> ImportChromeTraceDirectory(const std::string& dir,
                                                           std::vector<std::string>& skipped);
Expected<std::vector<RawTrace>> ImportTrace(const std::string& path,
                                            TraceFormat format = TraceFormat::kAuto);

// Reads a whole file, gunzipping it when it is gzip (zlib reads plain files unchanged).
Expected<std::string> ReadMaybeGzipFile(const std::string& path);

// Decimal microseconds as written in Chrome traces ("1234.567", "12", "1.5e3", "-0.25") to
// nanoseconds, exactly, rounding half away from zero below 1 ns. nullopt if malformed or out of
// range.
std::optional<TimeNs> MicrosecondsTextToNs(std::string_view text);

}  // namespace zb::profiler

#endif  // ZBKIT_PROFILER_IMPORT_H_
