-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 11 -> 12: activation checkpointing (docs/activation-checkpointing.md).
-- 1. A block's M_W may exceed its M_B: under checkpointing, B recomputes the block and keeps what
--    W needs of it until W. SQLite cannot drop a CHECK, so cost_profile_layers is rebuilt with
--    the same columns and rows, `m_w <= m_b` dropped.
-- 2. How the profiled job checkpointed its activations: per block
--    (cost_profile_layers.checkpointing: 'none', 'full' (the whole block, torch's non-reentrant
--    checkpoint), 'op' (per-op selective), 'reentrant') and for the job (cost_profiles.checkpointing:
--    one of those when every block has it, 'layer' when some blocks are fully checkpointed and
--    the others not at all, torchtitan's selective every-k-th, 'mixed' otherwise). NULL: not
--    known (every profile stored before this version, and imports of traces that do not say).
--
-- Released: never edit this file (schemas/README.md, "Versions and migration").
CREATE TABLE cost_profile_layers_v12 (
  profile_id    INTEGER NOT NULL REFERENCES cost_profiles (id) ON DELETE CASCADE,
  ordinal       INTEGER NOT NULL CHECK (ordinal >= 0),
  name          TEXT    NOT NULL CHECK (name <> ''),
  f_ns          INTEGER NOT NULL CHECK (f_ns >= 0),
  b_ns          INTEGER NOT NULL CHECK (b_ns >= 0),
  w_ns          INTEGER NOT NULL CHECK (w_ns >= 0),
  m_b           REAL    NOT NULL CHECK (m_b >= 0),
  m_w           REAL    NOT NULL CHECK (m_w >= 0),
  state         REAL    NOT NULL CHECK (state >= 0),
  send          REAL    NOT NULL CHECK (send >= 0),
  checkpointing TEXT    CHECK (checkpointing IS NULL
                               OR checkpointing IN ('none', 'full', 'op', 'reentrant')),
  PRIMARY KEY (profile_id, ordinal),
  UNIQUE (profile_id, name)
) WITHOUT ROWID;
INSERT INTO cost_profile_layers_v12
  (profile_id, ordinal, name, f_ns, b_ns, w_ns, m_b, m_w, state, send)
  SELECT profile_id, ordinal, name, f_ns, b_ns, w_ns, m_b, m_w, state, send
  FROM cost_profile_layers;
DROP TABLE cost_profile_layers;
ALTER TABLE cost_profile_layers_v12 RENAME TO cost_profile_layers;
ALTER TABLE cost_profiles ADD COLUMN checkpointing TEXT
  CHECK (checkpointing IS NULL
         OR checkpointing IN ('none', 'full', 'op', 'reentrant', 'layer', 'mixed'));
