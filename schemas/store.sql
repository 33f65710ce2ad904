-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, schema version 1: the DDL that creates an empty store.
--
-- How this file is used:
--  - It is embedded into zbkit::schemas at build time (kZbkitStoreSql) and is the migration step
--    "0 -> 1" of Store::Open (schemas/src/store.cpp, kMigrations). Later versions add steps
--    (schemas/migrations/NNN_*.sql) rather than editing this file, so every existing store can be
--    brought forward; Open applies all pending steps, in order, inside ONE transaction. A new
--    store runs them all too, so this file alone is version 1, not the current schema: see
--    schemas/migrations/ and schemas/README.md.
--  - The migration runner, not this file, writes the file header: after each step it sets
--    `PRAGMA user_version = <target>` and `PRAGMA application_id = 0x7A626B74` ('zbkt') in the same
--    transaction, so a step's version number lives in exactly one place. For the same reason the
--    file holds no BEGIN/COMMIT. To build a store by hand:
--        sqlite3 my.db < store.sql && sqlite3 my.db 'PRAGMA user_version = 1; PRAGMA application_id = 2053270388;'
--  - Connection settings (WAL, foreign_keys, busy_timeout) are per connection or need to be set
--    outside a transaction, so Open sets them; they are not part of the schema.
--
-- Conventions:
--  - Times are INTEGER nanoseconds (*_ns), exactly as inside zbkit; JSON's milliseconds never
--    reach the store. Memory is REAL (bytes or the paper's relative units, as the profile says).
--    A NaN bound to a REAL column is stored as NULL, so NOT NULL also rejects NaN.
--  - Timestamps are UTC ISO 8601 text with milliseconds, e.g. 2024-05-01T12:34:56.789Z.
--  - Every top-level row carries the schema_version of the zbkit that wrote it; child rows
--    (stages, ranks, ops, samples) belong to their parent's version.
--  - Child tables are WITHOUT ROWID with the parent id leading the primary key: the rows of one
--    schedule or timeline are then one contiguous range of one b-tree, which is what makes loading
--    a 1M-op timeline a single ordered range scan with no separate index and no sort.
--  - CHECKs reject what is always a bug (negative durations, unknown kinds, ranks < 1); semantic
--    rules (every op exactly once, F > 0) belong to ValidateSchedule / ValidateCostProfile.
--  - Deleting a cluster, job, profile, schedule or timeline deletes what hangs off it.

-- A machine or pool of identical machines; `name` is the user-facing key.
CREATE TABLE clusters (
  id             INTEGER PRIMARY KEY,
  name           TEXT    NOT NULL UNIQUE CHECK (name <> ''),
  gpu            TEXT    NOT NULL DEFAULT '',
  interconnect   TEXT    NOT NULL DEFAULT '',
  driver_version TEXT    NOT NULL DEFAULT '',
  nccl_version   TEXT    NOT NULL DEFAULT '',
  created_at     TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  schema_version INTEGER NOT NULL CHECK (schema_version >= 1)
);

-- A training job (model + parallel layout) on a cluster.
CREATE TABLE jobs (
  id             INTEGER PRIMARY KEY,
  cluster_id     INTEGER NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
  name           TEXT    NOT NULL CHECK (name <> ''),
  created_at     TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  schema_version INTEGER NOT NULL CHECK (schema_version >= 1),
  UNIQUE (cluster_id, name)  -- also the index behind the cluster_id foreign key
);

-- Per-stage costs (zb-costs/1) of a job: measured by the profiler, imported, or the costs a
-- schedule was computed with.
CREATE TABLE cost_profiles (
  id             INTEGER PRIMARY KEY,
  job_id         INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  name           TEXT    NOT NULL,
  comm_ns        INTEGER NOT NULL CHECK (comm_ns >= 0),  -- latency of one stage-to-stage hop
  created_at     TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  schema_version INTEGER NOT NULL CHECK (schema_version >= 1)
);
CREATE INDEX cost_profiles_by_job ON cost_profiles (job_id);

CREATE TABLE cost_profile_stages (
  profile_id INTEGER NOT NULL REFERENCES cost_profiles (id) ON DELETE CASCADE,
  stage      INTEGER NOT NULL CHECK (stage >= 0),
  f_ns       INTEGER NOT NULL CHECK (f_ns >= 0),
  b_ns       INTEGER NOT NULL CHECK (b_ns >= 0),
  w_ns       INTEGER NOT NULL CHECK (w_ns >= 0),
  m_b        REAL    NOT NULL CHECK (m_b >= 0),  -- activation memory held from F until B
  m_w        REAL    NOT NULL CHECK (m_w >= 0),  -- the part of it still held from B until W
  PRIMARY KEY (profile_id, stage)
) WITHOUT ROWID;

-- A pipeline schedule. Its per-stage costs (p*v entries, as scheduled) are a cost profile of its
-- own. The prediction columns are all NULL or all set (Schedule::predicted is optional).
CREATE TABLE schedules (
  id                INTEGER PRIMARY KEY,
  job_id            INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  cost_profile_id   INTEGER NOT NULL REFERENCES cost_profiles (id) ON DELETE CASCADE,
  family            TEXT    NOT NULL DEFAULT '',  -- generator: 'zb-auto', '1f1b', ...
  ranks             INTEGER NOT NULL CHECK (ranks >= 1),         -- p
  microbatches      INTEGER NOT NULL CHECK (microbatches >= 1),  -- m
  chunks            INTEGER NOT NULL CHECK (chunks >= 1),        -- v, stages per rank
  placement         TEXT    NOT NULL CHECK (placement IN ('loop', 'v')),
  memory_limit      REAL    CHECK (memory_limit >= 0),  -- per-rank cap it was tuned for; NULL: none
  makespan_ns       INTEGER CHECK (makespan_ns >= 0),
  span_ns           INTEGER CHECK (span_ns >= 0),
  bubble_rate       REAL,
  paper_bubble_rate REAL,
  -- Kept here so that listing schedules does not count millions of op rows; written in the
  -- same transaction as the ops and checked again by LoadSchedule.
  num_ops           INTEGER NOT NULL CHECK (num_ops >= 0),
  created_at        TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  schema_version    INTEGER NOT NULL CHECK (schema_version >= 1),
  CONSTRAINT v_placement_has_two_chunks CHECK (placement <> 'v' OR chunks = 2),
  -- Named so that the error names it instead of quoting a multi-line expression.
  CONSTRAINT prediction_all_or_none CHECK (
    (makespan_ns IS NULL) = (span_ns IS NULL) AND (makespan_ns IS NULL) = (bubble_rate IS NULL)
    AND (makespan_ns IS NULL) = (paper_bubble_rate IS NULL))
);
CREATE INDEX schedules_by_job ON schedules (job_id);
CREATE INDEX schedules_by_cost_profile ON schedules (cost_profile_id);

CREATE TABLE schedule_ranks (
  schedule_id INTEGER NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
  rank        INTEGER NOT NULL CHECK (rank >= 0),
  -- Stage id of each local chunk as a JSON array, e.g. '[0,7]' (queryable with json_each).
  stages      TEXT    NOT NULL CHECK (json_valid(stages) AND json_type(stages) = 'array'),
  peak_memory REAL,  -- predicted peak activation memory; NULL when the schedule has none
  PRIMARY KEY (schedule_id, rank)
) WITHOUT ROWID;

-- Each rank's program in execution order (seq = position in the rank's op list).
CREATE TABLE schedule_ops (
  schedule_id INTEGER NOT NULL,
  rank        INTEGER NOT NULL,
  seq         INTEGER NOT NULL CHECK (seq >= 0),
  kind        TEXT    NOT NULL CHECK (kind IN ('F', 'B', 'W', 'BW')),
  chunk       INTEGER NOT NULL CHECK (chunk >= 0),  -- local chunk index into the rank's stages
  microbatch  INTEGER NOT NULL CHECK (microbatch >= 0),
  start_ns    INTEGER NOT NULL,
  end_ns      INTEGER NOT NULL,
  PRIMARY KEY (schedule_id, rank, seq),
  FOREIGN KEY (schedule_id, rank) REFERENCES schedule_ranks (schedule_id, rank) ON DELETE CASCADE,
  CHECK (end_ns >= start_ns)
) WITHOUT ROWID;

