-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 9 -> 10: per-block costs measured with a cost profile
-- (CostProfileDetails::layers, LayerCost in zbkit/schemas/layers.h; docs/formats.md §6): one row
-- per top-level block of the model, in model order, with what it costs per microbatch (times in
-- ns, memory in bytes) and what it holds whatever the schedule (state) and sends (send). A
-- profile without rows has stage totals only (every profile stored before). Only additions.
--
-- Released: never edit this file (schemas/README.md, "Versions and migration").
CREATE TABLE cost_profile_layers (
  profile_id INTEGER NOT NULL REFERENCES cost_profiles (id) ON DELETE CASCADE,
  ordinal    INTEGER NOT NULL CHECK (ordinal >= 0),
  name       TEXT    NOT NULL CHECK (name <> ''),
  f_ns       INTEGER NOT NULL CHECK (f_ns >= 0),
  b_ns       INTEGER NOT NULL CHECK (b_ns >= 0),
  w_ns       INTEGER NOT NULL CHECK (w_ns >= 0),
  m_b        REAL    NOT NULL CHECK (m_b >= 0),
  m_w        REAL    NOT NULL CHECK (m_w >= 0 AND m_w <= m_b),
  state      REAL    NOT NULL CHECK (state >= 0),
  send       REAL    NOT NULL CHECK (send >= 0),
  PRIMARY KEY (profile_id, ordinal),
  UNIQUE (profile_id, name)
) WITHOUT ROWID;
