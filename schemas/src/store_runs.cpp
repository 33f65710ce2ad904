// SPDX-License-Identifier: Apache-2.0
// Store: runs (one execution of a job) and what hangs off them: a profile's measured timeline,
// a replay's run with its measured timeline.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store_impl.h"
#include "zbkit/schemas/store.h"

namespace zb {

using sqlite::Statement;

Expected<int64_t> Store::Impl::WriteRun(int64_t job_id, RunKind kind, const std::string& command,
                                        std::optional<int> exit_code,
                                        std::optional<int64_t> schedule_id) {
  const char* what = "insert run";
  const char* kind_name = RunKindName(kind);
  if (kind_name == nullptr) {
    return Invalid(what, "run kind must be profile, import or replay, got value " +
                             std::to_string(static_cast<int>(kind)));
  }
  ZB_RETURN_IF_ERROR(CheckExists("SELECT 1 FROM jobs WHERE id = ?1", job_id, what, "job"));
  if (schedule_id) {
    ZB_RETURN_IF_ERROR(
        CheckExists("SELECT 1 FROM schedules WHERE id = ?1", *schedule_id, what, "schedule"));
  }
  ZB_ASSIGN_OR_RETURN(Statement row,
                      conn.Prepare("INSERT INTO runs (job_id, kind, schedule_id, command,"
                                   " exit_code, schema_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                                   what));
  row.BindInt(1, job_id);
  row.BindStaticText(2, kind_name);
  row.BindOptional(3, schedule_id);
  row.BindText(4, command);
  row.BindOptional(5, exit_code ? std::optional<int64_t>(*exit_code) : std::nullopt);
  row.BindInt(6, Store::kSchemaVersion);
  ZB_RETURN_IF_ERROR(row.Run(what));
  return conn.last_insert_rowid();
}

Expected<int64_t> Store::InsertRun(int64_t job_id, RunKind kind, const std::string& command,
                                   std::optional<int> exit_code,
                                   std::optional<int64_t> schedule_id) {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const char* what = "insert run";
  ZB_RETURN_IF_ERROR(impl.CheckWritable(what));
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginWrite(what));
  ZB_ASSIGN_OR_RETURN(int64_t id, impl.WriteRun(job_id, kind, command, exit_code, schedule_id));
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

Expected<std::vector<RunInfo>> Store::ListRuns() const {
  if (!impl_) return StoreClosed();
  const Impl& impl = *impl_;
  const char* what = "list runs";
  return sqlite::Query<RunInfo>(
      impl.conn,
      "SELECT runs.id, runs.job_id, runs.kind, runs.schedule_id, runs.command, runs.exit_code,"
      " runs.started_at, clusters.name, jobs.name FROM runs JOIN jobs ON jobs.id = runs.job_id"
      " JOIN clusters ON clusters.id = jobs.cluster_id ORDER BY runs.id",
      what, sqlite::kNoParams, [&](const Statement& row) -> Expected<RunInfo> {
        RunInfo info;
        info.id = row.Int(0);
        info.job_id = row.Int(1);
        const auto kind = ParseRunKind(row.Text(2));
        if (!kind) {
          return impl.Inconsistent(what, "run " + std::to_string(info.id) + " has unknown kind '" +
                                             std::string(row.Text(2)) + "'");
        }
        info.kind = *kind;
        info.schedule_id = row.OptionalInt(3);
        info.command = row.Text(4);
        if (!row.IsNull(5)) info.exit_code = static_cast<int>(row.Int(5));
        info.started_at = row.Text(6);
        info.cluster = row.Text(7);
        info.job = row.Text(8);
        return info;
      });
}

Expected<int64_t> Store::InsertRunTimeline(int64_t run_id, const Timeline& timeline) {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const char* what = "insert timeline";
  ZB_RETURN_IF_ERROR(impl.CheckWritable(what));
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginWrite(what));
  ZB_RETURN_IF_ERROR(impl.CheckExists("SELECT 1 FROM runs WHERE id = ?1", run_id, what, "run"));
  ZB_ASSIGN_OR_RETURN(int64_t id, impl.WriteTimeline(std::nullopt, timeline, run_id));
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

Expected<int64_t> Store::RecordMeasuredRun(int64_t job_id, int64_t schedule_id,
                                           const std::string& command, std::optional<int> exit_code,
                                           const Timeline& timeline) {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const char* what = "record measured run";
  ZB_RETURN_IF_ERROR(impl.CheckWritable(what));
  if (timeline.kind != TimelineKind::kMeasured) {
    return impl.Invalid(what, "the timeline of a replay must be measured, not predicted");
  }
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginWrite(what));
  ZB_ASSIGN_OR_RETURN(int64_t run_id,
                      impl.WriteRun(job_id, RunKind::kReplay, command, exit_code, schedule_id));
  ZB_RETURN_IF_ERROR(impl.WriteTimeline(schedule_id, timeline, run_id).status());
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return run_id;
}

Expected<std::vector<TimelineInfo>> Store::ListRunTimelines(int64_t run_id) const {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const char* what = "list run timelines";
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginRead(what));
  ZB_RETURN_IF_ERROR(impl.CheckExists("SELECT 1 FROM runs WHERE id = ?1", run_id, what, "run"));
  return impl.ReadTimelineInfos(" WHERE run_id = ?1", run_id, what);
}

Expected<std::vector<TimelineInfo>> Store::ListMeasuredTimelines(int64_t schedule_id) const {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const char* what = "list measured timelines";
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginRead(what));
  ZB_RETURN_IF_ERROR(
      impl.CheckExists("SELECT 1 FROM schedules WHERE id = ?1", schedule_id, what, "schedule"));
  return impl.ReadTimelineInfos(" WHERE schedule_id = ?1 AND kind = 'measured'", schedule_id, what);
}

}  // namespace zb
