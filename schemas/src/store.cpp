// SPDX-License-Identifier: Apache-2.0
// Store: opening a file, the migrations, clusters and jobs, the names of the enums of store.h.
// The other table groups live beside it (store_impl.h lists them); the SQL goes through
// zbkit/schemas/sqlite.h.
#include "zbkit/schemas/store.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "store_impl.h"

// Generated at build time (cmake/EmbedText.cmake) from schemas/store.sql and
// schemas/migrations/*.sql.
extern const char* const kZbkitStoreSql;
extern const char* const kZbkitMigration002Sql;
extern const char* const kZbkitMigration003Sql;
extern const char* const kZbkitMigration004Sql;
extern const char* const kZbkitMigration005Sql;
extern const char* const kZbkitMigration006Sql;
extern const char* const kZbkitMigration007Sql;
extern const char* const kZbkitMigration008Sql;
extern const char* const kZbkitMigration009Sql;
extern const char* const kZbkitMigration010Sql;
extern const char* const kZbkitMigration011Sql;
extern const char* const kZbkitMigration012Sql;
extern const char* const kZbkitMigration013Sql;
extern const char* const kZbkitMigration014Sql;
extern const char* const kZbkitMigration015Sql;
extern const char* const kZbkitMigration016Sql;

namespace zb {
namespace {

// Marks the file as a zbkit store in the SQLite header ('zbkt'), so that a SQLite file of another
// application that happens to set user_version is never mistaken for (or migrated into) a store.
constexpr int32_t kApplicationId = 0x7A626B74;

// Forward migrations: step i brings a store from version kMigrations[i-1].version (0 for the
// first) to kMigrations[i].version. A new store runs every step, so there is one path to each
// version and the steps are what is tested. Never edit a released step; add a file to
// schemas/migrations/, embed it (schemas/CMakeLists.txt), append it here and bump
// Store::kSchemaVersion.
struct Migration {
  int version;             // user_version once this step is applied
  const char* const* sql;  // the step's SQL (through a pointer so the table stays constexpr)
};
constexpr Migration kMigrations[] = {
    {1, &kZbkitStoreSql},          // store.sql: create every table of version 1
    {2, &kZbkitMigration002Sql},   // timeline_ops.kind accepts 'COMM'
    {3, &kZbkitMigration003Sql},   // runs, measured cost profiles: run link, memory source, spread
    {4, &kZbkitMigration004Sql},   // timeline_ops.iteration
    {5, &kZbkitMigration005Sql},   // cost_profile_stages.bw_ns
    {6, &kZbkitMigration006Sql},   // frontiers, frontier_points
    {7, &kZbkitMigration007Sql},   // hop_measurements, measured_hops
    {8, &kZbkitMigration008Sql},   // cost_profiles: the profiled job's layout and schedule class
    {9, &kZbkitMigration009Sql},   // timeline_ops: busy_ns, kernels, name of measured ops
    {10, &kZbkitMigration010Sql},  // cost_profile_layers: per-block costs of a profile
    {11, &kZbkitMigration011Sql},  // schedule_ranks.memory_limit: each rank's own cap
    {12, &kZbkitMigration012Sql},  // checkpointing: layers' M_W > M_B, the job's and blocks' modes
    {13, &kZbkitMigration013Sql},  // cost_profiles.data_parallel: the replicas folded
    {14, &kZbkitMigration014Sql},  // stages' reduce/unshard/unsharded, profiles' reduce_wait
    {15, &kZbkitMigration015Sql},  // stages' reduced: the gradient bytes each reduction takes in
    {16, &kZbkitMigration016Sql},  // cost_profile_layer_options: blocks' other checkpointing modes
};
static_assert(kMigrations[std::size(kMigrations) - 1].version == Store::kSchemaVersion,
              "the last migration step must produce Store::kSchemaVersion");

// What Open reads from the file header before it changes anything.
struct Header {
  int64_t version = 0;
  int64_t application_id = 0;
  int64_t num_objects = 0;  // tables, indexes, ... of any application
};

Expected<Header> ReadHeader(const sqlite::Connection& conn, const std::string& what) {
  Header header;
  ZB_ASSIGN_OR_RETURN(header.version,
                      conn.QueryInt("PRAGMA user_version", what + ": read schema version"));
  ZB_ASSIGN_OR_RETURN(header.application_id,
                      conn.QueryInt("PRAGMA application_id", what + ": read application id"));
  ZB_ASSIGN_OR_RETURN(header.num_objects,
                      conn.QueryInt("SELECT count(*) FROM sqlite_schema", what + ": read schema"));
  return header;
}

// Whether a file with this header may be opened in this mode; a newer or foreign file must stay
// untouched (even switching to WAL rewrites header bytes).
Status CheckHeader(const Header& header, bool read_only, const std::string& path,
                   const std::string& what) {
  const std::string version_text = std::to_string(header.version);
  const std::string ours_text = std::to_string(Store::kSchemaVersion);
  if (header.version != 0 && header.application_id != kApplicationId) {
    char id_text[16];
    std::snprintf(id_text, sizeof(id_text), "0x%08llx",
                  static_cast<unsigned long long>(header.application_id) & 0xffffffffULL);
    return StoreError(path + ": " + what + ": not a zbkit store (application_id " + id_text +
                      ", user_version " + version_text + ")");
  }
  if (header.version > Store::kSchemaVersion) {
    return StoreError(path + ": " + what + ": store schema version " + version_text +
                      " is newer than this zbkit supports (" + ours_text +
                      "); refusing to open it");
  }
  if (header.version == 0 && read_only) {
    return StoreError(path + ": " + what + ": not a zbkit store (schema version 0, " +
                      (header.num_objects == 0
                           ? std::string("no tables")
                           : std::to_string(header.num_objects) + " unrelated tables/indexes") +
                      ")");
  }
  if (header.version == 0 && header.num_objects > 0 && header.application_id != kApplicationId) {
    // Most likely the wrong file (an nsys export, another tool's database): adding zbkit tables
    // to it would be a surprise that is hard to undo.
    return StoreError(path + ": " + what + ": not a zbkit store (schema version 0 with " +
                      std::to_string(header.num_objects) +
                      " tables/indexes of another application); refusing to add zbkit tables");
  }
  if (header.version < Store::kSchemaVersion && read_only) {
    return StoreError(path + ": " + what + ": store schema version " + version_text +
                      " is older than " + ours_text + "; open it read-write once to migrate it");
  }
  return Status::Ok();
}

}  // namespace

// ---- Names -----------------------------------------------------------------------------------

const char* RunKindName(RunKind kind) {
  switch (kind) {
    case RunKind::kProfile:
      return "profile";
    case RunKind::kImport:
      return "import";
    case RunKind::kReplay:
      return "replay";
  }
  return nullptr;
}

std::optional<RunKind> ParseRunKind(std::string_view name) {
  for (RunKind kind : {RunKind::kProfile, RunKind::kImport, RunKind::kReplay}) {
    if (name == RunKindName(kind)) return kind;
  }
  return std::nullopt;
}

const char* MemorySourceName(MemorySource source) {
  switch (source) {
    case MemorySource::kNone:
      return "none";
    case MemorySource::kEstimated:
      return "estimated";
    case MemorySource::kMeasured:
      return "measured";
  }
  return nullptr;
}

std::optional<MemorySource> ParseMemorySource(std::string_view name) {
  for (MemorySource source :
       {MemorySource::kNone, MemorySource::kEstimated, MemorySource::kMeasured}) {
    if (name == MemorySourceName(source)) return source;
  }
  return std::nullopt;
}

// ---- Open and migrate ------------------------------------------------------------------------

Status Store::Impl::CheckExists(std::string_view sql, int64_t id, std::string_view what,
                                std::string_view noun) const {
  ZB_ASSIGN_OR_RETURN(std::optional<int64_t> found,
                      sqlite::QueryFirst<int64_t>(
                          conn, sql, what, [id](sqlite::Statement& stmt) { stmt.BindInt(1, id); },
                          [](const sqlite::Statement& row) { return row.Int(0); }));
  if (!found) return NoSuch(what, noun, id);
  return Status::Ok();
}

Status Store::Impl::Migrate(std::string_view what) {
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, BeginWrite(what));
  // Read again under the write lock: another process may have migrated since Open looked.
  ZB_ASSIGN_OR_RETURN(int64_t version, conn.QueryInt("PRAGMA user_version", what));
  if (version > Store::kSchemaVersion) {
    return StoreError(path() + ": " + std::string(what) + ": store schema version " +
                      std::to_string(version) + " is newer than this zbkit supports (" +
                      std::to_string(Store::kSchemaVersion) + ")");
  }
  for (const Migration& step : kMigrations) {
    if (step.version <= version) continue;
    const std::string step_what = std::string(what) + ": migrate schema version " +
                                  std::to_string(version) + " -> " + std::to_string(step.version);
    ZB_RETURN_IF_ERROR(conn.Exec(*step.sql, step_what));
    // Both header fields are part of the transaction: a failed migration leaves the old ones.
    // Constant text built from two integers of this file (a PRAGMA takes no bound parameter).
    const std::string header = "PRAGMA user_version = " + std::to_string(step.version) +
                               "; PRAGMA application_id = " + std::to_string(kApplicationId) + ";";
    ZB_RETURN_IF_ERROR(conn.Exec(header.c_str(), step_what));
    version = step.version;
  }
  return transaction.Commit(what);
}

