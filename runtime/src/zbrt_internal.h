// SPDX-License-Identifier: Apache-2.0
// What the pieces of libzbrt share: the handle structs behind the C ABI's opaque types and the
// per-thread last-error plumbing. Not installed; nothing here is exported.
#ifndef ZBKIT_RUNTIME_ZBRT_INTERNAL_H_
#define ZBKIT_RUNTIME_ZBRT_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"
#include "zbrt.h"

struct zbrt_schedule {
  zb::Schedule schedule;
  int64_t id = -1;  // store id, -1 from a file
};

namespace zbrt {

// Records `message` as this thread's last error and returns `code`.
zbrt_status Fail(zbrt_status code, std::string message);
// Maps a zbkit Status to a zbrt code, recording "<function>: <message>".
zbrt_status Fail(const char* function, const zb::Status& status);
zbrt_status StatusCode(zb::ErrorCode code);

// "zb:F:s3:mb7", the range-name contract the profiler attributes (profiler/README.md).

// Checks shared by the queries; on failure they record the error and return false.
bool CheckSchedule(const char* function, const zbrt_schedule* schedule);
bool CheckRank(const char* function, const zbrt_schedule* schedule, int32_t rank);

// Runs `body` (returning zbrt_status), turning an escaping exception (allocation failure, a
// bug) into ZBRT_ERROR_INTERNAL so nothing unwinds through the C ABI.
template <typename Body>
zbrt_status Guard(const char* function, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& error) {
    return Fail(ZBRT_ERROR_INTERNAL, std::string(function) + ": " + error.what());
  } catch (...) {
    return Fail(ZBRT_ERROR_INTERNAL, std::string(function) + ": unexpected exception");
  }
}

}  // namespace zbrt

#endif  // ZBKIT_RUNTIME_ZBRT_INTERNAL_H_
