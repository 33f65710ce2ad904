// SPDX-License-Identifier: Apache-2.0
// The hand-off from an application thread to the writer thread: one single-producer /
// single-consumer ring per thread that records NVTX ranges or CUDA launches.
//
// Why per-thread rings: the NVTX hot path must cost well under 200 ns per push/pop pair, so it
// cannot take a lock shared with other threads or allocate. The owning thread appends with one
// release store; the writer drains with one acquire load and hands space back with one release
// store. A full ring drops the event and counts it: blocking the application to wait for the
// writer would be worse than losing a range (and the writer is woken well before that happens).
#ifndef ZBKIT_PROFILER_INJECT_EVENT_RING_H_
#define ZBKIT_PROFILER_INJECT_EVENT_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace zb::profiler::inject {

// A finished range or a launch. `name` is tagged: odd = (NameTable id << 1) | 1, even = a
// malloc'd NUL-terminated copy the consumer frees (only when the name table is full), 0 = "".
struct RingEvent {
  int64_t start = 0;    // range start; launch: API entry time
  int64_t end = 0;      // range end; launch: unused
  uint64_t name = 0;    // launch: the CUPTI correlation id
  int32_t thread = 0;   // the thread that opened the range if not the ring's owner, else 0
  uint16_t domain = 0;  // DomainTable id; DomainTable::kLaunchDomain for a launch
  int16_t depth = 0;
};
static_assert(sizeof(RingEvent) == 32, "one event per half cache line");

inline constexpr uint64_t TagNameId(uint32_t id) {
  return (uint64_t{id} << 1) | 1;
}
inline constexpr bool IsNameId(uint64_t name) {
  return (name & 1) != 0;
}
inline constexpr uint32_t NameIdOf(uint64_t name) {
  return static_cast<uint32_t>(name >> 1);
}
// Frees an owned (even, non-zero) name; a no-op for ids.
void FreeOwnedName(uint64_t name);

class EventRing {
 public:
  // `capacity` is rounded up to a power of two.
  explicit EventRing(uint32_t capacity);
  EventRing(const EventRing&) = delete;
  EventRing& operator=(const EventRing&) = delete;

  // Producer side (the owning thread only). False if the ring is full.
  bool Push(const RingEvent& event) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - cached_tail_ >= capacity_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (head - cached_tail_ >= capacity_) return false;
    }
    events_[head & mask_] = event;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }
  // Producer side: events not yet drained, exact up to the consumer's progress.
  uint64_t Fill() {
    cached_tail_ = tail_.load(std::memory_order_acquire);
    return head_.load(std::memory_order_relaxed) - cached_tail_;
  }
  uint32_t capacity() const { return capacity_; }

  // Consumer side (one thread at a time). Calls fn(const RingEvent&) for each published event,
  // then hands the space back; returns how many.
  template <typename Fn>
  size_t Drain(Fn&& fn) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    for (uint64_t i = tail; i != head; ++i)
      fn(events_[i & mask_]);
    tail_.store(head, std::memory_order_release);
    return static_cast<size_t>(head - tail);
  }
  bool Empty() const {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_relaxed);
  }

 private:
  const uint32_t capacity_;
  const uint64_t mask_;
  std::unique_ptr<RingEvent[]> events_;
  // Producer and consumer indices on separate cache lines: no false sharing on the hot path.
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;  // producer's private copy of tail_
  alignas(64) std::atomic<uint64_t> tail_{0};
};

}  // namespace zb::profiler::inject

#endif  // ZBKIT_PROFILER_INJECT_EVENT_RING_H_
