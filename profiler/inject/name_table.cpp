// SPDX-License-Identifier: Apache-2.0
#include "name_table.h"

#include <cstdlib>
#include <cstring>

namespace zb::profiler::inject {

namespace {
constexpr size_t kArenaBlock = size_t{64} << 10;
constexpr uint32_t kChunkSize = uint32_t{1} << NameTable::kChunkBits;
}  // namespace

NameTable::NameTable(size_t max_bytes) : max_bytes_(max_bytes) {
  const uint32_t empty = Intern("");
  (void)empty;  // id 0
}

NameTable::~NameTable() {
  for (auto& chunk : chunks_)
    delete[] chunk.load(std::memory_order_relaxed);
  for (char* block : blocks_)
    std::free(block);
}

const char* NameTable::Store(std::string_view text) {
  const size_t need = text.size() + 1;
  char* out = nullptr;
  if (need > kArenaBlock / 4) {
    // Long names get their own block so that they do not waste the tail of an arena block.
    out = static_cast<char*>(std::malloc(need));
    if (out == nullptr) return nullptr;
    blocks_.push_back(out);
  } else {
    if (need > arena_left_) {
      char* block = static_cast<char*>(std::malloc(kArenaBlock));
      if (block == nullptr) return nullptr;
      blocks_.push_back(block);
      arena_ = block;
      arena_left_ = kArenaBlock;
    }
    out = arena_;
    arena_ += need;
    arena_left_ -= need;
  }
  std::memcpy(out, text.data(), text.size());
  out[text.size()] = '\0';
  return out;
}

uint32_t NameTable::Intern(std::string_view text) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = map_.find(text); it != map_.end()) return it->second;
  const uint32_t id = size_.load(std::memory_order_relaxed);
  if (id >= kMaxChunks * kChunkSize || bytes_ + text.size() + 1 > max_bytes_) return kNoId;
  Entry* chunk = chunks_[id >> kChunkBits].load(std::memory_order_relaxed);
  if (chunk == nullptr) {
    chunk = new (std::nothrow) Entry[kChunkSize];
    if (chunk == nullptr) return kNoId;
    chunks_[id >> kChunkBits].store(chunk, std::memory_order_release);
  }
  const char* stored = Store(text);
  if (stored == nullptr) return kNoId;
  chunk[id & (kChunkSize - 1)] = Entry{stored, static_cast<uint32_t>(text.size())};
  bytes_ += text.size() + 1;
  try {
    map_.emplace(std::string_view(stored, text.size()), id);
  } catch (...) {
    return kNoId;  // out of memory: the caller keeps its own copy
  }
  size_.store(id + 1, std::memory_order_release);
  return id;
}

std::string_view NameTable::Get(uint32_t id) const {
  if (id >= size_.load(std::memory_order_acquire)) return {};
  const Entry* chunk = chunks_[id >> kChunkBits].load(std::memory_order_acquire);
  const Entry& entry = chunk[id & (kChunkSize - 1)];
  return {entry.text, entry.length};
}

uint32_t NameCache::Lookup(const char* text, size_t* length) {
  // FNV-1a and the length in one pass; names are short ("F12.0.0", "ncclSend").
  uint64_t hash = 1469598103934665603ULL;
  const char* p = text;
  for (; *p != '\0'; ++p) {
    hash ^= static_cast<unsigned char>(*p);
    hash *= 1099511628211ULL;
  }
  const size_t n = static_cast<size_t>(p - text);
  *length = n;
  Slot& slot = slots_[(hash ^ (hash >> 32)) & (slots_.size() - 1)];
  if (slot.hash == hash && slot.length == n && slot.text != nullptr &&
      std::memcmp(slot.text, text, n) == 0) {
    return slot.id;
  }
  const uint32_t id = table_->Intern(std::string_view(text, n));
  if (id == NameTable::kNoId) return id;
  slot = Slot{hash, table_->Get(id).data(), static_cast<uint32_t>(n), id};
  return id;
}

DomainTable::DomainTable(NameTable* names) : names_(names) {}

DomainTable::~DomainTable() {
  for (auto& [name, domain] : domains_)
    delete domain;
  for (auto& [text, handle] : strings_) {
    std::free(const_cast<char*>(handle->owned));
    delete handle;
  }
}

DomainTable::Domain* DomainTable::Create(std::string_view name) {
  // Intern before taking mutex_: the two locks are never held together (fork handlers take them
  // one after the other, and nothing else nests them).
  uint32_t name_id = names_->Intern(name);
  if (name_id == NameTable::kNoId) name_id = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    std::string key(name);
    if (auto it = domains_.find(key); it != domains_.end()) return it->second;
    if (next_id_ >= kMaxDomains) {
      static Domain fallback{kDomainMagic, 0, 0};
      return &fallback;
    }
    auto* domain = new Domain{kDomainMagic, next_id_, name_id};
    name_ids_[next_id_].store(name_id, std::memory_order_release);
    ++next_id_;
    domains_.emplace(std::move(key), domain);
    return domain;
  } catch (...) {
    return nullptr;  // the caller treats null as the default domain
  }
}

DomainTable::RegisteredString* DomainTable::Register(std::string_view text) {
  const uint32_t name_id = names_->Intern(text);
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    std::string key(text);
    if (auto it = strings_.find(key); it != strings_.end()) return it->second;
    const char* owned = nullptr;
    if (name_id == NameTable::kNoId) {
      char* copy = static_cast<char*>(std::malloc(text.size() + 1));
      if (copy == nullptr) return nullptr;
      std::memcpy(copy, text.data(), text.size());
      copy[text.size()] = '\0';
      owned = copy;
    }
    // Handles are never freed: the application may keep using one after nvtxDomainDestroy.
    auto* handle = new RegisteredString{kStringMagic, name_id, owned};
    strings_.emplace(std::move(key), handle);
    return handle;
  } catch (...) {
    return nullptr;
  }
}

uint32_t DomainTable::NameId(uint16_t id) const {
  if (id >= kMaxDomains) return 0;
  return name_ids_[id].load(std::memory_order_acquire);
}

}  // namespace zb::profiler::inject
