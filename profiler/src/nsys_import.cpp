// SPDX-License-Identifier: Apache-2.0
// Nsight Systems SQLite export importer (import.h). The export has no indexes and its tables
// exist only for what was traced, so every table and column is looked up first
// (PRAGMA table_info) and each table is read with one sequential scan.
#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "sqlite_util.h"
#include "zbkit/profiler/import.h"

namespace zb::profiler {
namespace {

using internal::DbHandle;
using internal::Prepare;
using internal::SqliteError;
using internal::Stmt;

// globalTid = (pid << 24) | tid, with the hardware/VM id in the upper bits; globalPid is the
// globalTid of the process's main thread position with tid 0.
int64_t PidOf(int64_t global_id) {
  return (global_id >> 24) & 0xFFFFFF;
}
int64_t TidOf(int64_t global_tid) {
  return global_tid & 0xFFFFFF;
}

class NsysReader {
 public:
  NsysReader(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  Expected<std::set<std::string>> Columns(const std::string& table) {
    std::set<std::string> columns;
    ZB_ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_, path_, "PRAGMA table_info(\"" + table + "\")",
                                           "read schema of " + table));
    int rc;
    while ((rc = stmt.Step()) == SQLITE_ROW)
      columns.insert(stmt.Text(1));
    if (rc != SQLITE_DONE) return SqliteError(db_, path_, "read schema of " + table, rc);
    return columns;
  }

  Status LoadStrings() {
    ZB_ASSIGN_OR_RETURN(auto columns, Columns("StringIds"));
    if (columns.empty()) return Status::Ok();
    ZB_ASSIGN_OR_RETURN(Stmt stmt,
                        Prepare(db_, path_, "SELECT id, value FROM StringIds", "read StringIds"));
    int rc;
    while ((rc = stmt.Step()) == SQLITE_ROW)
      strings_[stmt.Int(0)] = stmt.Text(1);
    if (rc != SQLITE_DONE) return SqliteError(db_, path_, "read StringIds", rc);
    return Status::Ok();
  }

  const std::string& String(int64_t id) const {
    static const std::string kEmpty;
    auto it = strings_.find(id);
    return it == strings_.end() ? kEmpty : it->second;
  }

  RawTrace& Process(int64_t pid) {
    RawTrace& trace = processes_[pid];
    trace.process.pid = pid;
    return trace;
  }

