// SPDX-License-Identifier: Apache-2.0
// What the store's tests share: the fixture (a temporary directory, a store with one job), row
// counts that show a failed write left nothing behind, and the schedules and timelines they store.
// One test file per store source: store_test.cpp (opening, versions, concurrency),
// store_migration_test.cpp, store_costs_test.cpp, store_schedules_test.cpp,
// store_timelines_test.cpp, store_runs_test.cpp (and store_frontier_test.cpp, store_hops_test.cpp).
#ifndef ZBKIT_TESTS_SCHEMAS_STORE_TEST_SUPPORT_H_
#define ZBKIT_TESTS_SCHEMAS_STORE_TEST_SUPPORT_H_

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "assert_ok.h"
#include "raw_db.h"
#include "store_dir.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/types.h"
#include "zbkit/schemas/validate.h"

namespace zb::store_testing {

namespace fs = std::filesystem;

inline const char* const kTables[] = {"clusters",
                                      "jobs",
                                      "cost_profiles",
                                      "cost_profile_stages",
                                      "schedules",
                                      "schedule_ranks",
                                      "schedule_ops",
                                      "runs",
                                      "timelines",
                                      "timeline_ops",
                                      "memory_samples",
                                      "cost_profile_spread",
                                      "cost_profile_hops",
                                      "frontiers",
                                      "frontier_points",
                                      "hop_measurements",
                                      "measured_hops",
                                      "cost_profile_layers",
                                      "cost_profile_layer_options"};

using testing_support::RawDb;
using testing_support::ReadBytes;

// Rows per table, to show that a failed write left nothing behind.
inline std::map<std::string, int64_t> RowCounts(RawDb& db) {
  std::map<std::string, int64_t> counts;
  for (const char* table : kTables) {
    counts[table] = db.Int(std::string("SELECT count(*) FROM ") + table);
  }
  return counts;
}

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

inline ClusterInfo Cluster(const std::string& name, const std::string& gpu = "",
                           const std::string& interconnect = "", const std::string& driver = "",
                           const std::string& nccl = "") {
  return {name, gpu, interconnect, driver, nccl};
}

inline bool IsOneLine(const std::string& message) {
  return !message.empty() && message.find('\n') == std::string::npos;
}

// A hand-built schedule: p = 2, m = 2, placement v (rank 0 holds stages 0 and 3, rank 1 holds 1
// and 2), with split B/W for some (stage, microbatch) and fused BW for others, distinct
// non-integral memory values and a prediction, so that every column has something to lose.
inline Schedule MakeVSchedule() {
  Schedule schedule;
  schedule.ranks = 2;
  schedule.microbatches = 2;
  schedule.chunks = 2;
  schedule.placement = Placement::kV;
  schedule.family = "hand-v";
  schedule.costs.comm = 600'001;
  schedule.costs.stages = {{18'500'000, 18'100'000, 9'300'000, 201216.5, 73728.25},
                           {17'000'001, 16'000'003, 8'000'007, 0.1, 0.03},
                           {16'500'000, 15'900'000, 7'700'000, 1e-3, 3e-4},
                           {19'000'000, 21'000'000, 11'000'000, 123456.789, 0}};
  schedule.programs.resize(2);
  schedule.programs[0].stages = {0, 3};
  schedule.programs[1].stages = {1, 2};
  struct Step {
    int rank;
    OpKind kind;
    int chunk;
    int microbatch;
  };
  // Rank 0: stage 0 (chunk 0) mb0 split, mb1 fused; stage 3 (chunk 1) mb0 fused, mb1 split.
  // Rank 1: stage 1 (chunk 0) both split; stage 2 (chunk 1) both fused.
  const Step steps[] = {
      {0, OpKind::kF, 0, 0},  {0, OpKind::kF, 0, 1},  {0, OpKind::kF, 1, 0}, {0, OpKind::kBW, 1, 0},
      {0, OpKind::kF, 1, 1},  {0, OpKind::kB, 1, 1},  {0, OpKind::kB, 0, 0}, {0, OpKind::kW, 1, 1},
      {0, OpKind::kBW, 0, 1}, {0, OpKind::kW, 0, 0},  {1, OpKind::kF, 0, 0}, {1, OpKind::kF, 1, 0},
      {1, OpKind::kF, 0, 1},  {1, OpKind::kBW, 1, 0}, {1, OpKind::kF, 1, 1}, {1, OpKind::kB, 0, 0},
      {1, OpKind::kBW, 1, 1}, {1, OpKind::kB, 0, 1},  {1, OpKind::kW, 0, 0}, {1, OpKind::kW, 0, 1},
  };
  TimeNs clock[2] = {0, 1'234'567};
  for (const Step& step : steps) {
    RankProgram& program = schedule.programs[step.rank];
    const StageCost& cost = schedule.costs.stages[program.stages[step.chunk]];
    Op op;
    op.kind = step.kind;
    op.chunk = step.chunk;
    op.microbatch = step.microbatch;
    op.start = clock[step.rank];
    op.end = op.start + cost.Duration(step.kind);
    clock[step.rank] = op.end + 7;
    program.ops.push_back(op);
  }
  Prediction predicted;
  predicted.makespan = std::max(clock[0], clock[1]);
  predicted.span = predicted.makespan - 1'000;
  predicted.bubble_rate = 0.123456789012345;
  predicted.paper_bubble_rate = 0.0987654321;
  predicted.peak_memory = {402433.25, 0.1 + 0.2};
  schedule.predicted = predicted;
  return schedule;
}

inline Timeline MakeMeasuredTimeline() {
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  timeline.ops = {{0, 0, OpKind::kF, 0, 10, 20},
                  {1, 1, OpKind::kF, 0, 25, 40},
                  {1, 1, OpKind::kBW, 0, 41, 90},
                  {0, 0, OpKind::kB, 0, 95, 120},
                  {0, 0, OpKind::kW, 0, 121, 121}};  // zero-length ops are legal
  timeline.memory = {{0, 20, 1.5}, {1, 40, 2.75}, {1, 90, 0}, {0, 120, 0.1}, {0, 121, -1e-17}};
  return timeline;
}

class StoreTest : public testing_support::StoreDirTest {
 protected:
  std::string PathOf(const std::string& name) const { return dir_ + "/" + name; }

