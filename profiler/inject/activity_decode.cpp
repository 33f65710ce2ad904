// SPDX-License-Identifier: Apache-2.0
#include "activity_decode.h"

#include <cupti.h>

namespace zb::profiler::inject {

// The record layouts this decoder was written against (CUDA 13.0, CUPTI_API_VERSION 130001,
// x86-64). A header upgrade that changes one of them must be looked at, not silently compiled.
static_assert(sizeof(CUpti_ActivityKernel10) == 216);
static_assert(sizeof(CUpti_ActivityMemcpy6) == 96);
static_assert(sizeof(CUpti_ActivityMemset4) == 88);
static_assert(sizeof(CUpti_ActivityMemory4) == 128);
static_assert(sizeof(CUpti_ActivitySynchronization2) == 56);
static_assert(sizeof(CUpti_ActivityAPI) == 40);
static_assert(sizeof(CUpti_ActivityExternalCorrelation) == 24);
static_assert(sizeof(CUpti_ActivityMarker2) == 56);

void DecodedActivities::Clear() {
  activities.clear();
  launches.clear();
  memory.clear();
  syncs.clear();
  external.clear();
  markers.clear();
  records = 0;
  untimed_kernels = 0;
  skipped = 0;
  incomplete = false;
  status = 0;
}

const char* MemcpyName(int copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "memcpy HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "memcpy AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "memcpy AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "memcpy AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "memcpy DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "memcpy PtoP";
    default:
      return "memcpy";
  }
}

namespace {

TimeNs Ns(uint64_t t) {
  return static_cast<TimeNs>(t);
}

// Memcpy, peer memcpy and memset records share these fields (in different struct versions).
template <typename Record>
DeviceActivity TransferActivity(const Record& m, ActivityKind kind, std::string name) {
  DeviceActivity a;
  a.kind = kind;
  a.name = std::move(name);
  a.device = static_cast<int32_t>(m.deviceId);
  a.stream = m.streamId;
  a.start = Ns(m.start);
  a.end = Ns(m.end);
  a.correlation = m.correlationId;
  a.bytes = static_cast<int64_t>(m.bytes);
  return a;
}

void DecodeKernel(const CUpti_ActivityKernel10& k, DecodedActivities* out) {
  if (k.start == 0 && k.end == 0) {
    ++out->untimed_kernels;
    return;
  }
  DeviceActivity a;
  a.kind = ActivityKind::kKernel;
  a.name = k.name != nullptr ? k.name : "";
  a.device = static_cast<int32_t>(k.deviceId);
  a.stream = k.streamId;
  a.start = Ns(k.start);
  a.end = Ns(k.end);
  a.correlation = k.correlationId;
  out->activities.push_back(std::move(a));
}

}  // namespace

void ActivityDecoder::Decode(uint8_t* buffer, size_t valid_size, DecodedActivities* out) {
  if (buffer == nullptr || valid_size == 0) {
    out->status = CUPTI_ERROR_MAX_LIMIT_REACHED;
    return;
  }
  try {
    CUpti_Activity* record = nullptr;
    for (;;) {
      const CUptiResult rc = cuptiActivityGetNextRecord(buffer, valid_size, &record);
      if (rc != CUPTI_SUCCESS) {
        out->status = rc;
        // MAX_LIMIT_REACHED is the normal end; INVALID_KIND is a record CUPTI had not finished
        // writing (only seen on buffers flushed with FLUSH_FORCED).
        out->incomplete = rc != CUPTI_ERROR_MAX_LIMIT_REACHED;
        return;
      }
      ++out->records;
      switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
          DecodeKernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record), out);
          break;
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          const auto& m = *reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
          out->activities.push_back(
              TransferActivity(m, ActivityKind::kMemcpy, MemcpyName(m.copyKind)));
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY2: {
          const auto& m = *reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
          const int copy_kind =
              m.copyKind == 0 ? int{CUPTI_ACTIVITY_MEMCPY_KIND_PTOP} : int{m.copyKind};
          out->activities.push_back(
              TransferActivity(m, ActivityKind::kMemcpy, MemcpyName(copy_kind)));
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
          const auto& m = *reinterpret_cast<const CUpti_ActivityMemset4*>(record);
          out->activities.push_back(TransferActivity(m, ActivityKind::kMemset, "memset"));
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMORY2: {
          const auto& m = *reinterpret_cast<const CUpti_ActivityMemory4*>(record);
          // Device memory only: pinned host buffers and managed memory are not what the
          // activation-memory cap is about.
          if (m.memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) {
            ++out->skipped;
            break;
          }
          const int64_t bytes = static_cast<int64_t>(m.bytes);
          if (m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
            out->memory.push_back({Ns(m.timestamp), bytes, static_cast<int32_t>(m.deviceId)});
          } else if (m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
            out->memory.push_back({Ns(m.timestamp), -bytes, static_cast<int32_t>(m.deviceId)});
          } else {
            ++out->skipped;
          }
          break;
        }
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
          const auto& s = *reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
          out->syncs.push_back(
              {static_cast<int32_t>(s.type), Ns(s.start), Ns(s.end), s.correlationId, s.streamId});
          break;
        }
        case CUPTI_ACTIVITY_KIND_RUNTIME:
        case CUPTI_ACTIVITY_KIND_DRIVER: {
          const auto& api = *reinterpret_cast<const CUpti_ActivityAPI*>(record);
          out->launches.push_back({api.correlationId, api.threadId, Ns(api.start)});
          break;
        }
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
          const auto& e = *reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
          out->external.push_back({static_cast<int32_t>(e.externalKind),
                                   static_cast<int64_t>(e.externalId), e.correlationId});
          break;
        }
        case CUPTI_ACTIVITY_KIND_MARKER: {
          const auto& m = *reinterpret_cast<const CUpti_ActivityMarker2*>(record);
          const int64_t thread = m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD
                                     ? static_cast<int64_t>(m.objectId.pt.threadId)
                                     : 0;
          if ((m.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) != 0) {
            TraceRange r;
            r.name = m.name != nullptr ? m.name : "";
            r.domain = m.domain != nullptr ? m.domain : "";
            r.thread = thread;
            r.start = r.end = Ns(m.timestamp);
            out->markers.push_back(std::move(r));
          } else if ((m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0) {
            open_markers_[m.id] =
                OpenMarker{m.name != nullptr ? m.name : "", m.domain != nullptr ? m.domain : "",
                           thread, Ns(m.timestamp)};
          } else if ((m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) != 0) {
            auto it = open_markers_.find(m.id);
            if (it == open_markers_.end()) {
              ++out->skipped;
              break;
            }
            TraceRange r;
            r.name = std::move(it->second.name);
            r.domain = std::move(it->second.domain);
            r.thread = it->second.thread;
            r.start = it->second.start;
            r.end = Ns(m.timestamp);
            open_markers_.erase(it);
            out->markers.push_back(std::move(r));
          }
          break;
        }
        default:
          ++out->skipped;
          break;
      }
    }
  } catch (...) {
    // Out of memory while appending: keep what was decoded, report the walk as cut short.
    out->incomplete = true;
  }
}

}  // namespace zb::profiler::inject
