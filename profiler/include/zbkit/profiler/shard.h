// SPDX-License-Identifier: Apache-2.0
// Per-process shards: one small SQLite file per profiled process (no shared-filesystem SQLite),
// written incrementally by the injection library and read back by `zb profile` / `zb import`.
//
// The writer appends in batches, one transaction per Flush(), so a process killed mid-run keeps
// everything flushed before; WAL mode, so a reader can look while it runs. Schema: profiler/shard.sql,
// versioned with PRAGMA user_version.
#ifndef ZBKIT_PROFILER_SHARD_H_
#define ZBKIT_PROFILER_SHARD_H_

#include <memory>
#include <string>
#include <vector>

#include "zbkit/model/status.h"
#include "zbkit/profiler/trace.h"

namespace zb::profiler {

class ShardWriter {
 public:
  // Creates (or truncates) the shard and records the process.
  static Expected<ShardWriter> Create(const std::string& path, const TraceProcess& process);

  ShardWriter(ShardWriter&&) noexcept;
  ShardWriter& operator=(ShardWriter&&) noexcept;
  ~ShardWriter();

  // Appends are buffered in memory until Flush().
  void Add(const TraceRange& range);
  void Add(const DeviceActivity& activity);
  void Add(const Launch& launch);
  void Add(const MemoryEvent& event);
  void AddDroppedRecords(int64_t count);
  // Writes everything buffered in one transaction.
  Status Flush();

 private:
  struct Impl;
  explicit ShardWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

Expected<RawTrace> ReadShard(const std::string& path);

// The shard file name for a process: "<dir>/rank<R>.zbshard" or "<dir>/pid<P>.zbshard".
std::string ShardPath(const std::string& dir, const TraceProcess& process);

}  // namespace zb::profiler

#endif  // ZBKIT_PROFILER_SHARD_H_
