-- SPDX-License-Identifier: Apache-2.0
-- zbkit profiler shard, format version 1: what ONE profiled process recorded (a RawTrace of
-- profiler/include/zbkit/profiler/trace.h), before any interpretation.
--
-- How this file is used:
--  - Embedded into zbkit::profiler at build time (kZbkitShardSql). ShardWriter::Create runs it on
--    a fresh file, then sets `PRAGMA user_version = 1` and `PRAGMA application_id = 0x7A627368`
--    ('zbsh'); ReadShard refuses a file without that id or with a newer version.
--  - The writer keeps the file in WAL mode with synchronous = NORMAL and appends one transaction
--    per Flush(): a process killed at any point leaves every flushed batch readable, and a reader
--    can open the shard while the process still runs.
--
-- Conventions:
--  - Times are INTEGER nanoseconds on the process's clock (trace.h), exactly as recorded.
--  - Strings (range names, domains, kernel names) are interned once in `strings` and referenced
--    by id: a training step repeats the same few hundred names millions of times.
--  - Record tables are plain rowid tables without secondary indexes or CHECKs: appending is the
--    hot path (>= 1 M records/s), and the rowid keeps the order in which records were added.
--    Interpretation (sorting, joining launches to activities) happens when `zb` reads the shard.

-- Exactly one row: the process (TraceProcess) and counters updated by every Flush().
CREATE TABLE process (
  rank            INTEGER NOT NULL,  -- RANK, -1 if unset
  local_rank      INTEGER NOT NULL,  -- LOCAL_RANK, -1 if unset
  world_size      INTEGER NOT NULL,  -- WORLD_SIZE, -1 if unset
  pid             INTEGER NOT NULL,
  host            TEXT    NOT NULL,
  command         TEXT    NOT NULL,
  source          TEXT    NOT NULL,  -- "inject", or what produced the shard
  dropped_records INTEGER NOT NULL DEFAULT 0,  -- CUPTI records lost, summed over flushes
  created_ns      INTEGER NOT NULL   -- CLOCK_REALTIME when the shard was created
);

CREATE TABLE strings (
  id   INTEGER PRIMARY KEY,
  text TEXT NOT NULL
);

-- CPU-side ranges (TraceRange).
CREATE TABLE ranges (
  name_id   INTEGER NOT NULL,  -- strings.id
  domain_id INTEGER NOT NULL,  -- strings.id ("" for the default domain)
  thread    INTEGER NOT NULL,
  start_ns  INTEGER NOT NULL,
  end_ns    INTEGER NOT NULL,
  depth     INTEGER NOT NULL
);

-- Device activities (DeviceActivity); kind 0 kernel, 1 memcpy, 2 memset.
CREATE TABLE activities (
  kind        INTEGER NOT NULL,
  name_id     INTEGER NOT NULL,  -- strings.id
  device      INTEGER NOT NULL,
  stream      INTEGER NOT NULL,
  start_ns    INTEGER NOT NULL,
  end_ns      INTEGER NOT NULL,
  correlation INTEGER NOT NULL,
  bytes       INTEGER NOT NULL
);

-- CPU-side launches (Launch): correlation id -> launching thread and API entry time.
CREATE TABLE launches (
  correlation INTEGER NOT NULL,
  thread      INTEGER NOT NULL,
  time_ns     INTEGER NOT NULL
);

-- Device memory allocated (bytes > 0) or released (bytes < 0) (MemoryEvent).
CREATE TABLE memory (
  time_ns INTEGER NOT NULL,
  bytes   INTEGER NOT NULL,
  device  INTEGER NOT NULL
);
