// SPDX-License-Identifier: Apache-2.0
#include "event_ring.h"

#include <bit>
#include <cstdlib>

namespace zb::profiler::inject {

void FreeOwnedName(uint64_t name) {
  if (name != 0 && !IsNameId(name)) std::free(reinterpret_cast<char*>(name));
}

EventRing::EventRing(uint32_t capacity)
    : capacity_(std::bit_ceil(capacity < 2 ? 2U : capacity)),
      mask_(capacity_ - 1),
      events_(new RingEvent[capacity_]) {}

}  // namespace zb::profiler::inject
