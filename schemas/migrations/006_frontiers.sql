-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 5 -> 6: memory-vs-bubble frontiers (`zb tune --frontier`, Frontier in
-- zbkit/schemas/frontier.h). Only additions: two new tables, nothing existing changes.
--  - frontiers: one row per frontier, hanging off the cost profile it was computed from (deleted
--    with it), with what "best" meant (objective) and the placements searched;
--  - frontier_points: one row per (method, cap) cell in the writer's order (seq). A point may name
--    the schedule it stands for; deleting that schedule keeps the point's figures and clears the
--    link (SET NULL), so a frontier never loses cells.
-- num_points is kept in frontiers so that listing does not count rows; RecordFrontier writes it in
-- the same transaction as the points and LoadFrontier checks it.
--
-- Released: never edit this file (schemas/README.md, "Versions and migration").
CREATE TABLE frontiers (
  id              INTEGER PRIMARY KEY,
  cost_profile_id INTEGER NOT NULL REFERENCES cost_profiles (id) ON DELETE CASCADE,
  microbatches    INTEGER NOT NULL CHECK (microbatches >= 1),
  objective       TEXT    NOT NULL CHECK (objective IN ('makespan', 'span')),
  placement       TEXT    NOT NULL CHECK (placement IN ('loop', 'v', 'any')),
  num_points      INTEGER NOT NULL CHECK (num_points >= 1),
  created_at      TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  schema_version  INTEGER NOT NULL CHECK (schema_version >= 1)
);
CREATE INDEX frontiers_by_cost_profile ON frontiers (cost_profile_id);

-- A cell that does not fit (fits = 0) keeps the writer's placeholder figures and has no schedule.
-- NaN bound to a REAL column is stored as NULL, so NOT NULL also rejects NaN.
CREATE TABLE frontier_points (
  frontier_id       INTEGER NOT NULL REFERENCES frontiers (id) ON DELETE CASCADE,
  seq               INTEGER NOT NULL CHECK (seq >= 0),
  method            TEXT    NOT NULL CHECK (method <> ''),
  cap_factor        REAL    NOT NULL CHECK (cap_factor > 0),
  cap               REAL    NOT NULL CHECK (cap >= 0),
  fits              INTEGER NOT NULL CHECK (fits IN (0, 1)),
  makespan_ns       INTEGER NOT NULL,
  span_ns           INTEGER NOT NULL,
  bubble_rate       REAL    NOT NULL,
  paper_bubble_rate REAL    NOT NULL,
  schedule_id       INTEGER REFERENCES schedules (id) ON DELETE SET NULL,
  PRIMARY KEY (frontier_id, seq),
  -- Named so that an error names them instead of quoting the expression.
  CONSTRAINT fitting_point_has_figures CHECK (fits = 0 OR (makespan_ns >= 0 AND span_ns >= 0)),
  CONSTRAINT unfit_point_has_no_schedule CHECK (fits = 1 OR schedule_id IS NULL)
) WITHOUT ROWID;
-- Deleting a schedule looks its points up through this index (the SET NULL above).
CREATE INDEX frontier_points_by_schedule ON frontier_points (schedule_id);