namespace {

// Before an older store is migrated, a copy of it as it was: "<path>.v<N>.bak" (docs/store.md
// §2). VACUUM INTO writes a consistent snapshot even while other processes use the store, and
// refuses to overwrite: a backup already there (another process migrating at the same moment,
// or an earlier attempt) is kept as it is.
Status BackUpBeforeMigration(const sqlite::Connection& conn, const std::string& path,
                             int64_t version, const std::string& what) {
  const std::string backup = path + ".v" + std::to_string(version) + ".bak";
  struct stat info;
  if (::stat(backup.c_str(), &info) == 0) return Status::Ok();
  ZB_ASSIGN_OR_RETURN(sqlite::Statement stmt,
                      conn.Prepare("VACUUM INTO ?1", what + ": back up before migrating"));
  stmt.BindText(1, backup);
  const Status copied = stmt.Run(what + ": back up to " + backup + " before migrating");
  if (!copied.ok() && ::stat(backup.c_str(), &info) != 0) return copied;
  // Another process wrote the same backup between the check and the copy: keep it.
  return Status::Ok();
}

}  // namespace

Expected<Store> Store::Open(const std::string& path, Mode mode) {
  if (path.empty()) return UsageError("store path is empty");
  const bool read_only = mode == Mode::kReadOnly;
  const std::string what = "open store";

  if (read_only) {
    // SQLITE_OPEN_READONLY would not create the file either, but its message ("unable to open
    // database file") does not say why.
    struct stat info;
    if (::stat(path.c_str(), &info) != 0) {
      const int error = errno;
      if (error == ENOENT) return NotFound(path + ": " + what + ": no such file");
      return StoreError(path + ": " + what + ": " + std::strerror(error));
    }
  }

  auto impl = std::make_unique<Impl>();
  impl->read_only = read_only;
  ZB_ASSIGN_OR_RETURN(
      impl->conn,
      sqlite::Connection::Open(
          path, read_only ? sqlite::OpenMode::kReadOnly : sqlite::OpenMode::kReadWriteCreate,
          what));
  // Look at the header before changing anything. Reading it is also where a file that is not
  // SQLite fails ("file is not a database").
  ZB_ASSIGN_OR_RETURN(Header header, ReadHeader(impl->conn, what));
  ZB_RETURN_IF_ERROR(CheckHeader(header, read_only, path, what));

  // WAL lets readers (the GUI) load while a writer (the tuner, a replay) commits.
  if (!read_only) ZB_RETURN_IF_ERROR(impl->conn.UseWal(what + ": set WAL journal"));
  ZB_RETURN_IF_ERROR(impl->conn.EnableForeignKeys(what + ": enable foreign keys"));

  if (header.version < kSchemaVersion) {
    // Version 0 is a new (or empty) file: nothing to keep.
    if (header.version != 0) {
      ZB_RETURN_IF_ERROR(BackUpBeforeMigration(impl->conn, path, header.version, what));
    }
    ZB_RETURN_IF_ERROR(impl->Migrate(what));
  }
  impl->schema_version = kSchemaVersion;
  return Store(std::move(impl));
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&& other) noexcept = default;
Store& Store::operator=(Store&& other) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const {
  static const std::string kNone;
  return impl_ ? impl_->path() : kNone;
}

