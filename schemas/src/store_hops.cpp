// SPDX-License-Identifier: Apache-2.0
// Store: per-hop communication times measured on a cluster (hop_measurements, measured_hops;
// migration 007). `zb rehearse --store` records them, `zb tune --comm cluster` reads the latest.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store_impl.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/validate.h"

namespace zb {
namespace {

using sqlite::Statement;

// Everything that can be said without the database, naming the field.
Status CheckRecordable(const Store::Impl& impl, const HopMeasurement& measurement,
                       std::string_view what) {
  if (measurement.cluster.empty()) return impl.Invalid(what, "cluster is empty");
  const Status valid = ValidateHopMeasurement(measurement);
  if (!valid.ok()) return impl.Invalid(what, valid.message());
  return Status::Ok();
}

constexpr const char* kMeasurementColumns =
    "SELECT m.id, c.name, m.message_bytes, m.source, m.measured_at, m.num_hops"
    " FROM hop_measurements m JOIN clusters c ON c.id = m.cluster_id";

HopMeasurement ReadMeasurementRow(const Statement& row, int64_t* num_hops) {
  HopMeasurement measurement;
  measurement.id = row.Int(0);
  measurement.cluster = row.Text(1);
  measurement.message_bytes = row.Int(2);
  measurement.source = row.Text(3);
  measurement.measured_at = row.Text(4);
  if (num_hops != nullptr) *num_hops = row.Int(5);
  return measurement;
}

// The measurement's hops, by (from, to).
Status ReadHops(const Store::Impl& impl, HopMeasurement& measurement, std::string_view what) {
  const int64_t id = measurement.id;
  return sqlite::QueryInto<MeasuredHop>(
      impl.conn,
      "SELECT from_rank, to_rank, time_ns FROM measured_hops WHERE measurement_id = ?1"
      " ORDER BY from_rank, to_rank",
      what, [id](Statement& stmt) { stmt.BindInt(1, id); },
      [](const Statement& row) {
        return MeasuredHop{static_cast<int32_t>(row.Int(0)), static_cast<int32_t>(row.Int(1)),
                           row.Int(2)};
      },
      measurement.hops);
}

}  // namespace

Expected<int64_t> Store::RecordHops(const HopMeasurement& measurement) {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const char* what = "record hops";
  ZB_RETURN_IF_ERROR(impl.CheckWritable(what));
  ZB_RETURN_IF_ERROR(CheckRecordable(impl, measurement, what));
  ZB_ASSIGN_OR_RETURN(const int64_t cluster_id,
                      EnsureCluster(ClusterInfo{measurement.cluster, "", "", "", ""}));

  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginWrite(what));
  ZB_ASSIGN_OR_RETURN(Statement row,
                      impl.conn.Prepare("INSERT INTO hop_measurements (cluster_id, message_bytes,"
                                        " source, num_hops, schema_version)"
                                        " VALUES (?1, ?2, ?3, ?4, ?5)",
                                        what));
  row.BindInt(1, cluster_id);
  row.BindInt(2, measurement.message_bytes);
  row.BindText(3, measurement.source);
  row.BindInt(4, static_cast<int64_t>(measurement.hops.size()));
  row.BindInt(5, kSchemaVersion);
  ZB_RETURN_IF_ERROR(row.Run(what));
  const int64_t id = impl.conn.last_insert_rowid();
  ZB_ASSIGN_OR_RETURN(Statement hop_row,
                      impl.conn.Prepare("INSERT INTO measured_hops (measurement_id, from_rank,"
                                        " to_rank, time_ns) VALUES (?1, ?2, ?3, ?4)",
                                        what));
  hop_row.BindInt(1, id);
  for (size_t i = 0; i < measurement.hops.size(); ++i) {
    const MeasuredHop& hop = measurement.hops[i];
    hop_row.Reset();
    hop_row.BindInt(2, hop.from_rank);
    hop_row.BindInt(3, hop.to_rank);
    hop_row.BindInt(4, hop.time);
    ZB_RETURN_IF_ERROR(hop_row.Run(std::string(what) + ": hops[" + std::to_string(i) + "]"));
  }
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

Expected<std::optional<HopMeasurement>> Store::LatestHops(const std::string& cluster) const {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const std::string what = "latest hops of cluster " + cluster;
  // One snapshot: a measurement recorded meanwhile cannot mix into this one.
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginRead(what));
  int64_t num_hops = 0;
  ZB_ASSIGN_OR_RETURN(
      std::optional<HopMeasurement> found,
      sqlite::QueryFirst<HopMeasurement>(
          impl.conn, std::string(kMeasurementColumns) + " WHERE c.name = ?1 ORDER BY m.id DESC",
          what, [&cluster](Statement& stmt) { stmt.BindText(1, cluster); },
          [&num_hops](const Statement& row) { return ReadMeasurementRow(row, &num_hops); }));
  if (!found) return found;
  ZB_RETURN_IF_ERROR(ReadHops(impl, *found, what));
  if (static_cast<int64_t>(found->hops.size()) != num_hops) {
    return impl.Inconsistent(what, "measurement " + std::to_string(found->id) + " expects " +
                                       std::to_string(num_hops) + " hops, found " +
                                       std::to_string(found->hops.size()));
  }
  return found;
}

Expected<std::vector<HopMeasurement>> Store::ListHopMeasurements() const {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const char* what = "list hop measurements";
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginRead(what));
  ZB_ASSIGN_OR_RETURN(
      std::vector<HopMeasurement> measurements,
      sqlite::Query<HopMeasurement>(
          impl.conn, std::string(kMeasurementColumns) + " ORDER BY m.id", what, sqlite::kNoParams,
          [](const Statement& row) { return ReadMeasurementRow(row, nullptr); }));
  for (HopMeasurement& measurement : measurements) {
    ZB_RETURN_IF_ERROR(ReadHops(impl, measurement, what));
  }
  return measurements;
}

}  // namespace zb
