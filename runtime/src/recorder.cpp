// SPDX-License-Identifier: Apache-2.0
// libzbrt: recording one rank's replay and writing its shard.
//
// The hot path (zbrt_op_begin / zbrt_op_end) reads the clock, pushes or pops an NVTX range and
// writes one slot of a buffer allocated at open for a whole iteration of the rank's ops: no
// allocation, no lock, no SQLite. The buffer is moved aside at iteration ends (and, without
// iteration marks, when it is full), and everything reaches the shard at close.
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "zbkit/profiler/shard.h"
#include "zbkit/schemas/range_name.h"
#include "zbrt_internal.h"

#if ZBRT_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

static_assert(static_cast<int>(zb::OpKind::kF) == ZBRT_OP_F &&
                  static_cast<int>(zb::OpKind::kB) == ZBRT_OP_B &&
                  static_cast<int>(zb::OpKind::kW) == ZBRT_OP_W &&
                  static_cast<int>(zb::OpKind::kBW) == ZBRT_OP_BW,
              "zbrt_op_kind must keep zb::OpKind's values");

namespace {

inline int64_t NowNs() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The OS thread id, read once per thread (a syscall per mark would cost more than the mark).
inline int64_t ThreadId() noexcept {
  static thread_local const int64_t id = static_cast<int64_t>(syscall(SYS_gettid));
  return id;
}

struct Mark {
  int64_t begin = 0;
  int64_t end = -1;  // -1 while open
  int64_t thread = 0;
  int32_t op = 0;
  int32_t depth = 0;  // ranges open on the recorder when it began (NVTX stack depth)
};

struct Iteration {
  int32_t number = 0;  // the contract's width (range_name.h), checked by zbrt_iteration_begin
  int64_t begin = 0;
  int64_t end = 0;
  int64_t thread = 0;
};

struct MemorySample {
  int64_t time = 0;
  int64_t bytes = 0;
};

}  // namespace

struct zbrt_recorder {
  int32_t rank = 0;
  int32_t ranks = 0;
  std::string shard_path;
  std::vector<std::string> names;  // range name of each op: torch's label, "PP:3F7"
  // Per op: the global index (spilled + slot in `marks`) of its open mark, -1 when not open.
  std::vector<int64_t> open;
  std::vector<Mark> marks;  // capacity = the rank's op count, never exceeded by the hot path
  std::vector<Mark> spilled;
  int32_t open_count = 0;  // ops open now
  bool in_iteration = false;
  Iteration current;
  std::vector<Iteration> iterations;
  std::vector<MemorySample> memory;

  int64_t num_ops() const { return static_cast<int64_t>(names.size()); }

  // Moves the buffered marks aside so the buffer is empty again. Allocates: called only at
  // iteration boundaries or when a run without iteration marks fills the buffer.
  zbrt_status Spill(const char* function) noexcept {
    try {
      spilled.insert(spilled.end(), marks.begin(), marks.end());
      marks.clear();  // keeps the capacity
      return ZBRT_OK;
    } catch (...) {
      return zbrt::Fail(ZBRT_ERROR_INTERNAL, std::string(function) + ": out of memory");
    }
  }

  // Room for one more mark in the buffer: a full one (no iteration marks) is spilled, the rare
  // slow path.
  zbrt_status MakeRoom(const char* function) noexcept {
    return marks.size() == marks.capacity() ? Spill(function) : ZBRT_OK;
  }

  // A mark of op `op` on this thread at the current nesting depth; its times are the caller's.
  Mark NewMark(int64_t op) const noexcept {
    Mark mark;
    mark.op = static_cast<int32_t>(op);
    mark.thread = ThreadId();
    mark.depth = open_count + (in_iteration ? 1 : 0);
    return mark;
  }

  Mark& At(int64_t global) noexcept {
    const int64_t base = static_cast<int64_t>(spilled.size());
    return global >= base ? marks[global - base] : spilled[global];
  }
};

