// SPDX-License-Identifier: Apache-2.0
// String interning for NVTX range names and domains.
//
// A training step repeats the same few hundred range names millions of times, so the NVTX hot
// path carries a 32-bit id instead of a string: ids are handed out once under a mutex and read
// back lock-free by the writer thread. Storage is append-only (an id stays valid for the life of
// the process, including in forked children, which inherit the table), and capped: past the cap
// Intern() answers kNoId and the caller keeps its own copy of the text, so a job that makes every
// name unique ("aten::mm, seq = 1234567") cannot grow the table without bound.
#ifndef ZBKIT_PROFILER_INJECT_NAME_TABLE_H_
#define ZBKIT_PROFILER_INJECT_NAME_TABLE_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace zb::profiler::inject {

class NameTable {
 public:
  static constexpr uint32_t kNoId = UINT32_MAX;
  static constexpr uint32_t kChunkBits = 12;                    // 4096 names per chunk
  static constexpr uint32_t kMaxChunks = 256;                   // 1 M names
  static constexpr size_t kDefaultMaxBytes = size_t{64} << 20;  // 64 MiB of text

  explicit NameTable(size_t max_bytes = kDefaultMaxBytes);
  ~NameTable();
  NameTable(const NameTable&) = delete;
  NameTable& operator=(const NameTable&) = delete;

  // The id of `text` (0 is ""), interning it on first sight; kNoId once the table is full.
  // Thread-safe; takes the table's mutex, so callers cache ids (see NameCache).
  uint32_t Intern(std::string_view text);
  // The text of an id that Intern() returned, from any thread without locking; "" for an
  // unknown id. The view stays valid for the life of the table.
  std::string_view Get(uint32_t id) const;
  uint32_t size() const { return size_.load(std::memory_order_acquire); }

  // fork() support (pthread_atfork): hold the mutex across fork so that the child never inherits
  // it locked by a thread that does not exist there.
  void LockForFork() { mutex_.lock(); }
  void UnlockAfterFork() { mutex_.unlock(); }

 private:
  struct Entry {
    const char* text;
    uint32_t length;
  };
  const char* Store(std::string_view text);

  const size_t max_bytes_;
  std::mutex mutex_;  // guards map_, arena_*, bytes_ and appending to chunks_
  std::unordered_map<std::string_view, uint32_t> map_;
  std::vector<char*> blocks_;  // arena blocks, never freed while the table lives
  char* arena_ = nullptr;
  size_t arena_left_ = 0;
  size_t bytes_ = 0;
  // Readers index chunks_ lock-free: a chunk pointer and its entries are written before size_
  // is published with release ordering.
  std::array<std::atomic<Entry*>, kMaxChunks> chunks_{};
  std::atomic<uint32_t> size_{0};
};

// A per-thread cache in front of NameTable::Intern for NUL-terminated ASCII messages, keyed by
// content (FNV-1a hash + length + memcmp), not by pointer: Python builds a fresh string object
// for every call, often at an address that held a different name a moment ago.
class NameCache {
 public:
  explicit NameCache(NameTable* table) : table_(table) {}
  // The id of `text`, or NameTable::kNoId if the table is full. `length` receives strlen(text).
  uint32_t Lookup(const char* text, size_t* length);

 private:
  struct Slot {
    uint64_t hash = 0;
    const char* text = nullptr;  // the table's copy
    uint32_t length = 0;
    uint32_t id = NameTable::kNoId;
  };
  NameTable* table_;
  std::array<Slot, 256> slots_{};
};

// NVTX domains: small dense ids (0 = the default domain, kLaunchDomain reserved), created by
// nvtxDomainCreateA and looked up by handle on the hot path. Process-wide like NameTable.
class DomainTable {
 public:
  static constexpr uint16_t kMaxDomains = 1024;
  static constexpr uint16_t kLaunchDomain = 0xFFFF;  // marks launch events in the rings

  struct Domain {
    uint32_t magic;
    uint16_t id;
    uint32_t name_id;
  };
  struct RegisteredString {
    uint32_t magic;
    uint32_t name_id;  // NameTable id, or kNoId with `owned` set
    const char* owned;
  };
  static constexpr uint32_t kDomainMagic = 0x7A62646D;  // 'zbdm'
  static constexpr uint32_t kStringMagic = 0x7A627374;  // 'zbst'

  explicit DomainTable(NameTable* names);
  // Frees the handles. The process-wide table is never destroyed (the application may hold
  // handles until it exits); tables in tests are.
  ~DomainTable();
  DomainTable(const DomainTable&) = delete;
  DomainTable& operator=(const DomainTable&) = delete;
  // The same handle for the same name (NCCL creates "NCCL" once per library that includes NVTX).
  // Past kMaxDomains the default domain's handle (id 0) is returned.
  Domain* Create(std::string_view name);
  // A handle for nvtxDomainRegisterString: the text's id, or a private copy if the name table is
  // full. Deduplicated by text.
  RegisteredString* Register(std::string_view text);
  // The domain's name id, lock-free; 0 ("") for the default or an unknown domain.
  uint32_t NameId(uint16_t id) const;
  // The dense id of a handle the NVTX API passed back; 0 for null (the default domain).
  static uint16_t IdOf(const void* handle) {
    const auto* domain = static_cast<const Domain*>(handle);
    return domain != nullptr && domain->magic == kDomainMagic ? domain->id : 0;
  }

  void LockForFork() { mutex_.lock(); }
  void UnlockAfterFork() { mutex_.unlock(); }

 private:
  NameTable* names_;
  std::mutex mutex_;  // guards the maps and appending to name_ids_
  std::unordered_map<std::string, Domain*> domains_;
  std::unordered_map<std::string, RegisteredString*> strings_;
  std::array<std::atomic<uint32_t>, kMaxDomains> name_ids_{};
  uint16_t next_id_ = 1;
};

}  // namespace zb::profiler::inject

#endif  // ZBKIT_PROFILER_INJECT_NAME_TABLE_H_
