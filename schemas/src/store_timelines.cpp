// SPDX-License-Identifier: Apache-2.0
// Store: timelines (timelines, timeline_ops, memory_samples), predicted and measured. The 1M-row
// tables go through sqlite::BatchInserter on the way in and one ordered range scan of their
// primary key on the way out.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store_impl.h"
#include "zbkit/schemas/store.h"

namespace zb {
namespace {

using sqlite::Statement;

std::optional<TimelineKind> ParseTimelineKind(std::string_view name) {
  if (name == "predicted") return TimelineKind::kPredicted;
  if (name == "measured") return TimelineKind::kMeasured;
  return std::nullopt;
}

Status WriteTimelineOps(const Store::Impl& impl, int64_t timeline_id, const Timeline& timeline,
                        std::string_view what) {
  ZB_ASSIGN_OR_RETURN(sqlite::BatchInserter ops,
                      sqlite::BatchInserter::Prepare(
                          impl.conn,
                          "INSERT INTO timeline_ops (timeline_id, seq, rank, stage, kind,"
                          " microbatch, start_ns, end_ns, iteration, busy_ns, kernels, name)"
                          " VALUES ",
                          1, 11, what));
  ops.BindShared(1, timeline_id);
  return ops.Insert(
      timeline.ops.size(),
      [&](Statement& stmt, int param, size_t index) {
        const TimelineOp& op = timeline.ops[index];
        stmt.BindInt(param, static_cast<int64_t>(index));
        stmt.BindInt(param + 1, op.rank);
        stmt.BindInt(param + 2, op.stage);
        stmt.BindStaticText(param + 3, OpKindName(op.kind));
        stmt.BindInt(param + 4, op.microbatch);
        stmt.BindInt(param + 5, op.start);
        stmt.BindInt(param + 6, op.end);
        stmt.BindInt(param + 7, op.iteration);
        stmt.BindOptional(param + 8,
                          op.busy >= 0 ? std::optional<int64_t>(op.BusyTime()) : std::nullopt);
        stmt.BindInt(param + 9, op.kernels);
        if (op.name >= 0 && static_cast<size_t>(op.name) < timeline.names.size()) {
          stmt.BindText(param + 10, timeline.names[static_cast<size_t>(op.name)]);
        } else {
          stmt.BindNull(param + 10);
        }
      },
      what, "op");
}

Status WriteMemorySamples(const Store::Impl& impl, int64_t timeline_id, const Timeline& timeline,
                          std::string_view what) {
  ZB_ASSIGN_OR_RETURN(
      sqlite::BatchInserter samples,
      sqlite::BatchInserter::Prepare(
          impl.conn, "INSERT INTO memory_samples (timeline_id, seq, rank, t_ns, memory) VALUES ", 1,
          4, what));
  samples.BindShared(1, timeline_id);
  return samples.Insert(
      timeline.memory.size(),
      [&](Statement& stmt, int param, size_t index) {
        const MemorySample& sample = timeline.memory[index];
        stmt.BindInt(param, static_cast<int64_t>(index));
        stmt.BindInt(param + 1, sample.rank);
        stmt.BindInt(param + 2, sample.time);
        stmt.BindDouble(param + 3, sample.memory);
      },
      what, "memory sample");
}

Expected<TimelineInfo> TimelineInfoOf(const Statement& row, const Store::Impl& impl,
                                      std::string_view what) {
  TimelineInfo info;
  info.id = row.Int(0);
  info.schedule_id = row.OptionalInt(1);
  const auto kind = ParseTimelineKind(row.Text(2));
  if (!kind) {
    return impl.Inconsistent(what, "timeline " + std::to_string(info.id) + " has unknown kind '" +
                                       std::string(row.Text(2)) + "'");
  }
  info.kind = *kind;
  info.num_ops = row.Int(3);
  info.created_at = row.Text(4);
  info.run_id = row.OptionalInt(5);
  return info;
}

}  // namespace

Expected<int64_t> Store::Impl::WriteTimeline(std::optional<int64_t> schedule_id,
                                             const Timeline& timeline,
                                             std::optional<int64_t> run_id) {
  const std::string what = "insert timeline";
  ZB_ASSIGN_OR_RETURN(Statement row,
                      conn.Prepare("INSERT INTO timelines (schedule_id, kind, num_ops,"
                                   " schema_version, run_id) VALUES (?1, ?2, ?3, ?4, ?5)",
                                   what));
  row.BindOptional(1, schedule_id);
  row.BindStaticText(2, TimelineKindName(timeline.kind));
  row.BindInt(3, static_cast<int64_t>(timeline.ops.size()));
  row.BindInt(4, Store::kSchemaVersion);
  row.BindOptional(5, run_id);
  ZB_RETURN_IF_ERROR(row.Run(what));
  const int64_t timeline_id = conn.last_insert_rowid();
  ZB_RETURN_IF_ERROR(WriteTimelineOps(*this, timeline_id, timeline, what));
  ZB_RETURN_IF_ERROR(WriteMemorySamples(*this, timeline_id, timeline, what));
  return timeline_id;
}

Expected<std::vector<TimelineInfo>> Store::Impl::ReadTimelineInfos(std::string_view where,
                                                                   std::optional<int64_t> id,
                                                                   std::string_view what) const {
  return sqlite::Query<TimelineInfo>(
      conn,
      std::string("SELECT id, schedule_id, kind, num_ops, created_at, run_id FROM timelines") +
          std::string(where) + " ORDER BY id",
      what,
      [&](Statement& stmt) {
        if (id) stmt.BindInt(1, *id);
      },
      [&](const Statement& row) { return TimelineInfoOf(row, *this, what); });
}

Expected<int64_t> Store::InsertTimeline(std::optional<int64_t> schedule_id,
                                        const Timeline& timeline) {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const char* what = "insert timeline";
  ZB_RETURN_IF_ERROR(impl.CheckWritable(what));
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginWrite(what));
  if (schedule_id) {
    ZB_RETURN_IF_ERROR(
        impl.CheckExists("SELECT 1 FROM schedules WHERE id = ?1", *schedule_id, what, "schedule"));
  }
  ZB_ASSIGN_OR_RETURN(int64_t id, impl.WriteTimeline(schedule_id, timeline));
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

Expected<Timeline> Store::LoadTimeline(int64_t id) const {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const std::string what = "load timeline " + std::to_string(id);
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginRead(what));
  auto bind_id = [id](Statement& stmt) { stmt.BindInt(1, id); };