namespace {

zbrt_status NullRecorder(const char* function) {
  return zbrt::Fail(ZBRT_ERROR_INVALID_ARGUMENT, std::string(function) + ": recorder is null");
}

zbrt_status BadOp(const char* function, const zbrt_recorder& recorder, int64_t op_index) {
  return zbrt::Fail(ZBRT_ERROR_OUT_OF_RANGE,
                    std::string(function) + ": op index " + std::to_string(op_index) + " of rank " +
                        std::to_string(recorder.rank) + " is out of range (" +
                        std::to_string(recorder.num_ops()) + " ops)");
}

zb::Status WriteShard(const zbrt_recorder& recorder) {
  zb::profiler::TraceProcess process = zb::profiler::CurrentProcess();
  // The pipeline rank, not RANK: a replay shard speaks of the schedule's ranks.
  process.rank = recorder.rank;
  process.world_size = recorder.ranks;
  ZB_ASSIGN_OR_RETURN(zb::profiler::ShardWriter writer,
                      zb::profiler::ShardWriter::Create(recorder.shard_path, process, "zbrt"));
  for (const Iteration& iteration : recorder.iterations) {
    writer.Add(zb::profiler::TraceRange{zb::FormatIterationRangeName(iteration.number), "",
                                        iteration.thread, iteration.begin, iteration.end, 0});
  }
  for (const std::vector<Mark>* part : {&recorder.spilled, &recorder.marks}) {
    for (const Mark& mark : *part) {
      if (mark.end < 0) continue;  // still open: reported by close
      writer.Add(zb::profiler::TraceRange{recorder.names[mark.op], "", mark.thread, mark.begin,
                                          mark.end, mark.depth});
    }
  }
  // The shard keeps allocation deltas (MemoryEvent); samples become the change since the previous
  // one, so the running sum, which attribution and the merge compute, is the sampled value.
  int64_t held = 0;
  for (const MemorySample& sample : recorder.memory) {
    writer.Add(zb::profiler::MemoryEvent{sample.time, sample.bytes - held, 0});
    held = sample.bytes;
  }
  return writer.Flush();
}

}  // namespace

