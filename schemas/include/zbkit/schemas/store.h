// SPDX-License-Identifier: Apache-2.0
// The zbkit store: one SQLite file holding clusters, jobs, cost profiles, schedules with their
// ops, timelines (predicted and measured) with memory samples, and memory-vs-bubble frontiers.
//
// Contract:
//  - The schema is schemas/store.sql (version 1) followed by the migration steps
//    schemas/migrations/NNN_*.sql, all embedded at build time; `PRAGMA user_version` holds the
//    schema version and Open() applies the pending steps in order inside one transaction. A store
//    written by a newer zbkit is refused, not modified.
//  - WAL journal, foreign keys on, a busy timeout, prepared statements.
//  - Every logical write (one schedule with all its ops, one timeline with all its samples) is one
//    transaction: on any error nothing of it is left behind. WriteAtomically makes several calls
//    one such write (a profiled run with its costs and timeline, a frontier with its schedules).
//  - No method throws; errors are one line naming the store file and what failed.
//  - The SQL goes through zbkit/schemas/sqlite.h; the implementation is split by table group
//    (src/store.cpp, store_costs.cpp, store_schedules.cpp, store_timelines.cpp, store_runs.cpp,
//    store_frontiers.cpp).
#ifndef ZBKIT_SCHEMAS_STORE_H_
#define ZBKIT_SCHEMAS_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zbkit/schemas/frontier.h"
#include "zbkit/schemas/layers.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

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
  int64_t job_id = 0;
  std::string cluster;
  std::string job;
  std::string family;
  int ranks = 0;
  int microbatches = 0;
  int chunks = 1;
  Placement placement = Placement::kLoop;
  // The per-rank cap the schedule was tuned for, if any (the largest rank's, in the profile's
  // units: docs/formats.md §5 "cap"); the store's column is schedules.memory_limit.
  std::optional<double> cap;
  // Each rank's own cap (ranks entries), or empty when the schedule has none: the caps stored
  // with it (schedule_ranks.memory_limit, version 11), else `cap` for every rank (a schedule
  // stored with one cap, or before version 11).
  std::vector<double> rank_caps;
  Prediction predicted;
  int64_t num_ops = 0;
  std::string created_at;  // UTC, ISO 8601
};

struct TimelineInfo {
  int64_t id = 0;
  std::optional<int64_t> schedule_id;
  std::optional<int64_t> run_id;  // measured timelines of a run (version 3)
  TimelineKind kind = TimelineKind::kPredicted;
  int64_t num_ops = 0;
  std::string created_at;
};

// What a run was (runs.kind keeps the names).
enum class RunKind {
  kProfile,  // "profile": `zb profile` ran the job under the injection library
  kImport,   // "import": a trace recorded elsewhere (nsys, Chrome/Kineto, shards)
  kReplay,   // "replay": the runtime ran a stored schedule
};
const char* RunKindName(RunKind kind);  // nullptr for a value outside the enum
std::optional<RunKind> ParseRunKind(std::string_view name);

// Where a cost profile's M_B/M_W come from (cost_profiles.memory_source keeps the names).
enum class MemorySource {
  kNone,       // "none": no memory figures (zeros)
  kEstimated,  // "estimated": the paper's analytic model from the model dimensions
  kMeasured,   // "measured": allocation records of the profiled run
};
const char* MemorySourceName(MemorySource source);  // nullptr for a value outside the enum
std::optional<MemorySource> ParseMemorySource(std::string_view name);

struct CostProfileInfo {
  int64_t id = 0;
  std::string cluster;
  std::string job;
  std::string name;
  int num_stages = 0;
  std::string created_at;
  std::optional<int64_t> run_id;  // the run that measured it (profiles from the profiler)
  std::optional<MemorySource> memory_source;  // nullopt when not recorded
};

// One execution of a job (the `runs` table): a profiling run, an imported trace, a replay.
struct RunInfo {
  int64_t id = 0;
  int64_t job_id = 0;
  RunKind kind = RunKind::kProfile;
  std::optional<int64_t> schedule_id;
  std::string command;           // the profiled command line or the imported file
  std::optional<int> exit_code;  // of the profiled command
  std::string started_at;
  std::string cluster;  // the names of the job's cluster and of the job (ListRuns)
  std::string job;
};

// A measured time over the samples it was aggregated from: the median and the 10th/90th
// percentiles. The profiler computes it (zbkit/profiler/costs.h), the store keeps it.
struct Spread {
  TimeNs median = 0;
  TimeNs p10 = 0;
  TimeNs p90 = 0;
  int64_t samples = 0;
  bool operator==(const Spread&) const = default;
};

