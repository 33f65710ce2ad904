// SPDX-License-Identifier: Apache-2.0
// The zbkit store: one SQLite file holding clusters, jobs, cost profiles, schedules with their
// ops, and timelines (predicted and measured) with memory samples.
//
// Contract:
//  - The schema is schemas/store.sql (version 1, embedded at build time) followed by the later
//    migration steps in store.cpp; `PRAGMA user_version` holds the schema version and Open()
//    applies forward migrations inside one transaction. A store written by a newer zbkit is
//    refused, not modified.
//  - WAL journal, foreign keys on, a busy timeout, prepared statements.
//  - Every logical write (one schedule with all its ops, one timeline with all its samples) is one
//    transaction: on any error nothing of it is left behind.
//  - No method throws; errors are one line naming the store file and what failed.
#ifndef ZBKIT_MODEL_STORE_H_
#define ZBKIT_MODEL_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/model/status.h"
#include "zbkit/model/types.h"

namespace zb {

struct ClusterInfo {
  std::string name;  // unique key, e.g. the host name or a user label
  std::string gpu;
  std::string interconnect;
  std::string driver_version;
  std::string nccl_version;
};

// One row of ListSchedules(): what a browser or `zb show` needs without loading the ops.
struct ScheduleInfo {
  int64_t id = 0;
  std::string cluster;
  std::string job;
  std::string family;
  int ranks = 0;
  int microbatches = 0;
  int chunks = 1;
  Placement placement = Placement::kLoop;
  std::optional<double> memory_limit;  // per-rank cap the schedule was tuned for, if any
  Prediction predicted;
  int64_t num_ops = 0;
  std::string created_at;  // UTC, ISO 8601
};

struct TimelineInfo {
  int64_t id = 0;
  std::optional<int64_t> schedule_id;
  TimelineKind kind = TimelineKind::kPredicted;
  int64_t num_ops = 0;
  std::string created_at;
};

struct CostProfileInfo {
  int64_t id = 0;
  std::string cluster;
  std::string job;
  std::string name;
  int num_stages = 0;
  std::string created_at;
};

class Store {
 public:
  // 1: store.sql. 2: timeline_ops.kind accepts 'COMM' (measured communication ops).
  static constexpr int kSchemaVersion = 2;

  enum class Mode {
    kReadWrite,  // create the file if missing, migrate it to kSchemaVersion
    kReadOnly,   // the file must exist and be a zbkit store; nothing is written
  };

  static Expected<Store> Open(const std::string& path, Mode mode = Mode::kReadWrite);

  Store(Store&& other) noexcept;
  Store& operator=(Store&& other) noexcept;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();

  const std::string& path() const;
  int schema_version() const;

  // Returns the id of the cluster with this name, inserting it (or updating its descriptive
  // fields when non-empty) as needed.
  Expected<int64_t> EnsureCluster(const ClusterInfo& cluster);
  Expected<int64_t> EnsureJob(int64_t cluster_id, const std::string& job_name);

  Expected<int64_t> InsertCostProfile(int64_t job_id, const std::string& name,
                                      const CostProfile& costs);
  Expected<CostProfile> LoadCostProfile(int64_t id) const;
  Expected<std::vector<CostProfileInfo>> ListCostProfiles() const;

  // Stores the schedule, its per-stage costs, every op and, when the schedule has a prediction,
  // its predicted timeline, in one transaction. Returns the schedule id.
  Expected<int64_t> InsertSchedule(int64_t job_id, const Schedule& schedule,
                                   std::optional<double> memory_limit = std::nullopt);
  // NotFound if there is no such schedule.
  Expected<Schedule> LoadSchedule(int64_t id) const;
  Expected<std::vector<ScheduleInfo>> ListSchedules() const;

  Expected<int64_t> InsertTimeline(std::optional<int64_t> schedule_id, const Timeline& timeline);
  Expected<Timeline> LoadTimeline(int64_t id) const;
  Expected<std::vector<TimelineInfo>> ListTimelines() const;

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zb

#endif  // ZBKIT_MODEL_STORE_H_
