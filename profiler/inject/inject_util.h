// SPDX-License-Identifier: Apache-2.0
// Small pieces of the injection library that need neither a GPU nor a running recorder, kept
// here so that tests can reach them.
#ifndef ZBKIT_PROFILER_INJECT_INJECT_UTIL_H_
#define ZBKIT_PROFILER_INJECT_INJECT_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace zb::profiler::inject {

// UTF-32 wchar_t (Linux) to UTF-8, for NVTX's *W functions and NVTX_MESSAGE_TYPE_UNICODE.
// Invalid code points become U+FFFD. Null gives "".
std::string WideToUtf8(const wchar_t* text);

// Whether a CUPTI runtime or driver API callback name ("cudaLaunchKernel_v7000",
// "cuLaunchKernelEx", "cudaMemcpyAsync_v3020", "cuGraphLaunch") is a call that puts work on a
// device, i.e. one whose correlation id a kernel, memcpy or memset record can carry.
bool IsLaunchLikeApi(std::string_view name);

// Claims RANK `rank` for this process in shard directory `dir`: an exclusive flock on
// "<dir>/.rank<rank>.lock", held (through the returned descriptor, close-on-exec) for the life of
// the process and released by the kernel when it dies. -1 if another live process holds it.
//
// Why: every process a rank spawns with the same environment (Triton / Inductor compile workers,
// a fresh CUDA subprocess) inherits RANK; without a claim it would truncate the rank's shard.
// The first process of a rank wins; the others write pid shards. A stale lock file of a finished
// run does not block (nothing holds the lock).
int ClaimRank(const std::string& dir, int32_t rank);

// One line "zbkit: <message>\n" on stderr in a single write(2), so that it cannot interleave with
// the job's own output mid-line. Async-signal-safe if `message` is.
void WriteWarning(std::string_view message);

// The integer value of environment variable `name`, or `fallback` if unset or malformed.
int64_t EnvInt64(const char* name, int64_t fallback);

}  // namespace zb::profiler::inject

#endif  // ZBKIT_PROFILER_INJECT_INJECT_UTIL_H_