// The spread of one per-stage cost.
struct CostSpread {
  int32_t stage = 0;
  OpKind kind = OpKind::kF;  // F, B, W or BW
  Spread time;
  bool operator==(const CostSpread&) const = default;
};

// Communication time of one hop (from_stage sends to to_stage).
struct HopCost {
  int32_t from_stage = 0;
  int32_t to_stage = 0;
  Spread time;
  bool operator==(const HopCost&) const = default;
};

// What a measured cost profile carries beyond zb-costs/1 (version 3).
struct CostProfileDetails {
  std::optional<int64_t> run_id;
  std::optional<MemorySource> memory_source;  // nullopt when not recorded
  std::vector<CostSpread> spread;
  std::vector<HopCost> hops;
  // Per-block costs measured with the profile (version 10); nullopt: stage totals only. Their
  // comm is the profile's, their source "measured".
  std::optional<LayerProfile> layers;
  bool operator==(const CostProfileDetails&) const = default;
};

// One row of ListFrontiers(): what a browser needs without loading the points.
struct FrontierInfo {
  int64_t id = 0;
  int64_t cost_profile_id = 0;
  std::string cluster;       // of the cost profile's job
  std::string job;           // the cost profile's job
  std::string cost_profile;  // the cost profile's name
  int microbatches = 0;
  std::string objective;  // "makespan" or "span"
  std::string placement;  // "loop", "v" or "any"
  int num_points = 0;
  // The cap grid's ends, over every point (any method): the "1x".."3x" of `--frontier 1x:3x:..`.
  double min_cap_factor = 0;
  double max_cap_factor = 0;
  std::string created_at;  // UTC, ISO 8601
};

class Store {
 public:
  // 1: store.sql. 2: timeline_ops.kind accepts 'COMM' (measured communication ops).
  // 3: runs carry command and exit code; cost profiles link to their run, say where their
  //    memory figures come from and keep per-stage spread and per-hop comm (side tables).
  // 4: timeline_ops.iteration (TimelineOp::iteration; 0 for ops stored before).
  // 5: cost_profile_stages.bw_ns (StageCost::bw; 0, not measured, for stages stored before).
  // 6: frontiers and frontier_points (memory-vs-bubble frontiers).
  // 7: hop_measurements and measured_hops (per-hop times measured on a cluster).
  // 8: cost_profiles keep the profiled job's layout and schedule class.
  // 9: timeline_ops.busy_ns, kernels and name (TimelineOp::busy, kernels, name of measured ops).
  // 10: cost_profile_layers (CostProfileDetails::layers, per-block costs of a profile).
  // 11: schedule_ranks.memory_limit (each rank's own cap, ScheduleInfo::rank_caps).
  // 12: activation checkpointing of profiles and their blocks. 13: cost_profiles.data_parallel.
  // 14: cost_profile_stages.reduce_ns/unshard_ns/unsharded, cost_profiles.reduce_wait.
  // 15: cost_profile_stages.reduced.
  static constexpr int kSchemaVersion = 16;

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

  // Runs `steps` inside one write transaction of this store: the Store calls they make join it
  // (each as a savepoint), so that either everything they wrote is committed or, when `steps` or
  // the commit fails, nothing is. Returns that error (`what` names the write in errors of its
  // own). For writes that belong together but are several calls, e.g. a run, its measured cost
  // profile and its timeline; a reader never sees part of them.
  Status WriteAtomically(std::string_view what, const std::function<Status(Store&)>& steps);

  // Returns the id of the cluster with this name, inserting it (or updating its descriptive
  // fields when non-empty) as needed.
  Expected<int64_t> EnsureCluster(const ClusterInfo& cluster);
  Expected<int64_t> EnsureJob(int64_t cluster_id, const std::string& job_name);

  Expected<int64_t> InsertCostProfile(int64_t job_id, const std::string& name,
                                      const CostProfile& costs);
  // A measured profile: the costs plus its run, memory source, spread and hops, in one
  // transaction.
  Expected<int64_t> InsertCostProfile(int64_t job_id, const std::string& name,
                                      const CostProfile& costs, const CostProfileDetails& details);
  Expected<CostProfile> LoadCostProfile(int64_t id) const;
  // Spread in stage order, F, B, W, BW within a stage; hops by (from, to). Empty details (no
  // run, no spread) for profiles stored without them.
  Expected<CostProfileDetails> LoadCostProfileDetails(int64_t id) const;
  Expected<std::vector<CostProfileInfo>> ListCostProfiles() const;

