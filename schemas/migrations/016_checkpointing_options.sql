-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 15 -> 16: the memory plan (docs/memory-plan.md). A block's costs under
-- the checkpointing modes it did not run in (LayerCost::options, zb-layers/1 "options"): F, B,
-- W, M_B, M_W per (profile, block, mode), and whether they were measured or derived by the
-- documented rule. A block's own figures stay in cost_profile_layers. Only an addition.
--
-- Released: never edit this file (schemas/README.md, "Versions and migration").
CREATE TABLE cost_profile_layer_options (
  profile_id INTEGER NOT NULL REFERENCES cost_profiles (id) ON DELETE CASCADE,
  ordinal    INTEGER NOT NULL CHECK (ordinal >= 0),  -- the block's in cost_profile_layers
  position   INTEGER NOT NULL CHECK (position >= 0),  -- its place among the block's options
  mode       TEXT    NOT NULL CHECK (mode IN ('none', 'full', 'op')),
  f_ns       INTEGER NOT NULL CHECK (f_ns >= 0),
  b_ns       INTEGER NOT NULL CHECK (b_ns >= 0),
  w_ns       INTEGER NOT NULL CHECK (w_ns >= 0),
  m_b        REAL    NOT NULL CHECK (m_b >= 0),
  m_w        REAL    NOT NULL CHECK (m_w >= 0),
  measured   INTEGER NOT NULL CHECK (measured IN (0, 1)),
  PRIMARY KEY (profile_id, ordinal, position),
  UNIQUE (profile_id, ordinal, mode)
) WITHOUT ROWID;
