-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 2 -> 3: what the profiler records. Only additions: new nullable (or
-- defaulted) columns and new tables, so no table is rebuilt and every version-2 row keeps its
-- meaning (a profile without a run is one the tuner or a user stored; its details load as empty).
--  - runs.command / runs.exit_code: the profiled command line (or imported file) and its exit
--    status;
--  - cost_profiles.run_id: the run a measured profile came from (SET NULL when the run goes, the
--    profile stays); cost_profiles.memory_source: whether M_B/M_W are measured, estimated from
--    the analytic model, or absent;
--  - cost_profile_spread: per (stage, kind) median and p10/p90 over the measured samples;
--  - cost_profile_hops: per-hop communication time.
-- ADD COLUMN with REFERENCES needs a NULL default while foreign keys are on, which it has.
--
-- Released: never edit this file (schemas/README.md, "Versions and migration").
ALTER TABLE runs ADD COLUMN command TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN exit_code INTEGER;
ALTER TABLE cost_profiles ADD COLUMN run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL;
ALTER TABLE cost_profiles ADD COLUMN memory_source TEXT
  CHECK (memory_source IN ('measured', 'estimated', 'none'));
CREATE INDEX cost_profiles_by_run ON cost_profiles (run_id);
CREATE TABLE cost_profile_spread (
  profile_id INTEGER NOT NULL REFERENCES cost_profiles (id) ON DELETE CASCADE,
  stage      INTEGER NOT NULL CHECK (stage >= 0),
  kind       TEXT    NOT NULL CHECK (kind IN ('F', 'B', 'W', 'BW')),
  median_ns  INTEGER NOT NULL CHECK (median_ns >= 0),
  p10_ns     INTEGER NOT NULL CHECK (p10_ns >= 0),
  p90_ns     INTEGER NOT NULL CHECK (p90_ns >= p10_ns),
  samples    INTEGER NOT NULL CHECK (samples >= 0),
  PRIMARY KEY (profile_id, stage, kind)
) WITHOUT ROWID;
CREATE TABLE cost_profile_hops (
  profile_id INTEGER NOT NULL REFERENCES cost_profiles (id) ON DELETE CASCADE,
  from_stage INTEGER NOT NULL CHECK (from_stage >= 0),
  to_stage   INTEGER NOT NULL CHECK (to_stage >= 0),
  median_ns  INTEGER NOT NULL CHECK (median_ns >= 0),
  p10_ns     INTEGER NOT NULL CHECK (p10_ns >= 0),
  p90_ns     INTEGER NOT NULL CHECK (p90_ns >= p10_ns),
  samples    INTEGER NOT NULL CHECK (samples >= 0),
  PRIMARY KEY (profile_id, from_stage, to_stage)
) WITHOUT ROWID;
