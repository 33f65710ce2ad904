// SPDX-License-Identifier: Apache-2.0
// The injection library's process-wide state: the Recorder (one per process, created by
// whichever entry point runs first) and the per-thread state the NVTX and launch callbacks write.
//
// Data flow: application threads (NVTX callbacks, CUPTI launch callbacks) append finished ranges
// and launches to their own EventRing; CUPTI hands completed activity buffers over a short queue.
// ONE writer thread drains both, decodes the CUPTI buffers, and writes the shard (ShardWriter)
// every second, on request, at exit, and on SIGTERM/SIGINT. Nothing is decoded or written on an
// application thread or on CUPTI's.
//
// Locks (all leaves: none is held while taking another, calling CUPTI or the ShardWriter):
//   g_create_mutex (recorder.cpp)  creating the Recorder
//   NameTable / DomainTable        interning (process-wide; held across fork())
//   threads_mutex_                 the list of ThreadStates
//   pool_mutex_, completed_mutex_  CUPTI buffers; taken inside CUPTI's callbacks, i.e. under
//                                  CUPTI's own lock, which is why nothing of ours may call CUPTI
//                                  while holding them (ABBA)
//   StartShard::mutex              nvtxRangeStart/End ranges, which may end on another thread
#ifndef ZBKIT_PROFILER_INJECT_RECORDER_H_
#define ZBKIT_PROFILER_INJECT_RECORDER_H_

#include <cupti_activity.h>
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "activity_decode.h"
#include "event_ring.h"
#include "name_table.h"
#include "zbkit/profiler/shard.h"