int Store::schema_version() const {
  return impl_ ? impl_->schema_version : 0;
}

// ---- Clusters and jobs -----------------------------------------------------------------------

Expected<int64_t> Store::EnsureCluster(const ClusterInfo& cluster) {
  if (!impl_) return StoreClosed();
  const char* what = "ensure cluster";
  ZB_RETURN_IF_ERROR(impl_->CheckWritable(what));
  if (cluster.name.empty()) return impl_->Invalid(what, "cluster name is empty");
  // One statement, so it is atomic on its own; empty fields keep what is stored.
  ZB_ASSIGN_OR_RETURN(
      sqlite::Statement stmt,
      impl_->conn.Prepare("INSERT INTO clusters (name, gpu, interconnect, driver_version,"
                          " nccl_version, schema_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
                          " ON CONFLICT (name) DO UPDATE SET"
                          " gpu = iif(excluded.gpu <> '', excluded.gpu, gpu),"
                          " interconnect = iif(excluded.interconnect <> '', excluded.interconnect,"
                          " interconnect),"
                          " driver_version = iif(excluded.driver_version <> '',"
                          " excluded.driver_version, driver_version),"
                          " nccl_version = iif(excluded.nccl_version <> '', excluded.nccl_version,"
                          " nccl_version)"
                          " RETURNING id",
                          what));
  stmt.BindText(1, cluster.name);
  stmt.BindText(2, cluster.gpu);
  stmt.BindText(3, cluster.interconnect);
  stmt.BindText(4, cluster.driver_version);
  stmt.BindText(5, cluster.nccl_version);
  stmt.BindInt(6, kSchemaVersion);
  ZB_ASSIGN_OR_RETURN(bool row, stmt.Step(what));
  if (!row) return StoreError(path() + ": " + what + ": the upsert returned no id");
  const int64_t id = stmt.Int(0);
  // The change is committed when the statement runs to completion.
  ZB_RETURN_IF_ERROR(stmt.Run(what));
  return id;
}

