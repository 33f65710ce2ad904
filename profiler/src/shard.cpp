// SPDX-License-Identifier: Apache-2.0
// Per-process shards (shard.h) on the sqlite3 C API.
//
// Hot path: Add() interns the record's strings and appends a fixed-size struct to an in-memory
// batch under a short lock. Flush() swaps the batch out under that lock and writes it, outside
// the lock, in one transaction with multi-row prepared INSERTs (kRowsPerInsert rows bound per
// statement: per-statement overhead dominates one-row inserts). WAL + synchronous=NORMAL makes a
// committed batch survive the process being killed (not a power cut, which profiling does not
// need) without an fsync per Flush.
#include "zbkit/profiler/shard.h"

#include <dirent.h>
#include <sqlite3.h>
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

#include "sqlite_util.h"

// Generated at build time from profiler/shard.sql (cmake/EmbedText.cmake).
extern const char* const kZbkitShardSql;

namespace zb::profiler {
namespace {

using internal::DbHandle;
using internal::Exec;
using internal::Prepare;
using internal::SqliteError;
using internal::Stmt;

// 'zbsh' in the SQLite header: a shard is never mistaken for a store or another database.
constexpr int32_t kShardApplicationId = 0x7A627368;
constexpr int kRowsPerInsert = 64;

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

// "INSERT INTO t (cols) VALUES (?,?,..),(...)" with `rows` groups of `columns` parameters.
std::string InsertSql(const char* head, int columns, int rows) {
  std::string sql = head;
  sql += " VALUES ";
  for (int row = 0; row < rows; ++row) {
    if (row > 0) sql += ',';
    sql += '(';
    for (int column = 0; column < columns; ++column) {
      if (column > 0) sql += ',';
      sql += '?';
    }
    sql += ')';
  }
  return sql;
}

// A table's two insert statements: kRowsPerInsert rows at once, and one row for the tail.
struct Inserter {
  Stmt bulk;
  Stmt single;
  int columns = 0;

  // bind(stmt, first_param, row) binds one row at first_param..first_param+columns-1.
  template <typename Row, typename Bind>
  int Insert(const std::vector<Row>& rows, const Bind& bind) {
    size_t index = 0;
    while (rows.size() - index >= static_cast<size_t>(kRowsPerInsert)) {
      for (int row = 0; row < kRowsPerInsert; ++row)
        bind(bulk, 1 + row * columns, rows[index++]);
      const int rc = bulk.Step();
      bulk.Reset();
      if (rc != SQLITE_DONE) return rc;
    }
    while (index < rows.size()) {
      bind(single, 1, rows[index++]);
      const int rc = single.Step();
      single.Reset();
      if (rc != SQLITE_DONE) return rc;
    }
    return SQLITE_DONE;
  }
};

Expected<Inserter> MakeInserter(sqlite3* db, const std::string& path, const char* head,
                                int columns) {
  Inserter inserter;
  inserter.columns = columns;
  ZB_ASSIGN_OR_RETURN(inserter.bulk,
                      Prepare(db, path, InsertSql(head, columns, kRowsPerInsert), "prepare"));
  ZB_ASSIGN_OR_RETURN(inserter.single, Prepare(db, path, InsertSql(head, columns, 1), "prepare"));
  return inserter;
}

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
  std::string path;
  DbHandle db;
  pid_t owner_pid = 0;

  // Guarded by batch_mutex: the batch being filled and the string table.
  std::mutex batch_mutex;
  Batch batch;
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> string_ids;
  int64_t next_string_id = 1;

