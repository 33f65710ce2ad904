-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 1 -> 2: timeline_ops.kind also accepts 'COMM' (OpKind::kComm,
-- communication measured by the profiler).
--
-- SQLite cannot alter a CHECK, so the table is rebuilt, as SQLite's "making other kinds of table
-- schema changes" procedure does: create the new table, copy, drop the old one, rename. It runs
-- inside the migration transaction, so a failure leaves version 1 intact. foreign_keys stays on
-- (it cannot change inside a transaction) and that is safe here: no table references
-- timeline_ops, so the DROP deletes nothing else, and the new table's own reference to
-- timelines (id) is satisfied by every copied row. timeline_ops has no secondary index, trigger
-- or view to recreate (its primary key is its index). schedule_ops keeps rejecting 'COMM': a
-- schedule orders compute ops only.
--
-- Released: never edit this file (schemas/README.md, "Versions and migration").
CREATE TABLE timeline_ops_v2 (
  timeline_id INTEGER NOT NULL REFERENCES timelines (id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL CHECK (seq >= 0),
  rank        INTEGER NOT NULL CHECK (rank >= 0),
  stage       INTEGER NOT NULL CHECK (stage >= 0),
  kind        TEXT    NOT NULL CHECK (kind IN ('F', 'B', 'W', 'BW', 'COMM')),
  microbatch  INTEGER NOT NULL CHECK (microbatch >= 0),
  start_ns    INTEGER NOT NULL,
  end_ns      INTEGER NOT NULL,
  PRIMARY KEY (timeline_id, seq),
  CHECK (end_ns >= start_ns)
) WITHOUT ROWID;
INSERT INTO timeline_ops_v2 (timeline_id, seq, rank, stage, kind, microbatch, start_ns, end_ns)
  SELECT timeline_id, seq, rank, stage, kind, microbatch, start_ns, end_ns FROM timeline_ops;
DROP TABLE timeline_ops;
ALTER TABLE timeline_ops_v2 RENAME TO timeline_ops;
