// SPDX-License-Identifier: Apache-2.0
// Per-process shards (shard.h) on zbkit's SQLite layer (zbkit/schemas/sqlite.h).
//
// Hot path: Add() interns the record's strings and appends a fixed-size struct to an in-memory
// batch under a short lock. Flush() swaps the batch out under that lock and writes it, outside
// the lock, in one transaction with multi-row prepared INSERTs (sqlite::BatchInserter: per-
// statement overhead dominates one-row inserts). WAL + synchronous=NORMAL makes a
// committed batch survive the process being killed (not a power cut, which profiling does not
// need) without an fsync per Flush.
#include "zbkit/profiler/shard.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "zbkit/schemas/sqlite.h"

// Generated at build time from profiler/shard.sql (cmake/EmbedText.cmake).
extern const char* const kZbkitShardSql;

namespace zb::profiler {
namespace {

using sqlite::BatchInserter;
using sqlite::Connection;
using sqlite::Statement;
using sqlite::Transaction;

// 'zbsh' in the SQLite header: a shard is never mistaken for a store or another database.
constexpr int32_t kShardApplicationId = 0x7A627368;

struct RangeRow {
  int64_t name_id;
  int64_t domain_id;
  int64_t thread;
  TimeNs start;
  TimeNs end;
  int32_t depth;
};

struct ActivityRow {
  int32_t kind;
  int32_t device;
  int64_t name_id;
  int64_t stream;
  TimeNs start;
  TimeNs end;
  int64_t correlation;
  int64_t bytes;
};

struct Batch {
  std::vector<std::pair<int64_t, std::string>> strings;  // interned since the last flush
  std::vector<RangeRow> ranges;
  std::vector<ActivityRow> activities;
  std::vector<Launch> launches;
  std::vector<MemoryEvent> memory;
  int64_t dropped = 0;

  size_t records() const {
    return ranges.size() + activities.size() + launches.size() + memory.size();
  }
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void RemoveShardFiles(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const std::string file = path + suffix;
    std::remove(file.c_str());
  }
}

}  // namespace

struct ShardWriter::Impl {
  Connection conn;
  pid_t owner_pid = 0;

  // Guarded by batch_mutex: the batch being filled and the string table.
  std::mutex batch_mutex;
  Batch batch;
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> string_ids;
  int64_t next_string_id = 1;

  // Held for a whole Flush so that batches reach the file in the order they were cut.
  std::mutex write_mutex;
  BatchInserter strings;
  BatchInserter ranges;
  BatchInserter activities;
  BatchInserter launches;
  BatchInserter memory;
  Statement add_dropped;

  std::atomic<int64_t> added{0};
  std::atomic<int64_t> written{0};

  // Caller holds batch_mutex.
  int64_t Intern(std::string_view text) {
    auto it = string_ids.find(text);
    if (it != string_ids.end()) return it->second;
    const int64_t id = next_string_id++;
    string_ids.emplace(std::string(text), id);
    batch.strings.emplace_back(id, std::string(text));
    return id;
  }

  // Appends under the lock; an allocation failure drops the record and counts it.
  template <typename Append>
  void Add(const Append& append) noexcept {
    std::lock_guard lock(batch_mutex);
    try {
      append();
      added.fetch_add(1, std::memory_order_relaxed);
    } catch (...) {
      ++batch.dropped;
    }
  }