  Status ReadNvtx() {
    ZB_ASSIGN_OR_RETURN(auto columns, Columns("NVTX_EVENTS"));
    if (columns.empty()) return Status::Ok();
    for (const char* needed : {"start", "end", "eventType", "globalTid"}) {
      if (!columns.count(needed)) {
        return InvalidInput(path_ + ": NVTX_EVENTS has no column " + needed);
      }
    }
    const bool has_text_id = columns.count("textId") > 0;
    const bool has_text = columns.count("text") > 0;
    const bool has_domain = columns.count("domainId") > 0;
    const bool has_end_tid = columns.count("endGlobalTid") > 0;
    // Domain names: eventType 75 (domain create) rows carry the name.
    std::map<int64_t, std::string> domains;
    if (has_domain) {
      ZB_ASSIGN_OR_RETURN(
          Stmt stmt,
          Prepare(db_, path_,
                  std::string("SELECT domainId, ") + (has_text ? "text" : "NULL") + ", " +
                      (has_text_id ? "textId" : "NULL") + " FROM NVTX_EVENTS WHERE eventType = 75",
                  "read NVTX domains"));
      int rc;
      while ((rc = stmt.Step()) == SQLITE_ROW) {
        domains[stmt.Int(0)] = stmt.IsNull(1) ? String(stmt.Int(2)) : stmt.Text(1);
      }
      if (rc != SQLITE_DONE) return SqliteError(db_, path_, "read NVTX domains", rc);
    }
    // Ranges that end on the thread that opened them: the only ones whose launches can be
    // attributed by thread (nsys's own projection does the same).
    const std::string sql =
        std::string("SELECT start, end, globalTid, ") + (has_text ? "text" : "NULL") + ", " +
        (has_text_id ? "textId" : "NULL") + ", " + (has_domain ? "domainId" : "0") +
        " FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71) AND end IS NOT NULL" +
        (has_end_tid ? " AND endGlobalTid IS NULL" : "");
    ZB_ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_, path_, sql, "read NVTX_EVENTS"));
    int rc;
    while ((rc = stmt.Step()) == SQLITE_ROW) {
      const int64_t global_tid = stmt.Int(2);
      TraceRange range;
      range.start = stmt.Int(0);
      range.end = stmt.Int(1);
      range.thread = TidOf(global_tid);
      range.name = !stmt.IsNull(3) ? stmt.Text(3) : String(stmt.Int(4));
      auto domain = domains.find(stmt.Int(5));
      if (domain != domains.end()) range.domain = domain->second;
      Process(PidOf(global_tid)).ranges.push_back(std::move(range));
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, path_, "read NVTX_EVENTS", rc);
    return Status::Ok();
  }

  Status ReadApi(const char* table) {
    ZB_ASSIGN_OR_RETURN(auto columns, Columns(table));
    if (columns.empty()) return Status::Ok();
    ZB_ASSIGN_OR_RETURN(
        Stmt stmt,
        Prepare(db_, path_, std::string("SELECT start, globalTid, correlationId FROM ") + table,
                std::string("read ") + table));
    int rc;
    while ((rc = stmt.Step()) == SQLITE_ROW) {
      const int64_t global_tid = stmt.Int(1);
      Process(PidOf(global_tid)).launches.push_back({stmt.Int(2), TidOf(global_tid), stmt.Int(0)});
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, path_, std::string("read ") + table, rc);
    return Status::Ok();
  }

  Status ReadActivities(const char* table, ActivityKind kind) {
    ZB_ASSIGN_OR_RETURN(auto columns, Columns(table));
    if (columns.empty()) return Status::Ok();
    std::string name = "NULL";
    if (kind == ActivityKind::kKernel) {
      for (const char* column : {"demangledName", "shortName", "mangledName"}) {
        if (columns.count(column)) {
          name = column;
          break;
        }
      }
    }
    const std::string owner = columns.count("globalPid") ? "globalPid" : "globalTid";
    const std::string bytes = columns.count("bytes") ? "bytes" : "0";
    const std::string copy_kind = columns.count("copyKind") ? "copyKind" : "0";
    ZB_ASSIGN_OR_RETURN(
        Stmt stmt, Prepare(db_, path_,
                           "SELECT start, end, deviceId, streamId, correlationId, " + owner + ", " +
                               name + ", " + bytes + ", " + copy_kind + " FROM " + table,
                           std::string("read ") + table));
    int rc;
    while ((rc = stmt.Step()) == SQLITE_ROW) {
      DeviceActivity activity;
      activity.kind = kind;
      activity.start = stmt.Int(0);
      activity.end = stmt.Int(1);
      activity.device = static_cast<int32_t>(stmt.Int(2));
      activity.stream = stmt.Int(3);
      activity.correlation = stmt.Int(4);
      activity.bytes = stmt.Int(7);
      if (kind == ActivityKind::kKernel) {
        activity.name = String(stmt.Int(6));
      } else if (kind == ActivityKind::kMemset) {
        activity.name = "memset";
      } else {
        switch (stmt.Int(8)) {
          case 1:
            activity.name = "memcpy HtoD";
            break;
          case 2:
            activity.name = "memcpy DtoH";
            break;
          case 8:
            activity.name = "memcpy DtoD";
            break;
          case 10:
            activity.name = "memcpy PtoP";
            break;
          default:
            activity.name = "memcpy";
        }
      }
      Process(PidOf(stmt.Int(5))).activities.push_back(std::move(activity));
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, path_, std::string("read ") + table, rc);
    return Status::Ok();
  }

  Status ReadMemory() {
    const char* table = "CUDA_GPU_MEMORY_USAGE_EVENTS";
    ZB_ASSIGN_OR_RETURN(auto columns, Columns(table));
    if (columns.empty()) return Status::Ok();
    ZB_ASSIGN_OR_RETURN(Stmt stmt,
                        Prepare(db_, path_,
                                "SELECT start, globalPid, deviceId, bytes, memoryOperationType"
                                " FROM CUDA_GPU_MEMORY_USAGE_EVENTS",
                                "read CUDA_GPU_MEMORY_USAGE_EVENTS"));
    int rc;
    while ((rc = stmt.Step()) == SQLITE_ROW) {
      const int64_t bytes = stmt.Int(3);
      // memoryOperationType 0 allocation, 1 release.
      Process(PidOf(stmt.Int(1)))
          .memory.push_back(
              {stmt.Int(0), stmt.Int(4) == 1 ? -bytes : bytes, static_cast<int32_t>(stmt.Int(2))});
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, path_, "read CUDA_GPU_MEMORY_USAGE_EVENTS", rc);
    return Status::Ok();
  }

  Status ReadProcessNames() {
    ZB_ASSIGN_OR_RETURN(auto columns, Columns("PROCESSES"));
    if (!columns.count("pid") || !columns.count("name")) return Status::Ok();
    ZB_ASSIGN_OR_RETURN(Stmt stmt,
                        Prepare(db_, path_, "SELECT pid, name FROM PROCESSES", "read PROCESSES"));
    int rc;
    while ((rc = stmt.Step()) == SQLITE_ROW) {
      auto it = processes_.find(stmt.Int(0));
      if (it != processes_.end()) it->second.process.command = stmt.Text(1);
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, path_, "read PROCESSES", rc);
    return Status::Ok();
  }

  std::vector<RawTrace> Take() {
    std::vector<RawTrace> traces;
    for (auto& [pid, trace] : processes_) {
      trace.source = "nsys:" + path_;
      traces.push_back(std::move(trace));
    }
    return traces;
  }

 private:
  sqlite3* db_;
  std::string path_;
  std::map<int64_t, std::string> strings_;
  std::map<int64_t, RawTrace> processes_;
};

}  // namespace