-- One execution of a job: a profiling run, a replay of a tuned schedule, or an imported trace.
CREATE TABLE runs (
  id             INTEGER PRIMARY KEY,
  job_id         INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  kind           TEXT    NOT NULL CHECK (kind IN ('profile', 'replay', 'import')),
  schedule_id    INTEGER REFERENCES schedules (id) ON DELETE SET NULL,  -- what a replay ran
  started_at     TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  schema_version INTEGER NOT NULL CHECK (schema_version >= 1)
);
CREATE INDEX runs_by_job ON runs (job_id);
CREATE INDEX runs_by_schedule ON runs (schedule_id);

-- Timed ops, predicted (from a schedule) or measured (from a run), plus memory over time.
CREATE TABLE timelines (
  id             INTEGER PRIMARY KEY,
  schedule_id    INTEGER REFERENCES schedules (id) ON DELETE CASCADE,
  run_id         INTEGER REFERENCES runs (id) ON DELETE CASCADE,
  kind           TEXT    NOT NULL CHECK (kind IN ('predicted', 'measured')),
  num_ops        INTEGER NOT NULL CHECK (num_ops >= 0),  -- see schedules.num_ops
  created_at     TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  schema_version INTEGER NOT NULL CHECK (schema_version >= 1)
);
CREATE INDEX timelines_by_schedule ON timelines (schedule_id);
CREATE INDEX timelines_by_run ON timelines (run_id);

-- seq keeps the writer's order, so a timeline loads back exactly as it was stored. The primary
-- key is the index for loading by timeline (one ordered range scan).
CREATE TABLE timeline_ops (
  timeline_id INTEGER NOT NULL REFERENCES timelines (id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL CHECK (seq >= 0),
  rank        INTEGER NOT NULL CHECK (rank >= 0),
  stage       INTEGER NOT NULL CHECK (stage >= 0),
  kind        TEXT    NOT NULL CHECK (kind IN ('F', 'B', 'W', 'BW')),
  microbatch  INTEGER NOT NULL CHECK (microbatch >= 0),
  start_ns    INTEGER NOT NULL,
  end_ns      INTEGER NOT NULL,
  PRIMARY KEY (timeline_id, seq),
  CHECK (end_ns >= start_ns)
) WITHOUT ROWID;

-- Activation memory held on a rank from t_ns on (a step function per rank). No sign check:
-- summing double deltas can leave -1e-17 where the exact value is 0.
CREATE TABLE memory_samples (
  timeline_id INTEGER NOT NULL REFERENCES timelines (id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL CHECK (seq >= 0),
  rank        INTEGER NOT NULL CHECK (rank >= 0),
  t_ns        INTEGER NOT NULL,
  memory      REAL    NOT NULL,
  PRIMARY KEY (timeline_id, seq)
) WITHOUT ROWID;
