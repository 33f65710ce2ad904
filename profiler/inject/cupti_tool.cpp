// SPDX-License-Identifier: Apache-2.0
// The CUDA side: InitializeInjection (called by the driver at cuInit when CUDA_INJECTION64_PATH
// names this library), the CUPTI subscriber, activity buffers and launch callbacks.
//
// Enabled: CONCURRENT_KERNEL (never KERNEL, which serializes kernels), MEMCPY, MEMCPY2, MEMSET,
// MEMORY2, SYNCHRONIZATION; API callbacks at ENTER of every runtime and driver call that puts work
// on a device (launches, graph launches, async copies and sets) record Launch{correlation id,
// thread, time} into the calling thread's ring, the same ring and clock as its NVTX ranges.
//
// Never harming the job: any CUPTI failure (no driver: 999 CUPTI_ERROR_UNKNOWN; another
// subscriber - nsys, ncu, torch.profiler: 39; the driver stub library: 34) prints exactly one
// line on stderr and leaves NVTX recording on. InitializeInjection always returns 1.
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "inject_util.h"
#include "recorder.h"

namespace zb::profiler::inject {
namespace {

CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<bool> g_fatal_warned{false};

std::string ResultText(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "?";
  return std::string(text) + " [" + std::to_string(static_cast<int>(result)) + "]";
}

void WarnUnavailable(const std::string& why) {
  WriteWarning("CUPTI unavailable (" + why + "): recording NVTX ranges only");
}

// Runs under CUPTI's lock: takes only the pool's leaf mutex, calls nothing of CUPTI's.
void CUPTIAPI OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;  // fill the buffer
  Recorder* recorder = Recorder::Current();
  uint8_t* b = recorder != nullptr ? recorder->AcquireCuptiBuffer() : nullptr;
  *buffer = b;  // null declines: CUPTI drops the records and counts them
  *size = b != nullptr ? Recorder::kCuptiBufferBytes : 0;
}

// Only hands the buffer to the writer thread: decoding and SQLite never run on CUPTI's thread.
void CUPTIAPI OnBufferCompleted(CUcontext context, uint32_t stream, uint8_t* buffer, size_t,
                                size_t valid_size) {
  // Before taking any lock of ours (it may take CUPTI's: ABBA). Resets on read, so this counts
  // the drops since the previous buffer of this context/stream.
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) != CUPTI_SUCCESS) dropped = 0;
  Recorder* recorder = Recorder::Current();
  if (recorder == nullptr) return;  // a forked child: the buffer belonged to the parent
  recorder->CompleteCuptiBuffer(buffer, valid_size, static_cast<int64_t>(dropped));
}

void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                         const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    const auto* call = static_cast<const CUpti_CallbackData*>(data);
    if (call == nullptr || call->callbackSite != CUPTI_API_ENTER) return;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
        cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020) {
      // The reset destroys the context with its pending records: take them first.
      cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      return;
    }
    // Both the runtime call and the driver call it makes are recorded: a kernel record carries
    // whichever correlation id launched it (NCCL launches through cuLaunchKernelEx).
    ThreadState* t = CurrentThreadState();
    if (t == nullptr) return;
    const int64_t now = NowNs();
    t->Emit(RingEvent{now, 0, call->correlationId, 0, DomainTable::kLaunchDomain, 0});
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE &&
             cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    // The context's pending records go before it does. Our atexit hook may run after the CUDA
    // runtime's teardown (whose order against ours is not defined), so this is where records of
    // a context destroyed at exit are saved. Unverified on a GPU: see gpu-check.sh.
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  } else if (domain == CUPTI_CB_DOMAIN_STATE && cbid == CUPTI_CBID_STATE_FATAL_ERROR) {
    // CUPTI is unusable from here on. NVIDIA's sample exits the process; a profiler just stops.
    if (Recorder* recorder = Recorder::Current()) recorder->SetCuptiActive(false);
    if (!g_fatal_warned.exchange(true)) {
      WriteWarning("CUPTI reported a fatal error: recording NVTX ranges only from now on");
    }
  }
}

void EnableLaunchCallbacks(CUpti_CallbackDomain domain, int cbid_count) {
  for (int cbid = 1; cbid < cbid_count; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, static_cast<uint32_t>(cbid), &name) != CUPTI_SUCCESS ||
        name == nullptr) {
      continue;
    }
    if (IsLaunchLikeApi(name)) cuptiEnableCallback(1, g_subscriber, domain, cbid);
  }
}

void SetUp(Recorder* recorder) {
  uint32_t version = 0;
  if (const CUptiResult rc = cuptiGetVersion(&version); rc != CUPTI_SUCCESS) {
    WarnUnavailable("cuptiGetVersion: " + ResultText(rc));
    return;
  }
  // The record structs decoded are those of CUDA 13 (activity_decode.cpp); a libcupti of another
  // major version lays them out differently.
  if (version / 10000 != CUPTI_API_VERSION / 10000) {
    WarnUnavailable("libcupti API version " + std::to_string(version) + ", built for " +
                    std::to_string(CUPTI_API_VERSION));
    return;
  }
  char old_subscriber[256] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "zbkit";
  params.oldSubscriberName = old_subscriber;
  params.oldSubscriberSize = sizeof(old_subscriber);
  CUptiResult rc = cuptiSubscribe_v2(&g_subscriber, OnCallback, nullptr, &params);
  if (rc != CUPTI_SUCCESS) {
    std::string why = "cuptiSubscribe: " + ResultText(rc);
    if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && old_subscriber[0] != '\0') {
      why += "; already subscribed: " + std::string(old_subscriber);
    }
    WarnUnavailable(why);
    g_subscriber = nullptr;
    return;
  }
  auto give_up = [&](const std::string& why) {
    cuptiUnsubscribe(g_subscriber);  // let another tool have CUPTI
    g_subscriber = nullptr;
    WarnUnavailable(why);
  };
  if (rc = cuptiActivityRegisterCallbacks(OnBufferRequested, OnBufferCompleted);
      rc != CUPTI_SUCCESS) {
    give_up("cuptiActivityRegisterCallbacks: " + ResultText(rc));
    return;
  }
  if (rc = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); rc != CUPTI_SUCCESS) {
    give_up("cuptiActivityEnable(CONCURRENT_KERNEL): " + ResultText(rc));
    return;
  }
  // Optional kinds: a failure costs that kind of record, not the whole of CUPTI.
  for (CUpti_ActivityKind kind :
       {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
        CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}) {
    cuptiActivityEnable(kind);
  }
  cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);  // gettid(), like the NVTX side
  EnableLaunchCallbacks(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
  EnableLaunchCallbacks(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                      CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020);
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                      CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR);
  cuptiActivityFlushPeriod(1000);  // completed buffers reach the writer at least every second
  recorder->SetCuptiActive(true);
}

}  // namespace
}  // namespace zb::profiler::inject

// Called by the CUDA driver on the thread that runs cuInit, before any context exists. Also
// safe to call again, from any thread, or re-entrantly from inside CUPTI's own initialization:
// only the first call does anything.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  using namespace zb::profiler::inject;
  static std::atomic<bool> started{false};
  try {
    Recorder* recorder = Recorder::Get();
    if (!recorder->active()) return 1;  // not started by `zb profile`: stay out of CUDA entirely
    if (started.exchange(true)) return 1;
    SetUp(recorder);
  } catch (...) {
  }
  return 1;  // 0 has no documented meaning to the driver; the job must go on either way
}