  // Held for a whole Flush so that batches reach the file in the order they were cut.
  std::mutex write_mutex;
  Inserter strings;
  Inserter ranges;
  Inserter activities;
  Inserter launches;
  Inserter memory;
  Stmt add_dropped;

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
  sqlite3* handle = db.get();
  ZB_RETURN_IF_ERROR(Exec(handle, path, "BEGIN IMMEDIATE", "flush: begin"));
  auto fail = [&](const char* what, int rc) {
    Status status = SqliteError(handle, path, what, rc);
    if (!sqlite3_get_autocommit(handle)) {
      sqlite3_exec(handle, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    return status;
  };
  int rc = strings.Insert(out.strings, [](Stmt& stmt, int param, const auto& row) {
    stmt.BindInt(param, row.first);
    // Static: the batch outlives the statement step, so SQLite need not copy.
    sqlite3_bind_text(stmt.get(), param + 1, row.second.data(), static_cast<int>(row.second.size()),
                      SQLITE_STATIC);
  });
  if (rc != SQLITE_DONE) return fail("flush: strings", rc);
  rc = ranges.Insert(out.ranges, [](Stmt& stmt, int param, const RangeRow& row) {
    stmt.BindInt(param, row.name_id);
    stmt.BindInt(param + 1, row.domain_id);
    stmt.BindInt(param + 2, row.thread);
    stmt.BindInt(param + 3, row.start);
    stmt.BindInt(param + 4, row.end);
    stmt.BindInt(param + 5, row.depth);
  });
  if (rc != SQLITE_DONE) return fail("flush: ranges", rc);
  rc = activities.Insert(out.activities, [](Stmt& stmt, int param, const ActivityRow& row) {
    stmt.BindInt(param, row.kind);
    stmt.BindInt(param + 1, row.name_id);
    stmt.BindInt(param + 2, row.device);
    stmt.BindInt(param + 3, row.stream);
    stmt.BindInt(param + 4, row.start);
    stmt.BindInt(param + 5, row.end);
    stmt.BindInt(param + 6, row.correlation);
    stmt.BindInt(param + 7, row.bytes);
  });
  if (rc != SQLITE_DONE) return fail("flush: activities", rc);
  rc = launches.Insert(out.launches, [](Stmt& stmt, int param, const Launch& row) {
    stmt.BindInt(param, row.correlation);
    stmt.BindInt(param + 1, row.thread);
    stmt.BindInt(param + 2, row.time);
  });
  if (rc != SQLITE_DONE) return fail("flush: launches", rc);
  rc = memory.Insert(out.memory, [](Stmt& stmt, int param, const MemoryEvent& row) {
    stmt.BindInt(param, row.time);
    stmt.BindInt(param + 1, row.bytes);
    stmt.BindInt(param + 2, row.device);
  });
  if (rc != SQLITE_DONE) return fail("flush: memory", rc);
  if (out.dropped != 0) {
    add_dropped.BindInt(1, out.dropped);
    rc = add_dropped.Step();
    add_dropped.Reset();
    if (rc != SQLITE_DONE) return fail("flush: dropped records", rc);
  }
  rc = sqlite3_exec(handle, "COMMIT", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return fail("flush: commit", rc);
  return Status::Ok();
}

Expected<ShardWriter> ShardWriter::Create(const std::string& path, const TraceProcess& process,
                                          const std::string& source) {
  try {
    auto impl = std::make_unique<Impl>();
    impl->path = path;
    impl->owner_pid = getpid();
    RemoveShardFiles(path);
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &raw,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                       SQLITE_OPEN_NOMUTEX,  // write_mutex serializes use
                                   nullptr);
    impl->db.reset(raw);
    if (rc != SQLITE_OK) return SqliteError(raw, path, "create shard", rc);
    sqlite3* db = raw;
    sqlite3_busy_timeout(db, 5000);
    ZB_RETURN_IF_ERROR(Exec(db, path, "PRAGMA journal_mode = WAL", "create shard: WAL"));
    ZB_RETURN_IF_ERROR(Exec(db, path, "PRAGMA synchronous = NORMAL", "create shard"));
    ZB_RETURN_IF_ERROR(Exec(db, path, "BEGIN IMMEDIATE", "create shard: begin"));
    ZB_RETURN_IF_ERROR(Exec(db, path, kZbkitShardSql, "create shard: schema"));
    const std::string header = "PRAGMA user_version = " + std::to_string(kShardFormatVersion) +
                               "; PRAGMA application_id = " + std::to_string(kShardApplicationId);
    ZB_RETURN_IF_ERROR(Exec(db, path, header.c_str(), "create shard: header"));
    {
      ZB_ASSIGN_OR_RETURN(Stmt row, Prepare(db, path,
                                            "INSERT INTO process (rank, local_rank, world_size,"
                                            " pid, host, command, source, created_ns)"
                                            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                            "create shard: process"));
      row.BindInt(1, process.rank);
      row.BindInt(2, process.local_rank);
      row.BindInt(3, process.world_size);
      row.BindInt(4, process.pid);
      row.BindText(5, process.host);
      row.BindText(6, process.command);
      row.BindText(7, source);
      row.BindInt(8, RealtimeNs());
      const int step = row.Step();
      if (step != SQLITE_DONE) return SqliteError(db, path, "create shard: process", step);
    }
    ZB_RETURN_IF_ERROR(Exec(db, path, "COMMIT", "create shard: commit"));

    ZB_ASSIGN_OR_RETURN(impl->strings, MakeInserter(db, path, "INSERT INTO strings (id, text)", 2));
    ZB_ASSIGN_OR_RETURN(
        impl->ranges,
        MakeInserter(db, path,
                     "INSERT INTO ranges (name_id, domain_id, thread, start_ns, end_ns, depth)",
                     6));
    ZB_ASSIGN_OR_RETURN(impl->activities,
                        MakeInserter(db, path,
                                     "INSERT INTO activities (kind, name_id, device, stream,"
                                     " start_ns, end_ns, correlation, bytes)",
                                     8));
    ZB_ASSIGN_OR_RETURN(
        impl->launches,
        MakeInserter(db, path, "INSERT INTO launches (correlation, thread, time_ns)", 3));
    ZB_ASSIGN_OR_RETURN(impl->memory,
                        MakeInserter(db, path, "INSERT INTO memory (time_ns, bytes, device)", 3));
    ZB_ASSIGN_OR_RETURN(
        impl->add_dropped,
        Prepare(db, path, "UPDATE process SET dropped_records = dropped_records + ?", "prepare"));
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
    (void)impl_->db.release();
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
    return InternalError(impl.path + ": flush: the shard belongs to process " +
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
  return impl_ ? impl_->path : kEmpty;
}

// ---- Reading ---------------------------------------------------------------------------------

Expected<RawTrace> ReadShard(const std::string& path) {
  try {
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) {
      return NotFound(path + ": cannot open shard: " + std::strerror(errno));
    }
    // Read-write first: a shard left by a killed process has a WAL that the first reader must
    // recover (needs the -shm file). Read-only when the directory is not writable.
    sqlite3* raw = nullptr;
    int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
    DbHandle db(raw);
    if (rc != SQLITE_OK) {
      db.reset();
      raw = nullptr;
      rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
      db.reset(raw);
      if (rc != SQLITE_OK) return SqliteError(raw, path, "open shard", rc);
    }
    sqlite3_busy_timeout(raw, 5000);
    auto pragma = [&](const char* sql) -> Expected<int64_t> {
      ZB_ASSIGN_OR_RETURN(Stmt stmt, Prepare(raw, path, sql, "read shard header"));
      const int step = stmt.Step();
      if (step != SQLITE_ROW) return SqliteError(raw, path, "read shard header", step);
      return stmt.Int(0);
    };
    auto app_id = pragma("PRAGMA application_id");
    if (!app_id.ok()) {
      return InvalidInput(path + ": not a zbkit shard (" + app_id.status().message() + ")");
    }
    if (*app_id != kShardApplicationId) return InvalidInput(path + ": not a zbkit shard");
    ZB_ASSIGN_OR_RETURN(int64_t version, pragma("PRAGMA user_version"));
    if (version > kShardFormatVersion) {
      return InvalidInput(path + ": shard format " + std::to_string(version) +
                          " is newer than this zbkit reads (" +
                          std::to_string(kShardFormatVersion) + ")");
    }
    ZB_RETURN_IF_ERROR(Exec(raw, path, "BEGIN", "read shard"));

    RawTrace trace;
    {
      ZB_ASSIGN_OR_RETURN(Stmt row, Prepare(raw, path,
                                            "SELECT rank, local_rank, world_size, pid, host,"
                                            " command, source, dropped_records FROM process",
                                            "read shard process"));
      if (row.Step() != SQLITE_ROW) return InvalidInput(path + ": shard has no process row");
      trace.process.rank = static_cast<int32_t>(row.Int(0));
      trace.process.local_rank = static_cast<int32_t>(row.Int(1));
      trace.process.world_size = static_cast<int32_t>(row.Int(2));
      trace.process.pid = row.Int(3);
      trace.process.host = row.Text(4);
      trace.process.command = row.Text(5);
      trace.source = row.Text(6);
      trace.dropped_records = row.Int(7);
    }
    std::vector<std::string> strings;
    {
      ZB_ASSIGN_OR_RETURN(Stmt rows,
                          Prepare(raw, path, "SELECT id, text FROM strings", "read shard strings"));
      while ((rc = rows.Step()) == SQLITE_ROW) {
        const int64_t id = rows.Int(0);
        if (id < 0 || id > (int64_t{1} << 31)) {
          return InvalidInput(path + ": string id " + std::to_string(id) + " out of range");
        }
        if (static_cast<size_t>(id) >= strings.size()) strings.resize(id + 1);
        strings[id] = rows.Text(1);
      }
      if (rc != SQLITE_DONE) return SqliteError(raw, path, "read shard strings", rc);
    }
    auto text = [&](int64_t id) -> const std::string& {
      static const std::string kEmpty;
      return id >= 0 && static_cast<size_t>(id) < strings.size() ? strings[id] : kEmpty;
    };
    auto count = [&](const char* sql) -> int64_t {
      auto n = pragma(sql);
      return n.ok() ? *n : 0;
    };
    {
      trace.ranges.reserve(count("SELECT count(*) FROM ranges"));
      ZB_ASSIGN_OR_RETURN(Stmt rows, Prepare(raw, path,
                                             "SELECT name_id, domain_id, thread, start_ns,"
                                             " end_ns, depth FROM ranges ORDER BY rowid",
                                             "read shard ranges"));
      while ((rc = rows.Step()) == SQLITE_ROW) {
        trace.ranges.push_back({text(rows.Int(0)), text(rows.Int(1)), rows.Int(2), rows.Int(3),
                                rows.Int(4), static_cast<int32_t>(rows.Int(5))});
      }
      if (rc != SQLITE_DONE) return SqliteError(raw, path, "read shard ranges", rc);
    }
    {
      trace.activities.reserve(count("SELECT count(*) FROM activities"));
      ZB_ASSIGN_OR_RETURN(Stmt rows, Prepare(raw, path,
                                             "SELECT kind, name_id, device, stream, start_ns,"
                                             " end_ns, correlation, bytes FROM activities"
                                             " ORDER BY rowid",
                                             "read shard activities"));
      while ((rc = rows.Step()) == SQLITE_ROW) {
        DeviceActivity activity;
        const int64_t kind = rows.Int(0);
        activity.kind = kind == 1   ? ActivityKind::kMemcpy
                        : kind == 2 ? ActivityKind::kMemset
                                    : ActivityKind::kKernel;
        activity.name = text(rows.Int(1));
        activity.device = static_cast<int32_t>(rows.Int(2));
        activity.stream = rows.Int(3);
        activity.start = rows.Int(4);
        activity.end = rows.Int(5);
        activity.correlation = rows.Int(6);
        activity.bytes = rows.Int(7);
        trace.activities.push_back(std::move(activity));
      }
      if (rc != SQLITE_DONE) return SqliteError(raw, path, "read shard activities", rc);
    }
    {
      trace.launches.reserve(count("SELECT count(*) FROM launches"));
      ZB_ASSIGN_OR_RETURN(
          Stmt rows,
          Prepare(raw, path, "SELECT correlation, thread, time_ns FROM launches ORDER BY rowid",
                  "read shard launches"));
      while ((rc = rows.Step()) == SQLITE_ROW) {
        trace.launches.push_back({rows.Int(0), rows.Int(1), rows.Int(2)});
      }
      if (rc != SQLITE_DONE) return SqliteError(raw, path, "read shard launches", rc);
    }
    {
      ZB_ASSIGN_OR_RETURN(
          Stmt rows, Prepare(raw, path, "SELECT time_ns, bytes, device FROM memory ORDER BY rowid",
                             "read shard memory"));
      while ((rc = rows.Step()) == SQLITE_ROW) {
        trace.memory.push_back({rows.Int(0), rows.Int(1), static_cast<int32_t>(rows.Int(2))});
      }
      if (rc != SQLITE_DONE) return SqliteError(raw, path, "read shard memory", rc);
    }
    sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr);
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
