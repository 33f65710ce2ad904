// SPDX-License-Identifier: Apache-2.0
// libzbrt: the library functions, errors, and opening and querying schedules.
#include <time.h>

#include <exception>
#include <memory>
#include <string>

#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/store.h"
#include "zbrt_internal.h"

namespace zbrt {
namespace {

// The last error of this thread. A plain buffer keeps zbrt_last_error() valid across successful
// calls and needs no allocation to read.
thread_local std::string last_error;

}  // namespace

zbrt_status Fail(zbrt_status code, std::string message) {
  try {
    last_error = std::move(message);
  } catch (...) {
    last_error.clear();  // out of memory: the code still says what happened
  }
  return code;
}

zbrt_status StatusCode(zb::ErrorCode code) {
  switch (code) {
    case zb::ErrorCode::kOk:
      return ZBRT_OK;
    case zb::ErrorCode::kUsage:
      return ZBRT_ERROR_INVALID_ARGUMENT;
    case zb::ErrorCode::kInvalidInput:
    case zb::ErrorCode::kInfeasible:
      return ZBRT_ERROR_INVALID_INPUT;
    case zb::ErrorCode::kNotFound:
      return ZBRT_ERROR_NOT_FOUND;
    case zb::ErrorCode::kIo:
      return ZBRT_ERROR_IO;
    case zb::ErrorCode::kStore:
      return ZBRT_ERROR_STORE;
    case zb::ErrorCode::kInternal:
      return ZBRT_ERROR_INTERNAL;
  }
  return ZBRT_ERROR_INTERNAL;
}

zbrt_status Fail(const char* function, const zb::Status& status) {
  return Fail(StatusCode(status.code()), std::string(function) + ": " + status.message());
}

bool CheckSchedule(const char* function, const zbrt_schedule* schedule) {
  if (schedule != nullptr) return true;
  Fail(ZBRT_ERROR_INVALID_ARGUMENT, std::string(function) + ": schedule handle is null");
  return false;
}

bool CheckRank(const char* function, const zbrt_schedule* schedule, int32_t rank) {
  if (!CheckSchedule(function, schedule)) return false;
  if (rank >= 0 && rank < schedule->schedule.ranks) return true;
  Fail(ZBRT_ERROR_OUT_OF_RANGE, std::string(function) + ": rank " + std::to_string(rank) +
                                    " is out of range (the schedule has " +
                                    std::to_string(schedule->schedule.ranks) + " ranks)");
  return false;
}

namespace {

zbrt_status NullArgument(const char* function, const char* what) {
  return Fail(ZBRT_ERROR_INVALID_ARGUMENT, std::string(function) + ": " + what + " is null");
}

// A scalar query: checks the handle and the out pointer, then stores `get(schedule)`.
template <typename T, typename Get>
zbrt_status Query(const char* function, const zbrt_schedule* schedule, T* out, Get get) {
  if (!CheckSchedule(function, schedule)) return ZBRT_ERROR_INVALID_ARGUMENT;
  if (out == nullptr) return NullArgument(function, "out");
  *out = get(*schedule);
  return ZBRT_OK;
}

}  // namespace
}  // namespace zbrt

using zbrt::Fail;
using zbrt::Guard;