  Status Write(const Batch& out);
};

Status ShardWriter::Impl::Write(const Batch& out) {
  ZB_ASSIGN_OR_RETURN(Transaction transaction,
                      Transaction::Begin(conn, Transaction::Kind::kWrite, "flush"));
  ZB_RETURN_IF_ERROR(strings.Insert(
      out.strings.size(),
      [&](Statement& stmt, int param, size_t i) {
        stmt.BindInt(param, out.strings[i].first);
        // Static: the batch outlives the statement step, so SQLite need not copy.
        stmt.BindStaticText(param + 1, out.strings[i].second);
      },
      "flush", "string"));
  ZB_RETURN_IF_ERROR(ranges.Insert(
      out.ranges.size(),
      [&](Statement& stmt, int param, size_t i) {
        const RangeRow& row = out.ranges[i];
        stmt.BindInts(param,
                      {row.name_id, row.domain_id, row.thread, row.start, row.end, row.depth});
      },
      "flush", "range"));
  ZB_RETURN_IF_ERROR(activities.Insert(
      out.activities.size(),
      [&](Statement& stmt, int param, size_t i) {
        const ActivityRow& row = out.activities[i];
        stmt.BindInts(param, {row.kind, row.name_id, row.device, row.stream, row.start, row.end,
                              row.correlation, row.bytes});
      },
      "flush", "activity"));
  ZB_RETURN_IF_ERROR(launches.Insert(
      out.launches.size(),
      [&](Statement& stmt, int param, size_t i) {
        const Launch& row = out.launches[i];
        stmt.BindInts(param, {row.correlation, row.thread, row.time});
      },
      "flush", "launch"));
  ZB_RETURN_IF_ERROR(memory.Insert(
      out.memory.size(),
      [&](Statement& stmt, int param, size_t i) {
        const MemoryEvent& row = out.memory[i];
        stmt.BindInts(param, {row.time, row.bytes, row.device});
      },
      "flush", "memory event"));
  if (out.dropped != 0) {
    add_dropped.Reset();
    add_dropped.BindInt(1, out.dropped);
    ZB_RETURN_IF_ERROR(add_dropped.Run("flush: dropped records"));
  }
  return transaction.Commit("flush");
}

Expected<ShardWriter> ShardWriter::Create(const std::string& path, const TraceProcess& process,
                                          const std::string& source) {
  try {
    auto impl = std::make_unique<Impl>();
    impl->owner_pid = getpid();
    RemoveShardFiles(path);
    // No SQLite mutex: write_mutex serializes every use of the connection.
    ZB_ASSIGN_OR_RETURN(impl->conn, Connection::Open(path, sqlite::OpenMode::kReadWriteCreate,
                                                     "create shard", /*no_mutex=*/true));
    Connection& conn = impl->conn;
    // A file system without WAL keeps its journal: slower flushes, still correct.
    ZB_RETURN_IF_ERROR(conn.UseWal("create shard: WAL", /*required=*/false));
    {
      ZB_ASSIGN_OR_RETURN(Transaction transaction,
                          Transaction::Begin(conn, Transaction::Kind::kWrite, "create shard"));
      ZB_RETURN_IF_ERROR(conn.Exec(kZbkitShardSql, "create shard: schema"));
      // Constant text built from two integers of this file (a PRAGMA takes no bound parameter).
      const std::string header = "PRAGMA user_version = " + std::to_string(kShardFormatVersion) +
                                 "; PRAGMA application_id = " + std::to_string(kShardApplicationId);
      ZB_RETURN_IF_ERROR(conn.Exec(header.c_str(), "create shard: header"));
      ZB_ASSIGN_OR_RETURN(Statement row, conn.Prepare("INSERT INTO process (rank, local_rank,"
                                                      " world_size, pid, host, command, source,"
                                                      " created_ns)"
                                                      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                                                      "create shard: process"));
      row.BindInt(1, process.rank);
      row.BindInt(2, process.local_rank);
      row.BindInt(3, process.world_size);
      row.BindInt(4, process.pid);
      row.BindText(5, process.host);
      row.BindText(6, process.command);
      row.BindText(7, source);
      row.BindInt(8, RealtimeNs());
      ZB_RETURN_IF_ERROR(row.Run("create shard: process"));
      ZB_RETURN_IF_ERROR(transaction.Commit("create shard"));
    }

    const char* what = "create shard: prepare";
    ZB_ASSIGN_OR_RETURN(
        impl->strings,
        BatchInserter::Prepare(conn, "INSERT INTO strings (id, text) VALUES ", 0, 2, what));
    ZB_ASSIGN_OR_RETURN(impl->ranges,
                        BatchInserter::Prepare(conn,
                                               "INSERT INTO ranges (name_id, domain_id, thread,"
                                               " start_ns, end_ns, depth) VALUES ",
                                               0, 6, what));
    ZB_ASSIGN_OR_RETURN(impl->activities,
                        BatchInserter::Prepare(conn,
                                               "INSERT INTO activities (kind, name_id, device,"
                                               " stream, start_ns, end_ns, correlation, bytes)"
                                               " VALUES ",
                                               0, 8, what));
    ZB_ASSIGN_OR_RETURN(
        impl->launches,
        BatchInserter::Prepare(conn, "INSERT INTO launches (correlation, thread, time_ns) VALUES ",
                               0, 3, what));
    ZB_ASSIGN_OR_RETURN(
        impl->memory, BatchInserter::Prepare(
                          conn, "INSERT INTO memory (time_ns, bytes, device) VALUES ", 0, 3, what));
    ZB_ASSIGN_OR_RETURN(
        impl->add_dropped,
        conn.Prepare("UPDATE process SET dropped_records = dropped_records + ?1", what));
    // Most ranges are in the default domain: give "" the first id up front.
    impl->Intern("");
    return ShardWriter(std::move(impl));
  } catch (const std::bad_alloc&) {
    return InternalError(path + ": create shard: out of memory");
  }
}

ShardWriter::ShardWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ShardWriter::ShardWriter(ShardWriter&&) noexcept = default;
ShardWriter& ShardWriter::operator=(ShardWriter&&) noexcept = default;

ShardWriter::~ShardWriter() {
  if (!impl_) return;
  if (getpid() != impl_->owner_pid) {
    // A forked child: the connection belongs to the parent. Closing it here could checkpoint
    // or delete the parent's WAL, so it is deliberately leaked.
    impl_->conn.Abandon();
    return;
  }
  (void)Flush();
}

void ShardWriter::Add(const TraceRange& range) {
  if (!impl_) return;  // moved from
  impl_->Add([&] {
    Impl& impl = *impl_;
    RangeRow row{impl.Intern(range.name),
                 impl.Intern(range.domain),
                 range.thread,
                 range.start,
                 range.end,
                 range.depth};
    impl.batch.ranges.push_back(row);
  });
}

void ShardWriter::Add(const DeviceActivity& activity) {
  if (!impl_) return;  // moved from
  impl_->Add([&] {
    Impl& impl = *impl_;
    ActivityRow row{static_cast<int32_t>(activity.kind),
                    activity.device,
                    impl.Intern(activity.name),
                    activity.stream,
                    activity.start,
                    activity.end,
                    activity.correlation,
                    activity.bytes};
    impl.batch.activities.push_back(row);
  });
}

void ShardWriter::Add(const Launch& launch) {
  if (!impl_) return;  // moved from
  impl_->Add([&] { impl_->batch.launches.push_back(launch); });
}

void ShardWriter::Add(const MemoryEvent& event) {
  if (!impl_) return;  // moved from
  impl_->Add([&] { impl_->batch.memory.push_back(event); });
}

void ShardWriter::AddDroppedRecords(int64_t count) {
  if (!impl_) return;  // moved from
  std::lock_guard lock(impl_->batch_mutex);
  impl_->batch.dropped += count;
}

Status ShardWriter::Flush() {
  if (!impl_) return InternalError("shard writer used after move");
  Impl& impl = *impl_;
  if (getpid() != impl.owner_pid) {
    return InternalError(impl.conn.path() + ": flush: the shard belongs to process " +
                         std::to_string(impl.owner_pid) + ", not this forked child");
  }
  std::lock_guard write_lock(impl.write_mutex);
  Batch out;
  {
    std::lock_guard lock(impl.batch_mutex);
    std::swap(out, impl.batch);
  }
  if (out.records() == 0 && out.strings.empty() && out.dropped == 0) return Status::Ok();
  Status status = impl.Write(out);
  if (status.ok()) {
    impl.written.fetch_add(static_cast<int64_t>(out.records()), std::memory_order_relaxed);
    return status;
  }
  // The records are lost, but the strings they introduced must still reach the file with the
  // next batch: later records reference their ids.
  std::lock_guard lock(impl.batch_mutex);
  try {
    impl.batch.strings.insert(impl.batch.strings.begin(), out.strings.begin(), out.strings.end());
  } catch (...) {
  }
  impl.batch.dropped += out.dropped + static_cast<int64_t>(out.records());
  return status;
}

int64_t ShardWriter::records_added() const {
  return impl_ ? impl_->added.load(std::memory_order_relaxed) : 0;
}
int64_t ShardWriter::records_written() const {
  return impl_ ? impl_->written.load(std::memory_order_relaxed) : 0;
}
const std::string& ShardWriter::path() const {
  static const std::string kEmpty;
  return impl_ ? impl_->conn.path() : kEmpty;
}

// ---- Reading ---------------------------------------------------------------------------------

namespace {

Status ReadShardProcess(const Connection& conn, RawTrace& trace) {
  const char* what = "read shard process";
  ZB_ASSIGN_OR_RETURN(Statement row, conn.Prepare("SELECT rank, local_rank, world_size, pid, host,"
                                                  " command, source, dropped_records FROM process",
                                                  what));
  ZB_ASSIGN_OR_RETURN(bool found, row.Step(what));
  if (!found) return InvalidInput(conn.path() + ": shard has no process row");
  trace.process.rank = static_cast<int32_t>(row.Int(0));
  trace.process.local_rank = static_cast<int32_t>(row.Int(1));
  trace.process.world_size = static_cast<int32_t>(row.Int(2));
  trace.process.pid = row.Int(3);
  trace.process.host = row.Text(4);
  trace.process.command = row.Text(5);
  trace.source = row.Text(6);
  trace.dropped_records = row.Int(7);
  return Status::Ok();
}

// The string table by id. A map, not a vector indexed by id: ids may have gaps (a batch whose
// flush failed is dropped with its strings), and a damaged shard's one id of 2^31 must not make
// the reader allocate 2^31 strings (found by tests/fuzz/fuzz_shard).
using ShardStrings = std::unordered_map<int64_t, std::string>;
Expected<ShardStrings> ReadShardStrings(const Connection& conn) {
  const char* what = "read shard strings";
  ZB_ASSIGN_OR_RETURN(Statement rows, conn.Prepare("SELECT id, text FROM strings", what));
  ShardStrings strings;
  while (true) {
    ZB_ASSIGN_OR_RETURN(bool row, rows.Step(what));
    if (!row) return strings;
    const int64_t id = rows.Int(0);
    if (id < 0 || id > (int64_t{1} << 31)) {
      return InvalidInput(conn.path() + ": string id " + std::to_string(id) + " out of range");
    }
    strings[id] = rows.Text(1);
  }
}

ActivityKind ActivityKindOf(int64_t kind) {
  return kind == 1   ? ActivityKind::kMemcpy
         : kind == 2 ? ActivityKind::kMemset
                     : ActivityKind::kKernel;
}

// A count to reserve for; 0 when it cannot be read (the read that follows reports the error).
size_t CountOf(const Connection& conn, const char* sql) {
  auto n = conn.QueryInt(sql, "read shard");
  return n.ok() && *n > 0 ? static_cast<size_t>(*n) : 0;
}

}  // namespace

Expected<RawTrace> ReadShard(const std::string& path) {
  try {
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) {
      return NotFound(path + ": cannot open shard: " + std::strerror(errno));
    }
    // Read-write first: a shard left by a killed process has a WAL that the first reader must
    // recover (needs the -shm file). Read-only when the directory is not writable.
    auto opened = Connection::Open(path, sqlite::OpenMode::kReadWrite, "open shard");
    if (!opened.ok()) opened = Connection::Open(path, sqlite::OpenMode::kReadOnly, "open shard");
    if (!opened.ok()) return opened.status();
    Connection& conn = *opened;
    auto app_id = conn.QueryInt("PRAGMA application_id", "read shard header");
    if (!app_id.ok()) {
      return InvalidInput(path + ": not a zbkit shard (" + app_id.status().message() + ")");
    }
    if (*app_id != kShardApplicationId) return InvalidInput(path + ": not a zbkit shard");
    ZB_ASSIGN_OR_RETURN(int64_t version, conn.QueryInt("PRAGMA user_version", "read shard header"));
    if (version > kShardFormatVersion) {
      return InvalidInput(path + ": shard format " + std::to_string(version) +
                          " is newer than this zbkit reads (" +
                          std::to_string(kShardFormatVersion) + ")");
    }
    ZB_ASSIGN_OR_RETURN(Transaction snapshot,
                        Transaction::Begin(conn, Transaction::Kind::kRead, "read shard"));

    RawTrace trace;
    ZB_RETURN_IF_ERROR(ReadShardProcess(conn, trace));
    ZB_ASSIGN_OR_RETURN(const ShardStrings strings, ReadShardStrings(conn));
    auto text = [&](int64_t id) -> const std::string& {
      static const std::string kEmpty;
      const auto it = strings.find(id);
      return it != strings.end() ? it->second : kEmpty;
    };
    trace.ranges.reserve(CountOf(conn, "SELECT count(*) FROM ranges"));
    ZB_RETURN_IF_ERROR(sqlite::QueryInto(
        conn,
        "SELECT name_id, domain_id, thread, start_ns, end_ns, depth FROM ranges ORDER BY rowid",
        "read shard ranges", sqlite::kNoParams,
        [&](const Statement& row) {
          return TraceRange{text(row.Int(0)), text(row.Int(1)), row.Int(2),
                            row.Int(3),       row.Int(4),       static_cast<int32_t>(row.Int(5))};
        },
        trace.ranges));
    trace.activities.reserve(CountOf(conn, "SELECT count(*) FROM activities"));
    ZB_RETURN_IF_ERROR(sqlite::QueryInto(
        conn,
        "SELECT kind, name_id, device, stream, start_ns, end_ns, correlation, bytes"
        " FROM activities ORDER BY rowid",
        "read shard activities", sqlite::kNoParams,
        [&](const Statement& row) {
          DeviceActivity activity;
          activity.kind = ActivityKindOf(row.Int(0));
          activity.name = text(row.Int(1));
          activity.device = static_cast<int32_t>(row.Int(2));
          activity.stream = row.Int(3);
          activity.start = row.Int(4);
          activity.end = row.Int(5);
          activity.correlation = row.Int(6);
          activity.bytes = row.Int(7);
          return activity;
        },
        trace.activities));
    trace.launches.reserve(CountOf(conn, "SELECT count(*) FROM launches"));
    ZB_RETURN_IF_ERROR(sqlite::QueryInto(
        conn, "SELECT correlation, thread, time_ns FROM launches ORDER BY rowid",
        "read shard launches", sqlite::kNoParams,
        [](const Statement& row) {
          return Launch{row.Int(0), row.Int(1), row.Int(2)};
        },
        trace.launches));
    ZB_RETURN_IF_ERROR(sqlite::QueryInto(
        conn, "SELECT time_ns, bytes, device FROM memory ORDER BY rowid", "read shard memory",
        sqlite::kNoParams,
        [](const Statement& row) {
          return MemoryEvent{row.Int(0), row.Int(1), static_cast<int32_t>(row.Int(2))};
        },
        trace.memory));
    return trace;
  } catch (const std::bad_alloc&) {
    return InternalError(path + ": read shard: out of memory");
  }
}

