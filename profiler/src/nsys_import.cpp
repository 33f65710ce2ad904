// SPDX-License-Identifier: Apache-2.0
// Nsight Systems SQLite export importer (import.h). The export has no indexes and its tables
// exist only for what was traced, so every table and column is looked up first
// (PRAGMA table_info) and each table is read with one sequential scan.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "zbkit/profiler/import.h"
#include "zbkit/schemas/sqlite.h"

namespace zb::profiler {
namespace {

using sqlite::Connection;
using sqlite::ForEachRow;
using sqlite::kNoParams;
using sqlite::Statement;

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
  explicit NsysReader(const Connection& conn) : conn_(conn), path_(conn.path()) {}

  Expected<std::set<std::string>> Columns(const std::string& table) {
    std::set<std::string> columns;
    // The table names are the constants of this file.
    ZB_RETURN_IF_ERROR(ForEachRow(conn_, "PRAGMA table_info(\"" + table + "\")",
                                  "read schema of " + table, kNoParams,
                                  [&](const Statement& row) { columns.emplace(row.Text(1)); }));
    return columns;
  }

  Status LoadStrings() {
    ZB_ASSIGN_OR_RETURN(auto columns, Columns("StringIds"));
    if (columns.empty()) return Status::Ok();
    return ForEachRow(conn_, "SELECT id, value FROM StringIds", "read StringIds", kNoParams,
                      [&](const Statement& row) { strings_[row.Int(0)] = row.Text(1); });
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
      ZB_RETURN_IF_ERROR(ForEachRow(
          conn_,
          std::string("SELECT domainId, ") + (has_text ? "text" : "NULL") + ", " +
              (has_text_id ? "textId" : "NULL") + " FROM NVTX_EVENTS WHERE eventType = 75",
          "read NVTX domains", kNoParams, [&](const Statement& stmt) {
            domains[stmt.Int(0)] = stmt.IsNull(1) ? String(stmt.Int(2)) : std::string(stmt.Text(1));
          }));
    }
    // Ranges that end on the thread that opened them: the only ones whose launches can be
    // attributed by thread (nsys's own projection does the same).
    const std::string sql =
        std::string("SELECT start, end, globalTid, ") + (has_text ? "text" : "NULL") + ", " +
        (has_text_id ? "textId" : "NULL") + ", " + (has_domain ? "domainId" : "0") +
        " FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71) AND end IS NOT NULL" +
        (has_end_tid ? " AND endGlobalTid IS NULL" : "");
    return ForEachRow(conn_, sql, "read NVTX_EVENTS", kNoParams, [&](const Statement& stmt) {
      const int64_t global_tid = stmt.Int(2);
      TraceRange range;
      range.start = stmt.Int(0);
      range.end = stmt.Int(1);
      range.thread = TidOf(global_tid);
      range.name = !stmt.IsNull(3) ? std::string(stmt.Text(3)) : String(stmt.Int(4));
      auto domain = domains.find(stmt.Int(5));
      if (domain != domains.end()) range.domain = domain->second;
      Process(PidOf(global_tid)).ranges.push_back(std::move(range));
    });
  }

  Status ReadApi(const char* table) {
    ZB_ASSIGN_OR_RETURN(auto columns, Columns(table));
    if (columns.empty()) return Status::Ok();
    return ForEachRow(conn_, std::string("SELECT start, globalTid, correlationId FROM ") + table,
                      std::string("read ") + table, kNoParams, [&](const Statement& stmt) {
                        const int64_t global_tid = stmt.Int(1);
                        Process(PidOf(global_tid))
                            .launches.push_back({stmt.Int(2), TidOf(global_tid), stmt.Int(0)});
                      });
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
    const std::string sql = "SELECT start, end, deviceId, streamId, correlationId, " + owner +
                            ", " + name + ", " + bytes + ", " + copy_kind + " FROM " + table;
    return ForEachRow(conn_, sql, std::string("read ") + table, kNoParams,
                      [&](const Statement& stmt) {
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
                      });
  }

  Status ReadMemory() {
    const char* table = "CUDA_GPU_MEMORY_USAGE_EVENTS";
    ZB_ASSIGN_OR_RETURN(auto columns, Columns(table));
    if (columns.empty()) return Status::Ok();
    return ForEachRow(conn_,
                      "SELECT start, globalPid, deviceId, bytes, memoryOperationType"
                      " FROM CUDA_GPU_MEMORY_USAGE_EVENTS",
                      "read CUDA_GPU_MEMORY_USAGE_EVENTS", kNoParams, [&](const Statement& stmt) {
                        const int64_t bytes = stmt.Int(3);
                        // memoryOperationType 0 allocation, 1 release.
                        Process(PidOf(stmt.Int(1)))
                            .memory.push_back({stmt.Int(0), stmt.Int(4) == 1 ? -bytes : bytes,
                                               static_cast<int32_t>(stmt.Int(2))});
                      });
  }

  Status ReadProcessNames() {
    ZB_ASSIGN_OR_RETURN(auto columns, Columns("PROCESSES"));
    if (!columns.count("pid") || !columns.count("name")) return Status::Ok();
    return ForEachRow(conn_, "SELECT pid, name FROM PROCESSES", "read PROCESSES", kNoParams,
                      [&](const Statement& stmt) {
                        auto it = processes_.find(stmt.Int(0));
                        if (it != processes_.end()) it->second.process.command = stmt.Text(1);
                      });
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
  const Connection& conn_;
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
  ZB_ASSIGN_OR_RETURN(Connection conn,
                      Connection::Open(path, sqlite::OpenMode::kReadOnly, "open nsys export"));
  NsysReader reader(conn);
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
  ZB_ASSIGN_OR_RETURN(
      sqlite::Transaction snapshot,
      sqlite::Transaction::Begin(conn, sqlite::Transaction::Kind::kRead, "read nsys export"));
  ZB_RETURN_IF_ERROR(reader.LoadStrings());
  ZB_RETURN_IF_ERROR(reader.ReadNvtx());
  ZB_RETURN_IF_ERROR(reader.ReadApi("CUPTI_ACTIVITY_KIND_RUNTIME"));
  ZB_RETURN_IF_ERROR(reader.ReadApi("CUPTI_ACTIVITY_KIND_DRIVER"));
  ZB_RETURN_IF_ERROR(reader.ReadActivities("CUPTI_ACTIVITY_KIND_KERNEL", ActivityKind::kKernel));
  ZB_RETURN_IF_ERROR(reader.ReadActivities("CUPTI_ACTIVITY_KIND_MEMCPY", ActivityKind::kMemcpy));
  ZB_RETURN_IF_ERROR(reader.ReadActivities("CUPTI_ACTIVITY_KIND_MEMSET", ActivityKind::kMemset));
  ZB_RETURN_IF_ERROR(reader.ReadMemory());
  ZB_RETURN_IF_ERROR(reader.ReadProcessNames());
  return reader.Take();
}

}  // namespace zb::profiler