namespace zb::profiler::inject {

// ---- Clock ------------------------------------------------------------------------------------
// One clock for NVTX ranges, launches and CUPTI's activity records: cuptiGetTimestamp() when
// libcupti answers it (it does even without a driver), CLOCK_REALTIME otherwise. Chosen once,
// before the first event, and never switched.
extern bool g_clock_is_cupti;
inline int64_t NowNs() {
  if (g_clock_is_cupti) {
    uint64_t t = 0;
    if (cuptiGetTimestamp(&t) == CUPTI_SUCCESS) [[likely]]
      return static_cast<int64_t>(t);
  }
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Process-wide tables (never destroyed: threads may still emit during exit).
NameTable& Names();
DomainTable& Domains();

class Recorder;

struct OpenRange {
  int64_t start;
  uint64_t name;  // tagged, see RingEvent
};

// What one application thread records. Touched only by that thread, except `ring` (drained by
// the writer), `dropped` and `exited`.
struct ThreadState {
  ThreadState(Recorder* owner, int32_t thread_id);

  Recorder* const recorder;
  const int32_t tid;
  EventRing ring;
  std::vector<std::vector<OpenRange>> stacks;  // push/pop ranges, per NVTX domain id
  NameCache names;
  uint32_t emitted = 0;
  std::atomic<int64_t> dropped{0};  // events lost to a full ring
  std::atomic<bool> exited{false};  // the thread is gone; the writer frees this once drained

  std::vector<OpenRange>& Stack(uint16_t domain) {
    if (domain >= stacks.size()) [[unlikely]]
      GrowStacks(domain);
    return stacks[domain];
  }
  void Emit(const RingEvent& event) {
    if (!ring.Push(event)) [[unlikely]] {
      OnRingFull(event);
      return;
    }
    if ((++emitted & 1023) == 0) [[unlikely]]
      MaybeWakeWriter();
  }
  // The tagged name of a NUL-terminated message: an interned id, or an owned copy when the name
  // table is full. 0 (= "") for null or empty.
  uint64_t NameOfAscii(const char* text) {
    if (text == nullptr || *text == '\0') return 0;
    size_t length = 0;
    const uint32_t id = names.Lookup(text, &length);
    if (id != NameTable::kNoId) [[likely]]
      return TagNameId(id);
    return OwnedName(text, length);
  }
  uint64_t NameOfString(const std::string& text);
  static uint64_t OwnedName(const char* text, size_t length);

 private:
  void GrowStacks(uint16_t domain);
  void OnRingFull(const RingEvent& event);
  void MaybeWakeWriter();
};

class Recorder {
 public:
  static constexpr uint32_t kRingEvents = 32768;  // 1 MiB per recording thread
  // Events per thread ring: kRingEvents, or ZBKIT_RING_EVENTS (2 .. kRingEvents) for tests that
  // make the rings overflow on purpose.
  static uint32_t RingEvents();
  static constexpr size_t kCuptiBufferBytes = size_t{4} << 20;
  static constexpr size_t kMaxCuptiBuffers = 32;  // 128 MiB: past it, CUPTI drops
  static constexpr size_t kMaxOpenStartRanges = size_t{1} << 20;

  // The process's recorder, created on first use; thread-safe, never null. Inactive (and silent)
  // when ZBKIT_SHARD_DIR is unset, i.e. when the job was not started by `zb profile`; inactive
  // with one warning when the shard cannot be created.
  static Recorder* Get();
  // The recorder if one exists, without creating it (for CUPTI callbacks and signal handlers).
  static Recorder* Current();

  bool active() const { return active_; }
  bool stopped() const { return stop_.load(std::memory_order_acquire); }
  const std::string& shard_path() const { return shard_path_; }

  // Application threads.
  ThreadState* RegisterThread(int32_t tid);  // nullptr if inactive or out of memory
  uint64_t StartRange(ThreadState* thread, uint16_t domain, uint64_t name);
  void EndRange(ThreadState* thread, uint64_t id);

  // CUPTI (cupti_tool.cpp). Acquire/Complete run inside CUPTI's buffer callbacks.
  uint8_t* AcquireCuptiBuffer();
  void CompleteCuptiBuffer(uint8_t* buffer, size_t valid_size, int64_t dropped_records);
  void SetCuptiActive(bool on) { cupti_active_.store(on, std::memory_order_release); }
  bool cupti_active() const { return cupti_active_.load(std::memory_order_acquire); }

  // Wakes the writer. Async-signal-safe (one write(2) on an eventfd).
  void Wake();
  // Asks the writer to write everything recorded so far and waits up to `timeout_ms` for it.
  // Async-signal-safe: atomics, write(2) and nanosleep(2) only. False on timeout.
  bool FlushAndWait(int64_t timeout_ms);
  // The final flush (atexit, library destructor): flushes CUPTI, drains, writes, stops the
  // writer. Idempotent; bounded by ZBKIT_EXIT_FLUSH_MS (default 10 s).
  void Shutdown();

  // fork() support: see recorder.cpp.
  static void PrepareFork();
  static void ParentAfterFork();
  static void ChildAfterFork();

 private:
  explicit Recorder(bool activate);
  void Start();
  void WriterMain();
  size_t DrainRings();
  size_t DrainCupti();
  void WriteEvent(const ThreadState& thread, const RingEvent& event);
  void FlushShard();
  std::string NameText(uint64_t name) const;

  bool active_ = false;
  std::string shard_path_;
  std::unique_ptr<ShardWriter> shard_;  // used by the writer thread only (and Shutdown after it)
  int rank_lock_fd_ = -1;
  int wake_fd_ = -1;
  pthread_t writer_{};
  bool writer_started_ = false;

  std::mutex threads_mutex_;
  std::vector<ThreadState*> threads_;

  struct OpenStart {
    int64_t start;
    uint64_t name;
    int32_t tid;
    uint16_t domain;
  };
  struct StartShard {
    std::mutex mutex;
    std::unordered_map<uint64_t, OpenStart> open;
  };
  static constexpr size_t kStartShards = 16;
  StartShard starts_[kStartShards];
  std::atomic<uint64_t> next_range_id_{1};
  std::atomic<size_t> open_starts_{0};

  std::mutex pool_mutex_;
  std::vector<uint8_t*> free_buffers_;  // reserved up front: no allocation under CUPTI's lock
  size_t allocated_buffers_ = 0;
  struct Completed {
    uint8_t* buffer;
    size_t valid_size;
  };
  std::mutex completed_mutex_;
  std::vector<Completed> completed_;  // reserved up front, like free_buffers_
  std::atomic<int64_t> cupti_dropped_{0};
  std::atomic<bool> cupti_active_{false};

  // Flush protocol: requesters bump flush_requested_ and wake the writer; the writer publishes
  // the generation it has written in flush_done_.
  std::atomic<uint64_t> flush_requested_{0};
  std::atomic<uint64_t> flush_done_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> writer_exited_{false};
  std::atomic<bool> shutdown_{false};

  // Writer thread only.
  ActivityDecoder decoder_;
  DecodedActivities decoded_;
  int64_t pending_records_ = 0;
  bool warned_write_ = false;
};

// Per-thread state of the calling thread (nvtx_tool.cpp); nullptr when not recording.
ThreadState* CurrentThreadState();
// Forgets the calling thread's state in a forked child (nvtx_tool.cpp).
void ForgetThreadStateAfterFork();

}  // namespace zb::profiler::inject

#endif  // ZBKIT_PROFILER_INJECT_RECORDER_H_