std::string ShardPath(const std::string& dir, const TraceProcess& process) {
  std::string path = dir;
  if (!path.empty() && path.back() != '/') path += '/';
  if (process.rank >= 0) return path + "rank" + std::to_string(process.rank) + ".zbshard";
  return path + "pid" + std::to_string(process.pid) + ".zbshard";
}

Expected<std::vector<std::string>> ListShards(const std::string& dir) {
  DIR* handle = opendir(dir.c_str());
  if (handle == nullptr) return NotFound(dir + ": cannot list shards: " + std::strerror(errno));
  std::vector<std::string> paths;
  constexpr std::string_view kSuffix = ".zbshard";
  while (dirent* entry = readdir(handle)) {
    const std::string_view name = entry->d_name;
    if (name.size() > kSuffix.size() && name.substr(name.size() - kSuffix.size()) == kSuffix) {
      paths.push_back(dir + (dir.empty() || dir.back() == '/' ? "" : "/") + std::string(name));
    }
  }
  closedir(handle);
  std::sort(paths.begin(), paths.end());
  return paths;
}

namespace {
int32_t EnvInt(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return -1;
  int32_t parsed = -1;
  const char* end = value + std::strlen(value);
  auto [ptr, ec] = std::from_chars(value, end, parsed);
  if (ec != std::errc() || ptr != end || parsed < 0) return -1;
  return parsed;
}
}  // namespace

TraceProcess CurrentProcess() {
  TraceProcess process;
  process.rank = EnvInt("RANK");
  process.local_rank = EnvInt("LOCAL_RANK");
  process.world_size = EnvInt("WORLD_SIZE");
  process.pid = getpid();
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) process.host = host;
  // The command line, arguments joined by spaces and cut at 512 bytes ("python train.py ...").
  if (FILE* file = std::fopen("/proc/self/cmdline", "rb")) {
    char buffer[512];
    const size_t n = std::fread(buffer, 1, sizeof(buffer), file);
    std::fclose(file);
    for (size_t i = 0; i < n; ++i) {
      const char c = buffer[i] == '\0' ? ' ' : buffer[i];
      process.command += c;
    }
    while (!process.command.empty() && process.command.back() == ' ')
      process.command.pop_back();
  }
  return process;
}

}  // namespace zb::profiler