  std::set<std::string> DirEntries() const {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.insert(entry.path().filename().string());
    }
    return names;
  }

  // A store with one cluster and job; returns the job id through `job_id`.
  void MakeStoreWithJob(const std::string& path, int64_t* job_id) {
    ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path));
    ZB_ASSERT_OK_AND_ASSIGN(int64_t cluster,
                            store.EnsureCluster(Cluster("node-a", "H100", "NVLink")));
    ZB_ASSERT_OK_AND_ASSIGN(*job_id, store.EnsureJob(cluster, "gpt-1b"));
  }
};

// ---- Creation and schema version -----------------------------------------------------------

// Applies the released migration step `file` (schemas/migrations/; released steps never change,
// `marker` checks it is the one meant) and sets the version it produces.
inline void ApplyReleasedStep(const std::string& path, const std::string& file, const char* marker,
                              int version) {
  const std::string step =
      ReadBytes(std::string(ZBKIT_TEST_DATA_DIR) + "/../../schemas/migrations/" + file);
  ASSERT_NE(step.find(marker), std::string::npos) << file;
  RawDb raw(path);
  raw.Exec(step);
  raw.Exec("PRAGMA user_version = " + std::to_string(version));
}

// A measured timeline of two iterations on two ranks.
inline Timeline MakeTwoIterationTimeline() {
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  for (int32_t iteration = 0; iteration < 2; ++iteration) {
    const TimeNs base = 1000 * iteration;
    timeline.ops.push_back({0, 0, OpKind::kF, 0, base + 10, base + 20, iteration});
    timeline.ops.push_back({1, 1, OpKind::kF, 0, base + 25, base + 40, iteration});
    timeline.ops.push_back({1, 1, OpKind::kBW, 0, base + 41, base + 90, iteration});
    timeline.ops.push_back({0, 0, OpKind::kComm, 0, base + 20, base + 25, iteration});
    timeline.ops.push_back({0, 0, OpKind::kBW, 0, base + 95, base + 150, iteration});
  }
  timeline.memory = {{0, 20, 1.5}, {0, 150, 0}, {0, 1020, 1.5}, {0, 1150, 0}};
  return timeline;
}

}  // namespace zb::store_testing

#endif  // ZBKIT_TESTS_SCHEMAS_STORE_TEST_SUPPORT_H_
