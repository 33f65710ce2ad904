// SPDX-License-Identifier: Apache-2.0
// Store: memory-vs-bubble frontiers (frontiers, frontier_points; migration 006). A frontier hangs
// off the cost profile it was computed from; its points may name the schedules they stand for.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store_impl.h"
#include "zbkit/schemas/frontier.h"
#include "zbkit/schemas/store.h"

namespace zb {
namespace {

using sqlite::Statement;

bool IsObjective(std::string_view name) {
  return name == "makespan" || name == "span";
}

bool IsFrontierPlacement(std::string_view name) {
  return name == "loop" || name == "v" || name == "any";
}

// Everything that can be said without the database, so that a bad frontier fails before the write
// lock is taken. Messages name the field as a path into Frontier ("points[3].cap").
Status CheckRecordable(const Store::Impl& impl, const Frontier& frontier, std::string_view what) {
  if (frontier.microbatches < 1) {
    return impl.Invalid(what,
                        "microbatches must be >= 1, got " + std::to_string(frontier.microbatches));
  }
  if (!IsObjective(frontier.objective)) {
    return impl.Invalid(what,
                        "objective must be makespan or span, got '" + frontier.objective + "'");
  }
  if (!IsFrontierPlacement(frontier.placement)) {
    return impl.Invalid(what, "placement must be loop, v or any, got '" + frontier.placement + "'");
  }
  if (frontier.points.empty()) return impl.Invalid(what, "points is empty");
  for (size_t i = 0; i < frontier.points.size(); ++i) {
    const FrontierPoint& point = frontier.points[i];
    const std::string where = "points[" + std::to_string(i) + "]";
    if (point.method.empty()) return impl.Invalid(what, where + ".method is empty");
    // A NaN would be stored as NULL and then refused by NOT NULL with a message naming a column,
    // not the point; an infinity would be stored and draw nothing.
    if (!(std::isfinite(point.cap_factor) && point.cap_factor > 0)) {
      return impl.Invalid(what, where + ".cap_factor must be a finite number > 0");
    }
    if (!(std::isfinite(point.cap) && point.cap >= 0)) {
      return impl.Invalid(what, where + ".cap must be a finite number >= 0");
    }
    if (!std::isfinite(point.bubble_rate)) {
      return impl.Invalid(what, where + ".bubble_rate is not a finite number");
    }
    if (!std::isfinite(point.paper_bubble_rate)) {
      return impl.Invalid(what, where + ".paper_bubble_rate is not a finite number");
    }
    if (point.fits && (point.makespan < 0 || point.span < 0)) {
      return impl.Invalid(what, where + ": a point that fits needs makespan and span >= 0");
    }
    if (!point.fits && point.schedule_id) {
      return impl.Invalid(what, where + ".schedule_id is set but the point does not fit");
    }
  }
  return Status::Ok();
}

// NotFound naming the field, for the references CheckRecordable cannot check.
Status CheckReferenced(const Store::Impl& impl, std::string_view sql, int64_t id,
                       const std::string& field, std::string_view noun, std::string_view what) {
  ZB_ASSIGN_OR_RETURN(std::optional<int64_t> found,
                      sqlite::QueryFirst<int64_t>(
                          impl.conn, sql, what, [id](Statement& stmt) { stmt.BindInt(1, id); },
                          [](const Statement& row) { return row.Int(0); }));
  if (found) return Status::Ok();
  return NotFound(impl.path() + ": " + std::string(what) + ": " + field + ": no " +
                  std::string(noun) + " with id " + std::to_string(id));
}

Status WritePoints(Store::Impl& impl, int64_t frontier_id, const Frontier& frontier,
                   std::string_view what) {
  ZB_ASSIGN_OR_RETURN(
      Statement row,
      impl.conn.Prepare("INSERT INTO frontier_points (frontier_id, seq, method, cap_factor, cap,"
                        " fits, makespan_ns, span_ns, bubble_rate, paper_bubble_rate, schedule_id)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                        what));
  row.BindInt(1, frontier_id);
  for (size_t i = 0; i < frontier.points.size(); ++i) {
    const FrontierPoint& point = frontier.points[i];
    row.Reset();
    row.BindInt(2, static_cast<int64_t>(i));
    row.BindText(3, point.method);
    row.BindDouble(4, point.cap_factor);
    row.BindDouble(5, point.cap);
    row.BindInt(6, point.fits ? 1 : 0);
    row.BindInt(7, point.makespan);
    row.BindInt(8, point.span);
    row.BindDouble(9, point.bubble_rate);
    row.BindDouble(10, point.paper_bubble_rate);
    row.BindOptional(11, point.schedule_id);
    ZB_RETURN_IF_ERROR(row.Run(std::string(what) + ": points[" + std::to_string(i) + "]"));
  }
  return Status::Ok();
}

// The frontiers row: everything but the points.
struct FrontierRow {
  Frontier frontier;
  int64_t num_points = 0;
};

Expected<std::optional<FrontierRow>> ReadFrontierRow(const Store::Impl& impl, int64_t id,
                                                     std::string_view what) {
  return sqlite::QueryFirst<FrontierRow>(
      impl.conn,
      "SELECT cost_profile_id, microbatches, objective, placement, num_points FROM frontiers"
      " WHERE id = ?1",
      what, [id](Statement& stmt) { stmt.BindInt(1, id); },
      [](const Statement& row) {
        FrontierRow out;
        out.frontier.cost_profile_id = row.Int(0);
        out.frontier.microbatches = static_cast<int>(row.Int(1));
        out.frontier.objective = row.Text(2);
        out.frontier.placement = row.Text(3);
        out.num_points = row.Int(4);
        return out;
      });
}

Status ReadPoints(const Store::Impl& impl, int64_t id, int64_t num_points, Frontier& frontier,
                  std::string_view what) {
  int64_t next_seq = 0;
  ZB_RETURN_IF_ERROR(sqlite::QueryInto<FrontierPoint>(
      impl.conn,
      "SELECT seq, method, cap_factor, cap, fits, makespan_ns, span_ns, bubble_rate,"
      " paper_bubble_rate, schedule_id FROM frontier_points WHERE frontier_id = ?1 ORDER BY seq",
      what, [id](Statement& stmt) { stmt.BindInt(1, id); },
      [&](const Statement& row) -> Expected<FrontierPoint> {
        const int64_t seq = next_seq++;
        if (row.Int(0) != seq) {
          return impl.Inconsistent(what, "point " + std::to_string(seq) + " is missing");
        }
        FrontierPoint point;
        point.method = row.Text(1);
        point.cap_factor = row.Double(2);
        point.cap = row.Double(3);
        point.fits = row.Int(4) != 0;
        point.makespan = row.Int(5);
        point.span = row.Int(6);
        point.bubble_rate = row.Double(7);
        point.paper_bubble_rate = row.Double(8);
        point.schedule_id = row.OptionalInt(9);
        return point;
      },
      frontier.points));
  if (static_cast<int64_t>(frontier.points.size()) != num_points) {
    return impl.Inconsistent(what, "expected " + std::to_string(num_points) + " points, found " +
                                       std::to_string(frontier.points.size()));
  }
  return Status::Ok();
}

}  // namespace

Expected<int64_t> Store::RecordFrontier(const Frontier& frontier) {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const char* what = "record frontier";
  ZB_RETURN_IF_ERROR(impl.CheckWritable(what));
  ZB_RETURN_IF_ERROR(CheckRecordable(impl, frontier, what));

  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginWrite(what));
  ZB_RETURN_IF_ERROR(CheckReferenced(impl, "SELECT 1 FROM cost_profiles WHERE id = ?1",
                                     frontier.cost_profile_id, "cost_profile_id", "cost profile",
                                     what));
  for (size_t i = 0; i < frontier.points.size(); ++i) {
    const std::optional<int64_t>& schedule_id = frontier.points[i].schedule_id;
    if (!schedule_id) continue;
    ZB_RETURN_IF_ERROR(CheckReferenced(impl, "SELECT 1 FROM schedules WHERE id = ?1", *schedule_id,
                                       "points[" + std::to_string(i) + "].schedule_id", "schedule",
                                       what));
  }
  ZB_ASSIGN_OR_RETURN(Statement row,
                      impl.conn.Prepare("INSERT INTO frontiers (cost_profile_id, microbatches,"
                                        " objective, placement, num_points, schema_version)"
                                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                                        what));
  row.BindInt(1, frontier.cost_profile_id);
  row.BindInt(2, frontier.microbatches);
  row.BindText(3, frontier.objective);
  row.BindText(4, frontier.placement);
  row.BindInt(5, static_cast<int64_t>(frontier.points.size()));
  row.BindInt(6, kSchemaVersion);
  ZB_RETURN_IF_ERROR(row.Run(what));
  const int64_t id = impl.conn.last_insert_rowid();
  ZB_RETURN_IF_ERROR(WritePoints(impl, id, frontier, what));
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

Expected<Frontier> Store::LoadFrontier(int64_t id) const {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const std::string what = "load frontier " + std::to_string(id);
  // One snapshot: a frontier recorded meanwhile cannot mix its points into this one's count.
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginRead(what));
  ZB_ASSIGN_OR_RETURN(std::optional<FrontierRow> row, ReadFrontierRow(impl, id, what));
  if (!row) return impl.NoSuch("load frontier", "frontier", id);
  ZB_RETURN_IF_ERROR(ReadPoints(impl, id, row->num_points, row->frontier, what));
  return std::move(row->frontier);
}

Expected<std::vector<FrontierInfo>> Store::ListFrontiers() const {
  if (!impl_) return StoreClosed();
  const Impl& impl = *impl_;
  const char* what = "list frontiers";
  return sqlite::Query<FrontierInfo>(
      impl.conn,
      "SELECT f.id, f.cost_profile_id, c.name, j.name, p.name, f.microbatches, f.objective,"
      " f.placement, f.num_points,"
      " (SELECT min(cap_factor) FROM frontier_points WHERE frontier_id = f.id),"
      " (SELECT max(cap_factor) FROM frontier_points WHERE frontier_id = f.id),"
      " f.created_at"
      " FROM frontiers f JOIN cost_profiles p ON p.id = f.cost_profile_id"
      " JOIN jobs j ON j.id = p.job_id JOIN clusters c ON c.id = j.cluster_id ORDER BY f.id",
      what, sqlite::kNoParams, [](const Statement& row) {
        FrontierInfo info;
        info.id = row.Int(0);
        info.cost_profile_id = row.Int(1);
        info.cluster = row.Text(2);
        info.job = row.Text(3);
        info.cost_profile = row.Text(4);
        info.microbatches = static_cast<int>(row.Int(5));
        info.objective = row.Text(6);
        info.placement = row.Text(7);
        info.num_points = static_cast<int>(row.Int(8));
        info.min_cap_factor = row.OptionalDouble(9).value_or(0);
        info.max_cap_factor = row.OptionalDouble(10).value_or(0);
        info.created_at = row.Text(11);
        return info;
      });
}

}  // namespace zb
