// SPDX-License-Identifier: Apache-2.0
// Store: schedules (schedules, schedule_ranks, schedule_ops). A schedule's costs are a cost
// profile of its own (store_costs.cpp) and its prediction a timeline (store_timelines.cpp),
// written in the same transaction.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store_impl.h"
#include "zbkit/schemas/store.h"

namespace zb {
namespace {

using sqlite::Statement;

// "[0,7]", the JSON text kept in schedule_ranks.stages.
std::string StagesToText(const std::vector<int32_t>& stages) {
  std::string text = "[";
  for (size_t i = 0; i < stages.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(stages[i]);
  }
  text += ']';
  return text;
}

// Parses a JSON array of integers, tolerating whitespace (the column may have been written by
// hand through SQL, where json_valid() is all the schema checks).
std::optional<std::vector<int32_t>> StagesFromText(std::string_view text) {
  std::vector<int32_t> stages;
  size_t pos = 0;
  auto skip_space = [&] {
    while (pos < text.size() &&
           (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\t' || text[pos] == '\r')) {
      ++pos;
    }
  };
  skip_space();
  if (pos >= text.size() || text[pos] != '[') return std::nullopt;
  ++pos;
  skip_space();
  if (pos < text.size() && text[pos] == ']') return stages;
  while (true) {
    skip_space();
    int32_t value = 0;
    auto [end, ec] = std::from_chars(text.data() + pos, text.data() + text.size(), value);
    if (ec != std::errc()) return std::nullopt;
    stages.push_back(value);
    pos = static_cast<size_t>(end - text.data());
    skip_space();
    if (pos >= text.size()) return std::nullopt;
    if (text[pos] == ']') break;
    if (text[pos] != ',') return std::nullopt;
    ++pos;
  }
  ++pos;
  skip_space();
  if (pos != text.size()) return std::nullopt;
  return stages;
}

// What the rows of InsertSchedule need to be meaningful, and what TimelineFromSchedule indexes
// with (chunks are checked per op in WriteScheduleOps). Full semantic checks are
// ValidateSchedule's.
Status CheckInsertable(const Store::Impl& impl, const Schedule& schedule, std::optional<double> cap,
                       const std::vector<double>& rank_caps, std::string_view what) {
  const int num_ranks = static_cast<int>(schedule.programs.size());
  if (num_ranks != schedule.ranks) {
    return impl.Invalid(what, "schedule has " + std::to_string(schedule.ranks) + " ranks but " +
                                  std::to_string(num_ranks) + " rank programs");
  }
  for (int rank = 0; rank < num_ranks; ++rank) {
    for (int32_t stage : schedule.programs[rank].stages) {
      if (stage < 0 || stage >= schedule.costs.num_stages()) {
        return impl.Invalid(what, "ranks[" + std::to_string(rank) + "].stages: stage " +
                                      std::to_string(stage) + " has no entry in the costs (" +
                                      std::to_string(schedule.costs.num_stages()) + " stages)");
      }
    }
  }
  if (!rank_caps.empty() && static_cast<int>(rank_caps.size()) != num_ranks) {
    return impl.Invalid(what, "memory limits: " + std::to_string(rank_caps.size()) +
                                  " per-rank caps for " + std::to_string(num_ranks) + " ranks");
  }
  for (size_t rank = 0; rank < rank_caps.size(); ++rank) {
    if (!(std::isfinite(rank_caps[rank]) && rank_caps[rank] >= 0)) {
      return impl.Invalid(
          what, "memory limit of rank " + std::to_string(rank) + " must be a finite number >= 0");
    }
  }
  if (cap && !(std::isfinite(*cap) && *cap >= 0)) {
    // NaN would be stored as NULL, i.e. silently "no limit".
    return impl.Invalid(what, "memory limit must be a finite number >= 0");
  }
  if (schedule.predicted) {
    const std::vector<double>& peaks = schedule.predicted->peak_memory;
    if (!peaks.empty() && static_cast<int>(peaks.size()) != num_ranks) {
      return impl.Invalid(what, "predicted.peak_memory has " + std::to_string(peaks.size()) +
                                    " entries for " + std::to_string(num_ranks) + " ranks");
    }
    for (double peak : peaks) {
      if (!std::isfinite(peak)) {
        return impl.Invalid(what, "predicted.peak_memory holds a value that is not finite");
      }
    }
  }
  return Status::Ok();
}

Expected<int64_t> WriteScheduleRow(Store::Impl& impl, int64_t job_id, int64_t profile_id,
                                   const Schedule& schedule, std::optional<double> cap,
                                   std::string_view what) {
  ZB_ASSIGN_OR_RETURN(
      Statement row,
      impl.conn.Prepare("INSERT INTO schedules (job_id, cost_profile_id, family, ranks,"
                        " microbatches, chunks, placement, memory_limit, makespan_ns, span_ns,"
                        " bubble_rate, paper_bubble_rate, num_ops, schema_version)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                        what));
  row.BindInt(1, job_id);
  row.BindInt(2, profile_id);
  row.BindText(3, schedule.family);
  row.BindInt(4, schedule.ranks);
  row.BindInt(5, schedule.microbatches);
  row.BindInt(6, schedule.chunks);
  row.BindStaticText(7, PlacementName(schedule.placement));
  row.BindOptional(8, cap);
  if (schedule.predicted) {
    row.BindInt(9, schedule.predicted->makespan);
    row.BindInt(10, schedule.predicted->span);
    row.BindDouble(11, schedule.predicted->bubble_rate);
    row.BindDouble(12, schedule.predicted->paper_bubble_rate);
  } else {
    for (int column = 9; column <= 12; ++column)
      row.BindNull(column);
  }
  row.BindInt(13, schedule.num_ops());
  row.BindInt(14, Store::kSchemaVersion);
  ZB_RETURN_IF_ERROR(row.Run(what));
  return impl.conn.last_insert_rowid();
}

Status WriteScheduleRanks(Store::Impl& impl, int64_t schedule_id, const Schedule& schedule,
                          const std::vector<double>& rank_caps, std::string_view what) {
  ZB_ASSIGN_OR_RETURN(Statement row,
                      impl.conn.Prepare("INSERT INTO schedule_ranks"
                                        " (schedule_id, rank, stages, peak_memory, memory_limit)"
                                        " VALUES (?1, ?2, ?3, ?4, ?5)",
                                        what));
  row.BindInt(1, schedule_id);
  const bool has_peaks = schedule.predicted && !schedule.predicted->peak_memory.empty();
  for (size_t rank = 0; rank < schedule.programs.size(); ++rank) {
    row.Reset();
    row.BindInt(2, static_cast<int64_t>(rank));
    row.BindText(3, StagesToText(schedule.programs[rank].stages));
    row.BindOptional(
        4, has_peaks ? std::optional<double>(schedule.predicted->peak_memory[rank]) : std::nullopt);
    row.BindOptional(5, rank_caps.empty() ? std::nullopt : std::optional<double>(rank_caps[rank]));
    ZB_RETURN_IF_ERROR(row.Run(std::string(what) + ": rank " + std::to_string(rank)));
  }
  return Status::Ok();
}

Status WriteScheduleOps(Store::Impl& impl, int64_t schedule_id, const Schedule& schedule,
                        std::string_view what) {
  ZB_ASSIGN_OR_RETURN(Statement row,
                      impl.conn.Prepare("INSERT INTO schedule_ops (schedule_id, rank, seq, kind,"
                                        " chunk, microbatch, start_ns, end_ns)"
                                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                                        what));
  row.BindInt(1, schedule_id);
  for (size_t rank = 0; rank < schedule.programs.size(); ++rank) {
    const RankProgram& program = schedule.programs[rank];
    row.Reset();
    row.BindInt(2, static_cast<int64_t>(rank));
    for (size_t seq = 0; seq < program.ops.size(); ++seq) {
      const Op& op = program.ops[seq];
      auto where = [&] {
        return "ranks[" + std::to_string(rank) + "].ops[" + std::to_string(seq) + "]";
      };
      if (op.chunk < 0 || op.chunk >= static_cast<int32_t>(program.stages.size())) {
        return impl.Invalid(what, where() + ": chunk " + std::to_string(op.chunk) +
                                      " does not exist (the rank holds " +
                                      std::to_string(program.stages.size()) + " chunks)");
      }
      row.Reset();
      row.BindInt(3, static_cast<int64_t>(seq));
      row.BindStaticText(4, OpKindName(op.kind));
      row.BindInt(5, op.chunk);
      row.BindInt(6, op.microbatch);
      row.BindInt(7, op.start);
      row.BindInt(8, op.end);
      if (!row.TryRun()) return row.Error(std::string(what) + ": " + where());
    }
  }
  return Status::Ok();
}

// The schedules row: everything but the costs, ranks and ops.
struct ScheduleRow {
  Schedule schedule;
  int64_t profile_id = 0;
  int64_t num_ops = 0;
};

Expected<std::optional<ScheduleRow>> ReadScheduleRow(const Store::Impl& impl, int64_t id,
                                                     std::string_view what) {
  return sqlite::QueryFirst<ScheduleRow>(
      impl.conn,
      "SELECT cost_profile_id, family, ranks, microbatches, chunks, placement,"
      " makespan_ns, span_ns, bubble_rate, paper_bubble_rate, num_ops"
      " FROM schedules WHERE id = ?1",
      what, [id](Statement& stmt) { stmt.BindInt(1, id); },
      [&](const Statement& row) -> Expected<ScheduleRow> {
        ScheduleRow out;
        Schedule& schedule = out.schedule;
        out.profile_id = row.Int(0);
        schedule.family = row.Text(1);
        schedule.ranks = static_cast<int>(row.Int(2));
        schedule.microbatches = static_cast<int>(row.Int(3));
        schedule.chunks = static_cast<int>(row.Int(4));
        const auto placement = ParsePlacement(row.Text(5));
        if (!placement) {
          return impl.Inconsistent(what, "unknown placement '" + std::string(row.Text(5)) + "'");
        }
        schedule.placement = *placement;
        if (!row.IsNull(6)) {
          Prediction predicted;
          predicted.makespan = row.Int(6);
          predicted.span = row.Int(7);
          predicted.bubble_rate = row.Double(8);
          predicted.paper_bubble_rate = row.Double(9);
          schedule.predicted = std::move(predicted);
        }
        out.num_ops = row.Int(10);
        return out;
      });
}

// One row of schedule_ranks.
struct RankRow {
  std::vector<int32_t> stages;
  std::optional<double> peak_memory;
};

Status ReadScheduleRanks(const Store::Impl& impl, int64_t id, Schedule& schedule,
                         std::string_view what) {
  int64_t next_rank = 0;
  ZB_ASSIGN_OR_RETURN(
      std::vector<RankRow> ranks,
      sqlite::Query<RankRow>(
          impl.conn,
          "SELECT rank, stages, peak_memory FROM schedule_ranks WHERE schedule_id = ?1"
          " ORDER BY rank",
          what, [id](Statement& stmt) { stmt.BindInt(1, id); },
          [&](const Statement& row) -> Expected<RankRow> {
            const int64_t rank = next_rank++;
            if (row.Int(0) != rank) {
              return impl.Inconsistent(what, "rank " + std::to_string(rank) + " is missing");
            }
            auto stages = StagesFromText(row.Text(1));
            if (!stages) {
              return impl.Inconsistent(what, "rank " + std::to_string(rank) + " has stages '" +
                                                 std::string(row.Text(1)) +
                                                 "', not a JSON array of integers");
            }
            return RankRow{std::move(*stages), row.OptionalDouble(2)};
          }));
  if (static_cast<int>(ranks.size()) != schedule.ranks) {
    return impl.Inconsistent(what, "expected " + std::to_string(schedule.ranks) + " ranks, found " +
                                       std::to_string(ranks.size()));
  }
  std::vector<double> peaks;
  size_t num_null_peaks = 0;
  for (RankRow& rank : ranks) {
    schedule.programs.push_back({std::move(rank.stages), {}});
    if (rank.peak_memory) {
      peaks.push_back(*rank.peak_memory);
    } else {
      ++num_null_peaks;
    }
  }
  if (schedule.predicted) {
    // All NULL: the prediction had no per-rank peaks; all set: one per rank.
    if (num_null_peaks != 0 && !peaks.empty()) {
      return impl.Inconsistent(what, "peak memory is set for some ranks only");
    }
    schedule.predicted->peak_memory = std::move(peaks);
  }
  return Status::Ok();
}

Status ReadScheduleOps(const Store::Impl& impl, int64_t id, int64_t num_ops, Schedule& schedule,
                       std::string_view what) {
  ZB_ASSIGN_OR_RETURN(Statement ops,
                      impl.conn.Prepare("SELECT rank, kind, chunk, microbatch, start_ns, end_ns"
                                        " FROM schedule_ops WHERE schedule_id = ?1"
                                        " ORDER BY rank, seq",
                                        what));
  ops.BindInt(1, id);
  int64_t count = 0;
  while (true) {
    ZB_ASSIGN_OR_RETURN(bool row, ops.Step(what));
    if (!row) break;
    // Rows go to the program of their rank, so this is a loop rather than a Query.
    const int64_t rank = ops.Int(0);
    if (rank < 0 || rank >= schedule.ranks) {
      return impl.Inconsistent(what, "op of unknown rank " + std::to_string(rank));
    }
    const auto kind = ParseOpKind(ops.Text(1));
    if (!kind) {
      return impl.Inconsistent(what, "unknown op kind '" + std::string(ops.Text(1)) + "'");
    }
    schedule.programs[rank].ops.push_back({*kind, static_cast<int32_t>(ops.Int(2)),
                                           static_cast<int32_t>(ops.Int(3)), ops.Int(4),
                                           ops.Int(5)});
    ++count;
  }
  if (count != num_ops) {
    return impl.Inconsistent(
        what, "expected " + std::to_string(num_ops) + " ops, found " + std::to_string(count));
  }
  return Status::Ok();
}

}  // namespace

Expected<int64_t> Store::InsertSchedule(int64_t job_id, const Schedule& schedule,
                                        std::optional<double> cap) {
  return InsertSchedule(job_id, schedule, cap, {});
}

Expected<int64_t> Store::InsertSchedule(int64_t job_id, const Schedule& schedule,
                                        const std::vector<double>& rank_caps) {
  std::optional<double> largest;
  for (double cap : rank_caps)
    largest = std::max(largest.value_or(cap), cap);
  return InsertSchedule(job_id, schedule, largest, rank_caps);
}

Expected<int64_t> Store::InsertSchedule(int64_t job_id, const Schedule& schedule,
                                        std::optional<double> cap,
                                        const std::vector<double>& rank_caps) {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const char* what = "insert schedule";
  ZB_RETURN_IF_ERROR(impl.CheckWritable(what));
  ZB_RETURN_IF_ERROR(CheckInsertable(impl, schedule, cap, rank_caps, what));

  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginWrite(what));
  ZB_RETURN_IF_ERROR(impl.CheckExists("SELECT 1 FROM jobs WHERE id = ?1", job_id, what, "job"));
  const std::string profile_name =
      schedule.family.empty() ? "scheduled costs" : schedule.family + " scheduled costs";
  ZB_ASSIGN_OR_RETURN(int64_t profile_id,
                      impl.WriteCostProfile(job_id, profile_name, schedule.costs));
  ZB_ASSIGN_OR_RETURN(int64_t schedule_id,
                      WriteScheduleRow(impl, job_id, profile_id, schedule, cap, what));
  ZB_RETURN_IF_ERROR(WriteScheduleRanks(impl, schedule_id, schedule, rank_caps, what));
  ZB_RETURN_IF_ERROR(WriteScheduleOps(impl, schedule_id, schedule, what));
  if (schedule.predicted) {
    ZB_RETURN_IF_ERROR(impl.WriteTimeline(schedule_id, TimelineFromSchedule(schedule)).status());
  }
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return schedule_id;
}

Expected<Schedule> Store::LoadSchedule(int64_t id) const {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const std::string what = "load schedule " + std::to_string(id);
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginRead(what));
  ZB_ASSIGN_OR_RETURN(std::optional<ScheduleRow> row, ReadScheduleRow(impl, id, what));
  if (!row) return impl.NoSuch("load schedule", "schedule", id);
  Schedule& schedule = row->schedule;
  ZB_ASSIGN_OR_RETURN(schedule.costs, impl.ReadCostProfile(row->profile_id, what));
  ZB_RETURN_IF_ERROR(ReadScheduleRanks(impl, id, schedule, what));
  ZB_RETURN_IF_ERROR(ReadScheduleOps(impl, id, row->num_ops, schedule, what));
  return std::move(schedule);
}

Expected<std::vector<ScheduleInfo>> Store::Impl::ReadScheduleInfos(std::optional<int64_t> id,
                                                                   std::string_view what) const {
  std::vector<bool> has_prediction;  // per info: peaks belong to a prediction only
  ZB_ASSIGN_OR_RETURN(
      std::vector<ScheduleInfo> infos,
      sqlite::Query<ScheduleInfo>(
          conn,
          std::string("SELECT s.id, c.name, j.name, s.family, s.ranks, s.microbatches, s.chunks,"
                      " s.placement, s.memory_limit, s.makespan_ns, s.span_ns, s.bubble_rate,"
                      " s.paper_bubble_rate, s.num_ops, s.created_at, s.job_id"
                      " FROM schedules s JOIN jobs j ON j.id = s.job_id"
                      " JOIN clusters c ON c.id = j.cluster_id") +
              (id ? " WHERE s.id = ?1" : "") + " ORDER BY s.id",
          what,
          [&](Statement& stmt) {
            if (id) stmt.BindInt(1, *id);
          },
          [&](const Statement& row) -> Expected<ScheduleInfo> {
            ScheduleInfo info;
            info.id = row.Int(0);
            info.cluster = row.Text(1);
            info.job = row.Text(2);
            info.family = row.Text(3);
            info.ranks = static_cast<int>(row.Int(4));
            info.microbatches = static_cast<int>(row.Int(5));
            info.chunks = static_cast<int>(row.Int(6));
            const auto placement = ParsePlacement(row.Text(7));
            if (!placement) {
              return Inconsistent(what, "schedule " + std::to_string(info.id) +
                                            " has unknown placement '" + std::string(row.Text(7)) +
                                            "'");
            }
            info.placement = *placement;
            info.cap = row.OptionalDouble(8);
            has_prediction.push_back(!row.IsNull(9));
            if (!row.IsNull(9)) {
              info.predicted.makespan = row.Int(9);
              info.predicted.span = row.Int(10);
              info.predicted.bubble_rate = row.Double(11);
              info.predicted.paper_bubble_rate = row.Double(12);
            }
            info.num_ops = row.Int(13);
            info.created_at = row.Text(14);
            info.job_id = row.Int(15);
            return info;
          }));
  // Each rank's row, one prepared statement for all schedules: its predicted peak (schedules with
  // a prediction) and its cap, its own where stored (version 11), else the schedule's one cap.
  ZB_ASSIGN_OR_RETURN(Statement ranks,
                      conn.Prepare("SELECT peak_memory, memory_limit FROM schedule_ranks"
                                   " WHERE schedule_id = ?1 ORDER BY rank",
                                   what));
  for (size_t i = 0; i < infos.size(); ++i) {
    ScheduleInfo& info = infos[i];
    ranks.Reset();
    ranks.BindInt(1, info.id);
    std::vector<double> rank_caps;
    bool any_own = false;
    while (true) {
      ZB_ASSIGN_OR_RETURN(bool row, ranks.Step(what));
      if (!row) break;
      if (has_prediction[i] && !ranks.IsNull(0)) {
        info.predicted.peak_memory.push_back(ranks.Double(0));
      }
      any_own = any_own || !ranks.IsNull(1);
      // A rank without a cap of its own in a schedule without one has none (+inf, the tuner's
      // "no cap"); InsertSchedule never writes that mix.
      rank_caps.push_back(ranks.IsNull(1)
                              ? info.cap.value_or(std::numeric_limits<double>::infinity())
                              : ranks.Double(1));
    }
    if (any_own || info.cap) info.rank_caps = std::move(rank_caps);
  }
  return infos;
}

Expected<std::vector<ScheduleInfo>> Store::ListSchedules() const {
  if (!impl_) return StoreClosed();
  const char* what = "list schedules";
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl_->BeginRead(what));
  return impl_->ReadScheduleInfos(std::nullopt, what);
}

Expected<ScheduleInfo> Store::LoadScheduleInfo(int64_t id) const {
  if (!impl_) return StoreClosed();
  const char* what = "load schedule info";
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl_->BeginRead(what));
  ZB_ASSIGN_OR_RETURN(std::vector<ScheduleInfo> infos, impl_->ReadScheduleInfos(id, what));
  if (infos.empty()) return impl_->NoSuch(what, "schedule", id);
  return std::move(infos.front());
}

}  // namespace zb