  // Records a run of a job; `schedule_id` is what a replay ran.
  Expected<int64_t> InsertRun(int64_t job_id, RunKind kind, const std::string& command = "",
                              std::optional<int> exit_code = std::nullopt,
                              std::optional<int64_t> schedule_id = std::nullopt);
  Expected<std::vector<RunInfo>> ListRuns() const;
  // Stores a (measured) timeline linked to a run.
  Expected<int64_t> InsertRunTimeline(int64_t run_id, const Timeline& timeline);
  // What the runtime records after replaying a stored schedule, in one transaction: a run of
  // kind replay that ran `schedule_id`, and its measured timeline linked to both the run and the
  // schedule. The timeline must be measured (kInvalidInput otherwise). Returns the run id.
  Expected<int64_t> RecordMeasuredRun(int64_t job_id, int64_t schedule_id,
                                      const std::string& command, std::optional<int> exit_code,
                                      const Timeline& timeline);
  // The timelines of one run, by id (empty for a run without any; NotFound for no such run).
  Expected<std::vector<TimelineInfo>> ListRunTimelines(int64_t run_id) const;
  // The measured timelines of one schedule (its replays), by id; NotFound for no such schedule.
  Expected<std::vector<TimelineInfo>> ListMeasuredTimelines(int64_t schedule_id) const;

  // Stores the schedule, its per-stage costs, every op and, when the schedule has a prediction,
  // its predicted timeline, in one transaction. Returns the schedule id.
  // `cap`: one cap for every rank (schedules.memory_limit), if any.
  Expected<int64_t> InsertSchedule(int64_t job_id, const Schedule& schedule,
                                   std::optional<double> cap = std::nullopt);
  // The same with each rank's own cap (`rank_caps`: one finite number >= 0 per rank, as the
  // tuner judged the schedule), kept per rank; schedules.memory_limit holds the largest.
  Expected<int64_t> InsertSchedule(int64_t job_id, const Schedule& schedule,
                                   const std::vector<double>& rank_caps);
  // NotFound if there is no such schedule.
  Expected<Schedule> LoadSchedule(int64_t id) const;
  Expected<std::vector<ScheduleInfo>> ListSchedules() const;
  // One schedule's row of ListSchedules(); NotFound if there is no such schedule.
  Expected<ScheduleInfo> LoadScheduleInfo(int64_t id) const;

  Expected<int64_t> InsertTimeline(std::optional<int64_t> schedule_id, const Timeline& timeline);
  Expected<Timeline> LoadTimeline(int64_t id) const;
  Expected<std::vector<TimelineInfo>> ListTimelines() const;
  // One timeline's row of ListTimelines(); NotFound if there is no such timeline.
  Expected<TimelineInfo> LoadTimelineInfo(int64_t id) const;

  // Stores a frontier and all its points, in order, in one transaction; returns its id. Checked
  // first, each error naming the field: microbatches >= 1, objective "makespan" or "span",
  // placement "loop", "v" or "any", at least one point, and per point a non-empty method, finite
  // numbers (cap_factor > 0, cap >= 0), makespan and span >= 0 where it fits, no schedule where
  // it does not (kInvalidInput); the cost profile and every schedule named must exist
  // (kNotFound). On any error nothing of the frontier is stored.
  Expected<int64_t> RecordFrontier(const Frontier& frontier);
  // The frontier with its points in the order they were recorded. NotFound for no such frontier.
  Expected<Frontier> LoadFrontier(int64_t id) const;
  // Every frontier, by id.
  Expected<std::vector<FrontierInfo>> ListFrontiers() const;

  // Stores a hop measurement for `measurement.cluster` (created if missing) with its hops, in one
  // transaction; returns its id. Checked first, each error naming the field: a cluster name,
  // message_bytes >= 1, a source, at least one hop, and per hop ranks >= 0 that differ, a time
  // >= 0 and no pair twice (kInvalidInput). id and measured_at are ignored.
  Expected<int64_t> RecordHops(const HopMeasurement& measurement);
  // The cluster's most recent hop measurement, with its hops by (from, to); nullopt when the
  // cluster has none or does not exist.
  Expected<std::optional<HopMeasurement>> LatestHops(const std::string& cluster) const;
  // Every hop measurement of every cluster, by id, each with its hops by (from, to).
  Expected<std::vector<HopMeasurement>> ListHopMeasurements() const;

  // The implementation (schemas/src/store_impl.h); opaque outside the library.
  struct Impl;

 private:
  explicit Store(std::unique_ptr<Impl> impl);
  Expected<int64_t> InsertSchedule(int64_t job_id, const Schedule& schedule,
                                   std::optional<double> cap, const std::vector<double>& rank_caps);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_STORE_H_