extern "C" {

int32_t zbrt_abi_version(void) {
  return ZBRT_ABI_VERSION;
}

const char* zbrt_last_error(void) {
  return zbrt::last_error.c_str();
}

const char* zbrt_status_name(int32_t status) {
  switch (status) {
    case ZBRT_OK:
      return "ZBRT_OK";
    case ZBRT_ERROR_INVALID_ARGUMENT:
      return "ZBRT_ERROR_INVALID_ARGUMENT";
    case ZBRT_ERROR_OUT_OF_RANGE:
      return "ZBRT_ERROR_OUT_OF_RANGE";
    case ZBRT_ERROR_STATE:
      return "ZBRT_ERROR_STATE";
    case ZBRT_ERROR_NOT_FOUND:
      return "ZBRT_ERROR_NOT_FOUND";
    case ZBRT_ERROR_INVALID_INPUT:
      return "ZBRT_ERROR_INVALID_INPUT";
    case ZBRT_ERROR_IO:
      return "ZBRT_ERROR_IO";
    case ZBRT_ERROR_STORE:
      return "ZBRT_ERROR_STORE";
    case ZBRT_ERROR_INTERNAL:
      return "ZBRT_ERROR_INTERNAL";
  }
  return "ZBRT_ERROR_UNKNOWN";
}

int64_t zbrt_now_ns(void) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

zbrt_status zbrt_schedule_open_file(const char* path, zbrt_schedule** out) {
  constexpr const char* kFn = "zbrt_schedule_open_file";
  return Guard(kFn, [&]() -> zbrt_status {
    if (out == nullptr) return zbrt::NullArgument(kFn, "out");
    *out = nullptr;
    if (path == nullptr) return zbrt::NullArgument(kFn, "path");
    zb::Expected<zb::Schedule> schedule = zb::ReadScheduleFile(path);
    if (!schedule.ok()) return Fail(kFn, schedule.status());
    auto handle = std::make_unique<zbrt_schedule>();
    handle->schedule = std::move(schedule).value();
    *out = handle.release();
    return ZBRT_OK;
  });
}

zbrt_status zbrt_schedule_open_store(const char* store_path, int64_t schedule_id,
                                     zbrt_schedule** out) {
  constexpr const char* kFn = "zbrt_schedule_open_store";
  return Guard(kFn, [&]() -> zbrt_status {
    if (out == nullptr) return zbrt::NullArgument(kFn, "out");
    *out = nullptr;
    if (store_path == nullptr) return zbrt::NullArgument(kFn, "store_path");
    zb::Expected<zb::Store> store = zb::Store::Open(store_path, zb::Store::Mode::kReadOnly);
    if (!store.ok()) return Fail(kFn, store.status());
    zb::Expected<zb::Schedule> schedule = store->LoadSchedule(schedule_id);
    if (!schedule.ok()) return Fail(kFn, schedule.status());
    auto handle = std::make_unique<zbrt_schedule>();
    handle->schedule = std::move(schedule).value();
    handle->id = schedule_id;
    *out = handle.release();
    return ZBRT_OK;
  });
}

zbrt_status zbrt_schedule_close(zbrt_schedule* schedule) {
  delete schedule;
  return ZBRT_OK;
}

zbrt_status zbrt_schedule_ranks(const zbrt_schedule* schedule, int32_t* out) {
  return zbrt::Query("zbrt_schedule_ranks", schedule, out,
                     [](const zbrt_schedule& s) { return s.schedule.ranks; });
}

zbrt_status zbrt_schedule_microbatches(const zbrt_schedule* schedule, int32_t* out) {
  return zbrt::Query("zbrt_schedule_microbatches", schedule, out,
                     [](const zbrt_schedule& s) { return s.schedule.microbatches; });
}

zbrt_status zbrt_schedule_chunks(const zbrt_schedule* schedule, int32_t* out) {
  return zbrt::Query("zbrt_schedule_chunks", schedule, out,
                     [](const zbrt_schedule& s) { return s.schedule.chunks; });
}

zbrt_status zbrt_schedule_placement(const zbrt_schedule* schedule, int32_t* out) {
  return zbrt::Query("zbrt_schedule_placement", schedule, out, [](const zbrt_schedule& s) {
    return static_cast<int32_t>(s.schedule.placement == zb::Placement::kV ? ZBRT_PLACEMENT_V
                                                                          : ZBRT_PLACEMENT_LOOP);
  });
}

zbrt_status zbrt_schedule_family(const zbrt_schedule* schedule, const char** out) {
  return zbrt::Query("zbrt_schedule_family", schedule, out,
                     [](const zbrt_schedule& s) { return s.schedule.family.c_str(); });
}

zbrt_status zbrt_schedule_id(const zbrt_schedule* schedule, int64_t* out) {
  return zbrt::Query("zbrt_schedule_id", schedule, out,
                     [](const zbrt_schedule& s) { return s.id; });
}

zbrt_status zbrt_schedule_makespan_ns(const zbrt_schedule* schedule, int64_t* out,
                                      int32_t* has_prediction) {
  constexpr const char* kFn = "zbrt_schedule_makespan_ns";
  if (!zbrt::CheckSchedule(kFn, schedule)) return ZBRT_ERROR_INVALID_ARGUMENT;
  if (out == nullptr) return zbrt::NullArgument(kFn, "out");
  if (has_prediction == nullptr) return zbrt::NullArgument(kFn, "has_prediction");
  const auto& predicted = schedule->schedule.predicted;
  *has_prediction = predicted.has_value() ? 1 : 0;
  *out = predicted.has_value() ? predicted->makespan : 0;
  return ZBRT_OK;
}

zbrt_status zbrt_rank_stages(const zbrt_schedule* schedule, int32_t rank, int32_t* stages,
                             int32_t capacity, int32_t* count) {
  constexpr const char* kFn = "zbrt_rank_stages";
  if (!zbrt::CheckRank(kFn, schedule, rank)) {
    return schedule == nullptr ? ZBRT_ERROR_INVALID_ARGUMENT : ZBRT_ERROR_OUT_OF_RANGE;
  }
  if (count == nullptr) return zbrt::NullArgument(kFn, "count");
  if (capacity < 0) {
    return Fail(ZBRT_ERROR_INVALID_ARGUMENT,
                std::string(kFn) + ": capacity must be >= 0, got " + std::to_string(capacity));
  }
  if (capacity > 0 && stages == nullptr) return zbrt::NullArgument(kFn, "stages");
  const std::vector<int32_t>& held = schedule->schedule.programs[rank].stages;
  const int32_t n = static_cast<int32_t>(held.size());
  for (int32_t i = 0; i < n && i < capacity; ++i)
    stages[i] = held[i];
  *count = n;
  return ZBRT_OK;
}

zbrt_status zbrt_rank_op_count(const zbrt_schedule* schedule, int32_t rank, int64_t* out) {
  constexpr const char* kFn = "zbrt_rank_op_count";
  if (!zbrt::CheckRank(kFn, schedule, rank)) {
    return schedule == nullptr ? ZBRT_ERROR_INVALID_ARGUMENT : ZBRT_ERROR_OUT_OF_RANGE;
  }
  if (out == nullptr) return zbrt::NullArgument(kFn, "out");
  *out = static_cast<int64_t>(schedule->schedule.programs[rank].ops.size());
  return ZBRT_OK;
}

zbrt_status zbrt_rank_op(const zbrt_schedule* schedule, int32_t rank, int64_t index, zbrt_op* out) {
  constexpr const char* kFn = "zbrt_rank_op";
  return Guard(kFn, [&]() -> zbrt_status {
    if (!zbrt::CheckRank(kFn, schedule, rank)) {
      return schedule == nullptr ? ZBRT_ERROR_INVALID_ARGUMENT : ZBRT_ERROR_OUT_OF_RANGE;
    }
    if (out == nullptr) return zbrt::NullArgument(kFn, "out");
    const zb::RankProgram& program = schedule->schedule.programs[rank];
    const int64_t n = static_cast<int64_t>(program.ops.size());
    if (index < 0 || index >= n) {
      return Fail(ZBRT_ERROR_OUT_OF_RANGE,
                  std::string(kFn) + ": op index " + std::to_string(index) + " of rank " +
                      std::to_string(rank) + " is out of range (" + std::to_string(n) + " ops)");
    }
    const zb::Op& op = program.ops[index];
    out->kind = static_cast<int32_t>(op.kind);
    out->stage = program.stages[op.chunk];
    out->microbatch = op.microbatch;
    out->chunk = op.chunk;
    out->start_ns = op.start;
    out->end_ns = op.end;
    return ZBRT_OK;
  });
}

}  // extern "C"