  Timeline timeline;
  ZB_ASSIGN_OR_RETURN(std::optional<int64_t> num_ops,
                      sqlite::QueryFirst<int64_t>(
                          impl.conn, "SELECT kind, num_ops FROM timelines WHERE id = ?1", what,
                          bind_id, [&](const Statement& row) -> Expected<int64_t> {
                            const auto kind = ParseTimelineKind(row.Text(0));
                            if (!kind) {
                              return impl.Inconsistent(
                                  what, "unknown timeline kind '" + std::string(row.Text(0)) + "'");
                            }
                            timeline.kind = *kind;
                            return row.Int(1);
                          }));
  if (!num_ops) return impl.NoSuch("load timeline", "timeline", id);

  TimelineNameTable names(timeline.names);
  // One ordered range scan of the primary key; the stored count sizes the vector up front.
  if (*num_ops > 0) timeline.ops.reserve(static_cast<size_t>(*num_ops));
  ZB_RETURN_IF_ERROR(sqlite::QueryInto(
      impl.conn,
      "SELECT rank, stage, kind, microbatch, start_ns, end_ns, iteration, busy_ns, kernels, name"
      " FROM timeline_ops WHERE timeline_id = ?1 ORDER BY seq",
      what, bind_id,
      [&](const Statement& row) -> Expected<TimelineOp> {
        const auto kind = ParseOpKind(row.Text(2));
        if (!kind) {
          return impl.Inconsistent(what, "unknown op kind '" + std::string(row.Text(2)) + "'");
        }
        TimelineOp op{static_cast<int32_t>(row.Int(0)),
                      static_cast<int32_t>(row.Int(1)),
                      *kind,
                      static_cast<int32_t>(row.Int(3)),
                      row.Int(4),
                      row.Int(5),
                      static_cast<int32_t>(row.Int(6))};
        op.busy = row.OptionalInt(7).value_or(-1);
        op.kernels = static_cast<int32_t>(row.Int(8));
        if (!row.IsNull(9)) op.name = names.Intern(row.Text(9));
        return op;
      },
      timeline.ops));
  if (static_cast<int64_t>(timeline.ops.size()) != *num_ops) {
    return impl.Inconsistent(what, "expected " + std::to_string(*num_ops) + " ops, found " +
                                       std::to_string(timeline.ops.size()));
  }
  ZB_RETURN_IF_ERROR(sqlite::QueryInto(
      impl.conn,
      "SELECT rank, t_ns, memory FROM memory_samples WHERE timeline_id = ?1 ORDER BY seq", what,
      bind_id,
      [](const Statement& row) {
        return MemorySample{static_cast<int32_t>(row.Int(0)), row.Int(1), row.Double(2)};
      },
      timeline.memory));
  return timeline;
}

Expected<std::vector<TimelineInfo>> Store::ListTimelines() const {
  if (!impl_) return StoreClosed();
  return impl_->ReadTimelineInfos("", std::nullopt, "list timelines");
}

Expected<TimelineInfo> Store::LoadTimelineInfo(int64_t id) const {
  if (!impl_) return StoreClosed();
  const char* what = "load timeline info";
  ZB_ASSIGN_OR_RETURN(std::vector<TimelineInfo> infos,
                      impl_->ReadTimelineInfos(" WHERE id = ?1", id, what));
  if (infos.empty()) return impl_->NoSuch(what, "timeline", id);
  return std::move(infos.front());
}

}  // namespace zb