extern "C" {

zbrt_status zbrt_recorder_open(const zbrt_schedule* schedule, int32_t rank, const char* shard_path,
                               zbrt_recorder** out) {
  constexpr const char* kFn = "zbrt_recorder_open";
  return zbrt::Guard(kFn, [&]() -> zbrt_status {
    if (out == nullptr) {
      return zbrt::Fail(ZBRT_ERROR_INVALID_ARGUMENT, std::string(kFn) + ": out is null");
    }
    *out = nullptr;
    if (!zbrt::CheckRank(kFn, schedule, rank)) {
      return schedule == nullptr ? ZBRT_ERROR_INVALID_ARGUMENT : ZBRT_ERROR_OUT_OF_RANGE;
    }
    if (shard_path == nullptr || *shard_path == '\0') {
      return zbrt::Fail(ZBRT_ERROR_INVALID_ARGUMENT,
                        std::string(kFn) + ": shard_path is null or empty");
    }
    const zb::RankProgram& program = schedule->schedule.programs[rank];
    auto recorder = std::make_unique<zbrt_recorder>();
    recorder->rank = rank;
    recorder->ranks = schedule->schedule.ranks;
    recorder->shard_path = shard_path;
    recorder->names.reserve(program.ops.size());
    for (const zb::Op& op : program.ops) {
      recorder->names.push_back(
          zb::FormatTorchActionName(op.kind, program.stages[op.chunk], op.microbatch));
    }
    recorder->open.assign(program.ops.size(), -1);
    recorder->marks.reserve(program.ops.size() > 0 ? program.ops.size() : 1);
    recorder->memory.reserve(program.ops.size() + 16);
    *out = recorder.release();
    return ZBRT_OK;
  });
}

zbrt_status zbrt_op_begin(zbrt_recorder* recorder, int64_t op_index) {
  constexpr const char* kFn = "zbrt_op_begin";
  if (recorder == nullptr) return NullRecorder(kFn);
  if (op_index < 0 || op_index >= recorder->num_ops()) return BadOp(kFn, *recorder, op_index);
  int64_t& open = recorder->open[op_index];
  if (open >= 0) {
    return zbrt::Fail(ZBRT_ERROR_STATE, std::string(kFn) + ": op " + std::to_string(op_index) +
                                            " (" + recorder->names[op_index] + ") of rank " +
                                            std::to_string(recorder->rank) +
                                            " is already begun and not ended");
  }
  const zbrt_status room = recorder->MakeRoom(kFn);
  if (room != ZBRT_OK) return room;
  Mark mark = recorder->NewMark(op_index);
  open = static_cast<int64_t>(recorder->spilled.size() + recorder->marks.size());
  ++recorder->open_count;
#if ZBRT_HAVE_NVTX
  nvtxRangePushA(recorder->names[op_index].c_str());
#endif
  mark.begin = NowNs();  // last: the range covers the op, not the bookkeeping
  recorder->marks.push_back(mark);
  return ZBRT_OK;
}

zbrt_status zbrt_op_end(zbrt_recorder* recorder, int64_t op_index) {
  const int64_t now = NowNs();  // first, for the same reason
  constexpr const char* kFn = "zbrt_op_end";
  if (recorder == nullptr) return NullRecorder(kFn);
  if (op_index < 0 || op_index >= recorder->num_ops()) return BadOp(kFn, *recorder, op_index);
  int64_t& open = recorder->open[op_index];
  if (open < 0) {
    return zbrt::Fail(ZBRT_ERROR_STATE, std::string(kFn) + ": op " + std::to_string(op_index) +
                                            " (" + recorder->names[op_index] + ") of rank " +
                                            std::to_string(recorder->rank) + " was not begun");
  }
#if ZBRT_HAVE_NVTX
  nvtxRangePop();
#endif
  recorder->At(open).end = now;
  open = -1;
  --recorder->open_count;
  return ZBRT_OK;
}

zbrt_status zbrt_op_record(zbrt_recorder* recorder, int64_t op_index, int64_t begin_ns,
                           int64_t end_ns) {
  constexpr const char* kFn = "zbrt_op_record";
  if (recorder == nullptr) return NullRecorder(kFn);
  if (op_index < 0 || op_index >= recorder->num_ops()) return BadOp(kFn, *recorder, op_index);
  if (recorder->open[op_index] >= 0) {
    return zbrt::Fail(ZBRT_ERROR_STATE, std::string(kFn) + ": op " + std::to_string(op_index) +
                                            " (" + recorder->names[op_index] + ") of rank " +
                                            std::to_string(recorder->rank) +
                                            " is begun and not ended");
  }
  if (begin_ns < 0 || end_ns < begin_ns) {
    return zbrt::Fail(ZBRT_ERROR_INVALID_ARGUMENT,
                      std::string(kFn) + ": op " + std::to_string(op_index) + " ends (" +
                          std::to_string(end_ns) + ") before it begins (" +
                          std::to_string(begin_ns) + ") or begins before 0");
  }
  const zbrt_status room = recorder->MakeRoom(kFn);
  if (room != ZBRT_OK) return room;
  Mark mark = recorder->NewMark(op_index);
  mark.begin = begin_ns;
  mark.end = end_ns;
  recorder->marks.push_back(mark);
  return ZBRT_OK;
}

zbrt_status zbrt_iteration_begin(zbrt_recorder* recorder, int64_t iteration) {
  constexpr const char* kFn = "zbrt_iteration_begin";
  if (recorder == nullptr) return NullRecorder(kFn);
  // The ABI takes int64 (ZBRT_ABI_VERSION 1); the range-name contract holds int32, so larger
  // numbers are refused here rather than truncated later (range_name.h).
  if (iteration < 0 || iteration > std::numeric_limits<int32_t>::max()) {
    return zbrt::Fail(ZBRT_ERROR_OUT_OF_RANGE,
                      std::string(kFn) + ": iteration must be in 0.." +
                          std::to_string(std::numeric_limits<int32_t>::max()) + ", got " +
                          std::to_string(iteration));
  }
  if (recorder->in_iteration) {
    return zbrt::Fail(ZBRT_ERROR_STATE, std::string(kFn) + ": iteration " +
                                            std::to_string(recorder->current.number) + " of rank " +
                                            std::to_string(recorder->rank) + " has not ended");
  }
  if (recorder->open_count > 0) {
    return zbrt::Fail(ZBRT_ERROR_STATE,
                      std::string(kFn) + ": rank " + std::to_string(recorder->rank) + " has " +
                          std::to_string(recorder->open_count) + " ops begun and not ended");
  }
  // Reserve the iteration's slot now so that iteration_end cannot fail for memory.
  try {
    recorder->iterations.reserve(recorder->iterations.size() + 1);
  } catch (...) {
    return zbrt::Fail(ZBRT_ERROR_INTERNAL, std::string(kFn) + ": out of memory");
  }
  recorder->in_iteration = true;
  recorder->current = Iteration{static_cast<int32_t>(iteration), 0, 0, ThreadId()};
#if ZBRT_HAVE_NVTX
  nvtxRangePushA(zb::FormatIterationRangeName(recorder->current.number).c_str());
#endif
  recorder->current.begin = NowNs();
  return ZBRT_OK;
}

zbrt_status zbrt_iteration_end(zbrt_recorder* recorder) {
  const int64_t now = NowNs();
  constexpr const char* kFn = "zbrt_iteration_end";
  if (recorder == nullptr) return NullRecorder(kFn);
  if (!recorder->in_iteration) {
    return zbrt::Fail(
        ZBRT_ERROR_STATE,
        std::string(kFn) + ": rank " + std::to_string(recorder->rank) + " has no iteration begun");
  }
  if (recorder->open_count > 0) {
    return zbrt::Fail(ZBRT_ERROR_STATE,
                      std::string(kFn) + ": rank " + std::to_string(recorder->rank) + " has " +
                          std::to_string(recorder->open_count) + " ops begun and not ended");
  }
#if ZBRT_HAVE_NVTX
  nvtxRangePop();
#endif
  recorder->current.end = now;
  recorder->iterations.push_back(recorder->current);  // reserved at begin
  recorder->in_iteration = false;
  // No op is open, so moving the marks aside invalidates no index in `open`.
  return recorder->Spill(kFn);
}

zbrt_status zbrt_record_memory(zbrt_recorder* recorder, int64_t bytes) {
  const int64_t now = NowNs();
  constexpr const char* kFn = "zbrt_record_memory";
  if (recorder == nullptr) return NullRecorder(kFn);
  if (bytes < 0) {
    return zbrt::Fail(ZBRT_ERROR_INVALID_ARGUMENT,
                      std::string(kFn) + ": bytes must be >= 0, got " + std::to_string(bytes));
  }
  try {
    recorder->memory.push_back({now, bytes});  // reserved for one sample per op at open
  } catch (...) {
    return zbrt::Fail(ZBRT_ERROR_INTERNAL, std::string(kFn) + ": out of memory");
  }
  return ZBRT_OK;
}

zbrt_status zbrt_recorder_close(zbrt_recorder* recorder) {
  constexpr const char* kFn = "zbrt_recorder_close";
  if (recorder == nullptr) return ZBRT_OK;
  std::unique_ptr<zbrt_recorder> owned(recorder);
  return zbrt::Guard(kFn, [&]() -> zbrt_status {
    if (owned->in_iteration) {
      // An iteration left open ends here, so its ops keep their iteration in the shard.
      owned->current.end = NowNs();
      owned->iterations.push_back(owned->current);
      owned->in_iteration = false;
#if ZBRT_HAVE_NVTX
      if (owned->open_count == 0) nvtxRangePop();
#endif
    }
    const zb::Status written = WriteShard(*owned);
    if (!written.ok()) return zbrt::Fail(kFn, written);
    if (owned->open_count > 0) {
      return zbrt::Fail(ZBRT_ERROR_STATE, std::string(kFn) + ": rank " +
                                              std::to_string(owned->rank) + ": " +
                                              std::to_string(owned->open_count) +
                                              " ops were begun and not ended; the shard " +
                                              owned->shard_path + " has the others");
    }
    return ZBRT_OK;
  });
}

}  // extern "C"