Expected<std::vector<RawTrace>> ImportNsysSqlite(const std::string& path) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) {
    return NotFound(path + ": cannot open: " + std::strerror(errno));
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  DbHandle db(raw);
  if (rc != SQLITE_OK) return SqliteError(raw, path, "open nsys export", rc);
  NsysReader reader(raw, path);
  {
    auto tables = reader.Columns("NVTX_EVENTS");
    if (!tables.ok()) {
      return InvalidInput(path + ": not an SQLite file (" + tables.status().message() + ")");
    }
    auto kernels = reader.Columns("CUPTI_ACTIVITY_KIND_KERNEL");
    if (!kernels.ok()) return kernels.status();
    auto strings = reader.Columns("StringIds");
    if (!strings.ok()) return strings.status();
    if (tables->empty() && kernels->empty()) {
      return InvalidInput(path +
                          ": not an Nsight Systems export (no NVTX_EVENTS or "
                          "CUPTI_ACTIVITY_KIND_KERNEL table)");
    }
  }
  ZB_RETURN_IF_ERROR(internal::Exec(raw, path, "BEGIN", "read nsys export"));
  ZB_RETURN_IF_ERROR(reader.LoadStrings());
  ZB_RETURN_IF_ERROR(reader.ReadNvtx());
  ZB_RETURN_IF_ERROR(reader.ReadApi("CUPTI_ACTIVITY_KIND_RUNTIME"));
  ZB_RETURN_IF_ERROR(reader.ReadApi("CUPTI_ACTIVITY_KIND_DRIVER"));
  ZB_RETURN_IF_ERROR(reader.ReadActivities("CUPTI_ACTIVITY_KIND_KERNEL", ActivityKind::kKernel));
  ZB_RETURN_IF_ERROR(reader.ReadActivities("CUPTI_ACTIVITY_KIND_MEMCPY", ActivityKind::kMemcpy));
  ZB_RETURN_IF_ERROR(reader.ReadActivities("CUPTI_ACTIVITY_KIND_MEMSET", ActivityKind::kMemset));
  ZB_RETURN_IF_ERROR(reader.ReadMemory());
  ZB_RETURN_IF_ERROR(reader.ReadProcessNames());
  sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr);
  return reader.Take();
}

}  // namespace zb::profiler