Status Store::WriteAtomically(std::string_view what, const std::function<Status(Store&)>& steps) {
  if (!impl_) return StoreClosed();
  ZB_RETURN_IF_ERROR(impl_->CheckWritable(what));
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl_->BeginWrite(what));
  ZB_RETURN_IF_ERROR(steps(*this));
  return transaction.Commit(what);
}

Expected<int64_t> Store::EnsureJob(int64_t cluster_id, const std::string& job_name) {
  if (!impl_) return StoreClosed();
  Impl& impl = *impl_;
  const char* what = "ensure job";
  ZB_RETURN_IF_ERROR(impl.CheckWritable(what));
  if (job_name.empty()) return impl.Invalid(what, "job name is empty");
  ZB_ASSIGN_OR_RETURN(sqlite::Transaction transaction, impl.BeginWrite(what));
  ZB_RETURN_IF_ERROR(
      impl.CheckExists("SELECT 1 FROM clusters WHERE id = ?1", cluster_id, what, "cluster"));
  ZB_ASSIGN_OR_RETURN(
      std::optional<int64_t> existing,
      sqlite::QueryFirst<int64_t>(
          impl.conn, "SELECT id FROM jobs WHERE cluster_id = ?1 AND name = ?2", what,
          [&](sqlite::Statement& stmt) {
            stmt.BindInt(1, cluster_id);
            stmt.BindText(2, job_name);
          },
          [](const sqlite::Statement& row) { return row.Int(0); }));
  if (existing) return *existing;  // nothing written; the guard ends the transaction
  ZB_ASSIGN_OR_RETURN(sqlite::Statement insert,
                      impl.conn.Prepare("INSERT INTO jobs (cluster_id, name, schema_version)"
                                        " VALUES (?1, ?2, ?3)",
                                        what));
  insert.BindInt(1, cluster_id);
  insert.BindText(2, job_name);
  insert.BindInt(3, kSchemaVersion);
  ZB_RETURN_IF_ERROR(insert.Run(what));
  const int64_t id = impl.conn.last_insert_rowid();
  ZB_RETURN_IF_ERROR(transaction.Commit(what));
  return id;
}

}  // namespace zb
