// SPDX-License-Identifier: Apache-2.0
// The NVTX tool: InitializeInjectionNvtx2 and the callbacks it installs in each NVTX instance's
// tables (CORE and CORE2 modules).
//
// Hot path (push/pop pair budget: 200 ns with the tool attached): one TLS load, a content hash of
// the message against a per-thread cache (no lock, no allocation), two clock reads, a vector
// push/pop on the thread's own stack, one store into the thread's ring. Registered strings
// (NCCL's names) are already ids. Nothing here may throw across the C boundary, so every callback
// catches; nothing here prints.
#define NVTX_NO_IMPL  // a tool implements the API; it must not contain the loader itself
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "inject_util.h"
#include "recorder.h"

namespace zb::profiler::inject {
namespace {

// The calling thread's state. A trivially-initialized pointer (no TLS init guard on the hot
// path); kDeadThread after the thread's thread_local destructors ran, so that a late NVTX call
// from another thread_local destructor does not register the thread again.
ThreadState* const kDeadThread = reinterpret_cast<ThreadState*>(uintptr_t{1});
thread_local ThreadState* tls_thread = nullptr;

struct ThreadExit {
  ThreadState* state = nullptr;
  ~ThreadExit() {
    if (state != nullptr) state->exited.store(true, std::memory_order_release);
    tls_thread = kDeadThread;
  }
};
thread_local ThreadExit tls_exit;

ThreadState* SlowThreadState() {
  if (tls_thread == kDeadThread) return nullptr;
  Recorder* recorder = Recorder::Get();
  if (!recorder->active()) return nullptr;
  ThreadState* state = recorder->RegisterThread(static_cast<int32_t>(::syscall(SYS_gettid)));
  if (state == nullptr) return nullptr;
  tls_exit.state = state;  // first touch registers the thread_local destructor
  tls_thread = state;
  return state;
}

inline ThreadState* Thread() {
  ThreadState* state = tls_thread;
  if (reinterpret_cast<uintptr_t>(state) > 1) [[likely]]
    return state;
  return SlowThreadState();
}

uint16_t DomainId(nvtxDomainHandle_t domain) {
  return DomainTable::IdOf(domain);
}

// The message of an event attribute structure, as a tagged name.
uint64_t NameOf(ThreadState* t, const nvtxEventAttributes_t* attributes) {
  if (attributes == nullptr) return 0;
  // `message` sits at the same offset in every attribute version; a smaller struct has none.
  constexpr size_t kNeeded = offsetof(nvtxEventAttributes_t, message) + sizeof(nvtxMessageValue_t);
  if (attributes->size < kNeeded) return 0;
  switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return t->NameOfAscii(attributes->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      return t->NameOfString(WideToUtf8(attributes->message.unicode));
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      const auto* handle =
          reinterpret_cast<const DomainTable::RegisteredString*>(attributes->message.registered);
      if (handle == nullptr || handle->magic != DomainTable::kStringMagic) return 0;
      if (handle->name_id != NameTable::kNoId) return TagNameId(handle->name_id);
      return handle->owned != nullptr
                 ? ThreadState::OwnedName(handle->owned,
                                          std::char_traits<char>::length(handle->owned))
                 : 0;
    }
    default:
      return 0;
  }
}

int16_t Depth(size_t depth) {
  return static_cast<int16_t>(std::min<size_t>(depth, std::numeric_limits<int16_t>::max()));
}

int Push(ThreadState* t, uint16_t domain, uint64_t name) {
  std::vector<OpenRange>& stack = t->Stack(domain);
  stack.push_back(OpenRange{0, name});
  // The clock is read last, so the range does not include this bookkeeping.
  stack.back().start = NowNs();
  return static_cast<int>(stack.size()) - 1;
}

int Pop(ThreadState* t, uint16_t domain) {
  const int64_t now = NowNs();  // first, for the same reason
  std::vector<OpenRange>& stack = t->Stack(domain);
  if (stack.empty()) return -1;  // unbalanced pop: NVTX's documented error value
  const OpenRange open = stack.back();
  stack.pop_back();
  t->Emit(RingEvent{open.start, now, open.name, 0, domain, Depth(stack.size())});
  return static_cast<int>(stack.size());
}

void Mark(ThreadState* t, uint16_t domain, uint64_t name) {
  const int64_t now = NowNs();
  // A mark is stored as a zero-length range at the depth it would have been pushed at.
  t->Emit(RingEvent{now, now, name, 0, domain, Depth(t->Stack(domain).size())});
}

// ---- CORE ----

int RangePushA(const char* message) {
  try {
    ThreadState* t = Thread();
    return t != nullptr ? Push(t, 0, t->NameOfAscii(message)) : -1;
  } catch (...) {
    return -1;
  }
}

int RangePushW(const wchar_t* message) {
  try {
    ThreadState* t = Thread();
    return t != nullptr ? Push(t, 0, t->NameOfString(WideToUtf8(message))) : -1;
  } catch (...) {
    return -1;
  }
}

int RangePushEx(const nvtxEventAttributes_t* attributes) {
  try {
    ThreadState* t = Thread();
    return t != nullptr ? Push(t, 0, NameOf(t, attributes)) : -1;
  } catch (...) {
    return -1;
  }
}

int RangePop() {
  try {
    ThreadState* t = Thread();
    return t != nullptr ? Pop(t, 0) : -1;
  } catch (...) {
    return -1;
  }
}

nvtxRangeId_t RangeStartA(const char* message) {
  try {
    ThreadState* t = Thread();
    return t != nullptr ? t->recorder->StartRange(t, 0, t->NameOfAscii(message)) : 0;
  } catch (...) {
    return 0;
  }
}

nvtxRangeId_t RangeStartW(const wchar_t* message) {
  try {
    ThreadState* t = Thread();
    return t != nullptr ? t->recorder->StartRange(t, 0, t->NameOfString(WideToUtf8(message))) : 0;
  } catch (...) {
    return 0;
  }
}

nvtxRangeId_t RangeStartEx(const nvtxEventAttributes_t* attributes) {
  try {
    ThreadState* t = Thread();
    return t != nullptr ? t->recorder->StartRange(t, 0, NameOf(t, attributes)) : 0;
  } catch (...) {
    return 0;
  }
}

void RangeEnd(nvtxRangeId_t id) {
  try {
    if (ThreadState* t = Thread()) t->recorder->EndRange(t, id);
  } catch (...) {
  }
}

void MarkA(const char* message) {
  try {
    if (ThreadState* t = Thread()) Mark(t, 0, t->NameOfAscii(message));
  } catch (...) {
  }
}

void MarkW(const wchar_t* message) {
  try {
    if (ThreadState* t = Thread()) Mark(t, 0, t->NameOfString(WideToUtf8(message)));
  } catch (...) {
  }
}

void MarkEx(const nvtxEventAttributes_t* attributes) {
  try {
    if (ThreadState* t = Thread()) Mark(t, 0, NameOf(t, attributes));
  } catch (...) {
  }
}

// Accepted and ignored: the shard has no place for thread or category names yet. Installing
// them anyway keeps NVTX from treating the tool as missing these entry points.
void NameOsThreadA(uint32_t, const char*) {}
void NameOsThreadW(uint32_t, const wchar_t*) {}
void NameCategoryA(uint32_t, const char*) {}
void NameCategoryW(uint32_t, const wchar_t*) {}

// ---- CORE2 (domains) ----

nvtxDomainHandle_t DomainCreateA(const char* name) {
  try {
    return reinterpret_cast<nvtxDomainHandle_t>(
        Domains().Create(name != nullptr ? std::string_view(name) : std::string_view()));
  } catch (...) {
    return nullptr;
  }
}

nvtxDomainHandle_t DomainCreateW(const wchar_t* name) {
  try {
    return reinterpret_cast<nvtxDomainHandle_t>(Domains().Create(WideToUtf8(name)));
  } catch (...) {
    return nullptr;
  }
}

// Domains live as long as the process: ranges already recorded keep referring to them.
void DomainDestroy(nvtxDomainHandle_t) {}

nvtxStringHandle_t DomainRegisterStringA(nvtxDomainHandle_t, const char* text) {
  try {
    return reinterpret_cast<nvtxStringHandle_t>(
        Domains().Register(text != nullptr ? std::string_view(text) : std::string_view()));
  } catch (...) {
    return nullptr;
  }
}

nvtxStringHandle_t DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* text) {
  try {
    return reinterpret_cast<nvtxStringHandle_t>(Domains().Register(WideToUtf8(text)));
  } catch (...) {
    return nullptr;
  }
}

int DomainRangePushEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  try {
    ThreadState* t = Thread();
    return t != nullptr ? Push(t, DomainId(domain), NameOf(t, attributes)) : -1;
  } catch (...) {
    return -1;
  }
}

int DomainRangePop(nvtxDomainHandle_t domain) {
  try {
    ThreadState* t = Thread();
    return t != nullptr ? Pop(t, DomainId(domain)) : -1;
  } catch (...) {
    return -1;
  }
}

nvtxRangeId_t DomainRangeStartEx(nvtxDomainHandle_t domain,
                                 const nvtxEventAttributes_t* attributes) {
  try {
    ThreadState* t = Thread();
    return t != nullptr ? t->recorder->StartRange(t, DomainId(domain), NameOf(t, attributes)) : 0;
  } catch (...) {
    return 0;
  }
}

void DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) {
  try {
    if (ThreadState* t = Thread()) t->recorder->EndRange(t, id);
  } catch (...) {
  }
}

void DomainMarkEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  try {
    if (ThreadState* t = Thread()) Mark(t, DomainId(domain), NameOf(t, attributes));
  } catch (...) {
  }
}

void Initialize(const void*) {}

// ---- Table installation ----

template <typename Fn>
void Install(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

bool InstallCore(const NvtxExportTableCallbacks* callbacks) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) == 0 ||
      table == nullptr) {
    return false;
  }
  Install(table, size, NVTX_CBID_CORE_MarkEx, MarkEx);
  Install(table, size, NVTX_CBID_CORE_MarkA, MarkA);
  Install(table, size, NVTX_CBID_CORE_MarkW, MarkW);
  Install(table, size, NVTX_CBID_CORE_RangeStartEx, RangeStartEx);
  Install(table, size, NVTX_CBID_CORE_RangeStartA, RangeStartA);
  Install(table, size, NVTX_CBID_CORE_RangeStartW, RangeStartW);
  Install(table, size, NVTX_CBID_CORE_RangeEnd, RangeEnd);
  Install(table, size, NVTX_CBID_CORE_RangePushEx, RangePushEx);
  Install(table, size, NVTX_CBID_CORE_RangePushA, RangePushA);
  Install(table, size, NVTX_CBID_CORE_RangePushW, RangePushW);
  Install(table, size, NVTX_CBID_CORE_RangePop, RangePop);
  Install(table, size, NVTX_CBID_CORE_NameCategoryA, NameCategoryA);
  Install(table, size, NVTX_CBID_CORE_NameCategoryW, NameCategoryW);
  Install(table, size, NVTX_CBID_CORE_NameOsThreadA, NameOsThreadA);
  Install(table, size, NVTX_CBID_CORE_NameOsThreadW, NameOsThreadW);
  return true;
}

