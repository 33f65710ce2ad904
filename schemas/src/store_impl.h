// SPDX-License-Identifier: Apache-2.0
// Store::Impl, shared by the files that implement store.h, one per table group:
//   store.cpp            open, migrations, clusters, jobs, the enum names
//   store_costs.cpp      cost profiles with their stages, spread and hops
//   store_schedules.cpp  schedules with their ranks and ops
//   store_timelines.cpp  timelines with their ops and memory samples
//   store_runs.cpp       runs, and a replay's run with its measured timeline
//   store_frontiers.cpp  memory-vs-bubble frontiers with their points
//
// Shape: every public write is one write Transaction whose guard rolls back on any early return;
// reads that take several statements run inside one read Transaction, so that a schedule and its
// ops come from the same snapshot even while a writer commits. The Write*/Read* members run
// inside the caller's transaction, so that one operation can combine them (a schedule writes its
// cost profile and its predicted timeline). Error messages are "<store path>: <what>: <cause>".
#ifndef ZBKIT_SCHEMAS_SRC_STORE_IMPL_H_
#define ZBKIT_SCHEMAS_SRC_STORE_IMPL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "zbkit/schemas/sqlite.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/types.h"

namespace zb {

struct Store::Impl {
  sqlite::Connection conn;
  int schema_version = 0;
  bool read_only = false;

  const std::string& path() const { return conn.path(); }

  Status Invalid(std::string_view what, const std::string& problem) const {
    return InvalidInput(sqlite::OneLine(path() + ": " + std::string(what) + ": " + problem));
  }
  Status Inconsistent(std::string_view what, const std::string& problem) const {
    return StoreError(
        sqlite::OneLine(path() + ": " + std::string(what) + ": store is inconsistent: " + problem));
  }
  Status NoSuch(std::string_view what, std::string_view noun, int64_t id) const {
    return NotFound(path() + ": " + std::string(what) + ": no " + std::string(noun) + " with id " +
                    std::to_string(id));
  }
  Status CheckWritable(std::string_view what) const {
    if (read_only)
      return StoreError(path() + ": " + std::string(what) + ": store is open read-only");
    return Status::Ok();
  }
  // NotFound unless `sql` (a SELECT by ?1 = id) finds a row; `noun` names the row's kind.
  Status CheckExists(std::string_view sql, int64_t id, std::string_view what,
                     std::string_view noun) const;

  Expected<sqlite::Transaction> BeginWrite(std::string_view what) {
    return sqlite::Transaction::Begin(conn, sqlite::Transaction::Kind::kWrite, what);
  }
  Expected<sqlite::Transaction> BeginRead(std::string_view what) {
    return sqlite::Transaction::Begin(conn, sqlite::Transaction::Kind::kRead, what);
  }

  // store.cpp
  Status Migrate(std::string_view what);
  // store_costs.cpp
  Expected<int64_t> WriteCostProfile(int64_t job_id, const std::string& name,
                                     const CostProfile& costs,
                                     const CostProfileDetails* details = nullptr);
  Expected<CostProfile> ReadCostProfile(int64_t id, std::string_view what) const;
  // store_timelines.cpp
  Expected<int64_t> WriteTimeline(std::optional<int64_t> schedule_id, const Timeline& timeline,
                                  std::optional<int64_t> run_id = std::nullopt);
  // The rows of `timelines` matching `where` (a condition on ?1 = id), by id.
  Expected<std::vector<TimelineInfo>> ReadTimelineInfos(std::string_view where,
                                                        std::optional<int64_t> id,
                                                        std::string_view what) const;
  // store_schedules.cpp: the ScheduleInfo of every schedule, or of the one with `id`, by id.
  Expected<std::vector<ScheduleInfo>> ReadScheduleInfos(std::optional<int64_t> id,
                                                        std::string_view what) const;
  // store_runs.cpp
  Expected<int64_t> WriteRun(int64_t job_id, RunKind kind, const std::string& command,
                             std::optional<int> exit_code, std::optional<int64_t> schedule_id);
};

// The error of a Store used after being moved from.
inline Status StoreClosed() {
  return StoreError("store is closed (used after move)");
}

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_SRC_STORE_IMPL_H_
