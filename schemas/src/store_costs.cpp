// SPDX-License-Identifier: Apache-2.0
// Store: cost profiles (cost_profiles, cost_profile_stages, cost_profile_spread,
// cost_profile_hops, cost_profile_layers).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store_impl.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/validate.h"

namespace zb {
namespace {

using sqlite::Statement;

// F, B, W, BW within a stage, the order LoadCostProfileDetails promises.
constexpr const char* kSpreadOrder =
    " ORDER BY stage, CASE kind WHEN 'F' THEN 0 WHEN 'B' THEN 1 WHEN 'W' THEN 2 ELSE 3 END";

Status WriteSpread(Statement& stmt, const std::vector<CostSpread>& rows, std::string_view what) {
  for (const CostSpread& row : rows) {
    stmt.Reset();
    stmt.BindInt(2, row.stage);
    stmt.BindStaticText(3, OpKindName(row.kind));
    stmt.BindInt(4, row.time.median);
    stmt.BindInt(5, row.time.p10);
    stmt.BindInt(6, row.time.p90);
    stmt.BindInt(7, row.time.samples);
    ZB_RETURN_IF_ERROR(stmt.Run(std::string(what) + ": spread of " + OpKindName(row.kind) +
                                " of stage " + std::to_string(row.stage)));
  }
  return Status::Ok();
}

Status WriteHops(Statement& stmt, const std::vector<HopCost>& rows, std::string_view what) {
  for (const HopCost& row : rows) {
    stmt.Reset();
    stmt.BindInt(2, row.from_stage);
    stmt.BindInt(3, row.to_stage);
    stmt.BindInt(4, row.time.median);
    stmt.BindInt(5, row.time.p10);
    stmt.BindInt(6, row.time.p90);
    stmt.BindInt(7, row.time.samples);
    ZB_RETURN_IF_ERROR(stmt.Run(std::string(what) + ": hop " + std::to_string(row.from_stage) +
                                " -> " + std::to_string(row.to_stage)));
  }
  return Status::Ok();
}

Status WriteLayers(Statement& stmt, Statement& option_stmt, const LayerProfile& layers,
                   std::string_view what) {
  for (size_t i = 0; i < layers.layers.size(); ++i) {
    const LayerCost& layer = layers.layers[i];
    stmt.Reset();
    stmt.BindInt(2, static_cast<int64_t>(i));
    stmt.BindText(3, layer.name);
    stmt.BindInt(4, layer.f);
    stmt.BindInt(5, layer.b);
    stmt.BindInt(6, layer.w);
    stmt.BindDouble(7, layer.m_b);
    stmt.BindDouble(8, layer.m_w);
    stmt.BindDouble(9, layer.state);
    stmt.BindDouble(10, layer.send);
    stmt.BindOptional(11, layer.checkpointing.empty()
                              ? std::nullopt
                              : std::optional<std::string_view>(layer.checkpointing));
    ZB_RETURN_IF_ERROR(stmt.Run(std::string(what) + ": block " + layer.name));
    for (size_t k = 0; k < layer.options.size(); ++k) {
      const CheckpointingOption& option = layer.options[k];
      option_stmt.Reset();
      option_stmt.BindInt(2, static_cast<int64_t>(i));
      option_stmt.BindInt(3, static_cast<int64_t>(k));
      option_stmt.BindText(4, option.mode);
      option_stmt.BindInt(5, option.f);
      option_stmt.BindInt(6, option.b);
      option_stmt.BindInt(7, option.w);
      option_stmt.BindDouble(8, option.m_b);
      option_stmt.BindDouble(9, option.m_w);
      option_stmt.BindInt(10, option.measured ? 1 : 0);
      ZB_RETURN_IF_ERROR(option_stmt.Run(std::string(what) + ": block " + layer.name +
                                         ", checkpointing " + option.mode));
    }
  }
  return Status::Ok();
}

Spread SpreadAt(const Statement& row, int first_column) {
  return {row.Int(first_column), row.Int(first_column + 1), row.Int(first_column + 2),
          row.Int(first_column + 3)};
}

}  // namespace

Expected<int64_t> Store::Impl::WriteCostProfile(int64_t job_id, const std::string& name,
                                                const CostProfile& costs,
                                                const CostProfileDetails* details) {
  const char* what = "insert cost profile";
  // The store keeps only what its own readers and `zb costs export` accept.
  const Status valid = ValidateCostProfile(costs);
  if (!valid.ok()) return Invalid(what, valid.message());
  ZB_ASSIGN_OR_RETURN(Statement profile,
                      conn.Prepare("INSERT INTO cost_profiles (job_id, name, comm_ns,"
                                   " schema_version, run_id, memory_source, layout_placement,"
                                   " layout_stages_per_rank, schedule_class, checkpointing,"
                                   " data_parallel, reduce_wait)"
                                   " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                                   what));
  profile.BindInt(1, job_id);
  profile.BindText(2, name);
  profile.BindInt(3, costs.comm);
  profile.BindInt(4, Store::kSchemaVersion);
  profile.BindOptional(5, details ? details->run_id : std::nullopt);
  std::optional<std::string_view> source;
  if (details && details->memory_source) {
    const char* source_name = MemorySourceName(*details->memory_source);
    if (source_name == nullptr) return Invalid(what, "unknown memory source");
    source = source_name;
  }
  profile.BindOptional(6, source);
  if (!costs.layout && !costs.schedule_class.empty()) {
    return Invalid(what, "a schedule class without a layout");
  }
  profile.BindOptional(
      7, costs.layout ? std::optional<std::string_view>(PlacementName(costs.layout->placement))
                      : std::nullopt);
  profile.BindOptional(8,
                       costs.layout ? std::optional<int64_t>(costs.layout->chunks) : std::nullopt);
  profile.BindOptional(9, costs.schedule_class.empty()
                              ? std::nullopt
                              : std::optional<std::string_view>(costs.schedule_class));
  profile.BindOptional(10, costs.checkpointing.empty()
                               ? std::nullopt
                               : std::optional<std::string_view>(costs.checkpointing));
  profile.BindOptional(
      11, costs.data_parallel > 0 ? std::optional<int64_t>(costs.data_parallel) : std::nullopt);
  profile.BindOptional(12,
                       costs.reduce_wait == ReduceWait::kInPlace
                           ? std::nullopt
                           : std::optional<std::string_view>(ReduceWaitName(costs.reduce_wait)));
  ZB_RETURN_IF_ERROR(profile.Run(what));
  const int64_t id = conn.last_insert_rowid();

  ZB_ASSIGN_OR_RETURN(Statement stage, conn.Prepare("INSERT INTO cost_profile_stages"
                                                    " (profile_id, stage, f_ns, b_ns, w_ns, m_b,"
                                                    " m_w, bw_ns, reduce_ns, unshard_ns, unsharded,"
                                                    " reduced)"
                                                    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,"
                                                    " ?10, ?11, ?12)",
                                                    what));
  stage.BindInt(1, id);
  for (size_t s = 0; s < costs.stages.size(); ++s) {
    const StageCost& cost = costs.stages[s];
    stage.Reset();
    stage.BindInt(2, static_cast<int64_t>(s));
    stage.BindInt(3, cost.f);
    stage.BindInt(4, cost.b);
    stage.BindInt(5, cost.w);
    stage.BindDouble(6, cost.m_b);
    stage.BindDouble(7, cost.m_w);
    stage.BindInt(8, cost.bw);
    stage.BindInt(9, cost.reduce);
    stage.BindInt(10, cost.unshard);
    stage.BindDouble(11, cost.unsharded);
    stage.BindDouble(12, cost.reduced);
    ZB_RETURN_IF_ERROR(stage.Run(std::string(what) + ": stage " + std::to_string(s)));
  }
  if (details == nullptr) return id;
  ZB_ASSIGN_OR_RETURN(Statement spread,
                      conn.Prepare("INSERT INTO cost_profile_spread (profile_id, stage, kind,"
                                   " median_ns, p10_ns, p90_ns, samples)"
                                   " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                                   what));
  spread.BindInt(1, id);
  ZB_RETURN_IF_ERROR(WriteSpread(spread, details->spread, what));
  ZB_ASSIGN_OR_RETURN(Statement hop,
                      conn.Prepare("INSERT INTO cost_profile_hops (profile_id, from_stage,"
                                   " to_stage, median_ns, p10_ns, p90_ns, samples)"
                                   " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                                   what));
  hop.BindInt(1, id);
  ZB_RETURN_IF_ERROR(WriteHops(hop, details->hops, what));
  if (!details->layers) return id;
  if (details->layers->comm != costs.comm) {
    return Invalid(what, "per-block costs with another comm than the profile's");
  }
  ZB_ASSIGN_OR_RETURN(Statement layer,
                      conn.Prepare("INSERT INTO cost_profile_layers (profile_id, ordinal, name,"
                                   " f_ns, b_ns, w_ns, m_b, m_w, state, send, checkpointing)"
                                   " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                                   what));
  layer.BindInt(1, id);
  ZB_ASSIGN_OR_RETURN(Statement option,
                      conn.Prepare("INSERT INTO cost_profile_layer_options (profile_id, ordinal,"
                                   " position, mode, f_ns, b_ns, w_ns, m_b, m_w, measured)"
                                   " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                                   what));
  option.BindInt(1, id);
  ZB_RETURN_IF_ERROR(WriteLayers(layer, option, *details->layers, what));
  return id;
}

Expected<CostProfile> Store::Impl::ReadCostProfile(int64_t id, std::string_view what) const {
  auto bind_id = [id](Statement& stmt) { stmt.BindInt(1, id); };
  ZB_ASSIGN_OR_RETURN(
      std::optional<CostProfile> header,
      sqlite::QueryFirst<CostProfile>(
          conn,
          "SELECT comm_ns, layout_placement, layout_stages_per_rank, schedule_class,"
          " checkpointing, data_parallel, reduce_wait FROM cost_profiles WHERE id = ?1",
          what, bind_id, [&](const Statement& row) -> Expected<CostProfile> {
            CostProfile read;
            read.comm = row.Int(0);
            if (!row.IsNull(4)) read.checkpointing = std::string(row.Text(4));
            if (!row.IsNull(5)) read.data_parallel = static_cast<int>(row.Int(5));
            if (!row.IsNull(6)) {
              const std::optional<ReduceWait> wait = ParseReduceWait(row.Text(6));
              if (!wait) {
                return Inconsistent(what, "unknown reduce_wait '" + std::string(row.Text(6)) + "'");
              }
              read.reduce_wait = *wait;
            }
            if (row.IsNull(1)) return read;
            const std::optional<Placement> placement = ParsePlacement(row.Text(1));
            if (!placement) {
              return Inconsistent(what, "unknown placement '" + std::string(row.Text(1)) + "'");
            }
            read.layout = JobLayout{*placement, static_cast<int>(row.Int(2))};
            if (!row.IsNull(3)) read.schedule_class = std::string(row.Text(3));
            return read;
          }));
  if (!header) return NoSuch(what, "cost profile", id);
  CostProfile costs = std::move(*header);
  ZB_RETURN_IF_ERROR(sqlite::QueryInto(
      conn,
      "SELECT stage, f_ns, b_ns, w_ns, m_b, m_w, bw_ns, reduce_ns, unshard_ns, unsharded, reduced"
      " FROM cost_profile_stages"
      " WHERE profile_id = ?1 ORDER BY stage",
      what, bind_id,
      [&](const Statement& row) -> Expected<StageCost> {
        if (row.Int(0) != static_cast<int64_t>(costs.stages.size())) {
          return Inconsistent(what, "cost profile " + std::to_string(id) + " has no stage " +
                                        std::to_string(costs.stages.size()));
        }
        StageCost stage{row.Int(1),    row.Int(2),    row.Int(3),
                        row.Double(4), row.Double(5), row.Int(6)};
        stage.reduce = row.Int(7);
        stage.unshard = row.Int(8);
        stage.unsharded = row.Double(9);
        stage.reduced = row.Double(10);
        return stage;
      },
      costs.stages));
  return costs;
}

Expected<int64_t> Store::InsertCostProfile(int64_t job_id, const std::string& name,
                                           const CostProfile& costs) {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const char* what = "insert cost profile";
  ZB_RETURN_IF_ERROR(impl.CheckWritable(what));
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginWrite(what));
  ZB_RETURN_IF_ERROR(impl.CheckExists("SELECT 1 FROM jobs WHERE id = ?1", job_id, what, "job"));
  ZB_ASSIGN_OR_RETURN(int64_t id, impl.WriteCostProfile(job_id, name, costs));
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

Expected<int64_t> Store::InsertCostProfile(int64_t job_id, const std::string& name,
                                           const CostProfile& costs,
                                           const CostProfileDetails& details) {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const char* what = "insert cost profile";
  ZB_RETURN_IF_ERROR(impl.CheckWritable(what));
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginWrite(what));
  ZB_RETURN_IF_ERROR(impl.CheckExists("SELECT 1 FROM jobs WHERE id = ?1", job_id, what, "job"));
  if (details.run_id) {
    ZB_RETURN_IF_ERROR(
        impl.CheckExists("SELECT 1 FROM runs WHERE id = ?1", *details.run_id, what, "run"));
  }
  ZB_ASSIGN_OR_RETURN(int64_t id, impl.WriteCostProfile(job_id, name, costs, &details));
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

Expected<CostProfileDetails> Store::LoadCostProfileDetails(int64_t id) const {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const std::string what = "load cost profile details " + std::to_string(id);
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginRead(what));
  auto bind_id = [id](Statement& stmt) { stmt.BindInt(1, id); };
  ZB_ASSIGN_OR_RETURN(
      std::optional<CostProfileDetails> found,
      sqlite::QueryFirst<CostProfileDetails>(
          impl.conn, "SELECT run_id, memory_source FROM cost_profiles WHERE id = ?1", what, bind_id,
          [&](const Statement& row) -> Expected<CostProfileDetails> {
            CostProfileDetails details;
            details.run_id = row.OptionalInt(0);
            if (!row.IsNull(1)) {
              details.memory_source = ParseMemorySource(row.Text(1));
              if (!details.memory_source) {
                return impl.Inconsistent(
                    what, "unknown memory source '" + std::string(row.Text(1)) + "'");
              }
            }
            return details;
          }));
  if (!found) return impl.NoSuch(what, "cost profile", id);
  CostProfileDetails& details = *found;
  ZB_RETURN_IF_ERROR(sqlite::QueryInto(
      impl.conn,
      std::string("SELECT stage, kind, median_ns, p10_ns, p90_ns, samples"
                  " FROM cost_profile_spread WHERE profile_id = ?1") +
          kSpreadOrder,
      what, bind_id,
      [&](const Statement& row) -> Expected<CostSpread> {
        const auto kind = ParseOpKind(row.Text(1));
        if (!kind) {
          return impl.Inconsistent(what, "unknown op kind '" + std::string(row.Text(1)) + "'");
        }
        return CostSpread{static_cast<int32_t>(row.Int(0)), *kind, SpreadAt(row, 2)};
      },
      details.spread));
  ZB_RETURN_IF_ERROR(sqlite::QueryInto(
      impl.conn,
      "SELECT from_stage, to_stage, median_ns, p10_ns, p90_ns, samples"
      " FROM cost_profile_hops WHERE profile_id = ?1 ORDER BY from_stage, to_stage",
      what, bind_id,
      [](const Statement& row) {
        return HopCost{static_cast<int32_t>(row.Int(0)), static_cast<int32_t>(row.Int(1)),
                       SpreadAt(row, 2)};
      },
      details.hops));
  std::vector<LayerCost> layers;
  ZB_RETURN_IF_ERROR(sqlite::QueryInto(
      impl.conn,
      "SELECT name, f_ns, b_ns, w_ns, m_b, m_w, state, send, checkpointing"
      " FROM cost_profile_layers WHERE profile_id = ?1 ORDER BY ordinal",
      what, bind_id,
      [](const Statement& row) {
        LayerCost layer;
        layer.name = std::string(row.Text(0));
        layer.f = row.Int(1);
        layer.b = row.Int(2);
        layer.w = row.Int(3);
        layer.m_b = row.Double(4);
        layer.m_w = row.Double(5);
        layer.state = row.Double(6);
        layer.send = row.Double(7);
        if (!row.IsNull(8)) layer.checkpointing = std::string(row.Text(8));
        return layer;
      },
      layers));
  std::vector<std::pair<int64_t, CheckpointingOption>> options;
  ZB_RETURN_IF_ERROR(sqlite::QueryInto(
      impl.conn,
      "SELECT ordinal, mode, f_ns, b_ns, w_ns, m_b, m_w, measured"
      " FROM cost_profile_layer_options WHERE profile_id = ?1 ORDER BY ordinal, position",
      what, bind_id,
      [](const Statement& row) {
        return std::pair{row.Int(0), CheckpointingOption{std::string(row.Text(1)), row.Int(2),
                                                         row.Int(3), row.Int(4), row.Double(5),
                                                         row.Double(6), row.Int(7) != 0}};
      },
      options));
  for (auto& [ordinal, option] : options) {
    if (ordinal < 0 || ordinal >= static_cast<int64_t>(layers.size())) {
      return impl.Inconsistent(what, "a checkpointing option of no block");
    }
    layers[ordinal].options.push_back(std::move(option));
  }
  if (!layers.empty()) {
    ZB_ASSIGN_OR_RETURN(
        int64_t comm,
        impl.conn.QueryInt("SELECT comm_ns FROM cost_profiles WHERE id = " + std::to_string(id),
                           what));
    details.layers = LayerProfile{std::move(layers), comm, LayerSource::kMeasured};
  }
  return std::move(details);
}

Expected<CostProfile> Store::LoadCostProfile(int64_t id) const {
  if (!impl_) return StoreClosed();
  const char* what = "load cost profile";
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl_->BeginRead(what));
  return impl_->ReadCostProfile(id, what);
}

Expected<std::vector<CostProfileInfo>> Store::ListCostProfiles() const {
  if (!impl_) return StoreClosed();
  const Impl& impl = *impl_;
  const char* what = "list cost profiles";
  return sqlite::Query<CostProfileInfo>(
      impl.conn,
      "SELECT p.id, c.name, j.name, p.name,"
      " (SELECT count(*) FROM cost_profile_stages s WHERE s.profile_id = p.id),"
      " p.created_at, p.run_id, p.memory_source"
      " FROM cost_profiles p JOIN jobs j ON j.id = p.job_id"
      " JOIN clusters c ON c.id = j.cluster_id ORDER BY p.id",
      what, sqlite::kNoParams, [&](const Statement& row) -> Expected<CostProfileInfo> {
        CostProfileInfo info;
        info.id = row.Int(0);
        info.cluster = row.Text(1);
        info.job = row.Text(2);
        info.name = row.Text(3);
        info.num_stages = static_cast<int>(row.Int(4));
        info.created_at = row.Text(5);
        info.run_id = row.OptionalInt(6);
        if (!row.IsNull(7)) {
          info.memory_source = ParseMemorySource(row.Text(7));
          if (!info.memory_source) {
            return impl.Inconsistent(what, "cost profile " + std::to_string(info.id) +
                                               " has unknown memory source '" +
                                               std::string(row.Text(7)) + "'");
          }
        }
        return info;
      });
}

}  // namespace zb