bool InstallCore2(const NvtxExportTableCallbacks* callbacks) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) == 0 ||
      table == nullptr) {
    return false;
  }
  Install(table, size, NVTX_CBID_CORE2_DomainMarkEx, DomainMarkEx);
  Install(table, size, NVTX_CBID_CORE2_DomainRangeStartEx, DomainRangeStartEx);
  Install(table, size, NVTX_CBID_CORE2_DomainRangeEnd, DomainRangeEnd);
  Install(table, size, NVTX_CBID_CORE2_DomainRangePushEx, DomainRangePushEx);
  Install(table, size, NVTX_CBID_CORE2_DomainRangePop, DomainRangePop);
  Install(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, DomainRegisterStringA);
  Install(table, size, NVTX_CBID_CORE2_DomainRegisterStringW, DomainRegisterStringW);
  Install(table, size, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
  Install(table, size, NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
  Install(table, size, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
  Install(table, size, NVTX_CBID_CORE2_Initialize, Initialize);
  return true;
}

}  // namespace

ThreadState* CurrentThreadState() {
  return Thread();
}

void ForgetThreadStateAfterFork() {
  tls_thread = nullptr;
  tls_exit.state = nullptr;
}

}  // namespace zb::profiler::inject

// Called by every NVTX instance in the process (each library that includes the nvtx3 headers:
// torch, NCCL, cuDNN, ...) on its first NVTX call, from that library's init lock. Each call fills
// that instance's own tables; the Recorder behind them is created once. Returning 0 tells NVTX
// there is no tool (its calls become no-ops), which is what an inactive recorder wants.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  using namespace zb::profiler::inject;
  try {
    if (get_export_table == nullptr) return 0;
    if (!Recorder::Get()->active()) return 0;
    const auto* callbacks =
        static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
    if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
        callbacks->GetModuleFunctionTable == nullptr) {
      return 0;
    }
    if (!InstallCore(callbacks)) return 0;
    InstallCore2(callbacks);  // an NVTX v1-era instance may lack CORE2: push/pop still work
    const auto* version =
        static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO));
    if (version != nullptr && version->struct_size >= sizeof(NvtxExportTableVersionInfo) &&
        version->SetInjectionNvtxVersion != nullptr) {
      version->SetInjectionNvtxVersion(NVTX_VERSION);
    }
    return 1;
  } catch (...) {
    return 0;
  }
}
