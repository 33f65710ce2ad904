// SPDX-License-Identifier: Apache-2.0
// The Nsight Systems importer (nsys_import.cpp): an `nsys export --type sqlite` database the test
// builds in nsys's schema, with planted durations to recover, and databases that are not one.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "zbkit/profiler/attribution.h"
#include "zbkit/profiler/costs.h"
#include "zbkit/profiler/import.h"

namespace zb::profiler {
namespace {

namespace fs = std::filesystem;

using testing_support::TempDir;

void Exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "") << "\n"
      << sql;
}

// The tables of an `nsys export --type sqlite` (3.x schema, the columns the importer reads and
// a few it does not).
void BuildNsysDatabase(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  Exec(db, R"sql(
    CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
    INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.25.0');
    CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
      rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
      endGlobalTid INTEGER, textId INTEGER REFERENCES StringIds(id), domainId INTEGER,
      uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
      int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT);
    CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
      eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,
      nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
      deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
      correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
      shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
      registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
      gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,
      blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
      dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
      localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL,
      sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
      deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
      correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
      deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
      srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
      graphNodeId INTEGER);
    CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER,
      deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, address INTEGER NOT NULL,
      pc INTEGER NOT NULL, bytes INTEGER NOT NULL, memKind INTEGER NOT NULL,
      memoryOperationType INTEGER NOT NULL, name TEXT, correlationId INTEGER,
      localMemoryPoolAddress INTEGER, localMemoryPoolReleaseThreshold INTEGER,
      localMemoryPoolSize INTEGER, localMemoryPoolUtilizedSize INTEGER,
      importedMemoryPoolAddress INTEGER, importedMemoryPoolProcessId INTEGER, streamId INTEGER);
    CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
    INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel'), (2, 'ampere_sgemm_128x64_nn'),
      (3, 'sgemm'), (4, 'F0.0.0'), (5, 'ncclDevKernel_SendRecv(ncclDevKernelArgsStorage)');
  )sql");
  // Process 4242, threads 4242 (main) and 4300; a VM id in the upper bits must be masked off.
  const int64_t vm = int64_t{1} << 48;
  const int64_t pid = 4242;
  const int64_t global_pid = vm | (pid << 24);
  const int64_t main_tid = global_pid | 4242;
  const int64_t other_tid = global_pid | 4300;
  std::string sql = "INSERT INTO PROCESSES VALUES (" + std::to_string(global_pid) +
                    ", 4242, 'python3 train.py');";
  // Domain "Megatron" (eventType 75) with id 5.
  sql +=
      "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (0, "
      "NULL, 75, 'Megatron', " +
      std::to_string(main_tid) + ", 5);";
  int64_t correlation = 1;
  int64_t t = 1'000'000;
  auto add_range = [&](const std::string& name, int64_t start, int64_t end, bool by_id) {
    sql +=
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, textId, globalTid, domainId) "
        "VALUES (" +
        std::to_string(start) + ", " + std::to_string(end) + ", 59, " +
        (by_id ? "NULL, 4" : "'" + name + "', NULL") + ", " + std::to_string(main_tid) + ", 5);";
  };
  auto add_kernel = [&](int64_t launch, int64_t start, int64_t end, int64_t stream, int name) {
    sql += "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (" + std::to_string(launch) + ", " +
           std::to_string(launch + 3) + ", 0, " + std::to_string(main_tid) + ", " +
           std::to_string(correlation) + ", 1, 0, NULL);";
    sql +=
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId,"
        " correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY,"
        " gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory,"
        " localMemoryPerThread, localMemoryTotal, gridId) VALUES (" +
        std::to_string(start) + ", " + std::to_string(end) + ", 0, 1, " + std::to_string(stream) +
        ", " + std::to_string(correlation) + ", " + std::to_string(global_pid) + ", " +
        std::to_string(name) +
        ", 3, 32, 1, 1, 1, 128, 1, "
        "1, 0, 0, 0, 0, 1);";
    ++correlation;
  };
  // Three iterations: F (two overlapping kernels: busy 5000) , B (busy 8000), W (busy 3000).
  for (int iteration = 0; iteration < 3; ++iteration) {
    for (int mb = 0; mb < 2; ++mb) {
      add_range("F" + std::to_string(mb) + ".0.0", t, t + 10'000, mb == 0);
      add_kernel(t + 100, t + 1000, t + 5000, 7, 2);
      add_kernel(t + 200, t + 4000, t + 6000, 8, 2);  // overlaps: union 5000
      t += 20'000;
    }
    for (int mb = 0; mb < 2; ++mb) {
      add_range("B" + std::to_string(mb) + ".0.0", t, t + 10'000, false);
      add_kernel(t + 100, t + 1000, t + 9000, 7, 2);
      add_kernel(t + 150, t + 9500, t + 9700, 20, 5);  // NCCL: communication, not B
      t += 20'000;
      add_range("W" + std::to_string(mb) + ".0.0", t, t + 10'000, false);
      add_kernel(t + 100, t + 1000, t + 4000, 7, 2);
      t += 20'000;
    }
  }
  // A start/end range that ended on another thread is skipped (endGlobalTid set).
  sql +=
      "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid) VALUES "
      "(10, 999999999, 60, 'F9.0.0', " +
      std::to_string(main_tid) + ", " + std::to_string(other_tid) + ");";
  // Memory: +4096 at the first forward, released later.
  sql +=
      "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, "
      "address, pc, bytes, memKind, memoryOperationType) VALUES (1000500, " +
      std::to_string(global_pid) + ", 0, 1, 1, 0, 4096, 2, 0), (5000000, " +
      std::to_string(global_pid) + ", 0, 1, 1, 0, 4096, 2, 1);";
  sql +=
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, bytes, copyKind) VALUES (10, 20, 0, 1, 7, 99999, " +
      std::to_string(global_pid) + ", 64, 1);";
  Exec(db, sql);
  sqlite3_close(db);
}

TEST(NsysImport, RecoversPlantedDurations) {
  TempDir dir;
  const std::string path = dir.Path("report.sqlite");
  BuildNsysDatabase(path);
  auto format = DetectTraceFormat(path);
  ASSERT_TRUE(format.ok());
  EXPECT_EQ(*format, TraceFormat::kNsys);
  auto traces = ImportTrace(path);
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  ASSERT_EQ(traces->size(), 1u);
  const RawTrace& trace = (*traces)[0];
  EXPECT_EQ(trace.process.pid, 4242);
  EXPECT_EQ(trace.process.command, "python3 train.py");
  EXPECT_EQ(trace.ranges.size(), 18u);        // the cross-thread start/end range is not among them
  EXPECT_EQ(trace.ranges[0].name, "F0.0.0");  // through StringIds
  EXPECT_EQ(trace.ranges[0].domain, "Megatron");
  EXPECT_EQ(trace.ranges[0].thread, 4242);
  EXPECT_EQ(trace.activities.size(), 31u);  // 30 kernels + 1 memcpy
  EXPECT_EQ(trace.memory.size(), 2u);
  EXPECT_EQ(trace.memory[1].bytes, -4096);

  auto attribution = Attribute(*traces, RuleSet());
  ASSERT_TRUE(attribution.ok());
  CostOptions options;
  options.skip_iters = 1;
  auto report = BuildCostReport(*attribution, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_TRUE(report->split);
  EXPECT_EQ(report->iterations_seen, 3);
  EXPECT_EQ(report->iterations_used, 2);
  ASSERT_EQ(report->stages.size(), 1u);
  EXPECT_EQ(report->stages[0].f.median, 5000);
  EXPECT_EQ(report->stages[0].b.median, 8000);
  EXPECT_EQ(report->stages[0].w.median, 3000);
  EXPECT_EQ(report->stages[0].f.samples, 4);
}

TEST(NsysImport, RejectsOtherDatabases) {
  TempDir dir;
  const std::string path = dir.Path("other.sqlite");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  Exec(db, "CREATE TABLE t (x)");
  sqlite3_close(db);
  auto traces = ImportNsysSqlite(path);
  ASSERT_FALSE(traces.ok());
  EXPECT_NE(traces.status().message().find("not an Nsight Systems export"), std::string::npos);
}

}  // namespace
}  // namespace zb::profiler
