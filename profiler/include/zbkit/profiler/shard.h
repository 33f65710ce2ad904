// SPDX-License-Identifier: Apache-2.0
// Per-process shards: one small SQLite file per profiled process (no shared-filesystem SQLite),
// written incrementally by the injection library and read back by `zb profile` / `zb import`.
//
// The writer appends in batches, one transaction per Flush(), so a process killed mid-run keeps
// everything flushed before; WAL mode, so a reader can look while it runs. Schema:
// profiler/shard.sql, versioned with PRAGMA user_version.
#ifndef ZBKIT_PROFILER_SHARD_H_
#define ZBKIT_PROFILER_SHARD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zbkit/profiler/trace.h"
#include "zbkit/schemas/status.h"

namespace zb::profiler {

// Version of profiler/shard.sql, kept in the shard's PRAGMA user_version.
inline constexpr int kShardFormatVersion = 1;

// Thread safety: Add() and Flush() may be called from any threads concurrently (an injected
// process records on the application's threads and flushes from a background thread); Add() only
// takes a short lock to append to the in-memory batch, Flush() writes outside that lock. No method
// throws (allocation failures count the record as dropped). A writer used in a forked child (it
// inherited the parent's connection) refuses to write and never closes the parent's database.
class ShardWriter {
 public:
  // Creates (or truncates) the shard and records the process. `source` goes into
  // RawTrace::source when the shard is read back.
  static Expected<ShardWriter> Create(const std::string& path, const TraceProcess& process,
                                      const std::string& source = "inject");

  ShardWriter(ShardWriter&&) noexcept;
  ShardWriter& operator=(ShardWriter&&) noexcept;
  ~ShardWriter();

  // Appends are buffered in memory until Flush().
  void Add(const TraceRange& range);
  void Add(const DeviceActivity& activity);
  void Add(const Launch& launch);
  void Add(const MemoryEvent& event);
  void AddDroppedRecords(int64_t count);
  // Writes everything buffered in one transaction. On failure the batch is dropped (counted in
  // dropped_records) so that memory stays bounded; the error says why.
  Status Flush();

  // Records appended so far (ranges + activities + launches + memory events) and how many of
  // them reached the file.
  int64_t records_added() const;
  int64_t records_written() const;
  const std::string& path() const;

 private:
  struct Impl;
  explicit ShardWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Reads a shard back: records in the order they were added. Works on a shard whose process is
// still running or was killed (everything flushed before is there).
Expected<RawTrace> ReadShard(const std::string& path);

// The shard file name for a process: "<dir>/rank<R>.zbshard" or "<dir>/pid<P>.zbshard".
std::string ShardPath(const std::string& dir, const TraceProcess& process);

// Every "*.zbshard" file in `dir`, sorted by name. NotFound if `dir` does not exist.
Expected<std::vector<std::string>> ListShards(const std::string& dir);

// This process as the environment describes it: RANK, LOCAL_RANK, WORLD_SIZE (-1 when unset or
// not an integer), getpid(), the host name and argv[0] from /proc/self/cmdline.
TraceProcess CurrentProcess();

}  // namespace zb::profiler

#endif  // ZBKIT_PROFILER_SHARD_H_
